"""A demoted concept's history and a contradiction's lapse in recall (seed 001 "Superseded
concepts" and "Contradiction warnings"; canonization.md): on a real workspace with a settable
clock, the canonization cycle and GC sweeps run as jobs that append events."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lcg.domain.events import GcSwept
from lcg.domain.memory.gc import Trigger
from lcg.domain.memory.records import Collected, SweepFigures
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.memory import state
from lcg.queries import memory_recall
from tests.integration.test_memory_canonization_jobs import (
    AGENTS,
    HERO,
    _every_logic_concept_collectable,
    _later,
    _recall_hit,
    _status,
    _superseded_hero,
    _sweeps,
    tuned,
)
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

__all__ = ["tuned"]  # the fixture, used by name


def test_m_rec_234_a_later_budget_demotion_replaces_the_superseded_line(
    tuned: Workspace,
) -> None:
    """The hero is demoted by supersession (recall shows its Superseded line), then earns
    newer support of its own from three agents, is Canonical again, and is demoted once more,
    by the budget: recall then shows no Superseded line, and inspect names the budget."""
    app, hero, _ = _superseded_hero(tuned)
    assert "⤓ Superseded at " in _recall_hit(app, hero)["text"]
    jobs = tuned.memory.jobs_or_fail()
    for index, agent in enumerate(AGENTS):
        _later(tuned, 30)
        citer = concept(f"{agent} report {index} joins the accounts table", depends_on=[HERO])
        settled(app, derive(app, citer, agent=agent), agent)
    _later(tuned, 10)
    _sweeps(tuned, 3)
    for _ in range(4):
        if _status(tuned, hero) == "Canonical":
            break
        jobs.run_cycle()
    assert _status(tuned, hero) == "Canonical"
    assert "⤓ Superseded at " not in _recall_hit(app, hero)["text"]  # Canonical again
    jobs.knobs = dataclasses.replace(jobs.knobs, max_canonical_nodes=0)
    (demotion,) = [h for h in jobs.run_cycle() if h.node_id == hero]
    assert (demotion.to_status.value, demotion.cause.value) == ("None", "budget")
    shown = _recall_hit(app, hero)
    assert shown["hit"]["is_canonical"] is False
    assert "⤓ Superseded at " not in shown["text"]
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=hero)
    assert inspected["text"].split("\n")[-1].endswith(": budget")


LEDGER = "the billing ledger is kept in postgres"
MIGRATED = "we migrated everything to mongodb last spring"


def _ledger_hit(app: App) -> tuple[list[str], str]:
    """(the recall's hit ids, the ledger block's lines) for a query naming the ledger."""
    result = call(app, "lambo_recall", agent_id=AGENT, query="billing ledger postgres", top_k=1)
    text = str(result["text"])
    (block,) = [b for b in text.split("\n\n") if b.startswith(LEDGER)]
    return [h["node_id"] for h in result["structuredContent"]["hits"]], block


NEAR = (  # what the query ranks between the ledger and the correction
    "the billing ledger exports a monthly csv report",
    "billing ledger backups run nightly at two",
    "the billing ledger is audited each quarter",
    "the billing ledger archive moves to cold storage yearly",
    "refunds are booked to the billing ledger",
    "the billing ledger rounds totals to cents",
)


def _contradicted_ledger(tuned: Workspace, *, outranked: bool = False) -> tuple[App, str, str]:
    """The ledger (an Entity) and a Logic concept agent-d wrote against it, two minutes on:
    recall warns on the ledger and shows the correction beside it. `outranked`: six later
    concepts the query matches rank between them, so a recall reads the correction only as
    the ledger's correction, not as a ranked hit."""
    app = App(tuned)
    settled(app, derive(app, concept(LEDGER, "entity")))
    _later(tuned, 1)
    body = derive(app, concept(MIGRATED, against=[LEDGER]), agent="agent-d")
    settled(app, body, "agent-d")
    for text in NEAR if outranked else ():
        settled(app, derive(app, concept(text, "entity")))
    _later(tuned, 2)
    ledger, migrated = node_by_content(tuned, LEDGER).uuid, node_by_content(tuned, MIGRATED).uuid
    hits, block = _ledger_hit(app)
    assert hits == [ledger, migrated]
    assert f'by agent-d: "{MIGRATED}" (id {migrated[:8]})' in block
    return app, ledger, migrated


def test_m_can_052_a_collected_contradicting_concept_takes_its_warning_with_it(
    tuned: Workspace,
) -> None:
    """The daemon lists the ledger as contradicted. Newer support from agent-a ages in, which
    also ends the correction's protection (#197), and a sweep a year on collects the
    correction (every Logic concept is under the bar) but not the ledger. The daemon's list,
    not ticked since, still names the ledger, yet its recall shows no Contradicted line and
    no correction beside it; the next tick drops it from the list."""
    app, ledger, migrated = _contradicted_ledger(tuned)
    jobs = tuned.memory.jobs_or_fail()
    jobs.tick()
    assert ledger in (jobs.contradiction_list or ())
    reader = concept("the invoice job reads the billing ledger", "entity", depends_on=[LEDGER])
    settled(app, derive(app, reader, agent="agent-a"), "agent-a")
    _later(tuned, 2)
    jobs = _every_logic_concept_collectable(tuned)
    collected = {c.node_id for c in jobs.sweep(Trigger.MUTATIONS).collected}
    assert migrated in collected
    assert ledger not in collected
    assert ledger in (jobs.contradiction_list or ())  # the list from before the sweep
    hits, block = _ledger_hit(app)
    assert migrated not in hits
    assert "⚠ Contradicted" not in block
    jobs.tick()
    assert ledger not in (jobs.contradiction_list or ())


def test_m_can_052_a_recall_the_collection_lands_during_reads_one_snapshot(
    tuned: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concept is never removed while a recall still references it: a sweep collecting the
    correction (its event appended, as the jobs append one) lands while a recall is between
    reading the contradiction and reading the correction, which only its Contradicts edge
    brings in (six concepts outrank it). That recall reads one snapshot, so it still quotes
    the correction and shows it beside the ledger; the next recall has neither the line nor
    the correction (the edge went with the concept), so no line is left naming a concept
    that is gone. The line's by-id form for a removed concept is rendered by
    context.contradicted_line (tests/unit/test_memory_context.py)."""
    app, ledger, migrated = _contradicted_ledger(tuned, outranked=True)
    jobs = tuned.memory.jobs_or_fail()
    contradicted = memory_recall._contradicted
    swept: list[str] = []

    def then_collected(*args: Any) -> Any:
        found = contradicted(*args)
        if not swept:
            swept.append(migrated)
            figures = SweepFigures(1, 0, 1, False, 0, 0)
            collected = (Collected(migrated, "orphan"),)
            event = GcSwept(tuned.clock(), "mutations", collected, [], [], figures, 0)
            jobs._execute(lambda ctx: ctx.append(SESSION, [event]))
        return found

    monkeypatch.setattr(memory_recall, "_contradicted", then_collected)
    hits, block = _ledger_hit(app)
    assert swept == [migrated]
    assert hits == [ledger, migrated]
    assert f'by agent-d: "{MIGRATED}" (id {migrated[:8]})' in block
    hits, block = _ledger_hit(app)
    assert hits == [ledger]
    assert "⚠ Contradicted" not in block


def test_m_can_053_m_rec_233_a_superseded_line_quotes_the_superseding_concept_while_in_memory(
    tuned: Workspace,
) -> None:
    """The hero, demoted by supersession, is shown with the superseding concept quoted in its
    recall line and on inspect's last demotion line; once a sweep collects that concept (its
    event appended as the jobs append one), both name it by id alone."""
    app, hero, superseding = _superseded_hero(tuned)
    moved = "accounts moved to the tenants table"
    quoted = f'"{moved}" (id {superseding[:8]})'
    assert f"by {quoted}" in _recall_hit(app, hero)["text"]
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=hero)["text"]
    assert inspected.split("\n")[-1].endswith(f": superseded by {quoted}")
    jobs = tuned.memory.jobs_or_fail()
    figures = SweepFigures(1, 0, 1, False, 0, 0)
    event = GcSwept(
        tuned.clock(), "mutations", (Collected(superseding, "orphan"),), [], [], figures, 0
    )
    jobs._execute(lambda ctx: ctx.append(SESSION, [event]))
    assert not state.concepts_with_content(tuned.reader(), SESSION, moved)
    text = _recall_hit(app, hero)["text"]
    (line,) = [line for line in text.split("\n") if line.startswith("⤓ Superseded at ")]
    assert line.endswith(f"by a removed concept (id {superseding[:8]})")
    assert moved not in text
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=hero)["text"]
    assert inspected.split("\n")[-1].endswith(f": superseded by (id {superseding[:8]})")
