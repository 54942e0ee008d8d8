"""What bench_memory drives: the three transports, the facts it derives, percentiles.

Every transport answers a call with the tool's structured result: for the lambo tools the
`structuredContent` (over MCP the SDK's `structured_content`), for knowledge_status its JSON.
Latency runs use one async caller per transport (in-process and socket calls are plain
blocking calls inside it, so they cost what they cost); throughput runs use one blocking
caller per agent thread (in process: the one `App`; over the socket: a connection each).
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from mcp import Client as McpClient
from mcp import StdioServerParameters

from bench.bench_load import WORDS
from bench.socket_service import LCG, start_service
from bench.socket_service import Client as SocketClient
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace

Result = dict[str, Any]
AsyncCall = Callable[[str, dict[str, Any]], Awaitable[Result]]
Call = Callable[[str, dict[str, Any]], Result]
WAIT_MS = 34_000  # lambo_stats's largest wait
VERBS = ["is pruned", "retries", "rotates", "is rebuilt", "expires", "is replicated", "pauses"]


def fact(rng: random.Random, n: int) -> str:
    """A distinct one-line fact of ~60 bytes (the number keeps keys apart, and the digit
    guard of ADR 0025 keeps near-identical texts from merging)."""
    first, second, third = rng.sample(WORDS, 3)
    every = f"every {rng.randint(2, 90)} min"
    return f"{first} {second} of the {third} pool {rng.choice(VERBS)} {every}, #{n:05d}"


def derive_params(agent: str, content: str) -> dict[str, Any]:
    return {"agent_id": agent, "concepts": [{"content": content, "concept_type": "logic"}]}


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def _structured(result: Result) -> Result:
    inner = result.get("structuredContent")
    return inner if isinstance(inner, dict) else result


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}


# -- latency: one async caller per transport ---------------------------------------------------


@asynccontextmanager
async def in_process(workspace: Path) -> AsyncIterator[AsyncCall]:
    """`operations.dispatch` on a Workspace opened with its default embedder (MiniLM)."""
    with Workspace(Settings(workspace), command="bench_memory") as ws:
        app = App(ws)

        async def call(name: str, params: dict[str, Any]) -> Result:
            return _structured(operations.dispatch(app, name, params))

        yield call


@asynccontextmanager
async def over_socket(workspace: Path) -> AsyncIterator[AsyncCall]:
    """`lcg serve` in a child process, one connection."""
    with socket_service(workspace) as connect:
        blocking = connect()

        async def call(name: str, params: dict[str, Any]) -> Result:
            return blocking(name, params)

        yield call


@asynccontextmanager
async def over_mcp(workspace: Path) -> AsyncIterator[AsyncCall]:
    """`lcg serve --mcp-stdio` in a child process, driven by the SDK's client."""
    args = ["serve", "--mcp-stdio", "--workspace", str(workspace)]
    params = StdioServerParameters(command=str(LCG), args=args, env=clean_env())
    async with McpClient(params, read_timeout_seconds=60) as client:
        yield structured_calls(client)


def structured_calls(client: McpClient) -> AsyncCall:
    """An SDK client's tools/call answering the structured content; an isError raises."""

    async def call(name: str, arguments: dict[str, Any]) -> Result:
        result = await client.call_tool(name, arguments)
        if result.is_error or result.structured_content is None:
            raise RuntimeError(f"{name}: {result.content}")
        structured: Result = result.structured_content
        return structured

    return call


# -- throughput: a blocking caller per agent ------------------------------------------------------


@contextmanager
def in_process_agents(workspace: Path) -> Iterator[Callable[[], Call]]:
    """Every agent thread calls `operations.dispatch` on the one App."""
    with Workspace(Settings(workspace), command="bench_memory") as ws:
        app = App(ws)

        def call(name: str, params: dict[str, Any]) -> Result:
            return _structured(operations.dispatch(app, name, params))

        yield lambda: call


@contextmanager
def socket_service(workspace: Path) -> Iterator[Callable[[], Call]]:
    """`lcg serve` (bench_load's start); each `connect()` is a connection of its own."""
    proc = start_service(workspace)
    clients: list[SocketClient] = []

    def connect() -> Call:
        client = SocketClient(Settings(workspace).socket_path)
        clients.append(client)

        def call(name: str, params: dict[str, Any]) -> Result:
            return _structured(client.call(name, params))

        return call

    try:
        yield connect
    finally:
        for client in clients:
            client.close()
        proc.terminate()
        proc.wait(60)


def settle(call: Call, agent: str, receipt: str) -> Result:
    """lambo_stats's receipt object once the write is no longer pending."""
    while True:
        answer = call("lambo_stats", {"agent_id": agent, "receipt": receipt, "wait_ms": WAIT_MS})
        body: Result = answer["receipt"]
        if body["state"] != "pending":
            return body
