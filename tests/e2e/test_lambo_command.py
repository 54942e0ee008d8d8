"""`lambo serve --session S`: the reference's command line serves the session's memory tools
over MCP stdio, so an MCP config written for seed 001 works unchanged (issue 11)."""

from __future__ import annotations

import json
import secrets
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.helpers.mcp_session import (
    CONSOLE_SCRIPTS,
    mcp_client,
    structured,
    text_of,
    tool_names,
)
from tests.helpers.service_process import clean_env

WRITE_TOOLS = {"lambo_derive", "lambo_record_action", "lambo_reserve", "lambo_stats"}


async def derive_and_wait(client: Client, agent_id: str) -> tuple[str, dict[str, Any]]:
    """Derive one entity as `agent_id`; its receipt, and lambo_stats' answer once it settled."""
    ack = await client.call_tool(
        "lambo_derive",
        {"agent_id": agent_id, "concepts": [{"content": "user schema", "concept_type": "entity"}]},
    )
    receipt: str = structured(ack)["receipt"]
    stats = await client.call_tool(
        "lambo_stats", {"agent_id": agent_id, "receipt": receipt, "wait_ms": 20_000}
    )
    return receipt, structured(stats)


def test_m_instr_001_003_lambo_serve_names_the_session_and_lists_only_memory_tools(
    tmp_path: Path,
) -> None:
    """Also M-CFG-001, M-TRN-002/003: `lambo serve --session demo`, as a client's ordinary
    mcpServers entry would start it with no --transport, serves session demo over stdio."""

    async def main() -> None:
        async with mcp_client(
            "serve", "--session", "demo", command="lambo", env={"LCG_WORKSPACE": str(tmp_path)}
        ) as client:
            instructions = client.instructions or ""
            assert instructions.startswith("Lambo agentic graph memory for session 'demo'.")
            assert instructions.endswith("(two you fire at once have no order to\nkeep).")
            listed = await tool_names(client)
            assert listed >= WRITE_TOOLS
            assert all(name.startswith("lambo_") for name in listed)
            _, stats = await derive_and_wait(client, "agent-a")
            assert stats["receipt"]["state"] == "applied"
            assert stats["session"] == "demo"

    anyio.run(main)


def test_lambo_serve_refuses_a_transport_it_does_not_serve(tmp_path: Path) -> None:
    """stdio and http are served (ADR 0064); anything else is refused naming the choices."""
    done = subprocess.run(
        [str(CONSOLE_SCRIPTS / "lambo"), "serve", "--session", "demo", "--transport", "ws"],
        capture_output=True,
        text=True,
        env=clean_env(LCG_WORKSPACE=str(tmp_path)),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--transport: must be stdio | http" in done.stderr
    assert "got 'ws'" in done.stderr
    assert not (tmp_path / ".lcg").exists()


def test_m_cfg_010_m_sta_041_lambo_serve_runs_the_policy_lambo_promotion_policy_names(
    tmp_path: Path,
) -> None:
    """The reference's variable selects the policy of a served session, and lambo_stats
    reports the value that won, in its structured content and its text."""

    async def main() -> None:
        env = {"LCG_WORKSPACE": str(tmp_path), "LAMBO_PROMOTION_POLICY": "solo"}
        async with mcp_client("serve", "--session", "demo", command="lambo", env=env) as client:
            stats = await client.call_tool("lambo_stats", {"agent_id": "agent-a"})
            assert structured(stats)["promotion_policy"] == "Solo"
            assert "promotion_policy: Solo" in text_of(stats)

    anyio.run(main)


def test_m_cfg_006_a_lambo_auth_token_too_short_refuses_http_without_echoing_it(
    tmp_path: Path,
) -> None:
    """LAMBO_AUTH_TOKEN is the HTTP transport's bearer token (ADR 0064): one too short to
    guard anything refuses start-up naming the variable, and the token is never echoed."""
    token = secrets.token_hex(4)
    env = clean_env(LCG_WORKSPACE=str(tmp_path))
    env["LAMBO_AUTH_TOKEN"] = token
    done = subprocess.run(
        [str(CONSOLE_SCRIPTS / "lambo"), "serve", "--session", "demo", "--transport", "http"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "LAMBO_AUTH_TOKEN: a token must be at least 16 printable characters" in done.stderr
    assert token not in done.stderr + done.stdout
    assert not (tmp_path / ".lcg").exists()


def test_m_trn_005_m_cfg_007_agent_names_the_lease_holder_and_is_never_applied_to_calls(
    tmp_path: Path,
) -> None:
    """`lambo serve --agent NAME`: the process holds the workspace lease as NAME (what a
    refused process is told), while each call is recorded under the caller's agent_id: the
    write's receipt belongs to agent-a, and the process's own name may not read it."""

    async def main() -> None:
        env = {"LCG_WORKSPACE": str(tmp_path)}
        async with mcp_client(
            "serve", "--session", "demo", "--agent", "hub-7", command="lambo", env=env
        ) as client:
            holder = json.loads((tmp_path / ".lcg" / "writer.lock").read_text(encoding="utf-8"))
            assert holder["command"].endswith(" --agent hub-7"), holder
            receipt, mine = await derive_and_wait(client, "agent-a")
            assert mine["receipt"]["state"] == "applied"
            theirs = await client.call_tool(
                "lambo_stats", {"agent_id": "hub-7", "receipt": receipt}
            )
            assert structured(theirs)["receipt"]["state"] == "forbidden"

    anyio.run(main)


def test_m_cfg_007_an_agent_that_breaks_the_agent_id_rules_is_refused_naming_the_flag(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [str(CONSOLE_SCRIPTS / "lambo"), "serve", "--session", "demo", "--agent", "a\tb"],
        capture_output=True,
        text=True,
        env=clean_env(LCG_WORKSPACE=str(tmp_path)),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--agent: follows the rules of an agent_id" in done.stderr
    assert "U+0009" in done.stderr
    assert not (tmp_path / ".lcg").exists()
