"""A write's `{group: last seq}` beside its result (issue 28 item 3,
docs/adr/0086-written-seqs-beside-the-result.md): the MCP result's `_meta["lcg/written"]` and
the socket response's `written` member, so a client can pass it as `min_seq` on another
node. The results themselves are unchanged (the seeds pin their exact shapes), and a read
carries nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from lcg.interfaces.jsonrpc import WRITTEN_FIELD, WRITTEN_META
from tests.helpers.mcp_session import mcp_in_process, structured
from tests.helpers.service_process import ServiceProcess

AGENT = "agent-w"


def written(result: Any) -> dict[str, int] | None:
    found: dict[str, int] | None = (result.meta or {}).get(WRITTEN_META)
    return found


def test_mcp_results_of_writes_carry_their_group_and_seq_in_meta(tmp_path: Path) -> None:
    async def main() -> list[Any]:
        async with mcp_in_process(tmp_path, session="demo") as client:
            first = await client.call_tool(
                "knowledge_add_episode", {"name": "e1", "episode_body": "one", "group_id": "g"}
            )
            second = await client.call_tool(
                "knowledge_add_episode", {"name": "e2", "episode_body": "two", "group_id": "g"}
            )
            read = await client.call_tool(
                "knowledge_get_episodes",
                {"group_id": "g", "min_seq": written(second)},
            )
            concepts = [{"content": "the queue retries", "concept_type": "logic"}]
            derived = await client.call_tool(
                "lambo_derive", {"agent_id": AGENT, "concepts": concepts}
            )
            refused = await client.call_tool("knowledge_add_episode", {"name": "x"})
            return [first, second, read, derived, refused]

    first, second, read, derived, refused = anyio.run(main)
    assert written(first) == {"g": 1}
    assert written(second) == {"g": 2}
    assert set(structured(first)) == set(structured(second))  # the result body as before
    assert WRITTEN_META not in str(structured(first))
    assert len(structured(read)["episodes"]) == 2
    assert written(read) is None  # a read wrote nothing
    assert set(written(derived) or ()) == {"demo"}  # the intent, in the session's group
    assert refused.is_error
    assert written(refused) is None


def test_socket_responses_of_writes_carry_written_beside_the_result(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path / "ws")
    try:
        service.wait_ready()
        with service.connect() as client:
            wrote = client.call(
                "knowledge_add_episode", {"name": "e1", "episode_body": "one", "group_id": "g"}
            )
            read = client.call("knowledge_get_episodes", {"group_id": "g", "min_seq": 1})
    finally:
        service.stop()
    assert wrote[WRITTEN_FIELD] == {"g": 1}
    assert WRITTEN_FIELD not in wrote["result"]
    assert WRITTEN_FIELD not in read
    assert [e["name"] for e in read["result"]["episodes"]] == ["e1"]
