"""`lcg dump` through a real socket service, and knowledge_dump_wal over it (ADR 0032;
K-WAL-003/004/005, P-133). The commands in this process:
tests/integration/test_cli_dump_restore.py.

Exit codes: 0 ok, 2 invalid (PATH names no dump, or a target that is not empty), 3 refused
(restoring over a non-empty workspace without --force).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.console_script import lcg, lcg_json, names, refused, said
from tests.helpers.service_process import ServiceProcess

pytestmark = pytest.mark.slow


def test_a_dump_through_the_serving_process_streams_progress_then_restores(
    tmp_path: Path,
) -> None:
    source, dump, copy = tmp_path / "source", tmp_path / "dumps" / "one", tmp_path / "copy"
    # the service's clients dump inside the workspace or the directory the operator set
    service = ServiceProcess(source, env={"LCG_WAL_DUMP_DIR": str(tmp_path / "dumps")})
    try:
        assert service.wait_ready()["state"] == "healthy"
        with service.connect() as client:
            for name in ("Ada", "Babbage", "Menabrea"):
                client.result("knowledge_assert_entity", {"name": name, "group_id": "g"})
            params = {"target_dir": str(dump), "_progress_token": "tok"}
            rid = client.send("knowledge_dump_wal", params)
            frames = [client.read()]
            while frames[-1].get("type") == "progress":
                frames.append(client.read())
            *progress, terminal = frames
            assert progress
            assert progress[-1]["processed"] == progress[-1]["total"] == 3
            assert terminal["id"] == rid
            assert terminal["result"]["nodes_dumped"] == 3
        # the CLI beside the service goes through its socket
        through = lcg(source, "dump", str(tmp_path / "dumps" / "second"), "--json")
        assert through.returncode == 0, through.stderr
        assert "goes through" in said(through.stderr)
        assert json.loads(through.stdout)["events_dumped"] == 3
    finally:
        assert service.stop() == 0
    lcg_json(copy, "restore", str(dump), "--json")
    assert names(copy, "g") == ["Ada", "Babbage", "Menabrea"]


def test_k_wal_003_the_service_refuses_a_client_dump_out_of_bounds_and_stays_healthy(
    tmp_path: Path,
) -> None:
    """Issue 24, item 4 (ADR 0048), on a real `lcg serve`: a client's target_dir outside the
    workspace (absolute, `../`), a NUL, and a name the disk refuses are answered with an
    error naming target_dir; nothing is written outside and health stays healthy."""
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    service = ServiceProcess(workspace)
    try:
        assert service.wait_ready()["state"] == "healthy"
        with service.connect() as client:
            client.result("knowledge_assert_entity", {"name": "Ada", "group_id": "g"})
            for target in (str(outside / "dump"), "../outside/dump", "../../dump"):
                error = client.call("knowledge_dump_wal", {"target_dir": target})["error"]
                assert error["data"]["kind"] == "invalid_params", error
                assert error["data"]["field"] == "target_dir"
                assert "[wal] dump_dir (LCG_WAL_DUMP_DIR)" in error["message"]
            nul = client.call("knowledge_dump_wal", {"target_dir": "a\u0000b"})["error"]
            assert nul["data"]["kind"] == "invalid_params", nul
            assert "target_dir: must not contain a NUL character" in nul["message"]
            failed = client.call("knowledge_dump_wal", {"target_dir": "n" * 300})["error"]
            assert failed["data"]["kind"] == "storage_failure", failed
            assert client.result("health_check")["healthy"] is True
        refused_cli = refused(lcg(workspace, "dump", str(outside / "cli")), 2)
        assert "PATH: target_dir: must be a directory inside the workspace" in refused_cli
    finally:
        assert service.stop() == 0
    assert list(outside.iterdir()) == []
    assert not (tmp_path.parent / "dump").exists()
