"""A recall's per-session reads done in one query, and the other fusion's values worked out
without a second fusion, give exactly what the per-hit reads and a second `fuse` gave."""

from __future__ import annotations

import random
import sqlite3

from lcg.projections.canonization import projection as canon_projection
from lcg.projections.canonization import state as canon
from lcg.projections.memory import projection as memory_projection
from lcg.projections.memory import state
from lcg.queries.fusion import Fusion, best_per_key, fuse
from lcg.queries.recall import _both_fused

KINDS = ("depends_on", "parent_of", "contradicts")


def _graph() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    memory_projection.install(conn)
    canon_projection.install(conn)
    return conn


def test_targets_each_reads_each_sources_targets_in_the_order_targets_reads_them() -> None:
    conn = _graph()
    rng = random.Random(7)
    nodes = [f"n{i:02d}" for i in range(30)]
    edges = {
        (group, kind, source, target)
        for _ in range(400)
        for group in [rng.choice(("lambo", "general"))]
        for kind in [rng.choice(KINDS)]
        for source in [rng.choice(nodes)]
        for target in [rng.choice(nodes)]
    }
    for seq, (group, kind, source, target) in enumerate(rng.sample(sorted(edges), len(edges))):
        conn.execute(
            "INSERT INTO memory_edges (uuid, group_id, kind, source, target, agent_id,"
            " created_at, about_time, seq) VALUES (?,?,?,?,?,'a','t','t',?)",
            (f"e{seq}", group, kind, source, target, seq),
        )
    asked = [*rng.sample(nodes, 20), "absent", nodes[0]]  # one unknown, one twice
    for kinds in (["depends_on"], ["depends_on", "parent_of"], list(KINDS)):
        each = state.targets_each(conn, "lambo", asked, kinds)
        assert list(each) == list(dict.fromkeys(asked))
        assert each == {source: state.targets(conn, "lambo", source, kinds) for source in asked}
        assert any(len(found) > 1 for found in each.values())  # an order to keep
    assert state.targets_each(conn, "lambo", [], ["depends_on"]) == {}


def test_node_states_of_as_recall_reads_it_is_node_state_of_each_node() -> None:
    """recall_marks.canonized reads every hit's state in one query (`node_states_of`), a
    node without a row of the session as `NodeState()`."""
    conn = _graph()
    conn.executemany(
        "INSERT INTO canon_nodes (node_id, group_id, status, gc_survived, blast_radius,"
        " last_demotion_at, demotion_cause, superseded_by) VALUES (?,?,?,?,?,?,?,?)",
        [
            ("a", "lambo", "Canonical", 3, 7, None, None, None),
            ("b", "lambo", "Candidate", 1, None, "2026-12-01T10:00:00+00:00", "supersession", "c"),
            ("c", "general", "None", 0, None, None, None, None),
        ],
    )
    asked = ["b", "missing", "a", "c", "a"]
    held = canon.node_states_of(conn, "lambo", asked)
    each = {node: held.get(node, canon.NodeState()) for node in asked}
    assert each == {node: canon.node_state(conn, node) for node in asked}
    assert each["a"].status == "Canonical"
    assert each["missing"] == canon.NodeState()
    assert each["b"].last_demotion_at is not None


def test_both_fused_values_equal_a_second_fusion_exactly() -> None:
    rng = random.Random(11)
    keys = [f"k{i:03d}" for i in range(120)]
    for case in range(60):
        legs = {
            "bm25": best_per_key(
                [(k, float(rng.choice((1, 2, 3))) * rng.random() * 9) for k in rng.sample(keys, 50)]
            ),
            "vector": best_per_key(
                [(k, round(rng.uniform(-0.2, 1.0), 2)) for k in rng.sample(keys, 50)]
            ),
            "recent": [(k, 0.25) for k in rng.sample(keys, 5)] if case % 3 else [],
        }
        if case % 7 == 0:
            legs["bm25"] = []
        for fusion in ("max", "rrf"):
            other: Fusion = "rrf" if fusion == "max" else "max"
            fused = fuse(legs, fusion, raw=fusion == "max")
            again = {e.key: e.score for e in fuse(legs, other, raw=other == "max")}
            chosen = fused[: rng.choice((10, 30, len(fused)))]
            by_leg = {name: dict(hits) for name, hits in legs.items()}
            values = _both_fused(legs, by_leg, chosen, fusion)
            assert list(values) == [e.key for e in chosen]
            for e in chosen:
                mine = {fusion: round(e.score, 6), other: round(again[e.key], 6)}
                assert values[e.key] == {"max": mine["max"], "rrf": mine["rrf"]}
