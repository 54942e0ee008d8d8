"""1 vs 3 serving nodes on one PostgreSQL log, 8 clients (issue 28; docs/adr/0085).

    .venv/bin/python -m bench.bench_nodes [--nodes 1 3] [--clients 8] [--seconds 8]
        [--server URL]

For each node count, in one run: a fresh schema in a database of the bench's own, that many
`lcg serve` processes (each its own workspace, the hashing embedder) on it, 300 episodes
written through the first node and followed by the others; then two phases of `--seconds`
each, the clients spread round-robin over the nodes, each on its own connection:
- reads: `knowledge_search_passages` (BM25 and vectors over the 300 episodes);
- writes: `knowledge_add_episode` into 4 groups (client % 4), so nodes contend for a group's
  next seq and decide again after catching up (ADR 0075).
Reported per phase: calls/s, p50 and p95 latency, and the ratio of each node count's calls/s
to the first's (the baseline, measured in the same run).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from bench.socket_service import Client, start_service

SERVER = os.environ.get("LCG_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def with_database(url: str, name: str) -> str:
    params = conninfo_to_dict(url)
    user = params.get("user", "postgres")
    return (
        f"postgresql://{user}@{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}/{name}"
    )


def reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


def phase(sockets: list[Path], clients: int, seconds: float, call: Any) -> tuple[int, list[float]]:
    """Every client calls `call(client, n)` on its node until the time is up."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    start = threading.Barrier(clients + 1)
    stop = threading.Event()

    def run(index: int) -> None:
        client = Client(sockets[index % len(sockets)])
        try:
            start.wait()
            n = 0
            while not stop.is_set():
                began = time.perf_counter()
                call(client, index, n)
                latencies[index].append(time.perf_counter() - began)
                n += 1
        finally:
            client.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    start.wait()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    flat = [x for per in latencies for x in per]
    return len(flat), flat


def read(client: Client, index: int, n: int) -> None:
    client.call("knowledge_search_passages", {"query": f"topic {(index * 7 + n) % 97}"})


def write(client: Client, index: int, n: int) -> None:
    params = {
        "name": f"w{index}-{n}",
        "episode_body": f"client {index} wrote passage {n} about topic {n % 97}",
        "group_id": f"g{index % 4}",
    }
    client.call("knowledge_add_episode", params)


def run_nodes(url: str, count: int, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    reset(url)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("LCG_")},
        "LCG_STORE_URL": url,
        "LCG_EMBEDDER": "hashing",
    }
    procs: list[subprocess.Popen[bytes]] = []
    try:
        workspaces = [root / f"n{count}-{i}" for i in range(count)]
        procs.append(start_service(workspaces[0], env))
        first = Client(workspaces[0] / ".lcg" / "service.sock")
        for n in range(300):
            first.call(
                "knowledge_add_episode",
                {"name": f"e{n}", "episode_body": f"seed passage {n} on topic {n % 97}"},
            )
        first.close()
        for workspace in workspaces[1:]:
            procs.append(start_service(workspace, env))  # replays the 300, then follows
        sockets = [w / ".lcg" / "service.sock" for w in workspaces]
        results: dict[str, Any] = {}
        for name, call in (("reads", read), ("writes", write)):
            done, latencies = phase(sockets, args.clients, args.seconds, call)
            results[name] = {
                "calls_per_s": done / args.seconds,
                "p50_ms": statistics.median(latencies) * 1000,
                "p95_ms": statistics.quantiles(latencies, n=20)[18] * 1000,
            }
        return results
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--server", default=SERVER)
    args = parser.parse_args(argv)
    name = f"lcg_bench_nodes_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = with_database(args.server, name)
    print(f"load average at start: {os.getloadavg()}", flush=True)
    try:
        with tempfile.TemporaryDirectory(prefix="lcg-bench-nodes-") as tmp:
            measured = {count: run_nodes(url, count, args, Path(tmp)) for count in args.nodes}
    finally:
        with psycopg.connect(args.server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    base = measured[args.nodes[0]]
    print("| nodes | phase | calls/s | p50 ms | p95 ms | calls/s vs first |")
    print("|---:|---|---:|---:|---:|---:|")
    for count, results in measured.items():
        for phase_name, figures in results.items():
            ratio = figures["calls_per_s"] / base[phase_name]["calls_per_s"]
            print(
                f"| {count} | {phase_name} | {figures['calls_per_s']:.0f} |"
                f" {figures['p50_ms']:.1f} | {figures['p95_ms']:.1f} | {ratio:.2f}x |"
            )
    print(f"load average at end: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
