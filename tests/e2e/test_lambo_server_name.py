"""`lambo serve` goes by seed 001's name for its server in serverInfo, `lcg serve` by lcg's
(issue 26 item 6): an MCP client's server list shows which one a config started."""

from __future__ import annotations

from pathlib import Path

import anyio

from tests.helpers.mcp_session import mcp_client


def test_lambo_serve_calls_itself_lambo_in_server_info(tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_client(
            "serve", "--session", "demo", command="lambo", env={"LCG_WORKSPACE": str(tmp_path)}
        ) as client:
            assert client.server_info is not None
            assert client.server_info.name == "lambo"
        async with mcp_client(
            "serve", "--mcp-stdio", "--scope", "memory", "--session", "demo", "-w", str(tmp_path)
        ) as client:
            assert client.server_info is not None
            assert client.server_info.name == "liminis-context-graph"

    anyio.run(main)


def test_k_cfg_006_the_executable_and_the_server_are_both_liminis_context_graph(
    tmp_path: Path,
) -> None:
    """The seed's example config keys its server `liminis-context-graph` and runs the
    executable of that name: the installed `liminis-context-graph` starts, and the server
    it starts gives the same name in serverInfo."""

    async def main() -> None:
        async with mcp_client(
            "--mcp-stdio", "--scope=read", command="liminis-context-graph", cwd=tmp_path
        ) as client:
            assert client.server_info is not None
            assert client.server_info.name == "liminis-context-graph"

    anyio.run(main)
