"""Fault injection on real files under real processes: a lost WAL, a full disk (issue 9, F1
and F5; ADR 0019). Nothing acknowledged is lost or hidden; every failure names its file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from lcg.interfaces.exit_codes import EXIT_STORAGE
from lcg.interfaces.jsonrpc import STORAGE_ERROR, UNAVAILABLE
from lcg.projections.wal.store import stream_id
from tests.helpers.console_script import lcg, lcg_in_process, said
from tests.helpers.damage import overwrite_text
from tests.helpers.mcp_session import mcp_client, structured
from tests.helpers.service_process import RpcClient, ServiceProcess
from tests.helpers.small_disk import fill, mounted_tmpfs

pytestmark = pytest.mark.slow


def add_episode(client: RpcClient, name: str, body: str | None = None) -> dict[str, Any]:
    params = {"name": name, "episode_body": body or f"body of {name}", "group_id": "g"}
    return client.call("knowledge_add_episode", params)


def episode_names(client: RpcClient) -> list[str]:
    result = client.result("knowledge_get_episodes", {"group_id": "g", "last_n": 50})
    return sorted(e["name"] for e in result["episodes"])


def written(workspace: Path, *episodes: tuple[str, str], marked: bool = False) -> None:
    """The set-up writes, `(group, name)` episodes through `lcg add-episode` in this process
    (the process boundary is the subject of what follows, not of the set-up); `marked`: each
    body carries `marker-<name>`, for a test that damages one event's bytes."""
    for group, name in episodes:
        body = f"body of {name} marker-{name}" if marked else f"body of {name}"
        done = lcg_in_process(workspace, "add-episode", name, body, "-g", group)
        assert done.returncode == 0, done.stderr


def remove_wal(workspace: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{workspace}/.lcg/wal.sqlite{suffix}").unlink(missing_ok=True)


def test_f1_a_lost_wal_makes_the_cli_refuse_with_exit_7_and_ack_no_write(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    written(workspace, ("g", "e1"), ("g", "e2"))
    remove_wal(workspace)
    result = lcg(workspace, "add-episode", "e3", "body of e3", "-g", "g")
    assert (result.returncode, result.stdout) == (EXIT_STORAGE, "")
    message = said(result.stderr)
    assert f"{workspace}/.lcg/wal.sqlite holds no events for group 'g'" in message
    assert "applied seq 2" in message
    assert lcg(workspace, "status").returncode == EXIT_STORAGE
    assert not (workspace / ".lcg" / "wal.sqlite").exists()


def test_f1_a_server_over_a_lost_wal_starts_degraded_acks_no_write_and_the_recovery_works(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    written(workspace, ("g", "e1"), ("g", "e2"))
    remove_wal(workspace)
    degraded = ServiceProcess(workspace)
    try:
        health = degraded.wait_ready()
        assert (health["healthy"], health["state"]) == (False, "degraded")
        assert f"{workspace}/.lcg/wal.sqlite holds no events for group 'g'" in health["reason"]
        with degraded.connect() as client:
            status = client.result("knowledge_status")
            assert status["degraded"] is True
            assert "applied seq 2" in status["reason"]
            assert add_episode(client, "e3")["error"]["code"] == UNAVAILABLE
        recovery = health["reason"].split("`")[1]  # the command the message names, as written
    finally:
        degraded.stop()
    subprocess.run(["sh", "-c", recovery], check=True)
    recovered = ServiceProcess(workspace)
    try:
        assert recovered.wait_ready()["healthy"] is True, recovered.log
        with recovered.connect() as client:
            assert "result" in add_episode(client, "e3")
            assert episode_names(client) == ["e3"]  # what the log holds, all of it visible
    finally:
        recovered.stop()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (tests/helpers/small_disk.py)."""
    with mounted_tmpfs(tmp_path / "small", "4m") as mount:
        yield mount


@contextmanager
def files_on(disk: Path, database: Path) -> Iterator[None]:
    """`database` (already moved to `disk`) and its -wal and -shm live on `disk`, each bound
    over its name in `.lcg/` (a bind mount: lcg refuses a symbolic link there, ADR 0048)."""
    bound: list[Path] = []
    try:
        for suffix in ("", "-wal", "-shm"):
            name = database.name + suffix
            (disk / name).touch()
            (database.parent / name).touch()
            done = subprocess.run(
                ["mount", "--bind", str(disk / name), str(database.parent / name)],
                capture_output=True,
                text=True,
                check=False,
            )
            assert done.returncode == 0, done.stderr
            bound.append(database.parent / name)
        yield
    finally:
        for path in reversed(bound):
            subprocess.run(["umount", "-l", str(path)], check=False)


def test_f5_after_a_full_disk_the_group_catches_up_and_takes_writes_again(
    tmp_path: Path, small_disk: Path
) -> None:
    """The projection database lives on a small tmpfs (the WAL does not): the disk fills
    under a running server, a write fails naming the file, and once space returns the next
    write succeeds and everything the WAL holds is visible, without a restart."""
    workspace = tmp_path / "ws"
    written(workspace, ("g", "e1"))
    graph = workspace / ".lcg" / "graph.sqlite"
    shutil.move(graph, small_disk / "graph.sqlite")
    with files_on(small_disk, graph):
        server = ServiceProcess(workspace)
        try:
            assert server.wait_ready()["healthy"] is True, server.log
            with server.connect() as client:
                filler = fill(small_disk)
                big = " ".join(f"word{n} text{n * 7} term{n * 13}" for n in range(20_000))
                failed = add_episode(client, "e2", big)["error"]
                assert failed["code"] == STORAGE_ERROR, failed
                assert str(graph) in failed["message"]
                assert "full" in failed["message"]
                health = client.result("health_check")
                assert (health["state"], health["serving"]) == ("degraded", True)
                filler.unlink()  # space returns
                assert "result" in add_episode(client, "e3")
                wal = client.result("knowledge_status")["wal_groups"]["g"]
                assert wal["applied_seq"] == wal["max_seq"]
                durable = "durable in the WAL" in failed["message"]
                names = ["e1", "e2", "e3"] if durable else ["e1", "e3"]
                assert episode_names(client) == names
                assert client.result("health_check")["healthy"] is True
        finally:
            server.stop()


def test_f4_a_corrupted_event_is_named_by_the_cli_and_its_replay_command_works_as_written(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    state = workspace / ".lcg"
    written(workspace, ("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"))
    with sqlite3.connect(state / "wal.sqlite") as conn:
        conn.execute(
            "UPDATE stored_events SET state=x'ff00fe' WHERE originator_id=?"
            " AND originator_version=2",
            (stream_id("a").hex,),
        )
    aside = state / "aside"
    aside.mkdir()
    for path in [*state.glob("graph.sqlite*"), state / "vectors"]:
        path.rename(aside / path.name)  # the next open applies every event from the WAL
    refused = lcg(workspace, "add-episode", "a4", "body of a4", "-g", "a")
    assert refused.returncode == EXIT_STORAGE
    message = said(refused.stderr)
    assert f"{state}/wal.sqlite holds an unreadable event at seq 2 of group 'a'" in message
    assert lcg(workspace, "add-episode", "b2", "body of b2", "-g", "b").returncode == 0
    command = message.split("`")[1]
    assert command == "lcg replay --group a --to-seq 1 --force-clear"
    replayed = lcg(workspace, *command.split()[1:])
    assert replayed.returncode == 0, replayed.stderr
    assert "pinned at seq 1" in said(replayed.stdout)


def test_an_applied_event_damaged_on_disk_refuses_the_cli_write_to_its_group_only(
    tmp_path: Path,
) -> None:
    """Issue 24, item 5 (ADR 0049): bytes of an event the projections already applied are
    damaged in wal.sqlite; the next `lcg add-episode` to its group is refused with exit 7
    naming file, group and seq (acked, it would hide behind the damage at the next rebuild),
    other groups still write, and the replay the message names works as written."""
    workspace = tmp_path / "ws"
    state = workspace / ".lcg"
    written(workspace, ("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1"), marked=True)
    assert overwrite_text(state / "wal.sqlite", "marker-a2", b"\xff\xfe") == 1
    refused = lcg(workspace, "add-episode", "a4", "body of a4", "-g", "a")
    assert (refused.returncode, refused.stdout) == (EXIT_STORAGE, "")
    message = said(refused.stderr)
    assert f"{state}/wal.sqlite holds a damaged event at seq 2 of group 'a'" in message
    assert lcg(workspace, "add-episode", "b2", "body of b2", "-g", "b").returncode == 0
    wal = json.loads(lcg_in_process(workspace, "status", "--json").stdout)["wal_groups"]
    assert (wal["a"]["max_seq"], wal["b"]["max_seq"]) == (3, 2)  # nothing acked to 'a'
    command = message.split("`")[1]
    assert command == "lcg replay --group a --to-seq 1 --force-clear"
    replayed = lcg(workspace, *command.split()[1:])
    assert replayed.returncode == 0, replayed.stderr
    assert "pinned at seq 1" in said(replayed.stdout)


def test_a_server_over_an_applied_event_changed_on_disk_is_degraded_and_refuses_its_group(
    tmp_path: Path,
) -> None:
    """Issue 24, item 5 (ADR 0049), over the socket: bytes of an applied event changed so that
    it still decodes; the server starts degraded naming file, group and seq, answers a write
    to the group -32002 with them in `data`, serves its reads and takes other groups' writes."""
    workspace = tmp_path / "ws"
    written(workspace, ("g", "e1"), ("g", "e2"), ("g", "e3"), marked=True)
    wal = workspace / ".lcg" / "wal.sqlite"
    assert overwrite_text(wal, "marker-e2", b"MARKER-E2") == 1
    server = ServiceProcess(workspace)
    try:
        health = server.wait_ready()
        assert (health["state"], health["serving"]) == ("degraded", True)
        assert f"{wal} holds a damaged event at seq 2 of group 'g'" in health["reason"]
        with server.connect() as client:
            error = add_episode(client, "e4")["error"]
            assert error["code"] == STORAGE_ERROR
            assert error["data"] == {
                "kind": "corrupt_event",
                "file": str(wal),
                "group_id": "g",
                "seq": 2,
            }
            assert episode_names(client) == ["e1", "e2", "e3"]
            other = {"name": "h1", "episode_body": "body of h1", "group_id": "h"}
            assert "result" in client.call("knowledge_add_episode", other)
            head = client.result("knowledge_status")["wal_groups"]["g"]["max_seq"]
            assert head == 3  # nothing acknowledged past the damage
    finally:
        server.stop()


def _older_wal_put_back(tmp_path: Path) -> Path:
    """A workspace whose WAL was put back from a copy taken before its last write (e1, e2
    logged; e3 written after the copy and so gone from the log, still in the projections)."""
    workspace = tmp_path / "ws"
    written(workspace, ("g", "e1"), ("g", "e2"))
    older = tmp_path / "older.sqlite"
    shutil.copy(workspace / ".lcg" / "wal.sqlite", older)
    written(workspace, ("g", "e3"))
    shutil.copy(older, workspace / ".lcg" / "wal.sqlite")
    return workspace


def test_k_rec_002_a_degraded_server_recovers_in_place_through_knowledge_recover(
    tmp_path: Path,
) -> None:
    """ADR 0038: the WAL put back from an older copy; the server starts degraded, answers
    health_check and knowledge_recover over its socket, and serves again without a restart,
    every logged event visible and the WAL untouched."""
    workspace = _older_wal_put_back(tmp_path)
    degraded = ServiceProcess(workspace)
    try:
        assert degraded.wait_ready()["state"] == "degraded"
        with degraded.connect() as client:
            assert add_episode(client, "e4")["error"]["code"] == UNAVAILABLE
            result = client.result("knowledge_recover", {"strategy": "rebuild_from_workspace_wal"})
            assert (result["success"], result["restart_required"]) == (True, False)
            assert client.result("health_check")["state"] == "healthy"
            assert episode_names(client) == ["e1", "e2"]  # what the log holds
            assert "result" in add_episode(client, "e4")
            assert episode_names(client) == ["e1", "e2", "e4"]
    finally:
        degraded.stop()


def test_k_rec_003_standalone_mcp_recovers_in_place_through_the_same_path(
    tmp_path: Path,
) -> None:
    """The same put-back WAL, served by a standalone MCP server (`serve --mcp-stdio`, no
    socket service): it starts degraded as the socket service does, knowledge_status says so
    and names the recovery, and knowledge_recover over MCP serves again without a restart."""
    workspace = _older_wal_put_back(tmp_path)

    async def main() -> None:
        args = ("serve", "--mcp-stdio", "--scope=all", "-w", str(workspace))
        async with mcp_client(*args) as client:
            status = structured(await client.call_tool("knowledge_status", {}))
            assert status["degraded"] is True
            assert "rebuild_from_workspace_wal" in status["recovery_available"][0]
            refused = await client.call_tool("knowledge_get_episodes", {"group_id": "g"})
            assert refused.is_error is True
            recovered = structured(
                await client.call_tool(
                    "knowledge_recover", {"strategy": "rebuild_from_workspace_wal"}
                )
            )
            assert (recovered["success"], recovered["restart_required"]) == (True, False)
            status = structured(await client.call_tool("knowledge_status", {}))
            assert status["degraded"] is False
            episodes = structured(
                await client.call_tool("knowledge_get_episodes", {"group_id": "g"})
            )
            assert sorted(e["name"] for e in episodes["episodes"]) == ["e1", "e2"]

    anyio.run(main)


def test_k_rec_001_lcg_recover_on_a_workspace_that_does_not_open(tmp_path: Path) -> None:
    """ADR 0038: `lcg recover` runs where `lcg status` is refused (the WAL put back from an
    older copy), through a serving process of its own; `--full` after it has nothing to do;
    neither or both of STRATEGY and --full is a usage error naming STRATEGY."""
    workspace = _older_wal_put_back(tmp_path)
    refused_status = lcg(workspace, "status")
    assert refused_status.returncode == EXIT_STORAGE
    assert "lcg recover rebuild_from_workspace_wal" in said(refused_status.stderr)
    neither = lcg(workspace, "recover")
    assert neither.returncode == 2
    assert said(neither.stderr).startswith("error: STRATEGY: give one strategy")
    recovered = lcg(workspace, "recover", "rebuild_from_workspace_wal", "--json")
    assert recovered.returncode == 0, recovered.stderr
    result = json.loads(recovered.stdout)
    assert (result["success"], result["strategy"]) == (True, "rebuild_from_workspace_wal")
    wal = json.loads(lcg_in_process(workspace, "status", "--json").stdout)["wal_groups"]["g"]
    assert (wal["applied_seq"], wal["max_seq"]) == (2, 2)  # every event the log holds
    full = lcg(workspace, "recover", "--full")
    assert full.returncode == 0
    assert "nothing to recover" in full.stdout
