"""lambo_stats's flush figures and embedding line no other test proves (seed 001, M-STA-025..027,
M-STA-052, M-STA-056), on a real workspace through the one dispatch. Here every acked write is
in the log at its ack (ADR 0026): what waits for a flush is the access counts recalls leave
behind (ADR 0027), so they are the batch a store can reject."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.faults import StorageFailure
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import AGENT, call, concept, derive, head, settled


def _stats(app: App) -> dict[str, Any]:
    payload: dict[str, Any] = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    return payload


class _RejectingWriter:
    """The store refusing a batch outright (a fault injected at the service's writer)."""

    def execute(self, work: object) -> None:
        raise StorageFailure("graph.sqlite", "write", "database or disk is full")


def test_m_sta_026_027_a_rejected_batch_is_dropped_out_of_the_lag_and_counted_dead_lettered(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The access counts a recall left wait for the log; the store rejects their batch: the
    lag falls back under 100 ms although the batch never reached the store, and only
    `dead_lettered` (0 before, 1 after) says so."""
    memory = workspace.memory
    settled(app, derive(app, concept("the cache is content addressed")))
    workspace.settle()
    memory.processor.periodic.remove(memory.flush_accesses)  # flushed by hand below
    try:
        call(app, "lambo_recall", agent_id=AGENT, query="content addressed cache")
        time.sleep(0.15)
        waiting = _stats(app)
        assert waiting["flush_lag_ms"] >= 150
        assert waiting["dead_lettered"] == 0
        before = head(workspace)
        with monkeypatch.context() as patch:
            patch.setattr(memory, "_writer", _RejectingWriter)
            with pytest.raises(StorageFailure):
                memory.flush_accesses(min_age=0.0)
        rejected = _stats(app)
        assert head(workspace) == before
        assert (rejected["flush_depth"], rejected["dead_lettered"]) == (0, 1)
        assert rejected["flush_lag_ms"] < 100
    finally:
        memory.processor.periodic.append(memory.flush_accesses)


def test_m_sta_056_the_text_ends_with_the_contract_and_modalities(app: App) -> None:
    answer = call(app, "lambo_stats", agent_id=AGENT)
    contract = answer["structuredContent"]["embedding_contract"]
    last = answer["text"].split("\n")[-1]
    assert (
        last
        == f"embedding: {contract['kind']} {contract['model']} {contract['dim']}-d; modalities text"
    )


def test_m_sta_052_a_session_always_reports_the_servers_contract(tmp_path: Path) -> None:
    """A fresh session is served under the server's contract, and a session written under
    one contract, then opened by a server of another, reports the server's (its vectors are
    rebuilt in that space, ADR 0010) and is recalled there."""
    narrow, wide = HashingEmbedder(dim=64), HashingEmbedder(dim=128)
    settings = Settings(workspace=tmp_path)
    with make_workspace(settings, narrow) as ws:
        app = App(ws)
        assert _stats(app)["embedding_contract"]["dim"] == 64
        settled(app, derive(app, concept("the cache is content addressed")))
    with make_workspace(settings, wide) as ws:
        app = App(ws)
        assert _stats(app)["embedding_contract"] == {
            "kind": wide.contract.kind,
            "model": wide.contract.model,
            "dim": 128,
        }
        recalled = call(app, "lambo_recall", agent_id=AGENT, query="content addressed cache")
        (hit,) = recalled["structuredContent"]["hits"]
        assert hit["content"] == "the cache is content addressed"
        assert "vector" in hit["ranks"]  # found in the new space too
