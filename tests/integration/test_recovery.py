"""knowledge_recover and knowledge_recover_full (P-139, K-REC-001/002, K-RDY-008/009; ADR 0038)
on real workspaces through the serving process's one dispatch (`Service`), degraded or not."""

from __future__ import annotations

import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lcg.commands import recovery
from lcg.domain.errors import Conflict
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import UNAVAILABLE, RpcError
from lcg.interfaces.operations import BY_NAME
from lcg.interfaces.service import Service
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_call, make_workspace
from tests.integration.test_wal_identity import add_episodes


def _episodes(service: Service, group: str = "g") -> list[str]:
    found = service.call("knowledge_get_episodes", {"group_id": group, "last_n": 50})
    return sorted(e["name"] for e in found["episodes"])


def _head(service: Service, group: str = "g") -> int:
    """The group's WAL head, as the healthy service's status reports it."""
    return int(service.call("knowledge_status", {})["wal_groups"][group]["max_seq"])


@pytest.fixture
def behind(settings: Settings, embedder: Embedder, tmp_path: Path) -> Settings:
    """A workspace whose WAL was put back from an older copy: its projections are ahead of it,
    so it cannot open (F1, ADR 0019) and the service starts degraded."""
    add_episodes(settings, embedder, "g", "a", "b")
    older = tmp_path / "older-wal.sqlite"
    shutil.copy(settings.wal_path, older)
    add_episodes(settings, embedder, "g", "c")
    shutil.copy(older, settings.wal_path)
    return settings


def _service(settings: Settings) -> Service:
    service = Service(settings, command="lcg test")
    service.start()
    return service


def test_k_rec_002_k_rdy_008_009_degraded_service_answers_health_and_recovers_from_the_wal(
    behind: Settings,
) -> None:
    """Also K-STA-009: `knowledge_status` answers while the service is not ready (degraded:
    other reads are refused), so it can be polled for readiness."""
    service = _service(behind)
    try:
        assert service.state == "degraded"
        assert service.call("health_check", None)["state"] == "degraded"
        with pytest.raises(RpcError) as refused:
            service.call("knowledge_get_episodes", {"group_id": "g"})
        assert refused.value.code == UNAVAILABLE
        status = service.call("knowledge_status", {})
        assert status["degraded"] is True
        assert [r.split(":")[0] for r in status["recovery_available"]] == [
            "knowledge_recover {strategy",
            "knowledge_recover {strategy",
        ]
        assert "rebuild_from_workspace_wal" in status["recovery_available"][0]
        result = service.call("knowledge_recover", {"strategy": "rebuild_from_workspace_wal"})
        assert result["success"] is True
        assert result["restart_required"] is False
        assert result["strategy"] == "rebuild_from_workspace_wal"
        assert any(p.startswith(".lcg/graph.sqlite.recovered-") for p in result["set_aside"])
        assert service.call("health_check", None)["state"] == "healthy"
        assert _episodes(service) == ["a", "b"]  # what the log holds: every logged event
        assert _head(service) == 2  # the WAL was not touched: a and b, as it held them
        for kept in result["set_aside"]:
            assert (behind.workspace / kept).exists()  # set aside, never deleted
    finally:
        service.close()


def test_p_139_recover_full_rebuilds_a_degraded_workspace_and_is_a_no_op_when_healthy(
    behind: Settings,
) -> None:
    service = _service(behind)
    try:
        full = service.call("knowledge_recover_full", {})
        assert full["success"] is True
        assert full["recovery_needed"] is True
        assert full["episodes_before"] == 3  # graph.sqlite held a, b and c
        assert full["episodes_after"] == 2
        assert full["mutations_replayed"] == _head(service) == 2
        assert full["indexes_rebuilt"] >= 1
        again = service.call("knowledge_recover_full", {})
        assert again == {
            "success": True,
            "recovery_needed": False,
            "episodes_before": 2,
            "mutations_replayed": 0,
            "episodes_after": 2,
            "indexes_rebuilt": 0,
            "set_aside": [],
        }
    finally:
        service.close()


def test_p_139_drop_lbug_wal_sets_the_graph_sidecar_aside_and_loses_no_logged_event(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    """A copy taken while the workspace was open (as a crash leaves it): graph.sqlite's -wal
    holds frames. Dropped, graph.sqlite opens at its last checkpoint and every group catches
    up from the WAL."""
    copy = Settings(workspace=tmp_path / "copy")
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for name in ("a", "b", "c"):
            call("knowledge_add_episode", name=name, episode_body=f"body {name}", group_id="g")
        shutil.copytree(settings.state_dir, copy.state_dir, ignore=shutil.ignore_patterns("*.lock"))
    sidecar = Path(f"{copy.graph_path}-wal")
    assert sidecar.stat().st_size > 0
    moved = recovery.apply_strategy(copy.files, recovery.Strategy.DROP_LBUG_WAL, datetime.now(UTC))
    assert [p.name.split(".recovered-")[0] for p in moved.paths] == [
        "graph.sqlite-wal",
        "graph.sqlite-shm",
    ]
    assert not sidecar.exists()
    service = _service(copy)
    try:
        assert service.state == "healthy"
        assert _episodes(service) == ["a", "b", "c"]
        again = service.call("knowledge_recover", {"strategy": "drop_lbug_wal"})
        assert again["success"] is True  # on the serving process: closed, dropped, reopened
        assert _episodes(service) == ["a", "b", "c"]
    finally:
        service.close()


def test_p_139_restore_from_backup_needs_a_dump_then_restores_it(
    settings: Settings, embedder: Embedder
) -> None:
    add_episodes(settings, embedder, "g", "a")
    service = _service(settings)
    try:
        with pytest.raises(RpcError, match="wal-compacted"):
            service.call("knowledge_recover", {"strategy": "restore_from_backup"})
        assert service.state == "healthy"  # a refused recovery leaves the service as it was
        service.call("knowledge_dump_wal", {})
        service.call("knowledge_add_episode", {"name": "b", "episode_body": "b", "group_id": "g"})
        result = service.call("knowledge_recover", {"strategy": "restore_from_backup"})
        assert result["success"] is True
        assert _episodes(service) == ["a"]  # as of the dump
        (replaced,) = result["set_aside"]
        assert replaced.startswith(".lcg.replaced-")
        assert (settings.workspace / replaced / "wal.sqlite").exists()  # b is kept there
    finally:
        service.close()


def test_p_139_an_unknown_strategy_is_refused_naming_the_choices(settings: Settings) -> None:
    service = _service(settings)
    try:
        with pytest.raises(RpcError, match="strategy") as refused:
            service.call("knowledge_recover", {"strategy": "pray"})
        assert "rebuild_from_workspace_wal" in refused.value.message
    finally:
        service.close()


def test_p_139_a_concurrent_recovery_is_refused(settings: Settings) -> None:
    service = _service(settings)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(10)

    worker = threading.Thread(target=recovery.exclusively, args=(hold,))
    worker.start()
    held.wait(10)
    try:
        with pytest.raises(RpcError, match="Recovery already in progress"):
            service.call("knowledge_recover_full", {})
    finally:
        release.set()
        worker.join()
        service.close()


def test_k_rec_001_recovery_is_admin_scope_and_refused_outside_a_serving_process(
    app: App,
) -> None:
    assert BY_NAME["knowledge_recover"].scope == "admin"
    assert BY_NAME["knowledge_recover_full"].scope == "admin"
    params: dict[str, Any] = {"strategy": "drop_lbug_wal"}
    with pytest.raises(Conflict, match="lcg recover"):
        make_call(app)("knowledge_recover", **params)


def test_a_16_status_reads_initializing_while_a_recovery_runs(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = _service(settings)
    entered, release = threading.Event(), threading.Event()
    apply = recovery.apply_strategy

    def held(*args: Any) -> recovery.Moved:
        entered.set()
        assert release.wait(10)
        return apply(*args)

    monkeypatch.setattr(recovery, "apply_strategy", held)
    answers: list[dict[str, Any]] = []
    worker = threading.Thread(
        target=lambda: answers.append(
            service.call("knowledge_recover", {"strategy": "rebuild_from_workspace_wal"})
        )
    )
    worker.start()
    try:
        assert entered.wait(10)
        status = service.call("knowledge_status", {})
        assert (status["initializing"], status["connected"]) == (True, False)
        assert service.call("health_check", None)["state"] == "initializing"
    finally:
        release.set()
        worker.join()
    try:
        assert answers[0]["success"] is True
        status = service.call("knowledge_status", {})
        assert (status["initializing"], status["connected"]) == (False, True)
    finally:
        service.close()


def test_p_003_p_136_mark_list_and_delete_answer_while_degraded(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    """P-003: while the workspace does not open, knowledge_wal_mark_list and _delete still
    answer, from the WAL file alone (marks are rows of wal.sqlite, ADR 0032); a delete made
    then holds once the service recovers. Creating a mark stays refused."""
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for name in ("a", "b"):
            call("knowledge_add_episode", name=name, episode_body=f"body of {name}", group_id="g")
        call("knowledge_wal_mark_create", name="before-c", group_id="g")
        call("knowledge_wal_mark_create", name="spare", group_id="g")
    older = tmp_path / "older-wal.sqlite"
    shutil.copy(settings.wal_path, older)
    add_episodes(settings, embedder, "g", "c")
    shutil.copy(older, settings.wal_path)  # projections ahead of the WAL: degraded
    service = _service(settings)
    try:
        assert service.state == "degraded"
        listed = service.call("knowledge_wal_mark_list", {"group_id": "g"})
        assert [(m["name"], m["seq"], m["reachable"]) for m in listed["checkpoints"]] == [
            ("before-c", 2, True),
            ("spare", 2, True),
        ]
        assert service.call("knowledge_wal_mark_list", {"group_id": "other"})["checkpoints"] == []
        deleted = service.call("knowledge_wal_mark_delete", {"group_id": "g", "name": "spare"})
        assert deleted == {"success": True, "name": "spare", "group_id": "g"}
        with pytest.raises(RpcError) as unknown:
            service.call("knowledge_wal_mark_delete", {"group_id": "g", "name": "spare"})
        assert "its marks: before-c" in unknown.value.message
        with pytest.raises(RpcError) as bad:
            service.call("knowledge_wal_mark_list", {"group_id": "g", "extra": 1})
        assert "extra" in bad.value.message
        with pytest.raises(RpcError) as create:
            service.call("knowledge_wal_mark_create", {"group_id": "g", "name": "new"})
        assert create.value.code == UNAVAILABLE
        assert service.call("health_check", None)["state"] == "degraded"  # nothing else moved
        service.call("knowledge_recover", {"strategy": "rebuild_from_workspace_wal"})
        assert service.call("health_check", None)["state"] == "healthy"
        healthy = service.call("knowledge_wal_mark_list", {"group_id": "g"})
        assert [m["name"] for m in healthy["checkpoints"]] == ["before-c"]
    finally:
        service.close()
