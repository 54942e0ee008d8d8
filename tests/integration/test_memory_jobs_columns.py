"""The jobs' columnar read of a session (ADR 0031, "Reading a large session"): on sessions
written through the tools and moved by cycles and sweeps, `load_columns` with the measures of
only the `cycle_needs` concepts decides every cycle as `load` + `session_stats` +
`plan_cycle_with_cursors` does, measures each concept as `session_stats` does (both the
per-concept and the whole-session edge read), and plans the same sweep; the kept per-concept
rows (`memory_concept_stats`, ADR 0040) are the nodes' fields and the plain count of the edges,
and the cycle's read of them (`load_cycle_columns`) gives every concept the row the edges
give."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization import (
    ConceptRows,
    ConceptStats,
    Knobs,
    Measures,
    Policy,
    cycle_needs,
    evaluate,
    plan_cycle_over,
    plan_cycle_with_cursors,
)
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc import GcKnobs, Trigger, plan_sweep
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.tools.memory_read import admission_payload
from lcg.interfaces.workspace import Workspace
from lcg.projections.canonization import columns as columns_read
from lcg.projections.canonization import measure
from lcg.projections.embedding.port import Embedder
from tests.conftest import SteppingClock, make_workspace
from tests.helpers.memory_concept_stats import (
    expected_concept_stats,
    expected_session_stats,
    kept_concept_stats,
    kept_session_stats,
)
from tests.integration.test_memory_writes import AGENT, SESSION, call, concept, derive, settled

TYPES = ("entity", "resource", "logic", "constraint", "observation")
AGENTS = ("agent-a", "agent-b", "agent-c")


@pytest.fixture
def moving(tmp_path: Path, embedder: Embedder) -> Iterator[Workspace]:
    """A workspace whose small sessions promote: no peer floor, edges count at once."""
    tuning = Tuning().with_values(
        canonization__min_peer_count=1,
        canonization__edge_min_age_secs=0,
        daemon__gc_interval=1,
        daemon__gc_idle_floor=0,
    )
    with make_workspace(Settings(workspace=tmp_path, tuning=tuning), embedder) as ws:
        yield ws


def _clock(ws: Workspace) -> SteppingClock:
    clock = ws.clock
    assert isinstance(clock, SteppingClock)
    return clock


def _write_session(app: App, rng: random.Random, writes: int) -> None:
    """Writes of one to three concepts of every type, citing, parenting and contradicting
    earlier ones, by three agents, minutes to days apart."""
    ws = app.workspace
    written: list[str] = []
    for number in range(writes):
        concepts = []
        for index in range(rng.randint(1, 3)):
            refs: dict[str, list[str]] = {}
            if written and rng.random() < 0.6:
                refs["depends_on"] = rng.sample(written, min(len(written), rng.randint(1, 3)))
            if written and rng.random() < 0.08:
                refs["against"] = [rng.choice(written)]
            content = f"note {number}.{index} about part {rng.randint(0, 40)}"
            concepts.append(concept(content, rng.choice(TYPES), **refs))
        extra = {}
        if rng.random() < 0.2:
            extra["parent_of"] = [{"parent": concepts[0]["content"], "child": f"child of {number}"}]
        agent = rng.choice(AGENTS)
        try:
            settled(app, derive(app, *concepts, agent=agent, **extra), agent)
        except DomainError:  # a content cited that two concepts share: that write is refused
            continue
        written += [c["content"] for c in concepts]
        written += [pair["child"] for pair in extra.get("parent_of", [])]
        _clock(ws).now += timedelta(minutes=rng.choice([1, 10, 60, 60 * 24 * 3]))


def _rebuilt(rows: ConceptRows, measures: dict[ConceptId, Measures]) -> dict[str, ConceptStats]:
    found: dict[str, ConceptStats] = {}
    for row, node in enumerate(rows.node_ids):
        got = measures[node]
        found[node] = ConceptStats(
            node,
            rows.statuses[row],
            rows.concept_types[row],
            rows.canonical_keys[row],
            rows.scores[row],
            rows.gc_survived[row],
            got.distinct_interactions,
            got.coverage,
            got.blast_radius,
            got.last_demotion,
            got.solo,
        )
    return found


def _kept_counters_read_as_the_edges(
    conn: sqlite3.Connection, columns: columns_read.Columns, rows: ConceptRows, gc_knobs: GcKnobs
) -> None:
    """ADR 0040: the kept counters are the plain count of the session's edges, and the cycle's
    read of them gives every concept the row (and the same score floats) the edges give."""
    assert kept_concept_stats(conn, SESSION) == expected_concept_stats(conn, SESSION)
    assert kept_session_stats(conn, SESSION) == expected_session_stats(conn, SESSION)
    kept = columns_read.load_cycle_columns(conn, SESSION, gc_knobs)
    for name in ("node_ids", "statuses", "concept_types", "canonical_keys", "scores"):
        assert list(getattr(kept.rows, name)) == list(getattr(rows, name)), name
    assert list(kept.rows.gc_survived) == list(rows.gc_survived)
    assert (kept.seqs, kept.extent, kept.clock) == (columns.seqs, columns.extent, columns.clock)


def _agree(ws: Workspace, knobs: Knobs, gc_knobs: GcKnobs, now: datetime) -> None:
    conn = ws.reader()
    cursors = ws.memory.jobs_or_fail().cursors
    stats = measure.session_stats(conn, measure.load(conn, SESSION), knobs, gc_knobs, now, cursors)
    columns = columns_read.load_columns(conn, SESSION)
    rows = columns_read.cycle_rows(columns, gc_knobs)
    _kept_counters_read_as_the_edges(conn, columns, rows, gc_knobs)
    by_id = {c.node_id: c for c in stats.concepts}
    for bulk in (0, 10**9):  # every concept read the whole session's way, then one by one
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(columns_read, "BULK_MEASURES", bulk)
            measured = columns_read.cycle_measures(conn, columns, rows.node_ids, knobs, now)
        assert _rebuilt(rows, measured) == by_id
    evidence = columns_read.cycle_evidence(conn, columns, knobs)
    assert evidence == stats.evidence
    wanted = cycle_needs(rows, knobs, cursors)
    needed = columns_read.cycle_measures(conn, columns, wanted, knobs, now)
    assert plan_cycle_over(rows, needed, knobs, now, evidence, cursors) == (
        plan_cycle_with_cursors(stats, knobs, now)
    )
    evidence_in = measure.gc_evidence(conn, SESSION)
    old = plan_sweep(measure.gc_facts(measure.load(conn, SESSION)), evidence_in, gc_knobs, now,
                     Trigger.MUTATIONS)  # fmt: skip
    assert plan_sweep(columns.facts, evidence_in, gc_knobs, now, Trigger.MUTATIONS) == old


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_columnar_read_decides_as_the_whole_snapshot_does(moving: Workspace, seed: int) -> None:
    app = App(moving)
    rng = random.Random(seed)
    _write_session(app, rng, 24)
    jobs = moving.memory.jobs_or_fail()
    swarm = jobs.knobs
    variants = (
        swarm,
        dataclasses.replace(swarm, promotion_policy=Policy.SOLO),
        dataclasses.replace(swarm, supersede=True, max_canonical_nodes=2, batch_size=3),
    )
    hops, collected = 0, 0  # the sessions move: hops every seed, collections most
    for step in range(9):
        if step % 3 != 2:
            collected += len(jobs.sweep(Trigger.MUTATIONS).collected)
        for knobs in variants:
            _agree(moving, knobs, jobs.gc_knobs, _clock(moving).now)
        hops += len(jobs.run_cycle())
        _clock(moving).now += timedelta(days=rng.choice([0, 1, 200]))
    assert hops > 0


def test_an_idle_tick_keeps_its_contradiction_list_until_support_ages_in(
    app: App, workspace: Workspace
) -> None:
    hero = "accounts live in the users table"
    settled(app, derive(app, concept(hero, "entity")))
    jobs = workspace.memory.jobs_or_fail()
    jobs.tick()  # starts the GC clock: the session's position moves once
    moved = concept("accounts moved to the tenants table", "entity", against=[hero])
    settled(app, derive(app, moved, agent="agent-d"), "agent-d")
    _clock(workspace).now += timedelta(minutes=5)
    jobs.tick()
    listed = jobs.contradiction_list
    assert listed is not None
    assert len(listed) == 1
    citer = concept("billing reads the accounts table", depends_on=[hero])
    settled(app, derive(app, citer, agent="agent-b"), "agent-b")
    jobs.tick()  # the newer support is not 60 s old yet: the warning stands
    assert jobs.contradiction_list == listed
    jobs.tick()  # nothing written since: the same list
    assert jobs.contradiction_list == listed
    _clock(workspace).now += timedelta(minutes=2)
    jobs.tick()  # nothing written, but the support aged in: the warning lapses at once
    assert jobs.contradiction_list == frozenset()


def _admissions(app: App, nodes: list[str]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for node in nodes:
        inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=node)["structuredContent"]
        found[node] = inspected["admission"]
    return found


@pytest.mark.parametrize("policy", [Policy.SWARM, Policy.SOLO])
def test_m_ins_037_admission_through_the_cycles_reader_is_what_the_next_cycle_decides(
    moving: Workspace, policy: Policy
) -> None:
    """lambo_inspect's admission reads one concept's measures and the kept counters' rows
    (ADR 0040): it equals the whole-snapshot evaluation, and the concepts it calls eligible
    are the ones the next cycle promotes, to the status it names (a small session: no batch
    or budget holds one back)."""
    app = App(moving)
    rng = random.Random(7)
    _write_session(app, rng, 18)
    jobs = moving.memory.jobs_or_fail()
    jobs.knobs = dataclasses.replace(jobs.knobs, promotion_policy=policy)
    promoted = 0
    for step in range(8):
        if step % 3 != 2:
            jobs.sweep(Trigger.MUTATIONS)
        conn = moving.reader()
        now = _clock(moving).now
        nodes = [str(row[0]) for row in conn.execute(
            "SELECT uuid FROM memory_nodes WHERE group_id=? AND node_kind='concept'", (SESSION,)
        )]  # fmt: skip
        stats = measure.session_stats(
            conn, measure.load(conn, SESSION), jobs.knobs, jobs.gc_knobs, now, jobs.cursors
        )
        shown = _admissions(app, nodes)
        for node in nodes:
            whole = evaluate(ConceptId(node), stats, jobs.knobs, now)
            assert shown[node] == admission_payload(whole), node
        eligible = {node: a["next"] for node, a in shown.items() if a["eligible"]}
        hops = jobs.run_cycle()
        ups = {hop.node_id: hop.to_status.value for hop in hops if hop.cause.value == "promotion"}
        assert ups == eligible
        promoted += len(ups)
        _clock(moving).now += timedelta(days=rng.choice([0, 1, 200]))
    assert promoted > 0
