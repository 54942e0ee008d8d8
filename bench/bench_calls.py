"""Benchmark the cost of one tool call through each surface, as a ratio to in-process dispatch.

Run from the repository root:

    .venv/bin/python bench/bench_calls.py [--calls 1000] [--repeats 3] [--out FILE]

The same read (`knowledge_get_episodes`, 5 episodes of one group) is called through:
in-process `operations.dispatch`; the socket service (`lcg serve`, one connection, one line
out, one line back); MCP over stdio, standalone (`lcg serve --mcp-stdio`, the SDK's client);
and MCP attached (`--connect`, so MCP then the socket). All four run in this one process run
against one workspace, one after another (a workspace has one writer at a time); the medians
are compared as ratios, since the machines are shared and noisy. See bench/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp import Client, StdioServerParameters

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace

LCG = Path(sys.executable).parent / "lcg"
RESULTS = Path(__file__).resolve().parent / "results"
METHOD = "knowledge_get_episodes"
PARAMS: dict[str, Any] = {"group_id": "bench", "last_n": 5}
WARMUP = 50


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}


def timed(call: Callable[[], object], calls: int) -> list[float]:
    for _ in range(WARMUP):
        call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def in_process(workspace: Path, calls: int) -> list[float]:
    with Workspace(Settings(workspace), command="bench_calls") as ws:
        app = App(ws)
        if not operations.dispatch(app, METHOD, PARAMS)["count"]:
            for index in range(5):
                episode = {"name": f"e{index}", "episode_body": "body", "group_id": "bench"}
                operations.dispatch(app, "knowledge_add_episode", episode)
        return timed(lambda: operations.dispatch(app, METHOD, PARAMS), calls)


class SocketService:
    """`lcg serve` in a child process, ready once health_check answers."""

    def __init__(self, workspace: Path) -> None:
        self.path = Settings(workspace).socket_path
        self.proc = subprocess.Popen(
            [str(LCG), "serve", "--workspace", str(workspace)],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=clean_env(),
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(str(self.path))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                self.sock.close()
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("lcg serve did not start") from None
                time.sleep(0.02)
        self.lines = self.sock.makefile("rb")
        assert self.call("health_check", {})["result"]["healthy"]

    def call(self, method: str, params: dict[str, Any]) -> Any:
        self.sock.sendall(
            orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}) + b"\n"
        )
        return orjson.loads(self.lines.readline())

    def stop(self) -> None:
        self.lines.close()
        self.sock.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def over_socket(workspace: Path, calls: int) -> list[float]:
    service = SocketService(workspace)
    try:
        return timed(lambda: service.call(METHOD, PARAMS), calls)
    finally:
        service.stop()


async def _mcp_samples(args: list[str], calls: int) -> list[float]:
    params = StdioServerParameters(command=str(LCG), args=args, env=clean_env())
    async with Client(params) as client:
        for _ in range(WARMUP):
            await client.call_tool(METHOD, PARAMS)
        samples = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool(METHOD, PARAMS)
            samples.append(time.perf_counter() - started)
        assert not result.is_error, result
        return samples


def over_mcp(workspace: Path, calls: int) -> list[float]:
    args = ["serve", "--mcp-stdio", "--workspace", str(workspace)]
    return anyio.run(_mcp_samples, args, calls)


def over_mcp_attached(workspace: Path, calls: int) -> list[float]:
    service = SocketService(workspace)
    try:
        args = ["serve", "--mcp-stdio", "--connect", str(service.path)]
        return anyio.run(_mcp_samples, args, calls)
    finally:
        service.stop()


SURFACES: list[tuple[str, Callable[[Path, int], list[float]]]] = [
    ("in-process `operations.dispatch`", in_process),
    ("socket JSON-RPC (`lcg serve`)", over_socket),
    ("MCP stdio, standalone", over_mcp),
    ("MCP stdio, attached (MCP then socket)", over_mcp_attached),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per surface")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over all surfaces")
    parser.add_argument("--out", type=Path, default=RESULTS / "calls.md")
    options = parser.parse_args()
    labels = [label for label, _ in SURFACES]
    rounds: list[dict[str, tuple[float, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-calls-") as tmp:
        workspace = Path(tmp) / "ws"
        for repeat in range(options.repeats):
            medians: dict[str, tuple[float, float]] = {}
            for label, surface in SURFACES:
                print(f"round {repeat + 1}: {label}, {options.calls} calls", file=sys.stderr)
                samples = surface(workspace, options.calls)
                medians[label] = (
                    statistics.median(samples),
                    statistics.quantiles(samples, n=10)[-1],
                )
            rounds.append(medians)
    base = labels[0]
    lines = [
        f"{time.strftime('%Y-%m-%d')}, {platform.machine()} {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}; "
        f"`{METHOD}` {PARAMS}; {options.repeats} rounds over the four surfaces, each "
        f"{options.calls} timed calls after {WARMUP} warm-up calls",
        "",
        "| surface | median per call | p90 | median / in-process | range over rounds |",
        "|---|---:|---:|---:|---:|",
    ]
    for label in labels:
        median = statistics.median(r[label][0] for r in rounds)
        p90 = statistics.median(r[label][1] for r in rounds)
        ratios = [r[label][0] / r[base][0] for r in rounds]
        ratio = median / statistics.median(r[base][0] for r in rounds)
        lines.append(
            f"| {label} | {median * 1e6:,.0f} us | {p90 * 1e6:,.0f} us | **{ratio:.1f}x** | "
            f"{min(ratios):.1f}-{max(ratios):.1f}x |"
        )
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
