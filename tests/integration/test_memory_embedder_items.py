"""Writes while the embedder is down (seed 001 "Matching strategy", M-DER-131..135, M-ERR-003):
an embedder failure is injected into the real workspace's embedder; the write the worker
reaches fails on its receipt with nothing written, reads still answer, and a write left pending
at close is a durable intent the next process applies with its embedder back."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from lcg.queries.recall import EMBEDDER_DOWN
from tests.conftest import make_workspace
from tests.integration.test_memory_layers import QUIET, applied, tool
from tests.integration.test_memory_layers import derive as layer_derive
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    head,
    node_by_content,
    settled,
)

DOWN = "the embedder at 127.0.0.1:8080 refused the connection"
FAILED = (
    "store error: the embedder failed (ConnectionError); the detail was logged; nothing was"
    " written; the cause is transient, so nothing retries the write on this server, and the"
    " next server on this session replays it once"
)


class Outage:
    """The workspace embedder's `embed`, failing while `down` (a fault injected as the
    embedder being unreachable)."""

    def __init__(self, workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = True
        self.calls = 0
        model = workspace.embedder.inner
        self._embed = model.embed
        monkeypatch.setattr(model, "embed", self.embed)

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        if self.down:
            raise ConnectionError(DOWN)
        return self._embed(texts)


def test_m_der_132_m_err_003_a_write_the_worker_reaches_while_the_embedder_is_down_fails(
    app: App,
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Also M-DER-131: no concept is stored without its embedding. The receipt says failed and
    that nothing was written, naming no more than the error's type; the full detail (the
    embedder's own message) is logged server-side."""
    Outage(workspace, monkeypatch)
    before = state.counts(workspace.reader(), SESSION)
    with caplog.at_level(logging.ERROR):
        body = settled(app, derive(app, concept("the queue lives in rabbitmq")))
    assert (body["state"], body["detail"]) == ("failed", FAILED)
    assert DOWN not in body["detail"]
    assert state.counts(workspace.reader(), SESSION) == before
    assert not state.concepts_with_content(
        workspace.reader(), SESSION, "the queue lives in rabbitmq"
    )
    assert DOWN in caplog.text  # the traceback, with the embedder's own message
    assert body["id"] in caplog.text


def test_m_der_133_only_the_writes_reached_during_the_outage_fail(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One write before the outage, one during, one after: only the one during fails, and the
    one after applies as if nothing had happened."""
    assert settled(app, derive(app, concept("before the outage")))["state"] == "applied"
    outage = Outage(workspace, monkeypatch)
    assert settled(app, derive(app, concept("during the outage")))["state"] == "failed"
    outage.down = False
    assert settled(app, derive(app, concept("after the outage")))["state"] == "applied"
    reader = workspace.reader()
    for content, stored in (("before", 1), ("during", 0), ("after", 1)):
        found = state.concepts_with_content(reader, SESSION, f"{content} the outage")
        assert len(found) == stored, content


def test_m_der_135_a_server_whose_embedder_is_down_answers_reads_and_fails_writes(
    app: App,
    workspace: Workspace,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """lambo_recall answers from its keyword legs, with a warning saying the embedder failed
    (its detail logged, not shown); lambo_inspect and lambo_stats answer as before; a write
    settles failed. Also M-REC-024: recall works without a vector leg, on words alone."""
    settled(app, derive(app, concept("the cache lives in redis")))
    workspace.settle()
    outage = Outage(workspace, monkeypatch)
    with caplog.at_level(logging.ERROR):
        answer = call(
            app, "lambo_recall", agent_id=AGENT, query="where does the cache live in redis"
        )
    assert outage.calls == 1  # the query was sent to the embedder, which failed
    (hit,) = answer["structuredContent"]["hits"]
    assert hit["content"] == "the cache lives in redis"
    warning = (
        "recall: the embedder failed (ConnectionError), so this recall read the keyword and"
        " recent legs only, not by meaning; the detail was logged"
    )
    assert answer["structuredContent"]["warnings"] == [warning]
    assert DOWN not in answer["text"]
    assert DOWN in caplog.text
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=hit["node_id"])
    assert "the cache lives in redis" in inspected["text"]
    assert call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]["concept_count"] == 1
    assert settled(app, derive(app, concept("the queue lives in rabbitmq")))["state"] == "failed"


def test_m_der_134_a_write_not_attempted_at_close_waits_as_an_intent_for_the_next_process(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedder is down in the first process: the write its worker reaches fails; the one
    still pending at close is not attempted there, and the next process, its embedder back,
    applies it from its intent, in the order sent: the failed one first, its one replay
    being owed for its transient cause (M-STA-105, ADR 0108)."""
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        Outage(ws, monkeypatch)
        reached = derive(app, concept("reached during the outage"))
        assert settled(app, reached)["state"] == "failed"
        with ws.memory.processor.paused():
            owed = derive(app, concept("owed across the outage"))
            ws.memory.close()
        asked = call(app, "lambo_stats", agent_id=AGENT, receipt=owed)
        assert asked["structuredContent"]["receipt"]["state"] == "intent_durable"
        written = head(ws)
    monkeypatch.undo()
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = settled(app, owed)
        assert body["state"] == "applied_after_restart"
        assert settled(app, reached)["state"] == "applied_after_restart"
        node_by_content(ws, "owed across the outage")
        node_by_content(ws, "reached during the outage")
        outcome_seqs = [
            ws.reader()
            .execute("SELECT outcome_seq FROM memory_writes WHERE receipt=?", (receipt,))
            .fetchone()[0]
            for receipt in (reached, owed)
        ]
        assert outcome_seqs == sorted(outcome_seqs)  # replayed in the order sent
        assert head(ws) > written


def test_m_der_135_a_layered_recall_says_once_that_the_embedder_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query is embedded once for the session and its layers, so the merged recall has
    one such warning, and still finds each session's concept by its words."""
    settings = Settings(workspace=tmp_path, session="lambo", layers=("general",), tuning=QUIET)
    served = Service(settings, command="pytest")
    assert served.start() == "healthy", served.reason
    try:
        applied(served, layer_derive(served, "the general cache lives in redis", "general"))
        applied(served, layer_derive(served, "the project cache lives in redis"))
        assert served.app is not None
        Outage(served.app.workspace, monkeypatch)
        answer = tool(served, "lambo_recall", query="cache lives in redis")
        found = {hit["content"] for hit in answer["structuredContent"]["hits"]}
        assert found == {"the general cache lives in redis", "the project cache lives in redis"}
        said = [w for w in answer["structuredContent"]["warnings"] if "embedder failed" in w]
        assert said == [EMBEDDER_DOWN.format("ConnectionError")]
    finally:
        served.close()
