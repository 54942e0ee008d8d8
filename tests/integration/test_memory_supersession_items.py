"""Possibly superseded, not declared (seed 001, M-REC-212..225; #198): which pairs a write
flags, which one is the replacement, and what the flag leaves alone. MiniLM: the flag needs
a near match by meaning."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

pytestmark = pytest.mark.minilm

FLAGGED = "possible undeclared supersession(s) flagged"
V23 = "the release pins version 2.3 of the parser"
V24 = "the release pins version 2.4 of the parser"
V25 = "the release pins version 2.5 of the parser"
QUESTION = "which parser version does the release pin?"


def _flags(app: App, first: dict[str, Any], second: dict[str, Any]) -> bool:
    settled(app, derive(app, first))
    return FLAGGED in settled(app, derive(app, second))["detail"]


def _hits(app: App, query: str = QUESTION, **extra: Any) -> list[dict[str, Any]]:
    answer = call(app, "lambo_recall", agent_id=AGENT, query=query, **extra)
    hits: list[dict[str, Any]] = answer["structuredContent"]["hits"]
    return hits


def test_m_rec_212_a_change_before_the_predicate_is_not_flagged(app: App) -> None:
    assert not _flags(
        app, concept("J1 round-1 verdict: accepted"), concept("J2 round-1 verdict: accepted")
    )


def test_m_rec_213_two_values_changed_at_once_are_not_flagged(app: App) -> None:
    assert not _flags(
        app,
        concept("the importer listens on port 8080 with 4 workers"),
        concept("the importer listens on port 8081 with 5 workers"),
    )


def test_m_rec_214_a_backfilled_write_about_an_older_time_is_the_older_one(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(V24), event_time="2025-06-01T00:00:00Z"))
    body = settled(app, derive(app, concept(V23), event_time="2025-03-01T00:00:00Z"))
    assert FLAGGED in body["detail"]
    older, newer = node_by_content(workspace, V23), node_by_content(workspace, V24)
    assert state.possibly_superseded_by(workspace.reader(), SESSION, [older.uuid]) == {
        older.uuid: newer.uuid
    }
    assert state.possibly_superseded_by(workspace.reader(), SESSION, [newer.uuid]) == {}


def test_m_rec_215_two_concepts_dated_alike_are_not_flagged(app: App) -> None:
    at = "2025-06-01T00:00:00Z"
    settled(app, derive(app, concept(V23), event_time=at))
    assert FLAGGED not in settled(app, derive(app, concept(V24), event_time=at))["detail"]


def _with_line(settings: Settings, embedder: Embedder) -> Any:
    tuned = settings.tuning.with_values(embedder__suspected_supersession_line="on")
    return make_workspace(dataclasses.replace(settings, tuning=tuned), embedder)


def test_m_rec_218_the_flag_adds_nothing_past_top_k_and_changes_no_score(
    settings: Settings, embedder: Embedder
) -> None:
    seen = []
    for value in ("on", "off"):
        tuned = settings.tuning.with_values(embedder__suspected_supersession_line=value)
        where = dataclasses.replace(settings, workspace=settings.workspace / value, tuning=tuned)
        with make_workspace(where, embedder) as ws:
            app = App(ws)
            settled(app, derive(app, concept(V23)))
            settled(app, derive(app, concept(V24)))
            ws.settle()
            hits = _hits(app, "version 2.3", top_k=1)
            assert len(hits) == 1
            seen.append([(h["content"], round(h["score"], 6), h["is_canonical"]) for h in hits])
    assert seen[0] == seen[1]


def test_m_rec_216_the_line_is_shown_only_beside_the_newer_hit(
    settings: Settings, embedder: Embedder
) -> None:
    with _with_line(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept(V23)))
        settled(app, derive(app, concept(V24)))
        ws.settle()
        older = node_by_content(ws, V23)
        alone = call(app, "lambo_recall", agent_id=AGENT, query="version 2.3", top_k=1)
        assert [h["node_id"] for h in alone["structuredContent"]["hits"]] == [older.uuid]
        assert "Possibly superseded" not in alone["text"]


def test_m_rec_217_at_most_one_line_per_hit_naming_the_newest(
    settings: Settings, embedder: Embedder
) -> None:
    with _with_line(settings, embedder) as ws:
        app = App(ws)
        for text in (V23, V24, V25):
            settled(app, derive(app, concept(text)))
        ws.settle()
        answer = call(app, "lambo_recall", agent_id=AGENT, query=QUESTION, top_k=3)
        older = node_by_content(ws, V23)
        (block,) = [b for b in answer["text"].split("\n\n") if b.startswith(V23)]
        lines = [line for line in block.split("\n") if "Possibly superseded" in line]
        assert len(lines) <= 1
        by_id = {h["node_id"]: h for h in answer["structuredContent"]["hits"]}
        assert by_id[older.uuid]["possibly_superseded_by"] in {
            node_by_content(ws, V25).uuid,
            node_by_content(ws, V24).uuid,
        }


def test_m_rec_225_m_stl_013_a_possibly_superseded_pair_makes_nothing_stale(app: App) -> None:
    settled(app, derive(app, concept(V23)))
    settled(app, derive(app, concept("the nightly build reads it", depends_on=[V23])))
    assert FLAGGED in settled(app, derive(app, concept(V24)))["detail"]
    stale = call(app, "lambo_stale", agent_id=AGENT)["structuredContent"]
    assert stale["total"] == 0
    assert all("Rests on" not in line for line in _hits_text(app))


def _hits_text(app: App) -> list[str]:
    answer = call(app, "lambo_recall", agent_id=AGENT, query="nightly build parser version")
    return str(answer["text"]).split("\n")


def test_m_lim_041_at_most_three_replacement_candidates_per_new_concept(app: App) -> None:
    """Also M-DER-112: at most 3 per new concept, closest first."""
    for minor in (1, 3, 5, 7, 9):
        settled(app, derive(app, concept(f"the release pins version 2.{minor} of the parser")))
    body = settled(app, derive(app, concept(V24)))
    listed = body["replacement_candidates"]
    assert len(listed["candidates"]) == 3
    assert listed["total"] >= 3
    cosines = [c["cosine"] for c in listed["candidates"]]
    assert cosines == sorted(cosines, reverse=True)  # closest first


def _two_receipts_across_a_restart(
    settings: Settings, embedder: Embedder
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A write with a replacement candidate and one with a stale report, each answered
    before and after a restart: (replacing, contradicting) fresh, then recovered."""
    vendored = "the parser is vendored"
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept(V23)))
        settled(app, derive(app, concept(vendored, "entity")))
        settled(app, derive(app, concept("the nightly build reads it", depends_on=[vendored])))
        replacing = derive(app, concept(V24))
        contradicting = derive(app, concept("the parser is fetched", against=[vendored]))
        fresh = [settled(app, r) for r in (replacing, contradicting)]
    assert fresh[0]["replacement_candidates"]["total"] == 1
    assert fresh[1]["stale_report"]["total"] == 1
    with make_workspace(settings, embedder) as ws:
        recovered = [settled(App(ws), r) for r in (replacing, contradicting)]
    for body in recovered:
        assert body["state"] == "applied_after_restart"
    return fresh[0], fresh[1], recovered[0], recovered[1]


def test_m_stl_019_a_receipt_recovered_after_a_restart_keeps_its_summary_not_stale_rows(
    settings: Settings, embedder: Embedder
) -> None:
    _, fresh, _, recovered = _two_receipts_across_a_restart(settings, embedder)
    assert recovered["detail"] == fresh["detail"]
    assert "stale_report" not in recovered


def test_m_der_123_a_receipt_recovered_after_a_restart_keeps_no_candidate_rows(
    settings: Settings, embedder: Embedder
) -> None:
    fresh, _, recovered, _ = _two_receipts_across_a_restart(settings, embedder)
    assert recovered["detail"] == fresh["detail"]
    assert "replacement_candidates" not in recovered
