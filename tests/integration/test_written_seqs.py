"""A write's `{group: last seq}` beside its result, and a read's `min_seq` beside its
arguments (issue 28 item 3, docs/adr/0086-written-seqs-and-min-seq-beside-the-call.md): the
MCP result's `_meta["lcg/written"]` and the socket response's `written` member; the MCP
request's `_meta["lcg/min_seq"]` and the socket request's `min_seq` member, which every read
tool honours, the lambo_* reads too (the seed fixes their arguments and results exactly, so
neither goes inside them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from lcg.interfaces.jsonrpc import MIN_SEQ_FIELD, WRITTEN_FIELD, WRITTEN_META
from lcg.interfaces.read_after import MIN_SEQ_META
from tests.helpers.fake_service import FakeConnection, FakeService, Frame
from tests.helpers.mcp_session import mcp_client, mcp_in_process, structured
from tests.helpers.service_process import RpcClient, ServiceProcess

AGENT = "agent-w"


def written(result: Any) -> dict[str, int] | None:
    found: dict[str, int] | None = (result.meta or {}).get(WRITTEN_META)
    return found


def asking(min_seq: object) -> Any:
    """A tools/call request's `_meta` giving `min_seq`."""
    return cast(Any, {MIN_SEQ_META: min_seq})


def short_waits(workspace: Path) -> Path:
    """A workspace whose reads wait 100 ms for a min_seq (the refusals come sooner)."""
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "lcg.toml").write_text("[store]\nmin_seq_wait_ms = 100\n", encoding="utf-8")
    return workspace


def test_mcp_results_of_writes_carry_their_group_and_seq_in_meta(tmp_path: Path) -> None:
    short_waits(tmp_path)

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
            recall = {"agent_id": AGENT, "query": "queue retries"}
            recalled = await client.call_tool("lambo_recall", recall, meta=asking(written(derived)))
            ahead = {"demo": 10**6}
            too_far = await client.call_tool(
                "lambo_recall", recall, meta=cast(Any, {MIN_SEQ_META: ahead})
            )
            malformed = await client.call_tool(
                "lambo_recall", recall, meta=cast(Any, {MIN_SEQ_META: 3})
            )
            return [first, second, read, derived, refused, recalled, too_far, malformed]

    first, second, read, derived, refused, recalled, too_far, malformed = anyio.run(main)
    assert written(first) == {"g": 1}
    assert written(second) == {"g": 2}
    assert set(structured(first)) == set(structured(second))  # the result body as before
    assert WRITTEN_META not in str(structured(first))
    assert len(structured(read)["episodes"]) == 2
    assert written(read) is None  # a read wrote nothing
    assert set(written(derived) or ()) == {"demo"}  # the intent, in the session's group
    assert refused.is_error
    assert written(refused) is None
    assert not recalled.is_error  # waited for nothing: this node applied it
    assert too_far.is_error
    assert "min_seq: this node has applied group 'demo' to seq" in too_far.content[0].text
    assert malformed.is_error
    assert "min_seq" in malformed.content[0].text


def test_socket_responses_of_writes_carry_written_beside_the_result(tmp_path: Path) -> None:
    service = ServiceProcess(short_waits(tmp_path / "ws"))
    try:
        service.wait_ready()
        with service.connect() as client:
            wrote = client.call(
                "knowledge_add_episode", {"name": "e1", "episode_body": "one", "group_id": "g"}
            )
            read = client.call("knowledge_get_episodes", {"group_id": "g", "min_seq": 1})
            saints = {"agent_id": AGENT}
            waited = framed(client, "lambo_saints", saints, **{MIN_SEQ_FIELD: {"g": 1}})
            refused = framed(client, "lambo_saints", saints, **{MIN_SEQ_FIELD: {"g": 10**6}})
            malformed = framed(client, "lambo_saints", saints, **{MIN_SEQ_FIELD: [1]})
    finally:
        service.stop()
    assert wrote[WRITTEN_FIELD] == {"g": 1}
    assert WRITTEN_FIELD not in wrote["result"]
    assert WRITTEN_FIELD not in read
    assert [e["name"] for e in read["result"]["episodes"]] == ["e1"]
    assert "result" in waited
    assert "min_seq: this node has applied group 'g' to seq 1" in refused["error"]["message"]
    assert refused["error"]["data"]["field"] == "min_seq"
    assert malformed["error"]["data"]["field"] == "min_seq"


def framed(client: RpcClient, method: str, params: dict[str, Any], **beside: Any) -> Any:
    """One request with members beside `params` (the socket's min_seq), its response frame."""
    frame = {"jsonrpc": "2.0", "id": 99, "method": method, "params": params, **beside}
    client.send_line(json.dumps(frame).encode())
    return client.read()


@pytest.mark.slow  # a real stdio serve process: its start is most of the time
def test_an_attached_stdio_serve_carries_both_between_mcp_and_the_socket(tmp_path: Path) -> None:
    """`lcg serve --mcp-stdio --connect SOCK` (a real process) in front of a scripted socket
    service: the request's `_meta` min_seq goes out as the frame's `min_seq` member, the
    frame's `written` comes back as the result's `_meta`."""

    def scripted(request: Frame, connection: FakeConnection) -> None:
        frame = {"jsonrpc": "2.0", "id": request["id"], "result": {"status": "ok"}}
        connection.send(frame | {WRITTEN_FIELD: {"g": 7}})

    async def main() -> Any:
        async with mcp_client("serve", "--mcp-stdio", "--connect", str(sock)) as client:
            return await client.call_tool(
                "knowledge_get_episodes", {"group_id": "g"}, meta=asking({"g": 5})
            )

    sock = tmp_path / "service.sock"
    with FakeService(sock, scripted) as service:
        result = anyio.run(main)
        forwarded = service.wait_for_request("knowledge_get_episodes")
    assert forwarded[MIN_SEQ_FIELD] == {"g": 5}
    assert MIN_SEQ_FIELD not in forwarded["params"]
    assert structured(result) == {"status": "ok"}
    assert written(result) == {"g": 7}
