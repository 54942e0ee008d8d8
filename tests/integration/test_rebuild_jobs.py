"""Rebuild jobs (A-12, P-104, K-INV-016; ADR 0037): every replaying knowledge_rebuild_from_wal
is a job whose record knowledge_rebuild_status reads; background: true answers at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from lcg.domain.errors import Conflict
from lcg.interfaces.app import App
from lcg.interfaces.operations import BY_NAME
from lcg.interfaces.workspace import Workspace
from tests.conftest import make_call
from tests.integration.test_rebuild import snapshot, write_ten


def _status(call: Callable[..., dict[str, Any]], job_id: str) -> dict[str, Any]:
    return call("knowledge_rebuild_status", job_id=job_id)


def _until_done(call: Callable[..., dict[str, Any]], job_id: str) -> dict[str, Any]:
    for _ in range(500):
        found = _status(call, job_id)
        if found["status"] != "running":
            return found
        time.sleep(0.02)
    raise AssertionError(f"rebuild job {job_id} still running")


@pytest.fixture
def held(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The runner's replay waits until the test sets the event (a rebuild kept in flight)."""
    release = threading.Event()
    rebuild = workspace.writer.runner.rebuild

    def waiting(*args: Any, **kwargs: Any) -> int:
        assert release.wait(30)
        return rebuild(*args, **kwargs)

    monkeypatch.setattr(workspace.writer.runner, "rebuild", waiting)
    return release


def test_k_inv_016_rebuild_status_is_a_read_scope_tool() -> None:
    assert BY_NAME["knowledge_rebuild_status"].scope == "read"


def test_a_12_p_104_a_blocking_rebuild_returns_its_job_id_and_the_record_says_completed(
    app: App,
) -> None:
    call = make_call(app)
    write_ten(call)
    result = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    record = _status(call, result["job_id"])
    assert record["status"] == "completed"
    assert record["group_id"] == "g"
    assert record["mutations_replayed"] == result["mutations_replayed"] == 10
    assert (record["wal_files_processed"], record["wal_files_total"]) == (1, 1)
    assert record["error"] is None
    # The stepping clock moves a second a reading: start and finish are two readings apart or
    # more, the finish is before now, and a completed job's elapsed time no longer grows.
    elapsed = record["elapsed_seconds"]
    assert elapsed >= 1
    started = datetime.fromisoformat(record["start_time"])
    assert started + timedelta(seconds=elapsed) < app.workspace.clock()
    assert _status(call, result["job_id"])["elapsed_seconds"] == elapsed
    assert record["result"] == {k: v for k, v in result.items() if k != "job_id"}


def test_p_104_an_unknown_job_id_is_not_found(app: App) -> None:
    assert make_call(app)("knowledge_rebuild_status", job_id="nope") == {
        "job_id": "nope",
        "status": "not_found",
    }


def test_a_12_a_dry_run_is_no_job(app: App) -> None:
    call = make_call(app)
    write_ten(call)
    result = call("knowledge_rebuild_from_wal", group_id="g", from_seq=5, dry_run=True)
    assert "job_id" not in result


def test_a_12_a_background_rebuild_answers_running_then_completes(
    app: App, workspace: Workspace, held: threading.Event
) -> None:
    call = make_call(app)
    write_ten(call)
    before = snapshot(workspace.reader(), "g")
    started = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True, background=True)
    assert started == {"success": True, "job_id": started["job_id"], "status": "running"}
    assert _status(call, started["job_id"])["status"] == "running"
    again = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True, background=True)
    assert again["job_id"] == started["job_id"]  # the running job's id, no second rebuild
    held.set()
    record = _until_done(call, started["job_id"])
    assert record["status"] == "completed"
    assert record["result"]["mutations_replayed"] == 10
    assert snapshot(workspace.reader(), "g") == before


def test_a_12_a_background_rebuild_refused_by_its_checks_raises_at_once(app: App) -> None:
    call = make_call(app)
    write_ten(call)
    with pytest.raises(Conflict, match="force_clear"):
        call("knowledge_rebuild_from_wal", group_id="g", background=True)


def test_p_104_a_failed_rebuild_is_recorded_with_its_message(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = make_call(app)
    write_ten(call)

    def broken(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("disk on fire /secret/path")

    monkeypatch.setattr(workspace.writer.runner, "rebuild", broken)
    started = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True, background=True)
    record = _until_done(call, started["job_id"])
    assert record["status"] == "failed"
    assert record["error"] == "internal error (the server log has the details)"
    assert record["result"] is None


def test_close_waits_for_a_background_rebuild(
    app: App, workspace: Workspace, held: threading.Event
) -> None:
    call = make_call(app)
    write_ten(call)
    started = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True, background=True)
    threading.Timer(0.2, held.set).start()
    workspace.close()
    assert workspace.rebuild_jobs.status(started["job_id"])["status"] == "completed"
