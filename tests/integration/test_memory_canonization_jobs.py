"""The canonization cycle and GC sweeps as jobs that append events (issue 13: M-CAN, M-INS,
M-STA, M-SNT, M-REC's canonization parts), on a real workspace with a settable clock."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lcg.commands import job_planner
from lcg.commands.memory_jobs import MemoryJobs
from lcg.domain.events import ConceptsCanonized, GcSwept
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc import Trigger
from lcg.domain.memory.text import ConceptType
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.canonization import projection as canonization_projection
from lcg.projections.canonization import state as canon
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import SteppingClock, make_workspace
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)
from tests.integration.test_property_memory_rebuild import dump_all

HERO = "user schema owns the accounts table"
AGENTS = ("agent-a", "agent-b", "agent-c")


@pytest.fixture
def tuned(tmp_path: Path, embedder: Embedder) -> Iterator[Workspace]:
    """A workspace whose GC sweeps after every mutation (the seed's demo: gc_interval = 1)."""
    tuning = Tuning().with_values(daemon__gc_interval=1, daemon__gc_idle_floor=0)
    settings = Settings(workspace=tmp_path, tuning=tuning)
    with make_workspace(settings, embedder) as ws:
        yield ws


def _clock(ws: Workspace) -> SteppingClock:
    clock = ws.clock
    assert isinstance(clock, SteppingClock)
    return clock


def _later(ws: Workspace, minutes: float) -> None:
    _clock(ws).now += timedelta(minutes=minutes)


def _every_logic_concept_collectable(ws: Workspace) -> MemoryJobs:
    """The session's jobs, with GC set to collect any logic concept, and 400 days later."""
    jobs = ws.memory.jobs_or_fail()
    jobs.gc_knobs = dataclasses.replace(
        jobs.gc_knobs,
        score_cut_types=frozenset({ConceptType.LOGIC}),
        min_concept_score=1.0,
        collect_floor=1,
        collect_fraction=0.0,
    )
    _later(ws, 60 * 24 * 400)
    return jobs


def _story(app: App) -> None:
    """Twenty-five observations, the hero, then three agents each citing it three times, ten
    minutes apart: blast radius 9 from three interactions spread over the session."""
    ws = app.workspace
    fillers = [
        concept(f"build note number {i} about the lint step", "observation") for i in range(25)
    ]
    settled(app, derive(app, *fillers))
    _later(ws, 10)
    settled(app, derive(app, concept(HERO, "entity")))
    for agent in AGENTS:
        _later(ws, 10)
        citers = [
            concept(f"{agent} query {i} reads the accounts table", depends_on=[HERO])
            for i in range(3)
        ]
        settled(app, derive(app, *citers, agent=agent), agent)
    _later(ws, 10)  # every edge past the 60 s age floor


def _status(ws: Workspace, node: str) -> str:
    return canon.statuses(ws.reader(), [node])[node]


def _sweeps(ws: Workspace, count: int) -> None:
    for _ in range(count):
        ws.memory.jobs_or_fail().sweep(Trigger.MUTATIONS)


def _recall_hit(app: App, node: str) -> dict[str, Any]:
    result = call(app, "lambo_recall", agent_id=AGENT, query=HERO, top_k=10)
    (hit,) = [h for h in result["structuredContent"]["hits"] if h["node_id"] == node]
    return {"hit": hit, "text": result["text"]}


def test_m_can_the_seeds_demo_none_candidate_venerable_canonical_with_null_null_9(
    tuned: Workspace,
) -> None:
    """Also M-SNT-004 (a saint's row) and M-CAN-060 (its dependents count is the blast radius
    recall shows)."""
    app = App(tuned)
    _story(app)
    hero = node_by_content(tuned, HERO).uuid
    jobs = tuned.memory.jobs_or_fail()
    assert jobs.run_cycle() == ()  # gc_survived 0: Stage 1 waits for three sweeps
    _sweeps(tuned, 3)
    assert canon.node_state(tuned.reader(), hero).gc_survived == 3
    hops = [jobs.run_cycle() for _ in range(3)]
    mine = [[h for h in cycle if h.node_id == hero] for cycle in hops]
    assert [(h.from_status.value, h.to_status.value, h.blast_radius) for [h] in mine] == [
        ("None", "Candidate", None),
        ("Candidate", "Venerable", None),
        ("Venerable", "Canonical", 9),
    ]
    assert _status(tuned, hero) == "Canonical"
    history = canon.history(tuned.reader(), SESSION, hero)
    assert [(r.from_status, r.to_status, r.blast_radius) for r in history] == [
        ("None", "Candidate", None),
        ("Candidate", "Venerable", None),
        ("Venerable", "Canonical", 9),
    ]
    shown = _recall_hit(app, hero)
    assert shown["hit"]["is_canonical"] is True
    assert shown["hit"]["blast_radius"] == 9  # the same number the Canonical hop stamped
    assert f"{HERO} [Entity, canonical]" in shown["text"]
    saints = call(app, "lambo_saints", agent_id=AGENT)["structuredContent"]
    assert [s["node_id"] for s in saints["saints"]] == [hero]
    assert saints["saints"][0]["blast_radius"] == 9
    assert set(saints["saints"][0]) == {  # M-SNT-004
        "node_id",
        "content",
        "concept_type",
        "blast_radius",
        "access_count",
        "created_at",
    }
    assert saints["saints"][0]["content"] == HERO
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    assert stats["canonical_count"] == 1
    assert stats["canonization_cycles"] == 4
    assert stats["gc"]["last_sweep"]["trigger"] == "mutations"


def test_m_can_budget_demotion_sets_none_and_inspect_says_budget(tuned: Workspace) -> None:
    app = App(tuned)
    _story(app)
    hero = node_by_content(tuned, HERO).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    for _ in range(3):
        jobs.run_cycle()
    assert _status(tuned, hero) == "Canonical"
    jobs.knobs = dataclasses.replace(jobs.knobs, max_canonical_nodes=0)
    (demotion,) = [h for h in jobs.run_cycle() if h.node_id == hero]
    assert (demotion.from_status.value, demotion.to_status.value) == ("Canonical", "None")
    assert demotion.cause.value == "budget"
    assert _status(tuned, hero) == "None"
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=hero)
    assert inspected["text"].split("\n")[-1].endswith(": budget")
    assert inspected["structuredContent"]["is_canonical"] is False


def test_m_can_a_replay_to_a_seq_between_two_promotions_shows_the_earlier_status(
    tuned: Workspace,
) -> None:
    app = App(tuned)
    _story(app)
    hero = node_by_content(tuned, HERO).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    jobs.run_cycle()
    between = tuned.log.head(SESSION)
    jobs.run_cycle()
    assert _status(tuned, hero) == "Venerable"
    call(app, "knowledge_rebuild_from_wal", group_id=SESSION, to_seq=between, force_clear=True)
    assert _status(tuned, hero) == "Candidate"
    call(app, "knowledge_rebuild_from_wal", group_id=SESSION, force_clear=True)
    assert _status(tuned, hero) == "Venerable"
    assert canon.node_state(tuned.reader(), hero).gc_survived == 3


def test_m_can_jobs_append_events_and_a_full_rebuild_equals_the_incremental_state(
    tuned: Workspace,
) -> None:
    app = App(tuned)
    _story(app)
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    for _ in range(3):
        jobs.run_cycle()
    kinds = {type(e.event) for page in tuned.log.read(SESSION) for e in page}
    assert {ConceptsCanonized, GcSwept} <= kinds

    def tables() -> dict[str, list[tuple[Any, ...]]]:
        conn = tuned.reader()
        return {
            table: sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}"))
            for table in ("canon_nodes", "canon_history", "canon_sessions", "memory_nodes")
        }

    before = tables()
    call(app, "knowledge_rebuild_from_wal", group_id=SESSION, force_clear=True)
    assert tables() == before


def test_gc_collects_an_orphan_and_keeps_protected_concepts(tuned: Workspace) -> None:
    """An orphan here is a `parent_of` end a derive created (it has no provenance edge) whose
    other end was collected while the cap held the end back: the next sweep finds it with no
    edge at all and collects it as an orphan, while the Canonical hero stays, protected.
    The knobs make that happen in two sweeps: only Constraints face the score cut, every one
    is under its bar, and a sweep collects one concept."""
    app = App(tuned)
    _story(app)
    rule = "deploys wait for the nightly backup"
    policy = "the Wrenfield release policy"
    pair = {"parent": policy, "child": rule}
    settled(app, derive(app, concept(rule, "constraint"), parent_of=[pair]))
    hero = node_by_content(tuned, HERO).uuid
    cited, end = node_by_content(tuned, rule).uuid, node_by_content(tuned, policy).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    for _ in range(3):
        jobs.run_cycle()
    sweep = jobs.sweep(Trigger.MUTATIONS, dry_run=True)
    assert hero not in sweep.collected_ids
    assert ConceptId(hero) in sweep.protected  # Canonical: protected
    jobs.gc_knobs = dataclasses.replace(
        jobs.gc_knobs,
        score_cut_types=frozenset({ConceptType.CONSTRAINT}),
        min_concept_score=1.0,
        collect_floor=1,
        collect_fraction=0.0,
    )
    _later(tuned, 10)
    first = jobs.sweep(Trigger.MUTATIONS)
    assert [(c.node_id, c.reason.value) for c in first.collected] == [(cited, "under_bar")]
    assert first.deferred == (ConceptId(end),)  # unreachable now, but over the cap
    second = jobs.sweep(Trigger.MUTATIONS)
    assert [(c.node_id, c.reason.value) for c in second.collected] == [(end, "orphan")]
    assert ConceptId(hero) in second.protected
    reader = tuned.reader()
    assert reader.execute("SELECT 1 FROM memory_nodes WHERE uuid=?", (end,)).fetchone() is None
    assert _status(tuned, hero) == "Canonical"


def test_m_can_gc_collects_an_under_bar_resource_and_keeps_the_protected_ones(
    tuned: Workspace,
) -> None:
    """A year on, a Resource nobody cites or recalls scores under its bar (0.12; about 0.085
    here) and is collected, with its edges, words and vector; the Canonical hero and the
    observations (exempt from the score cut) stay, and every survivor's gc_survived is
    bumped. Also M-STA-060/061/062/070: lambo_stats' `gc` carries the sweep's RFC 3339
    time and epoch, and its text's `gc:` line the trigger, counts, cap and whether it bound."""
    app = App(tuned)
    _story(app)
    lonely = "a vendor called Quillfeather once quoted for hosting"
    settled(app, derive(app, concept(lonely, "resource")))
    hero = node_by_content(tuned, HERO).uuid
    gone = node_by_content(tuned, lonely).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    for _ in range(3):
        jobs.run_cycle()
    _later(tuned, 60 * 24 * 400)
    sweep = jobs.sweep(Trigger.MUTATIONS)
    assert [(c.node_id, c.reason.value) for c in sweep.collected] == [(gone, "under_bar")]
    reader = tuned.reader()
    assert reader.execute("SELECT 1 FROM memory_nodes WHERE uuid=?", (gone,)).fetchone() is None
    assert reader.execute("SELECT 1 FROM memory_edges WHERE target=?", (gone,)).fetchone() is None
    words = "SELECT count(*) FROM fts_concepts WHERE fts_concepts MATCH 'Quillfeather'"
    assert tuple(reader.execute(words).fetchone()) == (0,)  # nor in a neighbour's (ADR 0035)
    assert _status(tuned, hero) == "Canonical"
    assert canon.node_state(reader, hero).gc_survived == 4
    tuned.settle()
    hits = call(app, "lambo_recall", agent_id=AGENT, query="Quillfeather hosting vendor")
    assert gone not in [h["node_id"] for h in hits["structuredContent"]["hits"]]
    answer = call(app, "lambo_stats", agent_id=AGENT)
    stats = answer["structuredContent"]["gc"]
    assert stats["last_sweep"]["collected"] == 1
    assert stats["last_gc_epoch"] == canon.clock(reader, SESSION).epoch
    assert datetime.fromisoformat(stats["last_gc_at"]).tzinfo is not None  # RFC 3339
    (gc_line,) = [line for line in answer["text"].split("\n") if line.startswith("gc: ")]
    assert gc_line == (
        f"gc: last_gc_at {stats['last_gc_at']}, last_gc_epoch {stats['last_gc_epoch']}, last"
        " sweep mutations: 1 collected, 0 deferred (cap 32, not bound), 0 resources spared,"
        " 0 survivor bumps pending"
    )
    live = dump_all(tuned.reader())
    vectors = tuned.vectors.count()
    call(app, "knowledge_rebuild_from_wal", group_id=SESSION, force_clear=True)
    tuned.settle()
    assert dump_all(tuned.reader()) == live  # the collection replays: nodes, words, vectors
    assert tuned.vectors.count() == vectors


def test_m_can_a_cycle_that_fails_while_applying_leaves_none_of_its_events(
    tuned: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cycle's hops are one event in one batch: a failure applying it rolls back every
    hop, the log keeps nothing of it, and the cycle counts as failed."""
    app = App(tuned)
    _story(app)
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    head = tuned.log.head(SESSION)
    table = canonization_projection.TABLE
    real = table._handlers[ConceptsCanonized]

    def fail_midway(conn: Any, group: Any, run: Any) -> None:
        real(conn, group, run)  # every hop's rows written, then the failure
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setitem(table._handlers, ConceptsCanonized, fail_midway)
    with pytest.raises(Exception, match="disk I/O error"):
        jobs.run_cycle()
    assert tuned.log.head(SESSION) == head
    assert tuned.reader().execute("SELECT COUNT(*) FROM canon_history").fetchone()[0] == 0
    assert jobs.counters.canonization_failures == 1
    monkeypatch.setitem(table._handlers, ConceptsCanonized, real)
    assert jobs.run_cycle()  # the next cycle takes the same hops


def test_m_ins_037_admission_measures_what_the_next_cycle_measures(tuned: Workspace) -> None:
    app = App(tuned)
    _story(app)
    hero = node_by_content(tuned, HERO).uuid
    jobs = tuned.memory.jobs_or_fail()

    def admission() -> dict[str, Any]:
        found = call(app, "lambo_inspect", agent_id=AGENT, focus=hero)["structuredContent"]
        result: dict[str, Any] = found["admission"]
        return result

    before = admission()
    assert (before["status"], before["next"], before["eligible"]) == ("None", "Candidate", False)
    gates = {c["gate"]: c for c in before["checks"]}
    assert gates["gc_survived"]["current"] == 0
    assert gates["gc_survived"]["met"] is False
    assert "- stage 1: survived 0 garbage collections, needs at least 3" in before["reasons"]
    _sweeps(tuned, 3)
    assert admission()["eligible"] is True
    jobs.run_cycle()
    jobs.run_cycle()
    venerable = admission()
    assert (venerable["status"], venerable["next"]) == ("Venerable", "Canonical")
    radius = {c["gate"]: c for c in venerable["checks"]}["blast_radius"]
    assert (radius["current"], radius["bar"], radius["comparison"], radius["met"]) == (
        9,
        5,
        ">",
        True,
    )
    jobs.run_cycle()
    done = admission()
    assert done["status"] == "Canonical"
    assert "next" not in done


def test_the_scheduler_runs_cycles_and_sweeps_on_its_own_and_stops_at_close(
    tmp_path: Path, embedder: Embedder
) -> None:
    """apscheduler in the serving process: the cycle every eval interval, the tick (GC clock,
    triggers, sweeps) every tick interval; closing the workspace stops both first."""
    tuning = Tuning().with_values(
        daemon__gc_interval=1,
        daemon__gc_idle_floor=0,
        daemon__tick_interval_secs=0.05,
        daemon__canonization_eval_interval_secs=0.1,
    )
    settings = Settings(workspace=tmp_path, tuning=tuning)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept("the scheduler writes nothing itself", "entity")))
        ws.start_memory_jobs()
        jobs = ws.memory.jobs_or_fail()
        scheduler = ws.memory._scheduler
        assert scheduler is not None
        ticking = scheduler._thread  # apscheduler's scheduling thread
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (
            jobs.counters.canonization_cycles < 2 or jobs.counters.last_sweep is None
        ):
            time.sleep(0.05)
        assert jobs.counters.canonization_cycles >= 2
        assert jobs.counters.daemon_cycles >= 2
        assert jobs.counters.last_sweep is not None
        swept = [e for page in ws.log.read(SESSION) for e in page if isinstance(e.event, GcSwept)]
        assert swept  # the sweep is an event in the session's stream
    # Stopped with the workspace: the scheduler's thread has ended and close waited for a
    # running job (shutdown(wait=True)), so nothing can run a cycle any more.
    assert not scheduler.running
    assert not ticking.is_alive()
    cycles = jobs.counters.canonization_cycles
    assert jobs.counters.canonization_cycles == cycles


def _superseded_hero(
    tuned: Workspace, while_canonical: Callable[[App, str], None] | None = None
) -> tuple[App, str, str]:
    """The hero made Canonical (`while_canonical` then sees it), then demoted by supersession
    (canonization_supersede off at first: the cycle leaves it alone). (app, the hero's id, the
    superseding concept's id)."""
    app = App(tuned)
    _story(app)
    hero = node_by_content(tuned, HERO).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    for _ in range(3):
        jobs.run_cycle()
    assert _status(tuned, hero) == "Canonical"
    if while_canonical is not None:
        while_canonical(app, hero)
    moved = "accounts moved to the tenants table"
    settled(app, derive(app, concept(moved, "entity", against=[HERO]), agent="agent-d"), "agent-d")
    for index, agent in enumerate(AGENTS):
        _later(tuned, 30)
        citer = concept(f"{agent} job {index} reads the tenants table", depends_on=[moved])
        settled(app, derive(app, citer, agent=agent), agent)
    _later(tuned, 10)
    off = jobs.run_cycle()
    assert [h for h in off if h.node_id == hero] == []  # supersede is off: status untouched
    jobs.knobs = dataclasses.replace(jobs.knobs, supersede=True)
    (demotion,) = [h for h in jobs.run_cycle() if h.node_id == hero]
    superseding = node_by_content(tuned, moved).uuid
    assert (demotion.to_status.value, demotion.cause.value) == ("None", "supersession")
    assert demotion.superseded_by == superseding
    return app, hero, superseding


def test_m_rec_231_the_superseded_line_pulls_nothing_into_the_result(tuned: Workspace) -> None:
    """The superseded hero carries its history line when it ranks in, but the line is no
    warning: a recall where nine citers outrank it returns `top_k` hits, none of them the
    hero, and no Superseded line."""
    app, hero, _ = _superseded_hero(tuned)
    assert "⤓ Superseded at " in _recall_hit(app, hero)["text"]
    result = call(app, "lambo_recall", agent_id=AGENT, query="query reads accounts", top_k=4)
    hits = [h["node_id"] for h in result["structuredContent"]["hits"]]
    assert len(hits) == 4
    assert hero not in hits
    assert "⤓ Superseded at " not in result["text"]


def _saints(app: App) -> list[str]:
    result = call(app, "lambo_saints", agent_id=AGENT)
    return [row["node_id"] for row in result["structuredContent"]["saints"]]


def test_m_snt_007_a_concept_demoted_from_canonical_is_no_longer_a_saint(
    tuned: Workspace,
) -> None:
    """Listed while Canonical; once supersession demotes it, lambo_saints lists it no more."""
    listed: list[list[str]] = []
    app, hero, _ = _superseded_hero(tuned, lambda app, _: listed.append(_saints(app)))
    assert hero in listed[0]
    assert _status(tuned, hero) == "None"
    assert hero not in _saints(app)


def test_m_can_supersession_demotes_a_canonical_concept_and_recall_shows_the_history_line(
    tuned: Workspace,
) -> None:
    """With canonization_supersede on, a concept contradicting a Canonical one, with newer
    support from three other interactions spread over the session, demotes it to None; recall
    then shows `⤓ Superseded at ... by "<C>" (id ...)` on it and inspect the demotion."""
    app, hero, superseding = _superseded_hero(tuned)
    moved = "accounts moved to the tenants table"
    text = _recall_hit(app, hero)["text"]
    block = text[text.index(HERO) :]
    assert f'by "{moved}" (id {superseding[:8]})' in block
    assert "⤓ Superseded at " in block
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=hero)["text"].split("\n")
    assert inspected[-1].endswith(f': superseded by "{moved}" (id {superseding[:8]})')


def _contradicted_canonical_hero(tuned: Workspace) -> tuple[App, str, str]:
    app = App(tuned)
    _story(app)
    hero = node_by_content(tuned, HERO).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    for _ in range(3):
        jobs.run_cycle()
    moved = "accounts moved to the tenants table"
    settled(app, derive(app, concept(moved, "entity", against=[HERO]), agent="agent-d"), "agent-d")
    return app, hero, node_by_content(tuned, moved).uuid


def test_m_rec_121_the_contradicted_line_comes_from_the_daemons_next_tick(
    tuned: Workspace,
) -> None:
    app, hero, _ = _contradicted_canonical_hero(tuned)
    jobs = tuned.memory.jobs_or_fail()
    assert "⚠ Contradicted at " in _recall_hit(app, hero)["text"]  # no daemon: evaluated here
    jobs.contradiction_list = frozenset()  # the daemon's last tick came before the write
    assert "⚠ Contradicted at " not in _recall_hit(app, hero)["text"]
    jobs.tick()
    assert hero in (jobs.contradiction_list or ())
    assert "⚠ Contradicted at " in _recall_hit(app, hero)["text"]


def test_m_rec_131_a_contradicted_canonical_hit_is_kept_past_top_k(tuned: Workspace) -> None:
    """Also M-REC-054: a hit kept for a conflict is kept past `top_k`."""
    app, hero, moved = _contradicted_canonical_hero(tuned)
    result = call(app, "lambo_recall", agent_id=AGENT, query="query reads accounts", top_k=4)
    hits = [h["node_id"] for h in result["structuredContent"]["hits"]]
    assert not {hero, moved} & set(hits[:4])  # nine citers rank first: the hero is past top_k
    assert hits[4:] == [hero, moved]  # kept, with the contradicting concept beside it
    assert "⚠ Contradicted at " in result["text"]


def test_m_rec_132_a_contradicted_hit_of_status_none_must_earn_its_place(
    tuned: Workspace,
) -> None:
    app = App(tuned)
    _story(app)
    moved = "accounts moved to the tenants table"
    settled(app, derive(app, concept(moved, "entity", against=[HERO]), agent="agent-d"), "agent-d")
    result = call(app, "lambo_recall", agent_id=AGENT, query="query reads accounts", top_k=4)
    hits = [h["node_id"] for h in result["structuredContent"]["hits"]]
    assert len(hits) == 4
    assert node_by_content(tuned, HERO).uuid not in hits


def test_m_can_the_tick_starts_the_gc_clock_then_sweeps_by_elapsed_time_over_the_floor(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The first tick of a written session starts its GC clock (an event); a day later with
    at least gc_idle_floor mutations since, the tick sweeps with trigger `elapsed`; bumps
    beyond one chunk drain on the following ticks."""
    tuning = Tuning().with_values(daemon__gc_idle_floor=2)  # one derive: 3 mutations
    with make_workspace(Settings(workspace=tmp_path, tuning=tuning), embedder) as ws:
        app = App(ws)
        jobs = ws.memory.jobs_or_fail()
        assert jobs.tick() is None  # nothing written: no clock, no event
        assert ws.log.head(SESSION) == 0
        settled(app, derive(app, concept("the tick reads the session clock", "entity")))
        assert jobs.tick() is None
        started = canon.clock(ws.reader(), SESSION).last_gc_at
        assert started is not None
        _later(ws, 60 * 23)
        assert jobs.tick() is None  # under a day: the elapsed trigger waits
        _later(ws, 60 * 2)
        sweep = jobs.tick()
        assert sweep is not None
        assert sweep.trigger is Trigger.ELAPSED
        clock = canon.clock(ws.reader(), SESSION)
        assert clock.last_gc_epoch == clock.epoch
        assert clock.last_gc_at is not None
        assert clock.last_gc_at > started
        assert jobs.tick() is None  # no mutation since: under the floor


def args_now(jobs: Any, ws: Workspace) -> tuple[Any, ...]:
    return (SESSION, jobs.knobs, jobs.gc_knobs, jobs.cursors, ws.clock())


def test_adr_0045_jobs_plan_in_the_worker_process_and_decide_as_this_process_would(
    tuned: Workspace,
) -> None:
    """A cycle's and a sweep's plan come from the planning worker (another process, at a lower
    priority, which sees the calls being served and steps aside for them, yet ends) and equal
    the plan this process makes of the same snapshot."""
    app = App(tuned)
    _story(app)
    jobs = tuned.memory.jobs_or_fail()
    assert jobs.planner.path is not None
    here = job_planner.Planner(None, jobs.planner._reader)
    assert job_planner.WORKER.run(os.getpid) != os.getpid()
    assert job_planner.WORKER.run(os.nice, 0) == min(19, os.nice(0) + 10)  # below the server
    assert job_planner.WORKER.run(job_planner.calls_seen) == 0
    with job_planner.serving():  # a call being served: the worker sees it and steps aside
        assert job_planner.WORKER.run(job_planner.calls_seen) == 1
        later = args_now(jobs, tuned)
        assert jobs.planner.cycle(*later) == here.cycle(*later)
    assert job_planner.WORKER.run(job_planner.calls_seen) == 0
    now = tuned.clock()
    args = (SESSION, jobs.knobs, jobs.gc_knobs, jobs.cursors, now)
    assert jobs.planner.cycle(*args) == here.cycle(*args)
    swept = jobs.planner.sweep(SESSION, jobs.gc_knobs, now, Trigger.MUTATIONS)
    assert swept == here.sweep(SESSION, jobs.gc_knobs, now, Trigger.MUTATIONS)
    assert None not in swept.positions


def test_adr_0045_a_write_that_lands_while_a_sweep_is_planned_makes_it_plan_again(
    tuned: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot's plan is appended only while the projections are where it was read; a
    write in between (here: a new concept citing an under-bar Resource the snapshot would
    collect) makes the writer's batch plan again, on what it sees: the Resource is kept."""
    app = App(tuned)
    _story(app)
    lonely = "a vendor called Quillfeather once quoted for hosting"
    settled(app, derive(app, concept(lonely, "resource")))
    gone = node_by_content(tuned, lonely).uuid
    jobs = tuned.memory.jobs_or_fail()
    _sweeps(tuned, 3)
    _later(tuned, 60 * 24 * 400)
    assert gone in jobs.sweep(Trigger.MUTATIONS, dry_run=True).collected_ids
    planner = jobs.planner
    plan = planner.sweep

    def planned_then_written(*args: Any) -> job_planner.PlannedSweep:
        planned = plan(*args)
        assert gone in planned.sweep.collected_ids  # the snapshot would collect it
        citer = concept("the hosting shortlist cites the Quillfeather quote", depends_on=[gone])
        settled(app, derive(app, citer))
        return planned

    monkeypatch.setattr(planner, "sweep", planned_then_written)
    swept = jobs.sweep(Trigger.MUTATIONS)
    assert jobs.counters.sweeps_replanned == 1
    assert gone not in swept.collected_ids
    assert node_by_content(tuned, lonely).uuid == gone


@pytest.mark.minilm
def test_m_can_051_m_rec_223_collecting_either_concept_of_a_flagged_pair_removes_the_flag(
    tuned: Workspace,
) -> None:
    """A flagged pair (one value changed, a minute apart), a year on, both Logic under a score
    bar every concept fails and a cap of one a sweep: the flag spares neither (the first sweep
    collects one of the two, the next the other), and once one is collected the flag is
    gone."""
    app = App(tuned)
    older = "the release pins version 2.3 of the parser"
    newer = "the release pins version 2.4 of the parser"
    settled(app, derive(app, concept(older)))
    _later(tuned, 1)
    body = settled(app, derive(app, concept(newer)))
    assert "1 possible undeclared supersession(s) flagged" in body["detail"]
    pair = {node_by_content(tuned, older).uuid, node_by_content(tuned, newer).uuid}
    old_id = node_by_content(tuned, older).uuid
    assert state.possibly_superseded_by(tuned.reader(), SESSION, [old_id]) != {}
    jobs = _every_logic_concept_collectable(tuned)
    first = {c.node_id for c in jobs.sweep(Trigger.MUTATIONS).collected}
    assert len(first & pair) == 1
    assert state.possibly_superseded_by(tuned.reader(), SESSION, [old_id]) == {}
    second = {c.node_id for c in jobs.sweep(Trigger.MUTATIONS).collected}
    assert (first | second) & pair == pair


def test_m_der_038_a_reference_replayed_after_a_restart_is_still_fixed(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A write citing a concept by id is acked and left pending when the process closes (a
    durable intent); the cited concept is collected before that close. The next process
    replays the intent and the write fails on its receipt instead of linking something
    else: what the reference named was fixed when the call was accepted."""
    tuning = Tuning().with_values(daemon__gc_interval=1, daemon__gc_idle_floor=0)
    settings = Settings(workspace=tmp_path, tuning=tuning)
    cited = "the nightly job writes the audit table"
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept(cited)))
        cited_id = node_by_content(ws, cited).uuid
        jobs = _every_logic_concept_collectable(ws)
        with ws.memory.processor.paused():
            owed = derive(app, concept("the audit export reads it", depends_on=[cited_id]))
            swept = jobs.sweep(Trigger.MUTATIONS)
            assert [c.node_id for c in swept.collected] == [cited_id]
            ws.memory.close()  # as a clean shutdown does, with the write still pending
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = call(app, "lambo_stats", agent_id=AGENT, receipt=owed, wait_ms=20_000)
        receipt = body["structuredContent"]["receipt"]
        assert receipt["state"] == "failed", receipt
        assert "named a concept that was removed before the write was applied" in receipt["detail"]
        assert not state.concepts_with_content(ws.reader(), SESSION, "the audit export reads it")
