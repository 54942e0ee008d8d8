"""Spawn `lcg serve --mcp-stdio ...` as a real subprocess and drive it with the SDK's client;
or build the same server in this process, for tests whose subject is not the pipe."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from mcp import Client, StdioServerParameters
from mcp.client.session import SamplingFnT

from lcg.interfaces.backends import LocalBackend
from lcg.interfaces.config import Settings
from lcg.interfaces.mcp_server import LcgMcpServer
from lcg.interfaces.scopes import Visibility, parse_scopes
from lcg.interfaces.service import Service
from tests.helpers.service_process import LCG, clean_env

CONSOLE_SCRIPTS = LCG.parent


@asynccontextmanager
async def mcp_client(
    *args: str,
    command: str = "lcg",
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    mode: Literal["legacy", "auto"] = "auto",
    sampling_callback: SamplingFnT | None = None,
    input_required_max_rounds: int = 10,
) -> AsyncIterator[Client]:
    """A connected SDK client of `<command> ARGS` (`lcg serve --mcp-stdio ...` or the seed's
    `liminis-context-graph --mcp-stdio ...`); mode "legacy" forces the initialize handshake;
    a sampling callback declares the sampling capability."""
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPTS / command),
        args=list(args),
        env=clean_env(**(env or {})),
        cwd=cwd,
    )
    async with Client(
        params,
        mode=mode,
        read_timeout_seconds=60,
        sampling_callback=sampling_callback,
        input_required_max_rounds=input_required_max_rounds,
    ) as client:
        yield client


@asynccontextmanager
async def mcp_in_process(
    workspace: Path, *, session: str, scope: str = "all", env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """The server `lcg serve --mcp-stdio --session SESSION --scope SCOPE --workspace WORKSPACE`
    builds (a Service opened the standalone way, its LocalBackend, the same tools), built in
    this process and reached by the SDK's client over its in-memory streams: for tests whose
    subject is the tools over MCP, not the pipe (that one is tests/e2e/test_mcp_stdio.py).
    `env`: settings from the environment, as a serve reads them."""
    settings = Settings.load(clean_env(**(env or {})), workspace, workspace)
    service = Service(dataclasses.replace(settings, session=session), command="pytest mcp")
    assert service.start() == "healthy", service.reason
    try:
        vectors = settings.tuning.accept_client_vectors  # lambo_derive_image listed (M-IMG-001)
        visibility = Visibility(parse_scopes(scope), client_vectors=vectors)
        server = LcgMcpServer(LocalBackend(service), visibility, session=session)
        async with Client(server.server, read_timeout_seconds=60) as client:
            yield client
    finally:
        service.close()


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools(cache_mode="refresh")).tools}


def structured(result: Any) -> dict[str, Any]:
    content: dict[str, Any] = result.structured_content
    return content


def text_of(result: Any) -> str:
    """A tool result's first text content (what a model reads)."""
    text: str = result.content[0].text
    return text
