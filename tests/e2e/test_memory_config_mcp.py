"""lambo.toml over a real MCP stdio pipe (issue 30 item 3): `lcg serve --mcp-stdio` reads the
reference's file name, its [recall] defaults reach lambo_recall; a misspelt key refuses
start-up with exit 2, naming the file, the key and the closest known one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.helpers.console_script import LCG, run
from tests.helpers.mcp_session import mcp_client, structured

AGENT = "agent-a"
FACTS = [f"the staging host {n} runs the nightly import" for n in ("alpha", "beta", "gamma")]


def test_m_cfg_033_lambo_toml_recall_defaults_over_mcp_stdio(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "lambo.toml").write_text("[recall]\ntop_k = 2\n", encoding="utf-8")

    async def main() -> None:
        async with mcp_client(
            "serve", "--mcp-stdio", "--session", "demo", "--workspace", str(workspace)
        ) as client:

            async def call(name: str, **arguments: Any) -> dict[str, Any]:
                result = await client.call_tool(name, {"agent_id": AGENT, **arguments})
                assert not result.is_error, result.content
                return structured(result)

            for fact in FACTS:
                ack = await call(
                    "lambo_derive", concepts=[{"content": fact, "concept_type": "logic"}]
                )
                await call("lambo_stats", receipt=ack["receipt"], wait_ms=30_000)
            found = await call("lambo_recall", query="staging host nightly import")
            assert len(found["hits"]) == 2
            sent = await call("lambo_recall", query="staging host nightly import", top_k=3)
            assert len(sent["hits"]) == 3

    anyio.run(main)


def test_m_cfg_a_misspelt_lambo_toml_key_refuses_start_up(tmp_path: Path) -> None:
    (tmp_path / "lambo.toml").write_text("[selection]\nskip_redundnat = true\n", encoding="utf-8")
    done = run([str(LCG), "serve", "--mcp-stdio", "--workspace", str(tmp_path)], timeout=60)
    assert done.returncode == 2
    assert "lambo.toml [selection] skip_redundnat" in done.stderr
    assert "did you mean skip_redundant?" in done.stderr
