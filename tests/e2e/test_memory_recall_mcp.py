"""Issue 12's end-to-end scenario over a real MCP stdio server: two agents derive, cite,
contradict and record actions; lambo_recall shows the seed's lines at the right moments, the
serving process's clock moved past the 60 s evidence age floor through LCG_CLOCK_FILE."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.helpers.mcp_session import mcp_client, structured

RULING = "user schema owns the users table"
CITING = "logins read the users table"
CORRECTION = "accounts replaced the users table"


async def _call(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    return structured(result)


async def _write(client: Client, tool: str, agent: str, **arguments: Any) -> dict[str, Any]:
    ack = await _call(client, tool, agent_id=agent, **arguments)
    settled = await _call(
        client, "lambo_stats", agent_id=agent, receipt=ack["receipt"], wait_ms=30_000
    )
    assert settled["receipt"]["state"] == "applied", settled["receipt"]
    receipt: dict[str, Any] = settled["receipt"]
    return receipt


def _lines(recalled: dict[str, Any]) -> list[str]:
    return str(recalled["context"]).split("\n")


def test_issue_12_two_agents_cite_contradict_and_recall_shows_the_lines_in_time(
    tmp_path: Path,
) -> None:
    clock = tmp_path / "clock-shift"
    clock.write_text("0", encoding="utf-8")

    async def main() -> None:
        async with mcp_client(
            "serve",
            "--mcp-stdio",
            "--session",
            "demo",
            "--workspace",
            str(tmp_path / "ws"),
            env={"LCG_CLOCK_FILE": str(clock)},
        ) as client:
            ruling = await _write(
                client,
                "lambo_derive",
                "agent-a",
                concepts=[{"content": RULING, "concept_type": "entity"}],
            )
            ruling_id = ruling["created"][0]
            await _write(
                client,
                "lambo_derive",
                "agent-b",
                concepts=[
                    {"content": CITING, "concept_type": "logic", "depends_on": [ruling_id[:8]]}
                ],
            )
            await _write(
                client,
                "lambo_derive",
                "agent-c",
                concepts=[
                    {"content": CORRECTION, "concept_type": "observation", "against": [ruling_id]}
                ],
            )
            recalled = await _call(client, "lambo_recall", agent_id="agent-a", query="users table")
            # M-REC-121: the rests-on line reads memory at once; the Contradicted line comes
            # from the daemon's list, from its next tick (every second) after the write
            assert any(line.startswith("⚠ Rests on a contradicted") for line in _lines(recalled))
            deadline = time.monotonic() + 10
            lines: list[str] = []
            while time.monotonic() < deadline:
                recalled = await _call(
                    client, "lambo_recall", agent_id="agent-a", query="users table"
                )
                lines = _lines(recalled)
                if any(line.startswith("⚠ Contradicted at ") for line in lines):
                    break
                await anyio.sleep(0.2)
            assert any(
                line.startswith("⚠ Contradicted at ") and "by agent-c" in line for line in lines
            )
            assert any(line.startswith(f'⚠ Contradicts "{RULING}"') for line in lines)
            assert any(
                line.startswith(f'⚠ Rests on a contradicted concept: "{RULING}"') for line in lines
            )
            action = await _write(
                client,
                "lambo_record_action",
                "agent-b",
                action="migrated the logins",
                depends_on=[ruling_id],
            )
            assert action["action_node"]
            still = _lines(
                await _call(client, "lambo_recall", agent_id="agent-a", query="users table")
            )
            assert any(line.startswith("⚠ Contradicted at ") for line in still)  # support too young
            clock.write_text("180", encoding="utf-8")  # three minutes later
            later = _lines(
                await _call(client, "lambo_recall", agent_id="agent-a", query="users table")
            )
            assert not any(line.startswith("⚠ Contradicted at ") for line in later)
            asked = await _call(
                client, "lambo_recall", agent_id="agent-a", query=f"what depends on {RULING}"
            )
            assert str(asked["context"]).startswith(
                "Answered by graph traversal: 2 concepts depend on"
            )

    anyio.run(main)
