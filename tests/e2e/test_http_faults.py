"""Faults and limits of the HTTP serve (issue 27 "Bad input and faults", ADR 0071), driven
with real processes and raw sockets: slow-loris heads, 1,000 idle connections, the connection
ceiling, and clients that go away in the middle of a write.

Nothing here measures time: a deadline is waited for by polling with a bound (`wait_until`,
a socket timeout), and what is asserted is what the serve did."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.helpers.http_serve import INITIALIZE, MCP_HEADERS, HttpServe, http_client
from tests.helpers.mcp_session import text_of
from tests.helpers.memory_log import concepts_and_writes
from tests.helpers.service_process import DEADLINE, wait_until

pytestmark = pytest.mark.slow

AGENT = "agent-f"
SESSION = "faults"


def _address(serve: HttpServe) -> tuple[str, int]:
    host, port = serve.base.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _closed_by_peer(conn: socket.socket) -> bool:
    """Whether the serve closed the connection (EOF or reset); waits at most DEADLINE."""
    conn.settimeout(DEADLINE)
    try:
        return conn.recv(4096) == b""
    except ConnectionResetError:
        return True


def _still_open(conn: socket.socket) -> bool:
    """Nothing to read and no EOF: the serve keeps the connection."""
    conn.setblocking(False)
    try:
        return conn.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        conn.setblocking(True)


def _lambo_serve(workspace: Path, **env: str) -> HttpServe:
    """`lambo serve --session faults --transport http` with these settings."""
    args = ("serve", "--session", SESSION, "--transport", "http")
    return HttpServe(workspace, *args, command="lambo", env=env)


def _recall_works(serve: HttpServe) -> None:
    async def main() -> None:
        async with http_client(serve.url) as client:
            answer = await client.call_tool("lambo_recall", {"agent_id": AGENT, "query": "x"})
            assert not answer.is_error, text_of(answer)

    anyio.run(main)


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServe]:
    """A head deadline of two seconds and at most 20 open connections."""
    serve = _lambo_serve(
        tmp_path_factory.mktemp("tight"),
        LCG_SERVE_HEADER_TIMEOUT_SECS="2",
        LCG_SERVE_MAX_CONNECTIONS="20",
    )
    yield serve
    assert serve.stop() == 0, serve.log


def test_m_trn_010_m_cfg_034_slow_loris_a_head_sent_too_slowly_is_cut(tight: HttpServe) -> None:
    """A client that sends its request line and headers a few bytes at a time, never ending
    them within the head deadline, is closed without an answer; so is one that connects and
    sends nothing. A real client is served after."""
    host, port = _address(tight)
    head = f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    with (
        socket.create_connection((host, port), timeout=DEADLINE) as dribbling,
        socket.create_connection((host, port), timeout=DEADLINE) as silent,
    ):
        cut = False
        for start in range(0, len(head), 4):  # 4 bytes each 0.3 s: past 2 s, never complete
            try:
                dribbling.sendall(head[start : start + 4].encode())
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            time.sleep(0.3)
        assert cut or _closed_by_peer(dribbling)
        assert _closed_by_peer(silent)
    _recall_works(tight)


def test_m_trn_010_m_cfg_034_connections_past_the_ceiling_are_closed_at_accept(
    tight: HttpServe,
) -> None:
    """With 20 connections open (the ceiling) one more is closed before anything is read;
    once the head deadline has cut the idle ones a real client is served again."""
    host, port = _address(tight)
    idle = [socket.create_connection((host, port), timeout=DEADLINE) for _ in range(20)]
    try:
        with socket.create_connection((host, port), timeout=DEADLINE) as extra:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _closed_by_peer(extra)
        assert "([serve] max_connections): new ones are closed at once" in tight.log
        assert all(_closed_by_peer(conn) for conn in idle)
    finally:
        for conn in idle:
            conn.close()
    _recall_works(tight)


@pytest.fixture(scope="module")
def roomy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServe]:
    """The default ceiling (1,024 connections) and a head deadline long enough to hold 1,000
    idle connections through a real client's calls."""
    serve = _lambo_serve(tmp_path_factory.mktemp("roomy"), LCG_SERVE_HEADER_TIMEOUT_SECS="600")
    yield serve
    assert serve.stop() == 0, serve.log


def test_m_trn_010_a_thousand_idle_connections_and_a_real_client_is_still_served(
    roomy: HttpServe,
) -> None:
    host, port = _address(roomy)
    idle = [socket.create_connection((host, port), timeout=DEADLINE) for _ in range(1000)]
    try:
        _recall_works(roomy)
        assert httpx2.get(f"{roomy.base}/healthz", timeout=DEADLINE).json()["ok"] is True
        assert sum(_still_open(conn) for conn in idle) == 1000
        assert roomy.proc.poll() is None
    finally:
        for conn in idle:
            conn.close()


def _session(serve: HttpServe) -> str:
    opened = httpx2.post(serve.url, json=INITIALIZE, headers=MCP_HEADERS, timeout=DEADLINE)
    assert opened.status_code == 200, opened.text
    session: str = opened.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**MCP_HEADERS, "mcp-session-id": session}
    httpx2.post(serve.url, json=initialized, headers=headers, timeout=DEADLINE)
    return session


def _derive_and_hang_up(serve: HttpServe, session: str, content: str, n: int) -> None:
    """POST a lambo_derive and close the socket without reading a byte of the answer."""
    host, port = _address(serve)
    arguments = {"agent_id": AGENT, "concepts": [{"content": content, "concept_type": "logic"}]}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 100 + n,
            "method": "tools/call",
            "params": {"name": "lambo_derive", "arguments": arguments},
        }
    ).encode()
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n"
        f"Mcp-Protocol-Version: 2025-06-18\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((host, port), timeout=DEADLINE) as conn:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        conn.sendall(request + body)  # closed with a reset right after: the call is in flight


def test_m_trn_010_a_client_gone_mid_call_still_has_its_write_applied_once(
    tmp_path: Path,
) -> None:
    """Twelve derives whose clients reset the connection right after sending: a second client
    recalls each, the serve settles every receipt (none pending), and after a restart each
    concept is there exactly once and every write is applied."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    contents = [f"fact number {n} survives a vanished client" for n in range(12)]

    serve = _lambo_serve(workspace)
    try:
        session = _session(serve)
        for n, content in enumerate(contents):
            _derive_and_hang_up(serve, session, content, n)

        async def recalled_all() -> bool:
            async with http_client(serve.url) as client:
                for content in contents:
                    answer = await client.call_tool(
                        "lambo_recall", {"agent_id": "agent-g", "query": content}
                    )
                    if content not in text_of(answer):
                        return False
                return True

        wait_until(lambda: anyio.run(recalled_all), "every write recalled by another client")
    finally:
        assert serve.stop() == 0, serve.log
    for content in contents:
        found, states = concepts_and_writes(workspace, SESSION, content)
        assert found == 1
    assert states == ["applied"] * len(contents)
    again = _lambo_serve(workspace)
    try:
        _recall_works(again)
    finally:
        assert again.stop() == 0, again.log
    for content in contents:
        assert concepts_and_writes(workspace, SESSION, content)[0] == 1
