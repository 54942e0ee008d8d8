"""MCP over Streamable HTTP (issue 27 items 2 and 3, ADR 0064), driven with real processes:
`lcg serve --http` and `lambo serve --transport http` on tmp workspaces, reached with the SDK's
streamable HTTP client and with raw HTTP for the status codes.

One serve per fixture, shared by the module's tests: each test uses its own credential, so a
token bucket one test drains is never another's."""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from lcg.interfaces.exit_codes import EXIT_BUSY
from tests.helpers.http_serve import INITIALIZE, HttpServe, http_client, refused_start
from tests.helpers.mcp_session import structured, text_of, tool_names
from tests.helpers.service_process import DEADLINE

pytestmark = pytest.mark.slow

TOKENS = {name: secrets.token_hex(16) for name in ("cli", "full", "reader", "limited", "ceiling")}
BURST = 40


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServe]:
    """`lcg serve --http --auth-token T` with three [[serve.credential]] entries, a burst of
    40 and a refill of one request every ten seconds, and a ceiling of three live sessions."""
    workspace = tmp_path_factory.mktemp("guarded")
    token_file = workspace / "reader.token"
    token_file.write_text(TOKENS["reader"] + "\n", encoding="utf-8")
    (workspace / "lcg.toml").write_text(
        f"""
[serve]
max_sessions = 3
per_session_rps = 0.1
burst = {BURST}

[[serve.credential]]
name = "full"
token = "{TOKENS["full"]}"
scopes = ["read", "write", "memory"]

[[serve.credential]]
name = "reader"
token_file = "reader.token"
scopes = ["read"]

[[serve.credential]]
name = "limited"
token = "{TOKENS["limited"]}"
scopes = ["memory"]

[[serve.credential]]
name = "ceiling"
token = "{TOKENS["ceiling"]}"
scopes = ["memory"]
""",
        encoding="utf-8",
    )
    serve = HttpServe(workspace, "serve", "--http", "--auth-token", TOKENS["cli"], env={})
    yield serve
    assert serve.stop() == 0, serve.log


@pytest.fixture(scope="module")
def lambo_env_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServe, str]]:
    """`lambo serve --session demo --transport http` guarded by LAMBO_AUTH_TOKEN."""
    token = secrets.token_hex(16)
    workspace = tmp_path_factory.mktemp("lambo")
    serve = HttpServe(
        workspace,
        "serve",
        "--session",
        "demo",
        "--transport",
        "http",
        command="lambo",
        env={"LAMBO_AUTH_TOKEN": token},
    )
    yield serve, token
    assert serve.stop() == 0, serve.log


@pytest.fixture(scope="module")
def open_loopback(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServe]:
    """`lcg serve --http --scope memory --bind 127.0.0.2` (loopback) with no credential at
    all, and a one-second body deadline."""
    serve = HttpServe(
        tmp_path_factory.mktemp("open"),
        "serve",
        "--http",
        "--scope",
        "memory",
        "--bind",
        "127.0.0.2",
        env={"LCG_SERVE_BODY_TIMEOUT_SECS": "1"},
    )
    yield serve
    assert serve.stop() == 0, serve.log


def test_m_trn_010_m_trn_017_m_trn_025_m_cfg_006_lambo_serves_memory_over_http_with_its_token(
    lambo_env_token: tuple[HttpServe, str],
) -> None:
    """The SDK's streamable HTTP client lists the memory tools and calls a write and a read,
    read-your-writes through the receipt, with the token LAMBO_AUTH_TOKEN set; the token
    authenticates the client, and agent_id stays the caller's word (M-TRN-025). Also
    M-CFG-002: `--transport http` selects Streamable HTTP."""
    serve, token = lambo_env_token

    async def main() -> None:
        async with http_client(serve.url, token) as client:
            assert client.server_info is not None
            assert client.server_info.name == "lambo"  # seed 001's server, not lcg's name
            instructions = client.instructions or ""
            assert instructions.startswith("Lambo agentic graph memory for session 'demo'.")
            assert "It is\ncaller-asserted and unverified." in instructions
            listed = await tool_names(client)
            assert {"lambo_derive", "lambo_recall", "lambo_stats"} <= listed
            assert all(name.startswith("lambo_") for name in listed)
            ack = await client.call_tool(
                "lambo_derive",
                {
                    "agent_id": "agent-h",
                    "concepts": [
                        {"content": "the http transport serves memory", "concept_type": "entity"}
                    ],
                },
            )
            receipt = structured(ack)["receipt"]
            stats = await client.call_tool(
                "lambo_stats", {"agent_id": "agent-h", "receipt": receipt, "wait_ms": 20_000}
            )
            assert structured(stats)["receipt"]["state"] == "applied"
            recall = await client.call_tool(
                "lambo_recall", {"agent_id": "agent-h", "query": "http transport"}
            )
            assert "the http transport serves memory" in text_of(recall)

    anyio.run(main)
    assert token not in serve.log


def test_m_trn_016_m_trn_019_every_request_needs_the_bearer_token(guarded: HttpServe) -> None:
    """No token, a wrong one, another scheme or the token in the query string: 401 and an
    empty body (no tool list); the --auth-token token opens a session (M-CFG-005). Also
    OQ-40: this serve listens on loopback (the default bind), so once a token is configured
    it is required on loopback too."""
    good = TOKENS["cli"]
    refusals = [
        guarded.post(INITIALIZE),
        guarded.post(INITIALIZE, token=secrets.token_hex(16)),
        guarded.post(INITIALIZE, headers={"authorization": f"Basic {good}"}),
        guarded.post(INITIALIZE, params={"access_token": good}),
        guarded.post(INITIALIZE, token=good, params={"token": good}),
    ]
    for response in refusals:
        assert response.status_code == 401
        assert response.content == b""
    opened = guarded.post(INITIALIZE, token=good)
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    headers = {"mcp-session-id": session}
    assert (
        guarded.post(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        ).status_code
        == 401
    )
    httpx2.delete(guarded.url, headers={**headers, "authorization": f"Bearer {good}"})


def test_m_trn_018_m_cfg_020_a_credential_reaches_only_its_scopes(guarded: HttpServe) -> None:
    """The `reader` credential (token_file, scopes = ["read"]) lists the read tools only, and
    a memory tool is the "Unknown tool" answer stdio gives outside --scope; `full` lists the
    memory and knowledge tools and calls one of each."""

    async def main() -> None:
        async with http_client(guarded.url, TOKENS["reader"]) as reader:
            listed = await tool_names(reader)
            assert "knowledge_status" in listed
            assert not any(name.startswith("lambo_") for name in listed)
            assert "knowledge_add_episode" not in listed  # a write
            with pytest.raises(MCPError, match="Unknown tool: 'lambo_recall'"):
                await reader.call_tool("lambo_recall", {"agent_id": "a", "query": "x"})
        async with http_client(guarded.url, TOKENS["full"]) as full:
            listed = await tool_names(full)
            assert {"lambo_recall", "knowledge_status", "knowledge_add_episode"} <= listed
            status = await full.call_tool("knowledge_status", {})
            assert not status.is_error
            recall = await full.call_tool("lambo_recall", {"agent_id": "a", "query": "nothing"})
            assert not recall.is_error

    anyio.run(main)


def test_m_trn_020_m_cfg_034_a_credential_over_its_rate_gets_429_writes_apart_from_reads(
    guarded: HttpServe,
) -> None:
    """The `limited` credential's write bucket runs dry after the burst: 429 with
    Retry-After; its read bucket still admits a read."""
    write = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "lambo_derive", "arguments": {"agent_id": "a", "concepts": []}},
    }
    statuses = []
    for _ in range(BURST + 20):
        response = guarded.post(write, token=TOKENS["limited"])
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert int(response.headers["retry-after"]) >= 1
            break
    assert statuses[-1] == 429, statuses
    assert len(statuses) > BURST  # the burst was admitted first (the SDK answered each)
    read = guarded.post(INITIALIZE, token=TOKENS["limited"])
    assert read.status_code == 200, read.text
    httpx2.delete(
        guarded.url,
        headers={
            "mcp-session-id": read.headers["mcp-session-id"],
            "authorization": f"Bearer {TOKENS['limited']}",
        },
    )


def test_m_trn_021_m_cfg_034_sessions_over_the_ceiling_get_503(guarded: HttpServe) -> None:
    """Three live sessions at most: the next initialize is answered 503; once one ends, a new
    one opens."""
    auth = {"authorization": f"Bearer {TOKENS['ceiling']}"}
    opened: list[str] = []
    refused = None
    for _ in range(4):
        response = guarded.post(INITIALIZE, token=TOKENS["ceiling"])
        if response.status_code == 503:
            refused = response
            break
        assert response.status_code == 200, response.text
        opened.append(response.headers["mcp-session-id"])
    assert refused is not None
    assert len(opened) <= 3
    assert "Too many open sessions" in refused.text
    for session in opened:
        httpx2.delete(guarded.url, headers={**auth, "mcp-session-id": session})
    again = guarded.post(INITIALIZE, token=TOKENS["ceiling"])
    assert again.status_code == 200, again.text
    httpx2.delete(guarded.url, headers={**auth, "mcp-session-id": again.headers["mcp-session-id"]})


def test_m_trn_039_a_second_http_serve_of_a_held_workspace_refuses_naming_the_holder(
    guarded: HttpServe,
) -> None:
    workspace = guarded.log_path.parent / guarded.log_path.name.removesuffix("-http.log")
    done = refused_start(
        workspace,
        "serve",
        "--session",
        "other",
        "--transport",
        "http",
        "--port",
        "0",
        command="lambo",
    )
    assert done.returncode == EXIT_BUSY, done.stderr
    refusal = next(line for line in done.stderr.splitlines() if line.startswith("error:"))
    assert f"pid {guarded.proc.pid}" in refusal
    assert "`lcg serve --http`" in refusal
    assert str(workspace) not in refusal
    assert TOKENS["cli"] not in done.stderr


def test_m_trn_013_m_trn_014_loopback_without_a_credential_is_open_and_healthz_says_little(
    open_loopback: HttpServe,
) -> None:
    """--bind and --port chose where it listens; no Authorization header is needed there."""
    assert open_loopback.url.startswith("http://127.0.0.2:")
    assert not open_loopback.url.startswith("http://127.0.0.2:7700/")

    async def main() -> None:
        async with http_client(open_loopback.url) as client:
            assert "lambo_recall" in await tool_names(client)

    anyio.run(main)
    health = httpx2.get(f"{open_loopback.base}/healthz")
    assert health.json() == {"ok": True, "state": "healthy"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_m_trn_010_both_protocol_generations_the_sdk_speaks_are_served(
    open_loopback: HttpServe, mode: Literal["legacy", "auto"]
) -> None:
    """The SDK's client with the initialize handshake (2025 protocols) and with discovery
    (the 2026 one, no MCP session): each lists the tools and calls one."""

    async def main() -> str:
        async with http_client(open_loopback.url, mode=mode) as client:
            assert "lambo_recall" in await tool_names(client)
            answer = await client.call_tool("lambo_recall", {"agent_id": "a", "query": "gen"})
            assert not answer.is_error, text_of(answer)
            return client.protocol_version

    version = anyio.run(main)
    assert version.startswith("2025-") if mode == "legacy" else version.startswith("2026-")


def test_m_trn_022_m_trn_060_m_trn_069_a_body_over_4_mib_is_refused_413_before_parsing(
    open_loopback: HttpServe,
) -> None:
    """A 5 MiB body, declared and chunked without a length: 413 both times; the serve goes on."""
    big = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","pad":"' + b"x" * (5 << 20) + b'"}'
    declared = httpx2.post(
        open_loopback.url, content=big, headers={"content-type": "application/json"}
    )
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(big), 1 << 16):
            yield big[start : start + (1 << 16)]

    chunked = httpx2.post(
        open_loopback.url, content=chunks(), headers={"content-type": "application/json"}
    )
    assert "content-length" not in chunked.request.headers
    assert chunked.status_code == 413
    assert open_loopback.post(INITIALIZE).status_code == 200


def test_m_trn_010_dns_rebinding_a_foreign_host_or_origin_is_refused(
    open_loopback: HttpServe,
) -> None:
    foreign_host = open_loopback.post(INITIALIZE, headers={"host": "evil.example:80"})
    assert foreign_host.status_code == 421
    foreign_origin = open_loopback.post(INITIALIZE, headers={"origin": "http://evil.example"})
    assert foreign_origin.status_code == 403


def test_m_trn_015_a_non_loopback_bind_without_a_credential_refuses_to_start(
    tmp_path: Path,
) -> None:
    done = refused_start(tmp_path, "serve", "--http", "--bind", "0.0.0.0", "--port", "0")  # noqa: S104
    assert done.returncode == 2
    assert "--bind: an address other than loopback" in done.stderr
    assert "needs a credential" in done.stderr
    assert not (tmp_path / ".lcg").exists()


def test_m_trn_010_m_cfg_034_slow_loris_a_body_sent_too_slowly_is_answered_408(
    open_loopback: HttpServe,
) -> None:
    """A client that declares 100 bytes and sends one is cut at the body deadline (1 s)."""
    host, port = open_loopback.base.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=DEADLINE) as conn:
        conn.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        answer = conn.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert open_loopback.post(INITIALIZE).status_code == 200


def _curl(*args: str) -> tuple[int, bytes]:
    """curl as a user would run it: the status code on the last line of its output."""
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("curl is not installed")
    done = subprocess.run(
        [curl, "-sS", "-o", "-", "-w", "\n%{http_code}", "--max-time", "60", *args],
        capture_output=True,
        timeout=DEADLINE,
        check=True,
    )
    body, _, status = done.stdout.rpartition(b"\n")
    return int(status), body


def test_m_trn_019_m_trn_069_curl_sees_the_refusals_and_the_token_opens(
    guarded: HttpServe, tmp_path: Path
) -> None:
    """The raw HTTP cases with curl: no token, a wrong one and the token in the query string
    are a bare 401; a body over 4 MiB is 413; /healthz needs no token; the token opens."""
    good = TOKENS["cli"]
    accept = ["-H", "content-type: application/json"]
    accept += ["-H", "accept: application/json, text/event-stream"]
    initialize = ["--data-binary", json.dumps(INITIALIZE)]
    assert _curl(*accept, *initialize, guarded.url) == (401, b"")
    wrong = ["-H", f"authorization: Bearer {secrets.token_hex(16)}"]
    assert _curl(*accept, *wrong, *initialize, guarded.url) == (401, b"")
    assert _curl(*accept, *initialize, f"{guarded.url}?access_token={good}") == (401, b"")
    big = tmp_path / "big.json"
    big.write_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"' + b"x" * (4 << 20) + b'"}}'
    )
    bearer = ["-H", f"authorization: Bearer {good}"]
    status, _ = _curl(*accept, *bearer, "--data-binary", f"@{big}", guarded.url)
    assert status == 413
    status, health = _curl(f"{guarded.base}/healthz")
    assert status == 200
    assert json.loads(health) == {"ok": True, "state": "healthy"}
    status, opened = _curl(*accept, *bearer, *initialize, guarded.url)
    assert status == 200
    assert b"serverInfo" in opened
