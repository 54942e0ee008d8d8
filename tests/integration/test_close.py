"""Issue 9, F6: closing a workspace runs every step; a step that cannot write is logged.

A full disk or a read-only file made `faiss.write_index` raise inside `Workspace.close`,
which skipped the rest of close (the lease, the WAL, the graph connection) and left the
process exiting 1. What close cannot write is derivable and rebuilt at the next open.
"""

from __future__ import annotations

import logging

import faiss
import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_call, make_workspace


def test_f6_a_close_step_that_cannot_write_is_logged_and_every_other_step_runs(
    settings: Settings,
    embedder: Embedder,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ws = make_workspace(settings, embedder).open()
    call = make_call(App(ws))
    for index in range(3):
        call("knowledge_add_episode", name=f"e{index}", episode_body=f"note {index}")

    def disk_full(*_: object) -> None:
        raise RuntimeError("fwrite: No space left on device")

    monkeypatch.setattr(faiss, "write_index", disk_full)
    with caplog.at_level(logging.ERROR):
        ws.close()  # does not raise
    assert "vectors could not be released" in caplog.text
    assert "No space left on device" in caplog.text
    monkeypatch.undo()
    # The lease, the WAL and the graph were released: the next open works and sees it all.
    with make_workspace(settings, embedder) as again:
        episodes = make_call(App(again))("knowledge_get_episodes", group_id="liminis")
        assert episodes["count"] == 3
        found = make_call(App(again))("knowledge_search_passages", query="note 2", min_score=0.0)[
            "passages"
        ]
        assert found
        assert found[0]["name"] == "e2"
