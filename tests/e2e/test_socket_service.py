"""The JSON-RPC socket service (`lcg serve`) over a real Unix socket, in a child process.

Checklist: K-INV-001/002/005/009, K-RDY-002..012, K-CFG-003, K-PRG-006..009, K-STA-001..004,
P-001..P-007, P-016, P-101..P-103.
"""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.operations import OPERATIONS
from lcg.interfaces.service import HEALTH_CHECK, Service
from lcg.projections.wal.lease import WriterLease
from tests.helpers.service_process import (
    DEADLINE,
    LCG,
    RpcClient,
    ServiceProcess,
    clean_env,
)

pytestmark = pytest.mark.slow

FIVE_MIB = 5 * 1024 * 1024


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One healthy service shared by the tests that only read or write their own group."""
    process = ServiceProcess(tmp_path_factory.mktemp("socket") / "ws")
    assert process.wait_ready()["healthy"] is True, process.log
    yield process
    process.stop()


@pytest.fixture
def client(service: ServiceProcess) -> Iterator[RpcClient]:
    with service.connect() as connection:
        yield connection


def test_health_check_answers_healthy_only_after_the_workspace_opened(tmp_path: Path) -> None:
    """K-RDY-002/004/005/006/011, K-STA-001..004, P-101: a request sent the moment connect()
    succeeds waits in the kernel and is answered once start-up resolved, so the first answer
    already says healthy; knowledge_status then reports connected, queryable, not
    initializing, and has no `healthy` field."""
    process = ServiceProcess(tmp_path / "ws")
    try:
        with process.connect() as client:
            client.send(HEALTH_CHECK)
            assert client.read()["result"] == {"ok": True, "healthy": True, "state": "healthy"}
            status = client.result("knowledge_status")
        assert (status["connected"], status["queryable"], status["initializing"]) == (
            True,
            True,
            False,
        )
        assert "healthy" not in status
    finally:
        assert process.stop() == 0


def test_socket_is_the_workspace_service_sock_with_mode_0600(service: ServiceProcess) -> None:
    """K-INV-001, K-CFG-003: the default socket is <workspace>/.lcg/service.sock, owner-only."""
    assert service.socket_path == Settings(service.workspace).socket_path
    mode = service.socket_path.stat().st_mode
    assert stat.S_ISSOCK(mode)
    assert stat.S_IMODE(mode) == 0o600


def test_every_table_operation_and_health_check_is_a_method(client: RpcClient) -> None:
    """K-INV-005/009: the socket dispatches the table's operations plus health_check; none
    of them is 'Method not found'."""
    assert Service(Settings(Path("unused")), command="t").methods == (
        HEALTH_CHECK,
        *(op.name for op in OPERATIONS),
    )
    for operation in OPERATIONS:
        if operation.name == "knowledge_close":
            continue  # it would stop the shared service; test_close_* covers it
        frame = client.call(operation.name, {"group_id": "", "confirm": False})
        if "error" in frame:
            assert "Method not found" not in frame["error"]["message"], operation.name


def test_malformed_json_gets_parse_error_with_its_readable_id_and_the_connection_stays_open(
    client: RpcClient,
) -> None:
    """P-002: -32700 'Parse error: ...'; the next request on the connection works. The id is
    the request's when it can be read from the line (issue 24, ADR 0050), else null."""
    client.send_line(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    frame = client.read()
    assert frame["id"] == 1
    assert frame["error"]["code"] == -32700
    assert frame["error"]["message"].startswith("Parse error: ")
    client.send_line(b'{"jsonrpc": "2.0", "method": ')
    assert client.read()["id"] is None
    assert client.result(HEALTH_CHECK)["healthy"] is True


def test_unknown_method_is_32000_method_not_found(client: RpcClient) -> None:
    """P-002: an unknown method gets -32000 'IPC error: Method not found: <method>'."""
    frame = client.call("knowledge_fly")
    assert frame["error"]["code"] == -32000
    assert "Method not found: knowledge_fly" in frame["error"]["message"]


def test_bad_params_name_the_field_and_the_rule(client: RpcClient) -> None:
    """P-002: a missing required param, a wrong type, a bound and a non-object params each
    get -32000 with a message naming the field and the rule; the connection stays open."""
    missing = client.call("knowledge_add_episode", {"name": "n"})["error"]
    assert missing["code"] == -32000
    assert missing["message"] == "episode_body: is required"
    assert missing["data"] == {
        "kind": "invalid_params",
        "field": "episode_body",
        "rule": "is required",
    }
    wrong_type = client.call("knowledge_get_episodes", {"last_n": "5"})["error"]
    assert wrong_type["message"].startswith("last_n: ")
    too_big = client.call("knowledge_get_episodes", {"last_n": 10**9})["error"]
    assert too_big["message"].startswith("last_n: ")
    assert "10000" in too_big["message"]
    client.send_line(b'{"jsonrpc":"2.0","id":7,"method":"knowledge_status","params":[1]}')
    not_object = client.read()
    assert (not_object["id"], not_object["error"]["message"]) == (
        7,
        "params: must be a JSON object",
    )
    bounds = client.call(
        "knowledge_rebuild_from_wal", {"group_id": "g", "from_seq": 5, "to_seq": 2}
    )
    assert bounds["error"]["data"]["field"] == "to_seq"


def test_refusals_carry_their_kind(client: RpcClient) -> None:
    """P-002: not-found and conflict refusals are -32000 with data.kind and the field."""
    not_found = client.call("knowledge_rebuild_from_wal", {"group_id": "never-written"})
    assert not_found["error"]["code"] == -32000
    assert not_found["error"]["data"]["kind"] == "not_found"
    assert not_found["error"]["data"]["field"] == "group_id"
    client.result("knowledge_add_episode", {"name": "e", "episode_body": "b", "group_id": "ref"})
    conflict = client.call("knowledge_rebuild_from_wal", {"group_id": "ref"})["error"]
    assert conflict["data"]["kind"] == "conflict"
    assert "force_clear" in conflict["message"]


def test_a_request_that_is_not_a_json_rpc_object_is_invalid_request(client: RpcClient) -> None:
    """P-001: an array, or an object without a string method, is -32600 Invalid Request."""
    client.send_line(b"[1, 2]")
    assert client.read()["error"]["code"] == -32600
    client.send_line(b'{"jsonrpc": "2.0", "id": 3}')
    frame = client.read()
    assert (frame["id"], frame["error"]["code"]) == (3, -32600)


@pytest.mark.parametrize(
    ("line", "echoed"),
    [
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "knowledge_add_episode"}', None),
        (b'{"jsonrpc": "2.0", "id": true, "method": "knowledge_add_episode"}', None),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "knowledge_add_episode"}', None),
        (b'{"jsonrpc": "1.0", "id": 7, "method": "knowledge_add_episode"}', 7),
        (b'{"id": "x", "method": "knowledge_add_episode"}', "x"),
    ],
)
def test_issue_10_a_bad_id_or_version_is_invalid_request_and_runs_nothing(
    client: RpcClient, line: bytes, echoed: object
) -> None:
    """JSON-RPC 2.0: an id is a string, an integer or null, and "jsonrpc" is "2.0"."""
    params = b', "params": {"name": "never", "episode_body": "must not be stored"}}'
    client.send_line(line[:-1] + params)
    frame = client.read()
    assert frame["error"]["code"] == -32600
    assert frame["id"] == echoed
    episodes = client.result("knowledge_get_episodes", {"group_id": "liminis"})
    assert episodes["count"] == 0


def test_a_5_mib_request_is_refused_and_the_next_request_on_the_connection_succeeds(
    client: RpcClient,
) -> None:
    """ADR 0006, ADR 0050 (4 MiB per request): the oversized line is discarded in bounded
    chunks and answered with -32600 `request too large (over 4 MiB)` and its id; the same
    connection then serves the next request."""
    body = "x" * FIVE_MIB
    request = {"jsonrpc": "2.0", "id": 1, "method": "knowledge_add_episode"}
    request["params"] = {"name": "big", "episode_body": body, "group_id": "big"}
    client.send_line(json.dumps(request).encode())
    refused = client.read()
    assert refused["id"] == 1
    assert refused["error"]["code"] == -32600
    assert refused["error"]["message"] == "request too large (over 4 MiB)"
    assert refused["error"]["data"]["limit_bytes"] == 4 * 1024 * 1024
    assert client.result(HEALTH_CHECK)["healthy"] is True
    episodes = client.result("knowledge_get_episodes", {"group_id": "big"})
    assert episodes["count"] == 0


def test_requests_on_one_connection_are_answered_in_order(client: RpcClient) -> None:
    """P-005: twenty pipelined requests (writes and reads) come back in request order."""
    lines = []
    for index in range(20):
        method, params = (
            ("knowledge_add_episode", {"name": f"e{index}", "episode_body": "b", "group_id": "o"})
            if index % 2 == 0
            else ("knowledge_get_episodes", {"group_id": "o"})
        )
        lines.append(
            json.dumps({"jsonrpc": "2.0", "id": index, "method": method, "params": params})
        )
    client.send_line("\n".join(lines).encode())
    frames = [client.read() for _ in range(20)]
    assert [frame["id"] for frame in frames] == list(range(20))
    assert [frames[i]["result"]["count"] for i in range(1, 20, 2)] == list(range(1, 11))


def test_progress_frames_come_before_the_terminal_response_only_with_a_token(
    client: RpcClient,
) -> None:
    """K-PRG-006..009, P-006/P-007: with _progress_token the rebuild streams
    {"type":"progress"} lines (no id, result or error) before its response; without one,
    only the response comes."""
    for index in range(3):
        client.result(
            "knowledge_add_episode", {"name": f"p{index}", "episode_body": "b", "group_id": "pg"}
        )
    params = {"group_id": "pg", "force_clear": True, "_progress_token": "tok-1"}
    rid = client.send("knowledge_rebuild_from_wal", params)
    frames = [client.read()]
    while frames[-1].get("type") == "progress":
        frames.append(client.read())
    *progress, terminal = frames
    assert progress, "no progress frame before the response"
    for frame in progress:
        assert {"id", "result", "error"}.isdisjoint(frame)
        assert frame["processed"] <= frame["total"] == 3
    assert progress[-1]["processed"] == 3
    assert terminal["id"] == rid
    assert terminal["result"]["mutations_replayed"] == 3
    del params["_progress_token"]
    client.send("knowledge_rebuild_from_wal", params)
    assert "result" in client.read()  # the very next line is the response (K-PRG-009)


def test_a_notification_without_id_is_run_and_not_answered(client: RpcClient) -> None:
    """JSON-RPC 2.0: a request without an id is a notification; no response line."""
    note = {
        "jsonrpc": "2.0",
        "method": "knowledge_add_episode",
        "params": {"name": "n", "episode_body": "b", "group_id": "note"},
    }
    client.send_line(json.dumps(note).encode())
    episodes = client.result("knowledge_get_episodes", {"group_id": "note"})
    assert episodes["count"] == 1


def test_degraded_when_another_process_holds_the_workspace(tmp_path: Path) -> None:
    """K-RDY-002/008/012, P-003, P-102: the socket is bound even though the workspace cannot
    open; health_check answers degraded (final, not retried), knowledge_status has the
    degraded shape, other methods get -32001 naming the holder and --connect, and
    knowledge_close still shuts the service down."""
    workspace = tmp_path / "ws"
    settings = Settings(workspace)
    settings.state_dir.mkdir(parents=True)
    with WriterLease(settings.lease_path, "pytest holder", datetime.now(UTC)):
        process = ServiceProcess(workspace)
        health = process.wait_ready()
        assert (health["healthy"], health["state"]) == (False, "degraded")
        assert "another process is writing this workspace" in health["reason"]
        with process.connect() as client:
            status = client.result("knowledge_status")
            assert status["degraded"] is True
            assert (status["connected"], status["queryable"]) == (False, False)
            refused = client.call("knowledge_add_episode", {"name": "n", "episode_body": "b"})
            assert refused["error"]["code"] == -32001
            # M-ERR-002: the client reads no holder, path or socket, and no recovery is asked
            message = refused["error"]["message"]
            assert message.startswith("DB unavailable: another process is writing")
            assert "recovery required" not in message
            assert str(workspace) not in json.dumps(refused["error"])
            assert "pytest holder" not in json.dumps(refused["error"])
            assert client.result("knowledge_close") == {"status": "closed"}
        assert process.proc.wait(DEADLINE) == 0
    # the operator's log keeps the detail: the holder and what to connect to
    assert "pytest holder" in process.log
    assert f"--connect {settings.socket_path}" in process.log


def test_close_answers_then_shuts_down_gracefully(tmp_path: Path) -> None:
    """P-016: knowledge_close answers {"status":"closed"}, then the service exits 0, removes
    its socket and releases the workspace (another writer may open it)."""
    process = ServiceProcess(tmp_path / "ws")
    process.wait_ready()
    with process.connect() as client:
        client.result("knowledge_add_episode", {"name": "kept", "episode_body": "b"})
        assert client.result("knowledge_close") == {"status": "closed"}
    assert process.proc.wait(DEADLINE) == 0
    assert not process.socket_path.exists()
    settings = Settings(tmp_path / "ws")
    with WriterLease(settings.lease_path, "pytest after close", datetime.now(UTC)):
        pass  # the lease is free again


def test_a_second_service_on_a_live_socket_exits_4_and_names_connect(
    service: ServiceProcess,
) -> None:
    """Never two writers: a second `lcg serve` finds the socket answering and exits 4."""
    result = subprocess.run(
        [str(LCG), "serve", "--workspace", str(service.workspace)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=clean_env(),
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 4, result.stderr
    assert f"--connect {service.socket_path}" in result.stderr
    assert service.wait_ready()["healthy"] is True


def test_k_rdy_001_a_legacy_workspace_is_moved_before_the_socket_is_bound(
    tmp_path: Path,
) -> None:
    """K-RDY-001, P-021: `lcg serve` on a workspace whose state is in `.graphiti/` moves it to
    `.lcg/` before it binds `.lcg/service.sock` (binding first would make an empty `.lcg/`
    and leave the data behind), then serves what it held."""
    workspace = tmp_path / "ws"
    first = ServiceProcess(workspace)
    assert first.wait_ready()["healthy"] is True, first.log
    with first.connect() as client:
        client.result("knowledge_add_episode", {"name": "legacy", "episode_body": "b"})
        assert client.result("knowledge_close") == {"status": "closed"}
    assert first.proc.wait(DEADLINE) == 0
    (workspace / ".lcg").rename(workspace / ".graphiti")
    process = ServiceProcess(workspace)
    try:
        assert process.wait_ready()["healthy"] is True, process.log
        assert not (workspace / ".graphiti").exists()
        assert process.socket_path.parent == workspace / ".lcg"
        with process.connect() as client:
            episodes = client.result("knowledge_get_episodes", {})
        assert [e["name"] for e in episodes["episodes"]] == ["legacy"]
        assert "moved the legacy workspace directory" in process.own_log
    finally:
        process.stop()
