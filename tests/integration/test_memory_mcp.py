"""The lambo_* memory tools over MCP: the server `lcg serve --mcp-stdio --session demo` builds,
in this process, driven by the SDK's own client over its in-memory streams (issue 11, seed
001). The same tools over a real pipe: tests/e2e/test_memory_recall_mcp.py and
test_lambo_command.py.

Each test starts its own server on its own workspace. Refusals are checked with the session's
stream unchanged afterwards, read from wal.sqlite beside the running server.

Checklist: M-ARG-001/002/003/009/010, M-DER-081..087/089, M-ERR-001/002/010..012/026/028,
M-STA-080/081/085/087.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from lcg.interfaces.operations import BY_NAME, Scope
from tests.helpers.mcp_session import mcp_in_process, structured
from tests.helpers.memory_log import head, session_events
from tests.helpers.seed_scopes import SEED_SCOPES

JOB_TOPICS = {"concepts_canonized", "gc_clock_started", "gc_swept", "gc_bumped"}


SESSION = "demo"
AGENT = "agent-mcp"
LAMBO_TOOLS = set(SEED_SCOPES["memory"])
RECEIPT = re.compile(r"^lwr1\.[0-9a-f]{16}\.[0-9a-f]+\.(\d+)$")
WAIT_MS = 30_000


def serve(workspace: Path) -> Any:
    """Client vectors accepted, so that lambo_derive_image is listed too (M-IMG-001)."""
    env = {"LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS": "true"}
    return mcp_in_process(workspace, session=SESSION, env=env)


def text_of(result: Any) -> str:
    assert len(result.content) == 1, result.content
    text: str = result.content[0].text
    return text


def concept(content: str, kind: str = "logic", **refs: list[str]) -> dict[str, Any]:
    return {"content": content, "concept_type": kind, **refs}


async def derive(client: Client, *concepts: dict[str, Any], agent: str = AGENT) -> Any:
    return await client.call_tool("lambo_derive", {"agent_id": agent, "concepts": list(concepts)})


async def stats(client: Client, agent: str = AGENT, **params: Any) -> Any:
    result = await client.call_tool("lambo_stats", {"agent_id": agent, **params})
    assert result.is_error is False, text_of(result)
    return result


def _properties(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (path, schema) of a property or array item, through $defs and anyOf."""
    if isinstance(schema, dict):
        if "type" in schema and where:
            yield where, schema
        for name, sub in schema.get("properties", {}).items():
            yield from _properties(sub, f"{where}.{name}")
        for name, sub in schema.get("$defs", {}).items():
            yield from _properties(sub, f"$defs.{name}")
        if "items" in schema:
            yield from _properties(schema["items"], f"{where}[]")
        for index, sub in enumerate(schema.get("anyOf", [])):
            yield from _properties(sub, f"{where}|{index}")


def test_m_arg_009_tools_list_shows_the_lambo_tools_with_bounded_schemas(
    tmp_path: Path,
) -> None:
    """tools/list of `lcg serve --mcp-stdio --session demo` advertises the lambo tools of
    the memory scope with their models' schemas (M-ARG-010: the runtime's bounds); each
    requires agent_id (M-ARG-001) and takes nothing else (M-ARG-002); every string property
    has a maxLength or an enum and every integer a minimum and a maximum (M-ARG-009). Also
    M-DER-001, M-ACT-001, M-RES-001, M-INS-001, M-SNT-001, M-STL-001: each tool is listed
    under its seed name."""

    async def main() -> dict[str, Any]:
        async with serve(tmp_path / "ws") as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = anyio.run(main)
    lambo = {name for name in tools if name.startswith("lambo_")}
    assert lambo == LAMBO_TOOLS
    assert {
        "lambo_derive",
        "lambo_record_action",
        "lambo_reserve",
        "lambo_inspect",
        "lambo_saints",
        "lambo_stale",
    } <= lambo
    assert {name for name, op in BY_NAME.items() if op.scope is Scope.MEMORY} == LAMBO_TOOLS
    checked = 0
    for name in sorted(LAMBO_TOOLS):
        schema = tools[name].input_schema
        assert schema == BY_NAME[name].input_schema(), name
        assert "agent_id" in schema["required"], name
        assert schema["additionalProperties"] is False, name
        assert tools[name].annotations.read_only_hint is BY_NAME[name].read_only, name
        for path, prop in _properties(schema, ""):
            kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
            if "string" in kinds:
                assert "maxLength" in prop or "enum" in prop, f"{name}{path}: {prop}"
                checked += 1
            if "integer" in kinds:
                assert "minimum" in prop, f"{name}{path}: {prop}"
                assert "maximum" in prop, f"{name}{path}: {prop}"
                checked += 1
    assert checked >= 20  # the walk reached the nested concept, pair and list items
    derive_schema = tools["lambo_derive"].input_schema
    concept_schema = derive_schema["$defs"]["ConceptParams"]["properties"]
    assert concept_schema["concept_type"]["enum"] == [
        "entity",
        "logic",
        "constraint",
        "resource",
        "observation",
    ]
    assert derive_schema["properties"]["agent_id"]["maxLength"] == 256
    assert derive_schema["properties"]["concepts"]["maxItems"] == 64
    reserve = tools["lambo_reserve"].input_schema["properties"]["ttl_seconds"]
    assert (reserve["minimum"], reserve["maximum"]) == (1, 3600)
    wait = tools["lambo_stats"].input_schema["properties"]["wait_ms"]
    assert wait["minimum"] == 0  # larger than 34000 is clamped, not refused (M-STA-005)
    assert set(tools["lambo_stats"].input_schema["properties"]) == {
        "agent_id",
        "receipt",
        "wait_ms",
    }


def test_m_der_081_082_089_086_087_ack_wait_for_applied_and_the_piggybacked_receipts(
    tmp_path: Path,
) -> None:
    """lambo_derive's ack is the seed's four lines and `{summary, receipt, receipt_state,
    agent_id, warnings}` (M-DER-081/082), not an error and naming no node (M-DER-083/084),
    with receipts of one server numbered in sequence (M-DER-085). lambo_stats with the
    receipt and wait_ms answers applied, with ids and counts (M-DER-089, M-STA-080/081), for
    the session --session chose. A write's outcome then rides on the owner's next response,
    once, as the `write receipts:` block and structuredContent.write_receipts (M-DER-086/087);
    another agent asking is forbidden and does not consume it (M-STA-085/087)."""
    workspace = tmp_path / "ws"

    async def main() -> None:
        async with serve(workspace) as client:
            ack = await derive(client, concept("the deploy window is tuesday", "constraint"))
            assert ack.is_error is False
            text = text_of(ack)
            content = structured(ack)
            receipt = content["receipt"]
            assert text.split("\n") == [
                "accepted 1 concept(s) for background write; validated and ordered, not yet "
                "applied",
                f"receipt {receipt}: pending — admitted, not yet applied; ask again",
                "The outcome arrives on your next tool response. To wait for it, call "
                f"lambo_stats with receipt={receipt} (add wait_ms to block).",
                f'Recorded under agent_id "{AGENT}"; send this same id on every call.',
            ]
            assert content == {
                "summary": text.split("\n")[0],
                "receipt": receipt,
                "receipt_state": "pending",
                "agent_id": AGENT,
                "warnings": [],
            }
            first = RECEIPT.match(receipt)
            assert first is not None, receipt

            waited = await stats(client, receipt=receipt, wait_ms=WAIT_MS)
            body = structured(waited)["receipt"]
            assert body["id"] == receipt
            assert body["state"] == "applied"
            assert body["detail"] == (
                "derived 1 concept(s): 1 created (1 embedded), 0 matched existing"
            )
            assert (body["created_count"], body["matched_count"], body["embedded"]) == (1, 0, 1)
            assert len(body["created"]) == 1
            assert (
                text_of(waited).split("\n")[0] == f"receipt {receipt}: applied — {body['detail']}"
            )
            assert structured(waited)["session"] == SESSION
            assert structured(waited)["concept_count"] == 1
            assert "write_receipts" not in structured(waited)  # asked for, so not piggybacked

            # Two writes; waiting on the second (per-agent order) settles the first too, which
            # the wait's own response then carries.
            second = structured(await derive(client, concept("rollbacks need a ticket")))
            third = structured(await derive(client, concept("tickets name an owner")))
            numbers = [
                int(RECEIPT.match(r)[1], 16)  # type: ignore[index]
                for r in (receipt, second["receipt"], third["receipt"])
            ]
            assert numbers == [numbers[0], numbers[0] + 1, numbers[0] + 2]
            waited = await stats(client, receipt=third["receipt"], wait_ms=WAIT_MS)
            assert structured(waited)["receipt"]["state"] == "applied"
            # The second is delivered once: by the wait's response, or already by the third's
            # ack when the processor applied it before that ack was written (a loaded machine).
            early = third.get("write_receipts", [])
            piggy = [*early, *structured(waited).get("write_receipts", [])]
            assert [(r["id"], r["state"]) for r in piggy] == [(second["receipt"], "applied")]
            if not early:
                block = text_of(waited).split("\n\n")[-1].split("\n")
                assert block[0] == "write receipts:"
                assert block[1].startswith(f"receipt {second['receipt']}: applied — derived 1 ")
            assert "write_receipts" not in structured(await stats(client))  # delivered once

            # Another agent waits for a fourth write: forbidden, and the owner's next response
            # (a write's ack this time) still carries the outcome.
            fourth = structured(await derive(client, concept("owners rotate weekly")))
            other = await stats(
                client, agent="agent-other", receipt=fourth["receipt"], wait_ms=WAIT_MS
            )
            assert structured(other)["receipt"]["state"] == "forbidden"
            assert "write_receipts" not in structured(other)
            fifth = await derive(client, concept("rotation starts on monday"))
            assert structured(fifth)["receipt_state"] == "pending"
            (piggy,) = structured(fifth)["write_receipts"]
            assert (piggy["id"], piggy["state"]) == (fourth["receipt"], "applied")
            assert piggy["created_count"] == 1
            ack_text = text_of(fifth)
            assert ack_text.split("\n")[3].startswith('Recorded under agent_id "agent-mcp"')
            assert f"write receipts:\nreceipt {fourth['receipt']}: applied — " in ack_text

    anyio.run(main)


def _no_internal_detail(text: str, workspace: Path) -> None:
    """M-ERR-002: no path, no stack, no driver or library message, no JSON-RPC envelope."""
    for leak in (
        str(workspace),
        str(workspace.parent),
        "Traceback",
        'File "',
        ".py",
        "sqlite",
        "pydantic",
        "errors.pydantic.dev",
        "Params",  # a parameter model's class name (ConceptParams)
        "internal error",
        "Error:",
        '"code"',
        "-326",
        "\n",
    ):
        assert leak not in text, f"{leak!r} in {text!r}"


REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    # (tool, arguments, the start of the short reason): M-ERR-010..012, M-ARG-001/002
    ("lambo_derive", {"concepts": [concept("x")]}, "Missing required argument(s) for "),
    ("lambo_stats", {}, "Missing required argument(s) for 'lambo_stats': agent_id"),
    ("lambo_derive", {"agent_id": AGENT, "concepts": [concept("x")], "colour": 1}, "colour: "),
    ("lambo_derive", {"agent_id": AGENT, "concepts": "x"}, "concepts: "),
    ("lambo_derive", {"agent_id": AGENT, "concepts": ["x"]}, "concepts[0]: must be an object"),
    (
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [concept("x", "Entity")]},
        "unknown variant Entity, expected one of entity, logic",
    ),
    (
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [concept("x")], "event_time": "last tuesday"},
        "event_time must be an RFC3339 timestamp",
    ),
    (
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [concept("hidden \u202e text")]},
        "concept.content contains a disallowed invisible formatting character (U+202E)",
    ),
    ("lambo_derive", {"agent_id": "two\nlines", "concepts": [concept("x")]}, "agent_id"),
    (  # M-ARG-053, M-ERR-018
        "lambo_derive",
        {"agent_id": "a" * 257, "concepts": [concept("x")]},
        "agent_id is too long: the cap is 256 characters and 257 were given",
    ),
    (  # M-ARG-021, M-ERR-014, M-LIM-001
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [concept("x" * 16_385)]},
        "concepts[0].content is too long: the cap is 16,384 bytes (16 KB) and 16,385 bytes "
        "were given",
    ),
    (
        "lambo_recall",
        {"agent_id": AGENT, "query": "q" * 16_385},
        "query is too long: the cap is 16,384 bytes (16 KB) and 16,385 bytes were given",
    ),
    ("lambo_recall", {"agent_id": AGENT, "query": "q", "top_k": 101}, "top_k must be in 1..=100"),
    ("lambo_recall", {"agent_id": AGENT, "query": "q", "top_k": 0}, "top_k must be in 1..=100"),
    (
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [concept("x", depends_on=["no such concept"])]},
        'reference refused: concepts[0].depends_on[0] "no such concept" matches nothing',
    ),
    (
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [concept("x")], "scope": "elsewhere"},
        "scope",
    ),
    (
        "lambo_record_action",
        {"agent_id": AGENT, "action": "ran it", "against": ["no such concept"]},
        'reference refused: against[0] "no such concept" matches nothing',
    ),
    ("lambo_record_action", {"agent_id": AGENT, "action": "x", "repo_scope": " "}, "repo_scope"),
    ("lambo_reserve", {"agent_id": AGENT, "node_id": "0badc0de"}, "node_id: 0badc0de names no"),
    (
        "lambo_reserve",
        {"agent_id": AGENT, "node_id": "n", "ttl_seconds": 0},
        "ttl_seconds must be in 1..=3600",
    ),
    ("lambo_stats", {"agent_id": AGENT, "receipt": "not-a-receipt"}, "receipt: must be"),
    ("lambo_stats", {"agent_id": AGENT, "wait_ms": -1}, "wait_ms"),
]


def test_m_err_001_002_a_refusal_is_an_is_error_short_reason_without_internal_detail(
    tmp_path: Path,
) -> None:
    """Every refusal a client can provoke (missing, unknown and malformed arguments, a bad
    enum or timestamp, a disallowed character, an over-long string or agent_id, a reference
    that resolves to nothing, a foreign scope, a bad receipt or wait) comes back as a tool
    result with isError and one text item holding the short reason, and no structured
    content (M-ERR-001, M-ERR-010..012, M-ERR-026/028); no text carries internal detail
    (M-ERR-002). Nothing was written: the session's stream is unchanged. Also M-ARG-038: the
    invisible-character refusal is such a result. Also OQ-13: parameter errors are such tool
    results (isError), never JSON-RPC -32602 errors."""
    workspace = tmp_path / "ws"

    async def main() -> None:
        async with serve(workspace) as client:
            ack = await derive(client, concept("a concept that exists"))
            await stats(client, receipt=structured(ack)["receipt"], wait_ms=WAIT_MS)
            before = head(workspace, SESSION)
            assert before == 2  # the intent and its outcome
            for tool, arguments, reason in REFUSALS:
                result = await client.call_tool(tool, arguments)
                assert result.is_error is True, (tool, arguments)
                text = text_of(result)
                assert text.startswith(reason), (tool, arguments, text)
                assert result.structured_content is None, (tool, text, result.structured_content)
                assert len(text) < 400, text
                _no_internal_detail(text, workspace)
                if text.startswith("reference refused"):
                    assert text.endswith("; nothing was written"), text  # M-ERR-028
            # the scheduled jobs may append on their own (a cycle every 60 s on a slow run, a
            # GC clock); no refused call may
            written = [e.topic for e in session_events(workspace, SESSION) if e.seq > before]
            assert set(written) <= JOB_TOPICS, f"a refused call wrote to the log: {written}"
            after = structured(await stats(client))
            assert (after["concept_count"], after["write_queue_accepted"]) == (1, 1)

    anyio.run(main)


def test_m_arg_003_created_at_is_refused_by_name_on_every_lambo_tool(tmp_path: Path) -> None:
    """M-ARG-003/004: `created_at` is refused by name on each of the four tools (Lambo stamps
    flush time itself), as is another timestamp argument; the refusal is an isError result
    and nothing is written."""
    workspace = tmp_path / "ws"
    base: dict[str, dict[str, Any]] = {
        "lambo_derive": {"concepts": [concept("stamped by the client")]},
        "lambo_record_action": {"action": "stamped an action"},
        "lambo_reserve": {"node_id": "0badc0de"},
        "lambo_stats": {},
    }

    async def main() -> None:
        async with serve(workspace) as client:
            for tool, arguments in base.items():
                for field in ("created_at", "flushed_at"):
                    params = {"agent_id": AGENT, **arguments, field: "2024-06-12T14:30:00Z"}
                    result = await client.call_tool(tool, params)
                    assert result.is_error is True, (tool, field)
                    text = text_of(result)
                    assert text.startswith(f"{field} is refused: "), (tool, text)
                    assert "Lambo stamps flush time itself" in text
                    _no_internal_detail(text, workspace)
            assert head(workspace, SESSION) == 0
            # event_time is the one timestamp the write tools take (M-ARG-005).
            ack = await derive(client, concept("stamped by event_time"))
            dated = await client.call_tool(
                "lambo_record_action",
                {"agent_id": AGENT, "action": "dated", "event_time": "2024-06-12T14:30:00Z"},
            )
            assert (ack.is_error, dated.is_error) == (False, False)
            # both writes were accepted; their outcomes follow as soon as they are applied
            # (in this process that may be before the next read, so they are not counted)
            topics = [e.topic for e in session_events(workspace, SESSION)]
            assert topics.count("memory_write_accepted") == 2, topics
            assert set(topics) <= {"memory_write_accepted", "memory_write_applied"}, topics

    anyio.run(main)


def test_m_ins_020_inspect_over_mcp_shows_the_concepts_own_type(tmp_path: Path) -> None:
    """A ruling with a citing concept and a parent_of child: lambo_inspect's structured
    content and text give the ruling's type, Entity, not the kind of an edge walked."""

    async def main() -> None:
        async with serve(tmp_path / "ws") as client:
            ruling = "user schema owns the account table"
            ack = await derive(client, concept(ruling, "entity"))
            await stats(client, receipt=structured(ack)["receipt"], wait_ms=WAIT_MS)
            ack = await client.call_tool(
                "lambo_derive",
                {
                    "agent_id": AGENT,
                    "concepts": [concept("logins read the account table", depends_on=[ruling])],
                    "parent_of": [{"parent": ruling, "child": "audit columns"}],
                },
            )
            settled = await stats(client, receipt=structured(ack)["receipt"], wait_ms=WAIT_MS)
            assert structured(settled)["receipt"]["state"] == "applied"
            result = await client.call_tool("lambo_inspect", {"agent_id": AGENT, "focus": ruling})
            assert result.is_error is False, text_of(result)
            assert structured(result)["concept_type"] == "Entity"
            assert structured(result)["blast_radius"] == 2
            assert text_of(result).startswith(f"{ruling} [Entity]")

    anyio.run(main)
