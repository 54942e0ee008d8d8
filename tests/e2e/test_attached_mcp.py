"""`lcg serve --mcp-stdio --connect PATH` (attached mode) as a real subprocess.

Against scripted services (silent, streaming) and a real `lcg serve`. Checklist: K-MCP-010/
011, K-DBM-005..007/011..014/021/022, K-SCP-008/016..018, K-PRG-004/010, K-EXC-004/005,
K-INV-004, P-008, P-011, P-013, P-016.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import MCPError

from tests.helpers.fake_service import FakeConnection, FakeService, Frame
from tests.helpers.mcp_session import mcp_client, structured, tool_names
from tests.helpers.seed_scopes import expected_tools
from tests.helpers.service_process import DEADLINE, LCG, RpcClient, ServiceProcess, clean_env

pytestmark = pytest.mark.slow


def scripted(request: Frame, connection: FakeConnection) -> None:
    """Silent for knowledge_status; streams progress for the rebuild; answers the rest."""
    if request["method"] == "knowledge_status":
        return
    if request["method"] == "knowledge_rebuild_from_wal":
        for done in range(1, 11):
            time.sleep(0.2)  # a slow service, not synchronisation: 2 s under a 1 s timeout
            frame = {"type": "progress", "processed": done * 7, "total": 70}
            connection.send(frame | ({"message": f"step {done}"} if done % 2 else {}))
    connection.answer(request, {"forwarded": request["method"]})


def test_the_seed_attached_config_lists_read_tools_and_never_opens_a_workspace(
    tmp_path: Path,
) -> None:
    """K-EXC-004/005, K-DBM-005: `liminis-context-graph --mcp-stdio --connect <sock>
    --scope=read` started in an empty directory lists exactly the read tools and creates no
    .lcg state (no lease, no database file) anywhere."""
    service_dir, cwd = tmp_path / "service", tmp_path / "cwd"
    service_dir.mkdir()
    cwd.mkdir()

    async def main() -> None:
        with FakeService(service_dir / "service.sock", scripted):
            async with mcp_client(
                "--mcp-stdio",
                "--connect",
                str(service_dir / "service.sock"),
                "--scope=read",
                command="liminis-context-graph",
                cwd=cwd,
            ) as client:
                assert await tool_names(client) == expected_tools("read")

    anyio.run(main)
    assert list(cwd.iterdir()) == []
    assert list(service_dir.iterdir()) == []


def test_close_is_hidden_and_refused_without_allow_remote_close(tmp_path: Path) -> None:
    """K-SCP-008/016/017, P-011: attached without --allow-remote-close, knowledge_close is
    not listed even under `all`, and calling it is METHOD_NOT_FOUND without forwarding.
    Also A-04: a call of the unadvertised tool is the unknown-tool error, never forwarded."""

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", scripted) as fake:
            args = ("serve", "--mcp-stdio", "--connect", str(fake.path))
            async with mcp_client(*args) as client:
                listed = await tool_names(client)
                assert listed == expected_tools("all", attached=True)
                assert "knowledge_close" not in listed
                with pytest.raises(MCPError) as refused:
                    await client.call_tool("knowledge_close", {})
                assert refused.value.code == -32601
                assert refused.value.message == "Unknown tool: 'knowledge_close'"
            assert "knowledge_close" not in fake.methods()

    anyio.run(main)


def test_timeout_progress_and_remote_close_through_a_scripted_service(tmp_path: Path) -> None:
    """With LCG_ATTACHED_CALL_TIMEOUT_MS=1000: a silent service fails the call with a clean
    timeout (K-DBM-012/013, K-CFG-001); a call streaming progress for longer than the timeout
    succeeds and its frames arrive as MCP progress notifications (K-DBM-011, K-PRG-004/010,
    P-008); with --allow-remote-close, knowledge_close is listed and forwarded (K-SCP-018,
    K-MCP-011, P-016)."""

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", scripted) as fake:
            args = ("serve", "--mcp-stdio", "--connect", str(fake.path), "--allow-remote-close")
            env = {"LCG_ATTACHED_CALL_TIMEOUT_MS": "1000"}
            async with mcp_client(*args, env=env) as client:
                silent = await client.call_tool("knowledge_status", {})
                assert silent.is_error is True
                assert "timed out after 1000ms" in structured(silent)["message"]

                seen: list[tuple[float, float | None, str | None]] = []

                async def on_progress(
                    progress: float, total: float | None, message: str | None
                ) -> None:
                    seen.append((progress, total, message))

                rebuilt = await client.call_tool(
                    "knowledge_rebuild_from_wal", {"group_id": "g"}, None, on_progress
                )
                assert structured(rebuilt) == {"forwarded": "knowledge_rebuild_from_wal"}
                # P-008: one notification per frame, `progress` counting them, `total` and
                # `message` copied from the frame when it has them.
                assert seen == [
                    (done, 70, f"step {done}" if done % 2 else None) for done in range(1, 11)
                ]
                request = fake.wait_for_request("knowledge_rebuild_from_wal")
                assert request["params"]["_progress_token"] is True

                assert "knowledge_close" in await tool_names(client)
                closed = await client.call_tool("knowledge_close", {})
                assert structured(closed) == {"forwarded": "knowledge_close"}
                # The MCP process keeps running after a remote close (P-016).
                assert (await client.list_tools(cache_mode="refresh")).tools

    anyio.run(main)


def test_attached_to_a_real_service_same_results_and_reconnects_after_a_restart(
    tmp_path: Path,
) -> None:
    """K-DBM-006/007/014/015/021/022, K-INV-004: an attached MCP server runs beside the
    socket service that holds the workspace; a call returns what the socket returns; after
    the service stops, a call fails with a clear error (never hangs); once the service is
    back, the next call reconnects and succeeds."""
    workspace = tmp_path / "ws"
    service = ServiceProcess(workspace)
    service.wait_ready()

    async def main() -> None:
        nonlocal service
        args = ("serve", "--mcp-stdio", "--connect", str(service.socket_path))
        async with mcp_client(*args) as client:
            added = await client.call_tool(
                "knowledge_add_episode", {"name": "via mcp", "episode_body": "b"}
            )
            assert added.is_error is False
            via_mcp = structured(await client.call_tool("knowledge_get_episodes", {}))
            with RpcClient(service.socket_path) as direct:
                assert direct.result("knowledge_get_episodes") == via_mcp
            assert via_mcp["count"] == 1

            assert service.stop() == 0
            down = await client.call_tool("knowledge_get_episodes", {})
            assert down.is_error is True
            assert (
                "Ensure a liminis-context-graph socket service is running"
                in structured(down)["message"]
            )

            service = ServiceProcess(workspace)
            service.wait_ready()
            back = await client.call_tool("knowledge_get_episodes", {})
            assert structured(back)["count"] == 1

    try:
        anyio.run(main)
    finally:
        service.stop()


def test_no_listener_at_start_up_exits_6_with_a_clear_message(tmp_path: Path) -> None:
    """P-013, K-DBM-021: attached start-up dials once; with no listener it exits non-zero at
    once, saying where it looked and what to start."""
    path = tmp_path / "nobody.sock"
    started = time.monotonic()
    result = subprocess.run(
        [str(LCG), "serve", "--mcp-stdio", "--connect", str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=clean_env(),
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 6
    assert f"failed to connect to attached service at '{path}'" in result.stderr
    assert "Ensure a liminis-context-graph socket service is running at this path." in (
        result.stderr
    )
    assert result.stdout == ""
    assert time.monotonic() - started < DEADLINE
