"""A write that failed for a transient cause is replayed once by the next server (M-STA-105,
M-STA-106, ADR 0108): the embedder's outage is injected into the real workspace's embedder
(as tests/integration/test_memory_embedder_items.py does), and each "server" is a workspace
opened on the same files after the previous one closed."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pytest

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from lcg.queries.session_verify import verify_session
from tests.conftest import make_workspace
from tests.helpers.memory_log import outcomes_per_receipt, session_events
from tests.integration.test_memory_embedder_items import DOWN
from tests.integration.test_memory_embedder_items import FAILED as OWED
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)
from tests.integration.test_property_memory_rebuild import dump_all, graph_of

FOR_GOOD = (
    "store error: the embedder failed (ConnectionError) again when this server replayed the"
    " write; the detail was logged; nothing was written, and the write has failed for good:"
    " it is not replayed again"
)
WAIT_S = 10.0


class Embedding:
    """The workspace embedder's `embed`, down (raising), held (blocking a text that holds
    `hold_on` until released) or up; it records every text it was asked for. The embedder
    object is shared by the workspaces a test opens, so the fault spans its "servers"."""

    def __init__(self, embedder: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
        self.down = True
        self.hold_on: str | None = None
        self.reached = threading.Event()
        self.release = threading.Event()
        self.texts: list[str] = []
        self._embed = embedder.embed
        monkeypatch.setattr(embedder, "embed", self.embed)

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts.extend(texts)
        if self.hold_on is not None and any(self.hold_on in text for text in texts):
            self.reached.set()
            assert self.release.wait(WAIT_S), "the test never released the held embedding"
        if self.down:
            raise ConnectionError(DOWN)
        return self._embed(texts)

    def asked_for(self, content: str) -> int:
        return sum(content in text for text in self.texts)


def stats(app: App, **params: Any) -> dict[str, Any]:
    found: dict[str, Any] = call(app, "lambo_stats", agent_id=AGENT, **params)["structuredContent"]
    return found


def row_state(ws: Workspace, receipt: str) -> str:
    row = state.write(ws.reader(), receipt)
    assert row is not None
    return row.state


def fail_while_down(ws: Workspace, embedding: Embedding, content: str) -> str:
    """A derive of `content` the embedder fails in this server: it answers failed, says the
    next server replays it, and nothing retries it here (a write after the outage applies,
    the failed one stays failed and its text is not embedded again)."""
    app = App(ws)
    receipt = derive(app, concept(content))
    body = settled(app, receipt)
    assert (body["state"], body["detail"]) == ("failed", OWED)
    embedding.down = False
    assert settled(app, derive(app, concept("a write after the outage")))["state"] == "applied"
    assert settled(app, receipt)["state"] == "failed"
    assert row_state(ws, receipt) == state.FAILED_TRANSIENT
    assert not state.concepts_with_content(ws.reader(), SESSION, content)
    assert embedding.asked_for(content) == 1
    figures = stats(app)
    assert (figures["write_queue_failed"], figures["write_queue_replay_owed"]) == (1, 0)
    assert figures["log_depth"] == 1  # recorded, not applied: owed to the next server
    report = verify_session(ws.reader(), ws.log, SESSION, ws.clock())
    assert (report.ok, report.pending_receipts) == (True, 1), report.problems
    return receipt


def test_m_sta_105_a_write_failed_while_the_embedder_was_down_is_replayed_by_the_next_server(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the server where the embedder failed it the write answers failed, saying the next
    server replays it; the next server, its embedder back, owes it (write_queue_replay_owed,
    the receipt answers pending_replay) until it applies it from its intent: the receipt then
    answers applied_after_restart, recall finds the concept, write_queue_replayed counts it;
    the log holds its owed failure and its outcome, which lambo session verify accepts."""
    embedding = Embedding(embedder, monkeypatch)
    content = "the queue lives in rabbitmq"
    with make_workspace(settings, embedder) as ws:
        receipt = fail_while_down(ws, embedding, content)
    embedding.hold_on = content  # the next server's replay waits in the embedder
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        assert embedding.reached.wait(WAIT_S)
        figures = stats(app, receipt=receipt)
        assert figures["receipt"]["state"] == "pending_replay"
        assert (figures["write_queue_replay_owed"], figures["write_queue_replayed"]) == (1, 0)
        embedding.release.set()
        body = settled(app, receipt)
        assert body["state"] == "applied_after_restart"
        assert body["created_count"] == 1
        figures = stats(app)
        assert (figures["write_queue_replay_owed"], figures["write_queue_replayed"]) == (0, 1)
        assert figures["log_depth"] == 0
        assert (figures["write_queue_applied"], figures["write_queue_failed"]) == (0, 0)
        assert node_by_content(ws, content).uuid in body["created"]
        ws.settle()
        hits = call(app, "lambo_recall", agent_id=AGENT, query="where does the queue live")
        assert content in {hit["content"] for hit in hits["structuredContent"]["hits"]}
        report = verify_session(ws.reader(), ws.log, SESSION, ws.clock())
        assert report.ok, report.problems
    assert outcomes_per_receipt(session_events(settings.workspace, SESSION))[receipt] == 2
    with make_workspace(settings, embedder) as ws:  # a third server: nothing more to do
        assert settled(App(ws), receipt)["state"] == "applied_after_restart"
        assert stats(App(ws))["write_queue_replayed"] == 0
    assert embedding.asked_for(content) == 2


def test_m_sta_106_a_write_failing_transiently_again_at_its_replay_fails_for_good(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next server replays the write while the embedder is still down: it fails again
    and for good (the receipt says so), and a third server, its embedder back, does not try
    it (its text is never embedded there, the receipt answers failed, nothing is stored)."""
    embedding = Embedding(embedder, monkeypatch)
    content = "the cache lives in redis"
    with make_workspace(settings, embedder) as ws:
        receipt = fail_while_down(ws, embedding, content)
    embedding.down = True
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = settled(app, receipt)
        assert (body["state"], body["detail"]) == ("failed", FOR_GOOD)
        figures = stats(app)
        assert (figures["write_queue_replay_owed"], figures["write_queue_failed"]) == (0, 1)
        assert row_state(ws, receipt) == "failed"
    asked = embedding.asked_for(content)
    embedding.down = False
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        assert settled(app, derive(app, concept("a later write")))["state"] == "applied"
        body = settled(app, receipt)
        assert (body["state"], body["detail"]) == ("failed", FOR_GOOD)
        assert stats(app)["write_queue_replay_owed"] == 0
        assert not state.concepts_with_content(ws.reader(), SESSION, content)
    assert embedding.asked_for(content) == asked
    assert outcomes_per_receipt(session_events(settings.workspace, SESSION))[receipt] == 2


def test_m_sta_105_a_permanent_failure_is_never_replayed(
    settings: Settings, embedder: Embedder
) -> None:
    """A write refused on apply by a rule (a cycle a write in between closed) fails for good:
    the next server neither owes nor tries it, and its receipt answers failed there."""
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept("auth", "entity"), concept("tokens", "entity")))
        with ws.memory.processor.paused():
            derive(
                app, concept("auth", "entity"), parent_of=[{"parent": "auth", "child": "tokens"}]
            )
            refused = derive(
                app, concept("tokens", "entity"), parent_of=[{"parent": "tokens", "child": "auth"}]
            )
        assert settled(app, refused)["state"] == "failed"
        assert row_state(ws, refused) == "failed"
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        assert stats(app)["write_queue_replay_owed"] == 0
        body = settled(app, refused)
        assert body["state"] == "failed"
        assert "cycle" in body["detail"]
        assert ws.memory.processor.replays.owed(ws.reader())[0] == []
    assert outcomes_per_receipt(session_events(settings.workspace, SESSION))[refused] == 1


def test_m_sta_105_106_a_rebuild_shows_the_owed_failure_and_its_replay_as_the_log_has_them(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state lives in the events: a full rebuild equals the live projection, and the
    session rebuilt to the seq of the owed failure shows the write failed_transient, to the
    head applied; a bounded rebuild pins the session, so nothing replays it meanwhile."""
    embedding = Embedding(embedder, monkeypatch)
    content = "the lease lasts 45 seconds"
    with make_workspace(settings, embedder) as ws:
        receipt = fail_while_down(ws, embedding, content)
    (failed_at,) = [
        e.seq
        for e in session_events(settings.workspace, SESSION)
        if e.topic == "memory_write_failed" and e.payload["receipt"] == receipt
    ]
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        assert settled(app, receipt)["state"] == "applied_after_restart"
        live = dump_all(ws.reader())
        rebuilt = operations.dispatch(
            app, "knowledge_rebuild_from_wal", {"group_id": SESSION, "force_clear": True}
        )
        assert not rebuilt.get("isError"), rebuilt
        assert dump_all(ws.reader()) == live
        with graph_of(ws, SESSION, failed_at) as conn:
            (row,) = conn.execute("SELECT state FROM memory_writes WHERE receipt=?", (receipt,))
            assert row[0] == state.FAILED_TRANSIENT
        with graph_of(ws, SESSION, ws.log.head(SESSION)) as conn:
            (row,) = conn.execute("SELECT state FROM memory_writes WHERE receipt=?", (receipt,))
            assert row[0] == "applied"


def test_m_sta_139_a_durable_intent_the_embedder_fails_at_startup_stays_owed(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also M-STA-105, M-STA-108: a write left pending at a clean shutdown is replayed by the
    next server while the embedder is down there: its receipt answers failed, saying the next
    server replays it, and write_queue_replay_owed stays at 1 (nothing was discarded); the
    server after that, its embedder back, applies it (its one replay)."""
    embedding = Embedding(embedder, monkeypatch)
    embedding.down = False
    content = "the index rebuilds nightly"
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        with ws.memory.processor.paused():
            receipt = derive(app, concept(content))
            ws.memory.close()
        assert stats(app, receipt=receipt)["receipt"]["state"] == "intent_durable"
    embedding.down = True
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = settled(app, receipt)
        assert (body["state"], body["detail"]) == ("failed", OWED)
        figures = stats(app)
        assert (figures["write_queue_replay_owed"], figures["write_queue_failed"]) == (1, 1)
        assert row_state(ws, receipt) == state.FAILED_TRANSIENT
    embedding.down = False
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        assert settled(app, receipt)["state"] == "applied_after_restart"
        figures = stats(app)
        assert (figures["write_queue_replay_owed"], figures["write_queue_replayed"]) == (0, 1)
        assert figures["log_depth"] == 0
        node_by_content(ws, content)
    assert embedding.asked_for(content) == 2
