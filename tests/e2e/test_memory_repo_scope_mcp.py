"""repo_scope over a real MCP stdio pipe (issue 30 item 2, seed 001 "Repository-scoped paths"):
an agent records the same file in two repositories, recall and inspect name each one's
repository, a dependency question about the shared name answers for none until the question
names a repository, and a bad repo_scope is refused with nothing written. Then the server is
started again on the same workspace: the identity comes back from the log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.helpers.mcp_session import mcp_client, structured, text_of
from tests.helpers.memory_log import head

ACME = "github.com/acme/widgets"
GADGETS = "github.com/acme/gadgets"
AGENT = "agent-a"


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, {"agent_id": AGENT, **arguments})
    assert not result.is_error, result.content
    return structured(result)


async def _write(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    ack = await _call(client, tool, **arguments)
    settled = await _call(client, "lambo_stats", receipt=ack["receipt"], wait_ms=30_000)
    receipt: dict[str, Any] = settled["receipt"]
    assert receipt["state"] in ("applied", "applied_after_restart"), receipt
    return receipt


def _serve(workspace: Path) -> Any:
    return mcp_client("serve", "--mcp-stdio", "--session", "demo", "--workspace", str(workspace))


def test_m_rsc_002_060_061_062_065_066_the_main_path_over_mcp_stdio(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"

    async def first() -> dict[str, str]:
        async with _serve(workspace) as client:
            ids: dict[str, str] = {}
            for repo in (ACME, GADGETS):
                receipt = await _write(
                    client,
                    "lambo_record_action",
                    action=f"rewrote the build notes of {repo.rsplit('/', 1)[1]}",
                    modifies=["README.md:3"],
                    depends_on=["README.md"],
                    repo_scope=repo,
                )
                ids[repo] = receipt["created"][-1]
            before = head(workspace, "demo")
            bad = await client.call_tool(
                "lambo_derive",
                {
                    "agent_id": AGENT,
                    "concepts": [{"content": "README.md", "concept_type": "resource"}],
                    "repo_scope": "github.com/acme/my widgets",
                },
            )
            assert bad.is_error
            assert "repo_scope" in text_of(bad)
            assert head(workspace, "demo") == before  # M-RSC-007: nothing written
            recalled = await _call(client, "lambo_recall", query="README.md", top_k=10)
            scoped = [h for h in recalled["hits"] if h["content"] == "README.md:3"]
            assert {h["repo_scope"] for h in scoped} == {ACME, GADGETS}
            assert f'README.md:3 [Resource, repo "{ACME}"] (score ' in recalled["context"]
            inspected = await client.call_tool(
                "lambo_inspect", {"agent_id": AGENT, "focus": ids[ACME]}
            )
            assert text_of(inspected).startswith(f'README.md:3 [Resource, repo "{ACME}"]')
            several = await client.call_tool(
                "lambo_inspect", {"agent_id": AGENT, "focus": "README.md:3"}
            )
            assert several.is_error
            assert f'(repo "{GADGETS}")' in text_of(several)
            asked = await _call(client, "lambo_recall", query="what depends on README.md:3")
            assert asked["hits"] == []
            assert asked["warnings"][0].startswith('recall: "README.md:3" names 2 concepts')
            return ids

    ids = anyio.run(first)

    async def again() -> None:
        async with _serve(workspace) as client:  # a new process: the identity is in the log
            inspected = await _call(client, "lambo_inspect", focus=ids[GADGETS])
            assert inspected["repo_scope"] == GADGETS
            named = await _call(
                client, "lambo_recall", query=f"what depends on README.md:3 in {ACME}"
            )
            assert [h["content"] for h in named["hits"]] == ["rewrote the build notes of widgets"]

    anyio.run(again)
