"""The graph's point lookups search the index of what they look up (fast writes and reads).

SQLite has no statistics for these tables, and with none it preferred the (group_id, seq)
index whenever a query also said `ORDER BY seq` or `group_id IN (...)`: it then read every
entity or edge of the group in seq order to find one. Every knowledge_assert_entity and
knowledge_assert_relationship (the name and edge identity lookups of K-AST-002/K-ARL-002),
every get_entity_neighbors and every graph expansion of search cost time in proportion to the
group's size (a 6,000-event ring was written at ~250 events/s). Each query below must search
the index on its own columns.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from lcg.interfaces.workspace import Workspace
from lcg.projections.graph import reader, state
from tests.conftest import Call


def _plans(conn: sqlite3.Connection, run: Callable[[], object]) -> list[str]:
    issued: list[str] = []
    conn.set_trace_callback(issued.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    selects = [sql for sql in issued if sql.lstrip().upper().startswith("SELECT")]
    return [
        " ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        for sql in selects
    ]


def test_k_ast_k_arl_point_lookups_and_neighbour_reads_search_their_own_indexes(
    call: Call, workspace: Workspace
) -> None:
    for name in ("Ada", "Babbage", "Menabrea"):
        call("knowledge_assert_entity", name=name, group_id="g")
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="knew",
        target_name="Babbage",
        group_id="g",
    )
    call("knowledge_add_episode", name="c1", episode_body="notes", group_id="g")
    conn = workspace.reader()
    ada = state.entity_by_name(conn, "g", "ada")
    assert ada is not None
    babbage = state.entity_by_name(conn, "g", "Babbage")
    assert babbage is not None
    checks: list[tuple[Callable[[], object], str]] = [
        (lambda: state.entity_by_name(conn, "g", "Ada"), "(group_id=? AND name_key=?)"),
        (lambda: state.entities_named(conn, "g", "Ada"), "(group_id=? AND name_key=?)"),
        (
            lambda: state.active_edge(conn, "g", ada.uuid, "knew", babbage.uuid),
            "(group_id=? AND source_uuid=? AND name=? AND target_uuid=?)",
        ),
        (lambda: reader.neighbor_ids(conn, [ada.uuid], ["g"]), "MULTI-INDEX OR"),
        (lambda: reader.edges_touching(conn, [ada.uuid], ["g"], 10), "MULTI-INDEX OR"),
        (lambda: state.episodes_matching(conn, ["g"], chunk_id="c"), "(chunk_id=?)"),
    ]
    for run, wanted in checks:
        plan = _plans(conn, run)[0]
        assert wanted in plan, plan
        assert "group_id_seq" not in plan, plan
    # passage search's graph hop (issue 14): the chunk's mentions, each entity's mention
    # count (bounded) and the other episodes mentioning it, each by its index
    (hop,) = _plans(conn, lambda: reader.co_mentioned_episodes(conn, ["e1"], ["g"], 10))
    assert "SEARCH m1 USING COVERING INDEX sqlite_autoindex_mentions_1 (episode_uuid=?)" in hop
    assert "SEARCH m3 USING COVERING INDEX idx_mentions_entity_uuid (entity_uuid=?)" in hop
    assert "SEARCH m2 USING INDEX idx_mentions_entity_uuid (entity_uuid=?)" in hop
    neighbours = _plans(conn, lambda: reader.neighbors(conn, ada.uuid, ["g"], 10))
    assert "MULTI-INDEX OR" in neighbours[0], neighbours[0]
    assert all("group_id_seq" not in plan for plan in neighbours), neighbours
