"""A demoted concept's history and a contradiction's lapse in recall (seed 001 "Superseded
concepts" and "Contradiction warnings"; canonization.md): on a real workspace with a settable
clock, the canonization cycle and GC sweeps run as jobs that append events."""

from __future__ import annotations

import dataclasses

from lcg.interfaces.workspace import Workspace
from tests.integration.test_memory_canonization_jobs import (
    AGENTS,
    HERO,
    _later,
    _recall_hit,
    _status,
    _superseded_hero,
    _sweeps,
    tuned,
)
from tests.integration.test_memory_writes import AGENT, call, concept, derive, settled

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
