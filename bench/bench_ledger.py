"""What the call ledger costs a call: MCP p50 with `--ledger FILE` vs without (ADR 0079).

Two `lambo serve --session bench` processes, each on its own workspace seeded with the same
facts, one started with `--ledger` (a file in the workspace's temporary directory), driven by
the SDK's stdio client and timed in one run, interleaved call by call so the box's load moves
both sides alike: `lambo_recall` (a distinct query each call; its ledger line carries fusion
values and annotations), `lambo_derive` (a distinct fact; its line, then its completion line)
and `lambo_stats` (the least work a call does). Afterwards the ledger's own counters are read:
every line written, none dropped. A second table times `CallLedger.append` alone in this
process (a recall line's size), the only part of the ledger on a call's path.

    .venv/bin/python -m bench.bench_ledger [--calls 300] [--seed-facts 200]
        [--embedder hashing|minilm] [--out bench/results/ledger.md]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
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
from lcg.interfaces.ledger import open_ledger

SESSION = "bench"
TOOLS = ("lambo_recall", "lambo_derive", "lambo_stats")
SIDES = ("without", "with --ledger")
LAMBO = LCG.parent / "lambo"


async def _serve(stack: AsyncExitStack, env: dict[str, str], *args: str) -> AsyncCall:
    params = StdioServerParameters(
        command=str(LAMBO), args=["serve", "--session", SESSION, *args], env=env
    )
    client = await stack.enter_async_context(McpClient(params, read_timeout_seconds=120))
    return structured_calls(client)


async def _timed(call: AsyncCall, name: str, params: dict[str, Any]) -> float:
    start = time.perf_counter()
    await call(name, params)
    return (time.perf_counter() - start) * 1000


async def run(
    calls: int, seed_facts: int, embedder: str
) -> tuple[dict[str, dict[str, list[float]]], dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix="bench-ledger-"))
    ledger = root / "calls.jsonl"
    samples: dict[str, dict[str, list[float]]] = {side: {t: [] for t in TOOLS} for side in SIDES}
    try:
        async with AsyncExitStack() as stack:
            sides: dict[str, AsyncCall] = {}
            for side, args in zip(SIDES, ((), ("--ledger", str(ledger))), strict=True):
                env = {
                    **clean_env(),
                    "LCG_WORKSPACE": str(root / side.replace(" ", "_")),
                    "LCG_EMBEDDER": embedder,
                }
                sides[side] = await _serve(stack, env, *args)
            for call in sides.values():
                rng = random.Random(7)  # the same facts on both sides
                receipt = ""
                for n in range(seed_facts):
                    ack = await call("lambo_derive", derive_params("seed", fact(rng, n)))
                    receipt = str(ack["receipt"])
                await call(
                    "lambo_stats", {"agent_id": "seed", "receipt": receipt, "wait_ms": 34_000}
                )
                await call("lambo_recall", {"agent_id": "warm", "query": "warm up the pool"})
            rng = random.Random(11)
            for i in range(calls):
                query = f"{fact(rng, 10_000 + i).split(',')[0]}?"
                content = fact(rng, 50_000 + i)
                for side in SIDES if i % 2 == 0 else tuple(reversed(SIDES)):
                    call = sides[side]
                    recall = {"agent_id": "b", "query": query}
                    samples[side]["lambo_recall"].append(await _timed(call, "lambo_recall", recall))
                    derive = derive_params("b", content)
                    samples[side]["lambo_derive"].append(await _timed(call, "lambo_derive", derive))
                    stats = {"agent_id": "b"}
                    samples[side]["lambo_stats"].append(await _timed(call, "lambo_stats", stats))
            counters = await sides[SIDES[1]]("lambo_stats", {"agent_id": "b"})
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return samples, counters


def append_cost(lines: int) -> list[float]:
    """µs per `CallLedger.append` of a recall-sized line, in batches of 1,000."""
    root = Path(tempfile.mkdtemp(prefix="bench-ledger-append-"))
    hit: dict[str, Any] = {
        "node_id": "0" * 36,
        "session": SESSION,
        "score": 1.23,
        "annotations": [],
    }
    hit["fusion"] = {"bm25_rank": 1, "vector_rank": 2, "max": 1.2, "rrf": 0.9}
    line: dict[str, Any] = {"kind": "recall", "ts": "2026-12-05T00:00:00.000Z"}
    line["tool"] = "lambo_recall"
    line |= {"session": SESSION, "agent_id": "bench", "ms": 3.2, "by": "query", "hits": [hit] * 10}
    ledger = open_ledger(root / "append.jsonl", capacity=lines + 1)
    per_batch: list[float] = []
    try:
        for _ in range(lines // 1000):
            start = time.perf_counter()
            for _ in range(1000):
                ledger.append(SESSION, line)
            per_batch.append((time.perf_counter() - start) * 1000)  # ms per 1,000 = µs each
        ledger.close(wait=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return per_batch


def report(
    samples: dict[str, dict[str, list[float]]],
    counters: dict[str, Any],
    append_us: list[float],
    args: argparse.Namespace,
) -> str:
    lines = [
        f"calls per side and tool: {args.calls}; seeded facts: {args.seed_facts}; "
        f"embedder: {args.embedder}",
        "",
        "| tool | without p50 ms | with --ledger p50 ms | **with/without p50** | without p95 ms "
        "| with p95 ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for tool in TOOLS:
        off, on = samples[SIDES[0]][tool], samples[SIDES[1]][tool]
        p50_off, p50_on = percentile(off, 50), percentile(on, 50)
        lines.append(
            f"| {tool} | {p50_off:.2f} | {p50_on:.2f} | **{p50_on / p50_off:.2f}x** | "
            f"{percentile(off, 95):.2f} | {percentile(on, 95):.2f} |"
        )
    keys = ("ledger_written_lines", "ledger_dropped_lines", "ledger_queued_lines")
    lines += [
        "",
        "the ledger side's counters at the end: "
        + ", ".join(f"{key} {counters.get(key)}" for key in keys),
        "",
        "| `CallLedger.append`, a recall line of 10 hits | p50 µs | p95 µs |",
        "|---|---:|---:|",
        f"| per line (batches of 1,000) | {percentile(append_us, 50):.2f} | "
        f"{percentile(append_us, 95):.2f} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seed-facts", type=int, default=200)
    parser.add_argument("--embedder", choices=("hashing", "minilm"), default="hashing")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    samples, counters = anyio.run(run, args.calls, args.seed_facts, args.embedder)
    table = report(samples, counters, append_cost(50_000), args)
    sys.stdout.write(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")


if __name__ == "__main__":
    main()
