"""`lcg serve --mcp-stdio` (standalone) as a real subprocess, driven by the SDK's own client.

Checklist: K-MCP-001/004..009/012/014/015, K-INV-008..010/013, K-SCP-001..010/014/015,
K-REC-004/005, K-DBM-001..004, K-PRG-002/003/005, K-EXC-001..003/006, P-008..P-012, P-016.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from lcg.interfaces.config import Settings
from lcg.interfaces.operations import BY_NAME, OPERATIONS, OPERATOR_OPERATIONS
from lcg.projections.embedding.port import Embedder
from lcg.projections.wal.lease import WriterLease
from tests.helpers.console_script import seed
from tests.helpers.mcp_session import mcp_client, structured, tool_names
from tests.helpers.seed_scopes import SEED_SCOPE_OF, expected_tools
from tests.helpers.service_process import DEADLINE, LCG, ServiceProcess, clean_env

pytestmark = pytest.mark.slow


def test_every_operation_has_the_seed_scope() -> None:
    """K-INV-010/012/014..057: each table operation carries the seed's name and scope."""
    for operation in OPERATIONS:
        assert operation.name in SEED_SCOPE_OF, operation.name
        assert operation.scope.value == SEED_SCOPE_OF[operation.name], operation.name
    assert "health_check" not in BY_NAME


def test_standalone_session_initialize_list_call_progress_close(tmp_path: Path) -> None:
    """K-INV-003: `--mcp-stdio` serves MCP over stdin/stdout. One standalone server over the
    initialize handshake (K-MCP-001/002/004/005, K-DBM-001/
    002/004): tools/list advertises every operation with its model's schema and read-only hint
    (K-INV-008/009/013, K-MCP-006); valid calls return structuredContent plus the same JSON as
    text (P-009); invalid ones are isError results naming the field and the rule (P-009,
    P-010); an unknown tool is METHOD_NOT_FOUND (P-011); a progress token yields progress
    notifications before the result (K-PRG-002/003); knowledge_close ends the process and
    frees the workspace (P-016, K-SCP-014/015)."""
    workspace = tmp_path / "ws"

    async def main() -> None:
        async with mcp_client(
            "serve", "--mcp-stdio", "--workspace", str(workspace), mode="legacy"
        ) as client:
            assert client.server_info is not None
            assert client.server_info.name == "liminis-context-graph"
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            # every tool of the table, and not the operator's lcg_* job handles (issue 13)
            listed = {op.name for op in OPERATIONS} - {"lambo_derive_image"}  # M-IMG-001
            assert set(tools) == expected_tools("all") == listed
            assert not set(tools) & {op.name for op in OPERATOR_OPERATIONS}
            for name, tool in tools.items():
                operation = BY_NAME[name]
                assert tool.input_schema == operation.input_schema()
                assert tool.description == operation.description
                assert tool.annotations is not None
                assert tool.annotations.read_only_hint is operation.read_only
            episode_schema = tools["knowledge_add_episode"].input_schema
            assert set(episode_schema["required"]) == {"name", "episode_body"}
            assert episode_schema["properties"]["name"]["maxLength"] == 512

            created = await client.call_tool(
                "knowledge_assert_entity", {"name": "Ada", "summary": "mathematician"}
            )
            assert created.is_error is False
            assert json.loads(created.content[0].text) == structured(created)  # type: ignore[union-attr]
            assert structured(created)["created"] is True

            await _invalid_calls_name_the_field_and_the_rule(client)
            await _progress_notifications_come_before_the_result(client)

            closed = await client.call_tool("knowledge_close", {})
            assert structured(closed) == {"status": "closed"}
            with pytest.raises(MCPError):  # the server ended its loop and exited
                await client.call_tool("knowledge_status", {})
        settings = Settings(workspace)
        assert not settings.socket_path.exists()  # --mcp-stdio binds no socket (K-MCP-002)
        with WriterLease(settings.lease_path, "pytest after close", datetime.now(UTC)):
            pass

    anyio.run(main)


async def _invalid_calls_name_the_field_and_the_rule(client: Client) -> None:
    missing = await client.call_tool("knowledge_add_episode", {"name": "n"})
    assert missing.is_error is True
    assert structured(missing)["code"] == -32602
    assert structured(missing)["message"] == (
        "Missing required argument(s) for 'knowledge_add_episode': episode_body"
    )
    wrong_type = await client.call_tool("knowledge_get_episodes", {"last_n": "five"})
    assert (wrong_type.is_error, structured(wrong_type)["code"]) == (True, -32602)
    assert structured(wrong_type)["data"]["field"] == "last_n"
    too_long = await client.call_tool("knowledge_assert_entity", {"name": "x" * 513})
    message = structured(too_long)["message"]
    assert message.startswith("name: ")
    assert "512" in message
    refused = await client.call_tool("knowledge_rebuild_from_wal", {"group_id": "nobody"})
    assert structured(refused)["data"]["kind"] == "not_found"
    with pytest.raises(MCPError) as unknown:
        await client.call_tool("knowledge_fly", {})
    assert unknown.value.code == -32601
    assert unknown.value.message == "Unknown tool: 'knowledge_fly'"


INVALID_ARGUMENTS: list[tuple[str, dict[str, Any], str]] = [
    ("knowledge_add_episode", {"name": "n"}, "episode_body"),  # missing
    ("knowledge_get_episodes", {"last_n": "five"}, "last_n"),  # wrong type
    ("knowledge_get_episodes", {"last_n": 0}, "last_n"),  # out of range
    ("knowledge_get_episodes", {"lastn": 5}, "lastn"),  # not a parameter
    ("knowledge_assert_entity", {"name": 7}, "name"),  # wrong type
]


def test_p_010_every_invalid_argument_is_32602_over_mcp_standalone_and_attached(
    tmp_path: Path,
) -> None:
    """P-010, issue 24 item 18 (ADR 0050): over MCP a missing argument and one of the wrong
    type, out of range or unknown all give one code, -32602, in an isError result naming
    the field, whether the server is standalone or attached to a socket service (which
    itself answers -32000, P-002)."""
    standalone = tmp_path / "standalone"
    service = ServiceProcess(tmp_path / "attached")

    async def check(*args: str) -> None:
        async with mcp_client("serve", "--mcp-stdio", *args) as client:
            for name, arguments, field in INVALID_ARGUMENTS:
                refused = await client.call_tool(name, arguments)
                assert refused.is_error is True, (name, arguments)
                error = structured(refused)
                assert (error["code"], error["data"]["field"]) == (-32602, field), error
                assert error["data"]["kind"] == "invalid_params"

    try:
        assert service.wait_ready()["healthy"] is True, service.log
        anyio.run(check, "--workspace", str(standalone))
        anyio.run(check, "--connect", str(service.socket_path))
    finally:
        service.stop()


async def _progress_notifications_come_before_the_result(client: Client) -> None:
    for index in range(3):
        await client.call_tool(
            "knowledge_add_episode", {"name": f"p{index}", "episode_body": "b", "group_id": "pg"}
        )
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    params = {"group_id": "pg", "force_clear": True}
    rebuilt = await client.call_tool("knowledge_rebuild_from_wal", params, None, on_progress)
    assert structured(rebuilt)["mutations_replayed"] == 3
    # P-008: `progress` counts frames (one page of events here), `total` is the frame's.
    assert seen == [(1, 3, "knowledge_rebuild_from_wal: 3 of 3")]
    quiet = await client.call_tool("knowledge_rebuild_from_wal", params)  # K-PRG-005
    assert structured(quiet)["mutations_replayed"] == 3


def test_p_008_progress_counts_frames_and_carries_each_frames_total(
    tmp_path: Path, embedder: Embedder
) -> None:
    """P-008, K-PRG-002/003: a summary backfill over 201 entities reads two pages (200, then
    1), so it sends two frames, `processed` 200 and 201 of `total` 201; the MCP client sees
    two notifications whose `progress` counts the frames (1, 2), with the frames' `total` and
    `message`."""
    workspace = tmp_path / "ws"
    seed(embedder, workspace, *(("bf", f"E{index:03}") for index in range(201)))
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        async with mcp_client("serve", "--mcp-stdio", "--workspace", str(workspace)) as client:
            params = {"group_id": "bf"}
            backfilled = await client.call_tool(
                "knowledge_backfill_summary_embeddings", params, None, on_progress
            )
            assert structured(backfilled)["total_entities"] == 201

    anyio.run(main)
    method = "knowledge_backfill_summary_embeddings"
    assert seen == [(1, 201, f"{method}: 200 of 201"), (2, 201, f"{method}: 201 of 201")]


COMBINATIONS: list[tuple[str, ...]] = [
    ("read",),
    ("write",),
    ("cypher",),
    ("admin",),
    ("memory",),
    ("read", "admin"),
    ("read", "write", "admin"),
    ("all",),
    (),
]


def test_tools_list_under_each_scope_combination(tmp_path: Path) -> None:
    """K-SCP-001..010/014, K-MCP-007..009/012/014, P-012: tools/list is exactly the union of
    the seed's scope sets (restricted to operations that exist); cypher is never implied;
    the default is all; memory advertises the lambo tools (issue 11); --allow-remote-close
    changes nothing standalone. Also K-EXC-001..003/006: the seed's standalone config
    (`liminis-context-graph --mcp-stdio --scope=read,write`, cwd = the workspace) lists
    read ∪ write and keeps its state in cwd/.lcg."""
    listed: dict[tuple[str, ...], set[str]] = {}

    async def list_with(scopes: tuple[str, ...], index: int) -> None:
        args = ["serve", "--mcp-stdio", "--workspace", str(tmp_path / f"ws{index}")]
        if scopes:
            args.append("--scope=" + ",".join(scopes))
        if scopes == ("admin",):
            args.append("--allow-remote-close")  # no effect standalone (K-MCP-012)
        async with mcp_client(*args) as client:
            listed[scopes] = await tool_names(client)

    async def seed_config(cwd: Path) -> None:
        async with mcp_client(
            "--mcp-stdio", "--scope=read,write", command="liminis-context-graph", cwd=cwd
        ) as client:
            listed[("read", "write")] = await tool_names(client)

    async def main() -> None:
        limit = anyio.Semaphore(4)

        async def limited(job: Any, *args: Any) -> None:
            async with limit:
                await job(*args)

        seed_cwd = tmp_path / "seed-config"
        seed_cwd.mkdir()
        async with anyio.create_task_group() as tasks:
            for index, scopes in enumerate(COMBINATIONS):
                tasks.start_soon(limited, list_with, scopes, index)
            tasks.start_soon(limited, seed_config, seed_cwd)
        assert Settings(seed_cwd).wal_path.exists()

    anyio.run(main)
    for scopes in COMBINATIONS:
        assert listed[scopes] == expected_tools(*(scopes or ("all",))), scopes
    assert listed[("read", "write")] == expected_tools("read", "write")
    assert "knowledge_query_cypher" not in listed[("read", "write", "admin")]
    assert listed[("memory",)] == expected_tools("memory")
    assert listed[("memory",)] >= {"lambo_derive", "lambo_record_action", "lambo_stats"}
    assert "knowledge_close" in listed[("admin",)]
    everything = {op.name for op in OPERATIONS} - {"lambo_derive_image"}  # client vectors off
    assert listed[()] == listed[("all",)] == everything


def test_an_unknown_or_empty_scope_is_a_start_up_error(tmp_path: Path) -> None:
    """P-012: an unknown token is named, the valid values listed; exit code 2."""
    for scope, said in (("read,bogus", "unknown scope 'bogus'"), (" , ", "no scope given")):
        result = subprocess.run(
            [str(LCG), "serve", "--mcp-stdio", f"--scope={scope}", "-w", str(tmp_path)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env=clean_env(),
            timeout=DEADLINE,
            check=False,
        )
        assert result.returncode == 2, result.stderr
        assert said in result.stderr
        assert "valid values: read, write, cypher, admin, memory, all" in result.stderr
        assert result.stdout == ""


def test_m_err_002_a_held_workspace_refusal_shows_no_holder_path_or_socket(
    tmp_path: Path,
) -> None:
    """K-DBM-003, M-ERR-002: while another process holds the workspace, the standalone
    server starts degraded (the socket service's start-up path): knowledge_status reports it,
    and every other call, knowledge or memory, is refused saying the workspace is held and
    what to do, with nothing of the holder (pid, host, command), no path and no socket, and
    without asking for a recovery that nothing needs."""
    workspace = tmp_path / "ws"
    settings = Settings(workspace)
    settings.state_dir.mkdir(parents=True)
    internal = (
        str(os.getpid()),
        socket.gethostname(),
        "pytest holder",
        str(tmp_path),
        "service.sock",
        "recovery",
    )
    texts: list[str] = []

    async def main() -> None:
        args = ("serve", "--mcp-stdio", "--scope=all", "-w", str(workspace))
        async with mcp_client(*args) as client:
            status = structured(await client.call_tool("knowledge_status", {}))
            assert (status["degraded"], status["connected"]) == (True, False)
            texts.append(status["reason"])
            refused = await client.call_tool(
                "knowledge_add_episode", {"name": "n", "episode_body": "b"}
            )
            assert refused.is_error is True
            error = structured(refused)
            assert error["code"] == -32001
            texts.extend([error["message"], json.dumps(error["data"])])
            memory = await client.call_tool("lambo_stats", {"agent_id": "a1"})
            assert memory.is_error is True
            texts.extend(item.text for item in memory.content if item.type == "text")

    with WriterLease(settings.lease_path, "pytest holder", datetime.now(UTC)):
        anyio.run(main)
    for text in texts:
        assert "another process is writing this workspace" in text, text
        assert "nothing was written" in text, text
        assert "--connect" in text, text
        leaked = [detail for detail in internal if detail in text]
        assert leaked == [], text


def test_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    """K-MCP-015: every line the server writes to stdout is a JSON-RPC message, logs go to
    stderr, and end of input ends the server with exit code 0."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {
                "name": "knowledge_add_episode",
                "arguments": {"name": "a", "episode_body": "b"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "knowledge_get_episodes", "arguments": {}},
        },
    ]
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    result = subprocess.run(
        [str(LCG), "serve", "--mcp-stdio", "-w", str(tmp_path / "ws")],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    frames = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(frame["jsonrpc"] == "2.0" for frame in frames)
    assert sorted(frame["id"] for frame in frames) == [1, 2, 3, 4]
    # Calls run concurrently (MCP does not order them); the write is answered although
    # input ended right after it was sent.
    added = next(frame for frame in frames if frame["id"] == 3)
    assert "episode_uuid" in added["result"]["structuredContent"]


def test_issue_10_a_line_that_is_not_utf8_json_or_a_message_is_answered_not_ignored(
    tmp_path: Path,
) -> None:
    """JSON-RPC 2.0: a parse error (-32700) or an invalid request (-32600: an id that is not
    a string, an integer or null, a "jsonrpc" that is not "2.0") gets an answer, with id null
    when no valid id can be read from the line (issue 24: with the id when it can), so a
    client that sent one never hangs; nothing runs, and the session goes on."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    stored = {"name": "n", "episode_body": "must not be stored"}
    add: dict[str, Any] = {
        "method": "tools/call",
        "params": {"name": "knowledge_add_episode", "arguments": stored},
    }
    episodes: dict[str, Any] = {
        "method": "tools/call",
        "params": {"name": "knowledge_get_episodes", "arguments": {}},
    }
    lines = [
        json.dumps(initialize).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
        b"\xff\xfe not utf-8",
        b"{not json",
        b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}',
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode(),
        *(
            json.dumps({"jsonrpc": version, "id": bad_id, **add}).encode()
            for version, bad_id in (("2.0", True), ("2.0", 1.5), ("1.0", 7))
        ),
        json.dumps({"jsonrpc": "2.0", "id": 3, **episodes}).encode(),
    ]
    result = subprocess.run(
        [str(LCG), "serve", "--mcp-stdio", "-w", str(tmp_path / "ws")],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        env=clean_env(),
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    frames = [json.loads(line) for line in result.stdout.splitlines()]
    errors = [frame["error"]["code"] for frame in frames if frame.get("id") is None]
    # an id that is an object, true or 1.5: -32600 with id null, and nothing runs
    assert errors == [-32700, -32700, -32600, -32600, -32600]
    answered = {frame["id"]: frame for frame in frames if frame.get("id") is not None}
    assert sorted(answered) == [1, 2, 3, 7]
    assert answered[7]["error"]["code"] == -32600  # "jsonrpc": "1.0" with a readable id
    assert answered[3]["result"]["structuredContent"]["count"] == 0


def test_k_inv_038_040_curation_tools_over_mcp_stdio(tmp_path: Path) -> None:
    """K-INV-038..040, P-124, P-125: a real MCP client merges two entities, then validates
    and applies the workspace's knowledge-corrections.yaml; the reads show the result, and a
    merge refusal is an isError result naming the field."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "knowledge-corrections.yaml").write_text(
        "corrections:\n"
        "  - {id: ada-person, action: retype, entity: Ada, labels: [Person]}\n"
        "  - {id: engine-name, action: rename, entity: Engine, name: Analytical Engine}\n",
        encoding="utf-8",
    )

    async def main() -> None:
        async with mcp_client("serve", "--mcp-stdio", "--workspace", str(workspace)) as client:
            for name in ("Ada", "Countess", "Engine"):
                await client.call_tool("knowledge_assert_entity", {"name": name})
            await client.call_tool(
                "knowledge_assert_relationship",
                {"source_name": "Countess", "predicate": "WROTE_ON", "target_name": "Engine"},
            )
            refused = await client.call_tool("knowledge_merge_entities", {"canonical_name": "Ada"})
            assert refused.is_error is True
            assert structured(refused)["data"]["field"] == "alias_uuids"
            merged = await client.call_tool(
                "knowledge_merge_entities", {"canonical_name": "Ada", "alias_names": ["Countess"]}
            )
            assert (structured(merged)["merged_count"], structured(merged)["edges_rewritten"]) == (
                1,
                1,
            )
            validated = await client.call_tool("knowledge_validate_corrections", {})
            assert structured(validated)["valid"] is True
            assert structured(validated)["unapplied_corrections"] == 2
            applied = await client.call_tool("knowledge_apply_corrections", {})
            assert (structured(applied)["success"], structured(applied)["applied"]) == (True, 2)
            listed = await client.call_tool("knowledge_list_entities", {})
            nodes = {n["name"]: n["labels"] for n in structured(listed)["nodes"]}
            assert nodes == {"Ada": ["Person"], "Analytical Engine": ["Entity"]}

    anyio.run(main)


def test_k_xg_009_012_013_cross_group_edge_over_mcp_stdio(tmp_path: Path) -> None:
    """A real MCP client adds an edge whose target is a name the group `people` does not hold
    yet: the edge is kept but invisible (neighbours, list, get by uuid) and status counts it
    unbound; the entity is asserted in `people`, a rebind binds it, and every read shows it
    with its pointer (K-XG-009/012/013, K-STA-008). A uuid of another group is an isError
    result naming the field (K-XG-004)."""
    workspace = tmp_path / "ws"

    async def main() -> None:
        async with mcp_client("serve", "--mcp-stdio", "--workspace", str(workspace)) as client:
            paper = structured(
                await client.call_tool(
                    "knowledge_assert_entity", {"name": "Sketch", "group_id": "hub"}
                )
            )["entity_uuid"]
            added = structured(
                await client.call_tool(
                    "knowledge_add_cross_group_edge",
                    {
                        "name": "CITES",
                        "source": {"uuid": paper},
                        "target": {"source_group_id": "people", "endpoint_name": "ada lovelace"},
                        "fact": "The sketch cites Ada Lovelace.",
                        "group_id": "hub",
                    },
                )
            )
            assert added["cross_group_pointers"]["dst"]["binding_state"] == "unbound"

            async def reads() -> tuple[int, int, int, dict[str, int]]:
                near = await client.call_tool(
                    "knowledge_get_entity_neighbors", {"entity_uuid": paper}
                )
                listed = await client.call_tool("knowledge_list_relationships", {})
                got = await client.call_tool(
                    "knowledge_get_edges_by_uuids", {"uuids": [added["uuid"]]}
                )
                status = structured(await client.call_tool("knowledge_status", {}))
                return (
                    len(structured(near)["edges"]),
                    structured(listed)["count"],
                    len(structured(got)["edges"]),
                    status["cross_group_pointers"],
                )

            assert await reads() == (0, 0, 0, {"bound": 0, "unbound": 1, "ambiguous": 0})
            ada = structured(
                await client.call_tool(
                    "knowledge_assert_entity", {"name": "Ada Lovelace", "group_id": "people"}
                )
            )["entity_uuid"]
            refused = await client.call_tool(
                "knowledge_add_cross_group_edge",
                {
                    "name": "CITES",
                    "source": {"uuid": paper},
                    "target": {"uuid": ada},
                    "fact": "x",
                    "group_id": "hub",
                },
            )
            assert refused.is_error is True
            assert structured(refused)["data"]["field"] == "target.uuid"
            rebound = structured(
                await client.call_tool("knowledge_rebind_pointers", {"source_group_id": "people"})
            )
            assert (rebound["checked"], rebound["bound"]) == (1, 1)
            assert await reads() == (1, 1, 1, {"bound": 1, "unbound": 0, "ambiguous": 0})
            got = await client.call_tool("knowledge_get_edges_by_uuids", {"uuids": [added["uuid"]]})
            [edge] = structured(got)["edges"]
            assert edge["target_node_uuid"] == ada
            assert edge["cross_group_pointers"]["dst"]["resolved_uuid"] == ada
            again = structured(
                await client.call_tool("knowledge_rebind_pointers", {"source_group_id": "people"})
            )
            assert (again["checked"], again["staleness_skipped"]) == (0, 1)

    anyio.run(main)


def test_k_rec_004_005_the_recovery_scenario_over_mcp_mark_bad_mutation_rebuild_dump_restore(
    tmp_path: Path,
) -> None:
    """The seed's recovery scenario, end to end over a real MCP client: a mark before a bad
    mutation at seq S, a bounded rebuild to the mark's seq (K-REC-005) removes it and keeps
    the other group untouched (K-REC-004), then knowledge_dump_wal, and `lcg restore` makes a
    workspace whose reads answer the same as the recovered original."""
    workspace, restored = tmp_path / "ws", tmp_path / "restored"
    dump = workspace / "dump"  # a client dumps inside the workspace (ADR 0048)
    reads = (
        ("knowledge_list_entities", {"group_ids": ["proj", "other"]}),
        ("knowledge_list_relationships", {"group_ids": ["proj", "other"]}),
    )

    def shape(answers: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
        entities, edges = answers
        return (
            sorted(f"{e['group_id']}:{e['name']}" for e in entities["nodes"]),
            sorted(f"{e['group_id']}:{e['name']}" for e in edges["edges"]),
        )

    async def read_all(client: Client) -> tuple[list[str], list[str]]:
        return shape([structured(await client.call_tool(n, p)) for n, p in reads])

    async def original() -> tuple[list[str], list[str]]:
        async with mcp_client("serve", "--mcp-stdio", "--workspace", str(workspace)) as client:
            for name in ("Ada", "Bob"):
                await client.call_tool(
                    "knowledge_assert_entity", {"name": name, "group_id": "proj"}
                )
            await client.call_tool(
                "knowledge_assert_relationship",
                {
                    "source_name": "Ada",
                    "predicate": "MENTORS",
                    "target_name": "Bob",
                    "group_id": "proj",
                },
            )
            await client.call_tool("knowledge_assert_entity", {"name": "Zed", "group_id": "other"})
            mark = structured(
                await client.call_tool(
                    "knowledge_wal_mark_create", {"name": "before-bad", "group_id": "proj"}
                )
            )
            bad = structured(
                await client.call_tool(
                    "knowledge_assert_relationship",
                    {
                        "source_name": "Bob",
                        "predicate": "SABOTAGES",
                        "target_name": "Ada",
                        "group_id": "proj",
                    },
                )
            )
            assert bad["created"] is True
            before = structured(await client.call_tool("knowledge_status", {}))["wal_groups"]
            assert before["proj"]["max_seq"] == mark["seq"] + 1  # the bad mutation is seq S
            assert "proj:SABOTAGES" in (await read_all(client))[1]
            rebuilt = structured(
                await client.call_tool(
                    "knowledge_rebuild_from_wal",
                    {"group_id": "proj", "to_seq": mark["seq"], "force_clear": True},
                )
            )
            assert rebuilt["success"] is True
            recovered = await read_all(client)
            assert recovered == (
                ["other:Zed", "proj:Ada", "proj:Bob"],
                ["proj:MENTORS"],
            )
            after = structured(await client.call_tool("knowledge_status", {}))["wal_groups"]
            assert after["other"] == before["other"]  # untouched
            assert after["proj"]["max_seq"] == before["proj"]["max_seq"]  # the log keeps seq S
            dumped = structured(
                await client.call_tool("knowledge_dump_wal", {"target_dir": str(dump)})
            )
            assert dumped["success"] is True
            return recovered

    recovered = anyio.run(original)
    result = subprocess.run(
        [str(LCG), "restore", str(dump), "--workspace", str(restored)],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=DEADLINE,
        check=False,
    )
    assert result.returncode == 0, result.stderr

    async def from_the_dump() -> None:
        async with mcp_client("serve", "--mcp-stdio", "--workspace", str(restored)) as client:
            assert await read_all(client) == recovered

    anyio.run(from_the_dump)


def test_k_mcp_003_the_socket_protocol_is_the_same_with_an_mcp_client_attached(
    tmp_path: Path,
) -> None:
    """The same socket requests, before any MCP client exists and while one is attached
    (`serve --mcp-stdio --connect`) and writing: the same frames, ids aside, for a read, a
    refusal and an unknown method; and the MCP client's write is read back over the socket."""
    service = ServiceProcess(tmp_path / "ws")
    requests: list[tuple[str, dict[str, Any] | None]] = [
        ("knowledge_get_episodes", {"group_id": "g", "last_n": 5}),
        ("knowledge_get_episodes", {"group_id": "g", "last_n": "five"}),
        ("knowledge_no_such_tool", {}),
    ]

    def frames() -> list[dict[str, Any]]:
        with service.connect() as client:
            answered = [client.call(method, params) for method, params in requests]
        return [{k: v for k, v in frame.items() if k != "id"} for frame in answered]

    async def attached() -> list[dict[str, Any]]:
        async with mcp_client("serve", "--mcp-stdio", "--connect", str(service.socket_path)) as c:
            added = await c.call_tool(
                "knowledge_add_episode", {"name": "m1", "episode_body": "b", "group_id": "m"}
            )
            assert added.is_error is not True
            return frames()

    try:
        assert service.wait_ready()["healthy"] is True, service.log
        before = frames()
        during = anyio.run(attached)
        assert during == before
        assert set(before[0]) == {"jsonrpc", "result"}
        assert "error" in before[1]
        assert "error" in before[2]
        with service.connect() as client:
            names = client.result("knowledge_get_episodes", {"group_id": "m", "last_n": 5})
        assert [e["name"] for e in names["episodes"]] == ["m1"]
    finally:
        service.stop()
