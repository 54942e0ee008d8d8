"""A call through a forwarding stdio serve vs the same call on the holder (ADR 0066).

Two `lambo serve --session bench` processes on one workspace, each driven by the SDK's stdio
client: the first holds the store, the second forwards every call to it over the holder's
socket. The same tools are timed through both in one run, interleaved call by call, so the
box's load moves both sides alike: `lambo_recall` (a distinct query each call, so the
holder's per-process query cache never answers one side from the other's call) and
`lambo_derive` (a distinct fact each call), and `lambo_stats` without a receipt (the least
work a call can do, so its hop is nearly all transport). The difference of the medians is
the hop.

    .venv/bin/python -m bench.bench_forward [--calls 300] [--seed-facts 200]
        [--embedder hashing|minilm] [--out bench/results/forward.md]
"""

from __future__ import annotations

import argparse
import random
import shutil
import socket
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import orjson
from mcp import Client as McpClient
from mcp import StdioServerParameters

from bench.memory_transports import (
    AsyncCall,
    clean_env,
    derive_params,
    fact,
    percentile,
    structured_calls,
)
from bench.socket_service import LCG
from lcg.interfaces.forwarding import HolderClient
from lcg.interfaces.jsonrpc import request_frame
from lcg.projections.wal.lease import read_record

SESSION = "bench"
TOOLS = ("lambo_recall", "lambo_derive", "lambo_stats")
ALONE = "lambo_stats, alone"  # its own loop: no derive of the same side just before it
ROWS = (*TOOLS, ALONE)
LAMBO = LCG.parent / "lambo"


async def _serve(stack: AsyncExitStack, env: dict[str, str]) -> AsyncCall:
    params = StdioServerParameters(
        command=str(LAMBO), args=["serve", "--session", SESSION], env=env
    )
    client = await stack.enter_async_context(McpClient(params, read_timeout_seconds=120))
    return structured_calls(client)


async def _timed(call: AsyncCall, name: str, params: dict[str, Any]) -> float:
    start = time.perf_counter()
    await call(name, params)
    return (time.perf_counter() - start) * 1000


async def run(calls: int, seed_facts: int, embedder: str) -> dict[str, dict[str, list[float]]]:
    rng = random.Random(7)
    workspace = Path(tempfile.mkdtemp(prefix="bench-forward-"))
    runtime = Path(tempfile.mkdtemp(prefix="lr"))
    env = {
        **clean_env(),
        "LCG_WORKSPACE": str(workspace),
        "LCG_EMBEDDER": embedder,
        "XDG_RUNTIME_DIR": str(runtime),
    }
    samples: dict[str, dict[str, list[float]]] = {
        side: {tool: [] for tool in ROWS} for side in ("holder", "forwarder")
    }
    try:
        async with AsyncExitStack() as stack:
            holder = await _serve(stack, env)
            forwarder = await _serve(stack, env)
            sides = {"holder": holder, "forwarder": forwarder}
            receipt = ""
            for n in range(seed_facts):
                ack = await holder("lambo_derive", derive_params("seed", fact(rng, n)))
                receipt = str(ack["receipt"])
            await holder("lambo_stats", {"agent_id": "seed", "receipt": receipt, "wait_ms": 34_000})
            for warm in sides.values():  # warm both paths (connections, first embeddings)
                await warm("lambo_recall", {"agent_id": "warm", "query": "warm up the pool"})
            samples["socket"] = await _socket_round_trips(workspace, calls)
            for i in range(calls):
                order = ["holder", "forwarder"] if i % 2 == 0 else ["forwarder", "holder"]
                for side in order:
                    query = f"{fact(rng, 10_000 + 2 * i).split(',')[0]}?"
                    recall = {"agent_id": side, "query": query}
                    samples[side]["lambo_recall"].append(
                        await _timed(sides[side], "lambo_recall", recall)
                    )
                    derive = derive_params(side, fact(rng, 50_000 + 2 * i))
                    samples[side]["lambo_derive"].append(
                        await _timed(sides[side], "lambo_derive", derive)
                    )
                    stats = {"agent_id": side}
                    samples[side]["lambo_stats"].append(
                        await _timed(sides[side], "lambo_stats", stats)
                    )
            # In the loop above a stats call follows its side's derive, whose apply then runs
            # in the holder; here none does, so this row is the hop of the call alone.
            for i in range(calls):
                for side in ["holder", "forwarder"] if i % 2 == 0 else ["forwarder", "holder"]:
                    samples[side][ALONE].append(
                        await _timed(sides[side], "lambo_stats", {"agent_id": side})
                    )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    return samples


async def _socket_round_trips(workspace: Path, calls: int) -> dict[str, list[float]]:
    """From this process, `lambo_stats` to the holder's socket: the forwarder's own client
    (`forwarding.HolderClient`) vs a blocking socket writing the same line (the least a hop can
    cost): their difference is the forwarding code, free of the other processes' wake-ups."""
    record = read_record(workspace / ".lcg" / "writer.lock") or {}
    path = Path(str(record["forward"]))
    remote = HolderClient(path, SESSION)
    raw = socket.socket(socket.AF_UNIX)
    raw.connect(str(path))
    lines = raw.makefile("rwb")
    times: dict[str, list[float]] = {"raw socket": [], "forwarding client": []}
    try:
        for i in range(calls):
            start = time.perf_counter()
            lines.write(orjson.dumps(request_frame(i, "lambo_stats", {"agent_id": "s"})) + b"\n")
            lines.flush()
            lines.readline()
            times["raw socket"].append((time.perf_counter() - start) * 1000)
            times["forwarding client"].append(
                await _timed(remote_call(remote), "lambo_stats", {"agent_id": "s"})
            )
    finally:
        await remote.aclose()
        lines.close()
        raw.close()
    return times


def remote_call(remote: HolderClient) -> AsyncCall:
    async def call(name: str, params: dict[str, Any]) -> dict[str, Any]:
        return await remote.call(name, params, None)

    return call


def report(samples: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> str:
    lines = [
        f"calls per side and tool: {args.calls}; seeded facts: {args.seed_facts}; "
        f"embedder: {args.embedder}",
        "",
        "| tool | holder p50 ms | forwarder p50 ms | **hop p50 ms** | holder p95 ms | "
        "forwarder p95 ms | forwarder/holder p50 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for tool in ROWS:
        held, hop = samples["holder"][tool], samples["forwarder"][tool]
        p50h, p50f = percentile(held, 50), percentile(hop, 50)
        lines.append(
            f"| {tool} | {p50h:.2f} | {p50f:.2f} | **{p50f - p50h:.2f}** | "
            f"{percentile(held, 95):.2f} | {percentile(hop, 95):.2f} | {p50f / p50h:.2f}x |"
        )
    raw, client = samples["socket"]["raw socket"], samples["socket"]["forwarding client"]
    lines += [
        "",
        "| lambo_stats from this process to the holder's socket | p50 ms | p95 ms |",
        "|---|---:|---:|",
        f"| a raw blocking socket, one line | {percentile(raw, 50):.3f} | "
        f"{percentile(raw, 95):.3f} |",
        f"| the forwarder's client (`HolderClient`) | {percentile(client, 50):.3f} | "
        f"{percentile(client, 95):.3f} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seed-facts", type=int, default=200)
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    samples = anyio.run(run, args.calls, args.seed_facts, args.embedder)
    table = report(samples, args)
    sys.stdout.write(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
