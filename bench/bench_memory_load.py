"""Benchmark memory writes applied per second while 8 clients write knowledge (issue 24).

Run from the repository root:

    .venv/bin/python -m bench.bench_memory_load [--clients 8] [--seconds 45] [--every-ms 100]

`lcg serve` runs as a child process on a fresh workspace with the bundled model. `--clients`
socket clients write `knowledge_add_episode`s with distinct ~300-character bodies to group
`load` (every write embeds new text: more than the model embeds per second), while one agent,
on its own connection, sends a one-concept `lambo_derive` every `--every-ms` to the session
(`liminis`). Over the `--seconds` of load: knowledge writes/s, derives acked `pending` and
`dropped` (by `receipt_state`, which every version answers), memory writes applied (lambo_stats
`write_queue_applied` when the load stops) and applied/s, and the vector follower's backlog
then (`knowledge_status.vector_pending`). After the load: how long the outstanding derives take
to be applied (at most 60 s).
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from bench.bench_load import body
from bench.socket_service import Client, start_service

AGENT = "bench-agent"
DRAIN_S = 60.0


def knowledge_writer(path: Path, seed: int, stop: threading.Event, counts: list[int]) -> None:
    rng = random.Random(seed)
    client = Client(path)
    try:
        index = 0
        while not stop.is_set():
            params = {"name": f"c{seed}-{index}", "episode_body": body(rng), "group_id": "load"}
            client.call("knowledge_add_episode", params)
            counts[seed] += 1
            index += 1
    finally:
        client.close()


def agent(path: Path, every_s: float, stop: threading.Event, acks: dict[str, int]) -> None:
    rng = random.Random(7)
    client = Client(path)
    try:
        index = 0
        next_at = time.perf_counter()
        while not stop.is_set():
            content = f"agent note {index}: " + " ".join(
                rng.sample(sorted(set(body(rng).split())), 6)
            )
            concepts = [{"content": content, "concept_type": "observation"}]
            ack = client.call("lambo_derive", {"agent_id": AGENT, "concepts": concepts})
            state = ack["structuredContent"]["receipt_state"]
            acks[state] = acks.get(state, 0) + 1
            index += 1
            next_at += every_s
            stop.wait(max(0.0, next_at - time.perf_counter()))
    finally:
        client.close()


def run(clients: int, seconds: float, every_ms: int) -> dict[str, Any]:
    with TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        proc = start_service(workspace)
        path = workspace / ".lcg" / "service.sock"
        probe = Client(path)
        try:
            counts = [0] * clients
            acks: dict[str, int] = {}
            stop = threading.Event()
            threads = [
                threading.Thread(target=knowledge_writer, args=(path, seed, stop, counts))
                for seed in range(clients)
            ]
            threads.append(threading.Thread(target=agent, args=(path, every_ms / 1000, stop, acks)))
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            stop.wait(seconds)
            stats = probe.call("lambo_stats", {"agent_id": AGENT})["structuredContent"]
            pending = probe.call("knowledge_status", {})["vector_pending"]
            elapsed = time.perf_counter() - start
            stop.set()
            for thread in threads:
                thread.join()
            drained_at = time.perf_counter()
            final = stats
            while time.perf_counter() - drained_at < DRAIN_S:
                final = probe.call("lambo_stats", {"agent_id": AGENT})["structuredContent"]
                if final["write_queue_outstanding"] == 0:
                    break
                time.sleep(0.25)
            drain_s = time.perf_counter() - drained_at
        finally:
            probe.close()
            proc.terminate()  # its close waits for the follower's backlog: not measured
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()  # every acknowledged write is in the WAL; the workspace goes
                proc.wait(60)
    return {
        "knowledge_per_s": sum(counts) / elapsed,
        "acked": acks.get("pending", 0),
        "dropped": acks.get("dropped", 0),
        "applied": stats["write_queue_applied"],
        "applied_per_s": stats["write_queue_applied"] / elapsed,
        "apply_p50": stats["write_queue_apply_ms_p50"],
        "vector_pending": pending,
        "drain_s": drain_s,
        "outstanding_after": final["write_queue_outstanding"],
        "applied_after": final["write_queue_applied"],
    }


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=45.0)
    parser.add_argument("--every-ms", type=int, default=100)
    args = parser.parse_args(argv)
    r = run(args.clients, args.seconds, args.every_ms)
    print(r, file=sys.stderr)
    drained = (
        f"all applied {r['drain_s']:.1f} s after"
        if r["outstanding_after"] == 0
        else f"{r['outstanding_after']} still outstanding {DRAIN_S:.0f} s after"
    )
    print(
        f"| {args.clients} clients, {args.seconds:.0f} s, a derive every {args.every_ms} ms "
        f"| {r['knowledge_per_s']:.0f} | {r['acked']} / {r['dropped']} "
        f"| {r['applied']} ({r['applied_per_s']:.1f}/s) | {_ms(r['apply_p50'])} "
        f"| {r['vector_pending']} | {drained} |"
    )


if __name__ == "__main__":
    main()
