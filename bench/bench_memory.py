"""Benchmark the agent-memory write side: lambo_derive's ack, ack -> applied, derives per second.

Run from the repository root:

    .venv/bin/python -m bench.bench_memory [--calls 200] [--repeats 3] [--derives 60]
        [--agents 1 8] [--skip-mcp] [--out bench/results/memory.md]

With the bundled MiniLM model (a Workspace's default embedder), on fresh workspaces:

1. Ack latency: per iteration a `knowledge_status` (the baseline), a one-concept
   `lambo_derive` (~60-byte fact), then `lambo_stats` with the receipt and `wait_ms` until it
   is applied, in process (`operations.dispatch`), over the socket (`lcg serve`) and over MCP
   stdio (`lcg serve --mcp-stdio`, the SDK's client). Ratio derive / status per transport.
   Then a `knowledge_add_episode` (~60-byte body), a durable write without the memory
   machinery, timed too, and the loop waits until its passage is embedded (untimed).
2. Ack -> applied, from the same iterations: the intent processor's own samples
   (`lambo_stats`'s `write_queue_apply_ms_p50/p90`: ack to outcome committed, inside the
   server) and the client's view (the `wait_ms` call's duration); the baseline is the model
   alone embedding one framed text of the same shape in this process, between iterations.
3. Derives per second for 1 and 8 agents (threads in process; socket clients against
   `lcg serve`): every agent sends `--derives` derives back to back (under the 64-per-agent
   lane bound, so nothing is dropped), then waits for its last receipt. Acked/s to the last
   ack, applied/s to the last outcome; the baseline is the same agents calling
   knowledge_status as fast as they can, in the same workspace just before.

Every run checks it did the work: each receipt applied with one concept created, the
session's concept count equal to the derives sent (nothing merged), nothing dropped or failed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from pathlib import Path

import anyio

from bench.memory_report import WARMUP, Burst, Latency, report
from bench.memory_transports import (
    WAIT_MS,
    AsyncCall,
    Call,
    derive_params,
    fact,
    in_process,
    in_process_agents,
    over_mcp,
    over_socket,
    settle,
    socket_service,
)
from lcg.domain.memory.text import call_text, embedding_text
from lcg.interfaces.config import Settings
from lcg.projections.embedding.minilm import MiniLmEmbedder

RESULTS = Path(__file__).resolve().parent / "results"
LATENCY: list[tuple[str, Callable[[Path], AbstractAsyncContextManager[AsyncCall]]]] = [
    ("in-process `operations.dispatch`", in_process),
    ("socket JSON-RPC (`lcg serve`)", over_socket),
    ("MCP stdio (`lcg serve --mcp-stdio`)", over_mcp),
]
THROUGHPUT: list[tuple[str, Callable[[Path], AbstractContextManager[Callable[[], Call]]]]] = [
    ("in process, threads", in_process_agents),
    ("socket, a connection each", socket_service),
]


async def latency_round(
    open_transport: Callable[[Path], AbstractAsyncContextManager[AsyncCall]],
    workspace: Path,
    model: MiniLmEmbedder,
    calls: int,
    rng: random.Random,
) -> Latency:
    out = Latency()
    agent = "bench-latency"
    async with open_transport(workspace) as call:
        for index in range(WARMUP + calls):
            timed = index >= WARMUP
            started = time.perf_counter()
            await call("knowledge_status", {})
            acked_at = time.perf_counter()
            ack = await call("lambo_derive", derive_params(agent, fact(rng, index)))
            done = time.perf_counter()
            answer = await call(
                "lambo_stats", {"agent_id": agent, "receipt": ack["receipt"], "wait_ms": WAIT_MS}
            )
            waited = time.perf_counter()
            body = answer["receipt"]
            assert body["state"] == "applied", body
            assert body["created_count"] == 1, body
            episode = {"name": f"e{index}", "episode_body": fact(rng, 2_000_000 + index)}
            episode_started = time.perf_counter()
            await call("knowledge_add_episode", episode)
            episode_done = time.perf_counter()
            while (await call("knowledge_status", {}))["vector_pending"]:
                await anyio.sleep(0.002)  # its passage embedded: nothing runs in the background
            text = fact(rng, 1_000_000 + index)
            embed_started = time.perf_counter()
            model.embed([embedding_text(text, call_text([text]))])
            if timed:
                out.status.append((acked_at - started) * 1000)
                out.derive.append((done - acked_at) * 1000)
                out.waited.append((waited - done) * 1000)
                out.episode.append((episode_done - episode_started) * 1000)
                out.model.append((time.perf_counter() - embed_started) * 1000)
        stats = await call("lambo_stats", {"agent_id": agent})
        assert stats["concept_count"] == WARMUP + calls, stats
        assert stats["write_queue_failed"] == stats["write_queue_dropped"] == 0, stats
        out.processor = (
            stats["write_queue_apply_ms_p50"],
            stats["write_queue_apply_ms_p90"],
            stats["write_queue_apply_samples"],
        )
    return out


def _in_threads(agents: int, body: Callable[[int, threading.Barrier], None]) -> float:
    """Run `body(agent, barrier)` on `agents` threads; returns the moment they were released."""
    barrier = threading.Barrier(agents + 1)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            body(index, barrier)
        except BaseException as error:
            errors.append(error)
            barrier.abort()
            raise

    threads = [threading.Thread(target=run, args=(i,)) for i in range(agents)]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return start


def burst(connect: Callable[[], Call], agents: int, derives: int, seed: int) -> Burst:
    callers = [connect() for _ in range(agents)]
    warm = callers[0]
    rng = random.Random(seed)
    for index in range(5):  # a warm model and an existing session
        ack = warm("lambo_derive", derive_params("bench-warm", fact(rng, 900_000 + index)))
        settle(warm, "bench-warm", ack["receipt"])
    ends: list[float] = [0.0] * agents

    def statuses(agent: int, barrier: threading.Barrier) -> None:
        barrier.wait()
        for _ in range(derives):
            callers[agent]("knowledge_status", {})
        ends[agent] = time.perf_counter()

    start = _in_threads(agents, statuses)
    status_per_s = agents * derives / (max(ends) - start)
    acked = [0.0] * agents
    applied = [0.0] * agents
    ack_ms: list[float] = []
    texts = [[fact(rng, 100_000 * (a + 1) + i) for i in range(derives)] for a in range(agents)]

    def derive(agent: int, barrier: threading.Barrier) -> None:
        call, name, receipts = callers[agent], f"bench-agent-{agent}", []
        barrier.wait()
        for text in texts[agent]:
            started = time.perf_counter()
            ack = call("lambo_derive", derive_params(name, text))
            ack_ms.append((time.perf_counter() - started) * 1000)
            assert ack["receipt_state"] == "pending", ack
            receipts.append(ack["receipt"])
        acked[agent] = time.perf_counter()
        assert settle(call, name, receipts[-1])["state"] == "applied"
        applied[agent] = time.perf_counter()
        for receipt in receipts:  # per-agent order: the last applied, so every one is
            body = settle(call, name, receipt)
            assert body["state"] == "applied", body
            assert body["created_count"] == 1, body

    start = _in_threads(agents, derive)
    stats = warm("lambo_stats", {"agent_id": "bench-warm"})
    assert stats["concept_count"] == 5 + agents * derives, stats
    assert stats["write_queue_failed"] == stats["write_queue_dropped"] == 0, stats
    total = agents * derives
    return Burst(
        status_per_s,
        total / (max(acked) - start),
        total / (max(applied) - start),
        ack_ms,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="timed iterations per transport")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over every measurement")
    parser.add_argument("--derives", type=int, default=60, help="derives per agent (<= 64)")
    parser.add_argument("--agents", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--skip-mcp", action="store_true", help="no MCP stdio rows")
    parser.add_argument("--out", type=Path, default=RESULTS / "memory.md")
    options = parser.parse_args()
    transports = [t for t in LATENCY if not (options.skip_mcp and "MCP" in t[0])]
    model = MiniLmEmbedder(threads=Settings(Path(".")).embed_threads)
    model.embed(["warm up"])
    latencies: dict[str, list[Latency]] = {label: [] for label, _ in transports}
    bursts: dict[tuple[str, int], list[Burst]] = {}
    wall = time.perf_counter()
    for repeat in range(options.repeats):
        for label, open_transport in transports:
            print(f"round {repeat + 1}: latency, {label}", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
                rng = random.Random(repeat)
                result = anyio.run(
                    latency_round, open_transport, Path(tmp), model, options.calls, rng
                )
            latencies[label].append(result)
        for label, open_agents in THROUGHPUT:
            for agents in options.agents:
                print(f"round {repeat + 1}: {agents} agent(s), {label}", file=sys.stderr)
                with (
                    tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp,
                    open_agents(Path(tmp)) as connect,
                ):
                    one = burst(connect, agents, options.derives, seed=repeat)
                bursts.setdefault((label, agents), []).append(one)
    text = report(options, latencies, bursts, time.perf_counter() - wall)
    sys.stdout.write(text)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
