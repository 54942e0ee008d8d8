"""`lcg serve --mcp-stdio` with LCG_STORE_URL over a real MCP pipe (issue 28; ADR 0073): a
derive and a recall, an episode and an entity and a search; then the serve restarted with a
FRESH workspace directory on the same store replays the log from PostgreSQL and answers the
same. The real console script, the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.mcp_session import mcp_client, structured

pytestmark = pytest.mark.postgres
RULING = "user schema owns the users table"


async def _call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    return structured(result)


async def _answers(client: Client) -> dict[str, Any]:
    """What the test compares across the two serves: recall, search, the episodes."""
    recalled = await _call(client, "lambo_recall", agent_id="agent-a", query="users table")
    found = await _call(client, "knowledge_find_entities", query="Ada", group_ids=["team"])
    passages = await _call(
        client, "knowledge_search_passages", query="first program", group_ids=["team"]
    )
    episodes = await _call(client, "knowledge_get_episodes", group_id="team", last_n=10)
    return {
        "recall": recalled["context"],
        "search": sorted(n["name"] for n in found["nodes"]),
        "passages": [p["name"] for p in passages["passages"]],
        "episodes": sorted(e["name"] for e in episodes["episodes"]),
    }


def serve(workspace: Path, url: str) -> Any:
    return mcp_client(
        "serve",
        "--mcp-stdio",
        "--session",
        "demo",
        "--workspace",
        str(workspace),
        env={"LCG_STORE_URL": url},
    )


def test_serve_on_postgresql_and_a_fresh_workspace_replays_the_same_answers(
    tmp_path: Path, pg_url: str
) -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with serve(tmp_path / "first", pg_url) as client:
            ack = await _call(
                client,
                "lambo_derive",
                agent_id="agent-a",
                concepts=[{"content": RULING, "concept_type": "entity"}],
            )
            settled = await _call(
                client, "lambo_stats", agent_id="agent-a", receipt=ack["receipt"], wait_ms=30_000
            )
            assert settled["receipt"]["state"] == "applied", settled["receipt"]
            await _call(
                client,
                "knowledge_add_episode",
                name="first note",
                episode_body="Ada Lovelace wrote the first program",
                group_id="team",
            )
            await _call(
                client,
                "knowledge_assert_entity",
                name="Ada Lovelace",
                summary="wrote the first program",
                group_id="team",
            )
            before = await _answers(client)
        assert not (tmp_path / "first" / ".lcg" / "wal.sqlite").exists()
        async with serve(tmp_path / "fresh", pg_url) as client:
            after = await _answers(client)
        return before, after

    before, after = anyio.run(main)
    assert RULING in before["recall"]
    assert "Ada Lovelace" in before["search"]
    assert before["episodes"] == ["first note"]
    assert before["passages"] == ["first note"]
    assert after == before
