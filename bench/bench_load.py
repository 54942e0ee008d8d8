"""Benchmark the socket service under concurrent clients: write latency, throughput, search p95.

Run from the repository root:

    .venv/bin/python -m bench.bench_load [--clients 8] [--ops 60] [--search-every 3]

`lcg serve` runs as a child process on a fresh workspace with the bundled model. Every
client has its own connection and runs `--ops` operations in a loop: a
`knowledge_search_passages` every `--search-every`th operation, otherwise a
`knowledge_add_episode` with a distinct ~300-character body (so every write embeds new text).
Reported: write p50/p95 and writes per second over the whole run, search p50/p95; and, in the
same run, the baseline the issue names: search p95 with one client and no writers.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.socket_service import Client, start_service

WORDS = [
    "release",
    "build",
    "cache",
    "runner",
    "agent",
    "memory",
    "graph",
    "deploy",
    "rollback",
    "latency",
    "queue",
    "schema",
    "migration",
    "index",
    "replica",
    "backup",
    "token",
    "budget",
    "review",
    "incident",
    "metric",
    "alert",
    "shard",
]


def body(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(40)) + f" #{rng.getrandbits(64):x}"


def worker(path: Path, seed: int, ops: int, search_every: int, out: dict[str, list[float]]) -> None:
    rng = random.Random(seed)
    client = Client(path)
    try:
        for index in range(ops):
            if search_every and index % search_every == search_every - 1:
                query = " ".join(rng.sample(WORDS, 3))
                start = time.perf_counter()
                client.call("knowledge_search_passages", {"query": query, "min_score": 0.0})
                out["search"].append(time.perf_counter() - start)
            else:
                params = {"name": f"c{seed}-{index}", "episode_body": body(rng), "group_id": "load"}
                start = time.perf_counter()
                client.call("knowledge_add_episode", params)
                out["write"].append(time.perf_counter() - start)
    finally:
        client.close()


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def run(clients: int, ops: int, search_every: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        proc = start_service(workspace)
        path = workspace / ".lcg" / "service.sock"
        try:
            seeding: dict[str, list[float]] = {"write": [], "search": []}
            worker(path, 10_000, 30, 0, seeding)  # something to search, and a warm model
            alone: dict[str, list[float]] = {"write": [], "search": []}
            worker(path, 20_000, 60, 1, alone)  # one client, searches only
            results: dict[str, list[float]] = {"write": [], "search": []}
            threads = [
                threading.Thread(target=worker, args=(path, seed, ops, search_every, results))
                for seed in range(clients)
            ]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed = time.perf_counter() - start
        finally:
            proc.terminate()
            proc.wait(60)
    return {
        "write_p50": percentile(results["write"], 0.5),
        "write_p95": percentile(results["write"], 0.95),
        "writes_per_s": len(results["write"]) / elapsed,
        "search_p50": percentile(results["search"], 0.5),
        "search_p95": percentile(results["search"], 0.95),
        "alone_search_p50": percentile(alone["search"], 0.5),
        "alone_search_p95": percentile(alone["search"], 0.95),
        "writes": len(results["write"]),
        "searches": len(results["search"]),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--ops", type=int, default=60)
    parser.add_argument("--search-every", type=int, default=3)
    args = parser.parse_args(argv)
    r = run(args.clients, args.ops, args.search_every)
    print(
        f"| {args.clients} clients x {args.ops} ops | {r['writes']} writes: p50 "
        f"{r['write_p50']:.1f} ms, p95 {r['write_p95']:.1f} ms, {r['writes_per_s']:.0f}/s | "
        f"{r['searches']} searches: p50 {r['search_p50']:.1f} ms, p95 {r['search_p95']:.1f} ms | "
        f"one client, searches only: p50 {r['alone_search_p50']:.1f} ms, "
        f"p95 {r['alone_search_p95']:.1f} ms |"
    )


if __name__ == "__main__":
    main()
