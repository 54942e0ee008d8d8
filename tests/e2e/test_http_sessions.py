"""Several memory sessions in one HTTP serve (issue 27 item 2, ADR 0071): `/mcp/s/<session>`
per session and `/mcp` the serve's own, reached with the SDK's streamable HTTP client, and
the raw refusals (a credential's `sessions`, an invalid session path) with httpx."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import anyio
import httpx2
import pytest

from tests.helpers.http_serve import INITIALIZE, MCP_HEADERS, HttpServe, http_client
from tests.helpers.mcp_session import structured, text_of
from tests.helpers.service_process import DEADLINE

pytestmark = pytest.mark.slow

TOKENS = {name: secrets.token_hex(16) for name in ("all", "beta")}
AGENT = "agent-m"


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServe]:
    """`lambo serve --session alpha --transport http` with a credential for every session
    and one for session beta only."""
    workspace = tmp_path_factory.mktemp("sessions")
    (workspace / "lcg.toml").write_text(
        f"""
[[serve.credential]]
name = "all"
token = "{TOKENS["all"]}"
scopes = ["memory"]

[[serve.credential]]
name = "beta-only"
token = "{TOKENS["beta"]}"
scopes = ["memory"]
sessions = ["beta"]
""",
        encoding="utf-8",
    )
    served = HttpServe(
        workspace, "serve", "--session", "alpha", "--transport", "http", command="lambo", env={}
    )
    yield served
    assert served.stop() == 0, served.log


def post(url: str, token: str | None) -> httpx2.Response:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx2.post(url, json=INITIALIZE, headers=headers, timeout=DEADLINE)


def test_m_trn_023_m_trn_024_each_session_path_serves_its_own_memory(serve: HttpServe) -> None:
    """A write through `/mcp/s/beta` is recalled there and not through `/mcp` (alpha, the
    serve's --session) nor `/mcp/s/gamma`; one through `/mcp` is recalled at `/mcp/s/alpha`
    too; each server's instructions name its session."""
    token = TOKENS["all"]

    async def write(url: str, content: str) -> None:
        async with http_client(url, token) as client:
            concepts = [{"content": content, "concept_type": "logic"}]
            ack = await client.call_tool("lambo_derive", {"agent_id": AGENT, "concepts": concepts})
            receipt = structured(ack)["receipt"]
            waited = await client.call_tool(
                "lambo_stats", {"agent_id": AGENT, "receipt": receipt, "wait_ms": 20_000}
            )
            assert structured(waited)["receipt"]["state"] == "applied"

    async def recall(url: str, query: str) -> tuple[str, str]:
        async with http_client(url, token) as client:
            answer = await client.call_tool("lambo_recall", {"agent_id": AGENT, "query": query})
            return client.instructions or "", text_of(answer)

    async def main() -> None:
        beta, alpha = f"{serve.base}/mcp/s/beta", serve.url
        await write(beta, "the beta team ships on fridays")
        await write(alpha, "the alpha team ships on mondays")
        said, there = await recall(beta, "which team ships on fridays")
        assert said.startswith("Lambo agentic graph memory for session 'beta'.")
        assert "beta team ships on fridays" in there
        assert "alpha team" not in there
        said, here = await recall(alpha, "which team ships on fridays")
        assert said.startswith("Lambo agentic graph memory for session 'alpha'.")
        assert "beta team" not in here
        assert "alpha team ships on mondays" in here
        _, same = await recall(f"{serve.base}/mcp/s/alpha", "alpha team ships")
        assert "alpha team ships on mondays" in same
        _, empty = await recall(f"{serve.base}/mcp/s/gamma", "team ships")
        assert "team ships" not in empty

    anyio.run(main)


def test_m_trn_023_a_credential_reaches_only_its_sessions(serve: HttpServe) -> None:
    """`sessions = ["beta"]`: its own session's path opens; `/mcp` (alpha) and another
    session's path are 404 with an empty body, as a path that does not exist."""
    token = TOKENS["beta"]
    opened = post(f"{serve.base}/mcp/s/beta", token)
    assert opened.status_code == 200, opened.text
    for url in (serve.url, f"{serve.base}/mcp/s/alpha", f"{serve.base}/mcp/s/gamma"):
        refused = post(url, token)
        assert refused.status_code == 404
        assert refused.content == b""
    httpx2.delete(
        f"{serve.base}/mcp/s/beta",
        headers={
            "authorization": f"Bearer {token}",
            "mcp-session-id": opened.headers["mcp-session-id"],
        },
    )


def test_m_trn_023_an_invalid_session_path_is_refused_naming_the_rule(serve: HttpServe) -> None:
    """Authenticated: 400 naming the field and the rule; without a token: the bare 401 first."""
    url = f"{serve.base}/mcp/s/-starts-with-a-dash"
    refused = post(url, TOKENS["all"])
    assert refused.status_code == 400
    message = refused.json()["error"]
    assert message.startswith("session: must start with a letter or digit")
    assert "got '-starts-with-a-dash'" in message
    anonymous = post(url, None)
    assert anonymous.status_code == 401
    assert anonymous.content == b""


def test_m_trn_023_an_mcp_session_of_one_path_is_unknown_at_another(serve: HttpServe) -> None:
    """The MCP session id a client got at `/mcp/s/beta` is not one of `/mcp`'s (404)."""
    token = TOKENS["all"]
    opened = post(f"{serve.base}/mcp/s/beta", token)
    assert opened.status_code == 200, opened.text
    headers = {
        **MCP_HEADERS,
        "authorization": f"Bearer {token}",
        "mcp-session-id": opened.headers["mcp-session-id"],
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    elsewhere = httpx2.post(serve.url, json=listing, headers=headers, timeout=DEADLINE)
    assert elsewhere.status_code == 404
    httpx2.delete(f"{serve.base}/mcp/s/beta", headers=headers)
