"""MCP over Streamable HTTP vs stdio, 8 HTTP clients sharing one serve, and the serve under
1,000 idle connections (issue 27, ADR 0064, ADR 0071).

    .venv/bin/python -m bench.bench_http [--facts 200] [--calls 300] [--seconds 60] [--idle 1000]

1. Latency: two workspaces seeded with the same facts, one served by `lcg serve --mcp-stdio`,
   the other by `lcg serve --http`, both alive at once; the same `lambo_recall` calls go to
   each in turn (interleaved, so the box's noise hits both), timed at the SDK client. p50, p95
   and the HTTP/stdio ratio of p50 (aim <= 1.5x).
2. Shared serve: one HTTP client alone for a third of `--seconds`, then 8 clients (each its
   own SDK client and MCP session) for `--seconds`, each looping over derive, recall, search
   (`knowledge_search_passages`). Errors are counted (an exception or an isError result);
   afterwards every acked write's receipt must be `applied` and a sample of them must be
   found by recall. p95 of the 8 beside the one client's.
3. Idle connections: a third serve (head deadline raised to 600 s so that nothing is cut
   meanwhile), seeded the same; its RSS (/proc) and the p50 of 100 recalls of one client,
   then again with `--idle` raw TCP connections open that never send a byte; the RSS grown
   per connection and the recall p50 ratio, in the same run.
The rate limit is raised for this run (`LCG_SERVE_PER_SESSION_RPS`): it measures the
transport, not the limiter. Progress goes to stderr; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.memory_transports import (
    WAIT_MS,
    AsyncCall,
    clean_env,
    derive_params,
    fact,
    over_mcp,
    percentile,
    structured_calls,
)
from bench.socket_service import LCG

AGENTS = 8
SAMPLE = 40  # acked writes looked up by recall afterwards
LISTENING = re.compile(r"serving MCP over HTTP at (http://\S+/mcp)")
PIDS: dict[str, int] = {}  # a running bench serve's /mcp URL -> its pid
RECALLS = 100  # timed recalls without and with the idle connections, each
ROUNDS = 5  # alternations of the two
SETTLE_SECONDS = 3.0  # after opening or closing the idle connections, before timing


def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@asynccontextmanager
async def http_serve(workspace: Path, **extra: str) -> AsyncIterator[str]:
    """`lcg serve --http --port 0` in a child; yields its /mcp URL once /healthz answers
    (the child's pid is `PIDS[url]`)."""
    log_path = workspace.parent / f"{workspace.name}-http.log"
    env = clean_env() | {"LCG_SERVE_PER_SESSION_RPS": "100000", "LCG_SERVE_BURST": "100000"}
    env |= extra
    with log_path.open("wb") as sink:
        proc = subprocess.Popen(
            [str(LCG), "serve", "--http", "--port", "0", "--workspace", str(workspace)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
        )
    try:
        url = None
        while url is None:
            if proc.poll() is not None:
                raise RuntimeError(log_path.read_text())
            found = LISTENING.search(log_path.read_text())
            url = None if found is None else found.group(1)
            await anyio.sleep(0.05)
        async with httpx2.AsyncClient() as http:
            while True:
                try:
                    if (await http.get(url.removesuffix("/mcp") + "/healthz")).status_code == 200:
                        break
                except httpx2.TransportError:
                    await anyio.sleep(0.05)
        PIDS[url] = proc.pid
        yield url
    finally:
        proc.terminate()
        proc.wait(60)


@asynccontextmanager
async def over_http(url: str) -> AsyncIterator[AsyncCall]:
    """The SDK's streamable HTTP client, answering as memory_transports.over_mcp does."""
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client,
    ):
        yield structured_calls(client)


async def seed(call: AsyncCall, facts: list[str]) -> None:
    receipt = ""
    for n in range(0, len(facts), 20):
        params = {
            "agent_id": "seeder",
            "concepts": [{"content": text, "concept_type": "logic"} for text in facts[n : n + 20]],
        }
        receipt = (await call("lambo_derive", params))["receipt"]
    await settle(call, "seeder", receipt)


async def settle(call: AsyncCall, agent: str, receipt: str) -> str:
    while True:
        args = {"agent_id": agent, "receipt": receipt, "wait_ms": WAIT_MS}
        state: str = (await call("lambo_stats", args))["receipt"]["state"]
        if state != "pending":
            return state


async def latency(workdir: Path, facts: list[str], calls: int) -> dict[str, list[float]]:
    queries = [" ".join(text.split()[:3]) for text in facts]
    times: dict[str, list[float]] = {"stdio": [], "http": []}
    async with (
        over_mcp(workdir / "stdio") as stdio,
        http_serve(workdir / "http") as url,
        over_http(url) as http,
    ):
        log("seeding both workspaces")
        await seed(stdio, facts)
        await seed(http, facts)
        clients = {"stdio": stdio, "http": http}
        for n in range(calls + 20):
            for label in ("stdio", "http") if n % 2 else ("http", "stdio"):
                args = {"agent_id": "bench", "query": queries[n % len(queries)]}
                start = time.perf_counter()
                await clients[label]("lambo_recall", args)
                if n >= 20:  # warm-up
                    times[label].append((time.perf_counter() - start) * 1000)
    return times


class Mixed:
    """One client's loop of derive, recall, search; its latencies, errors and receipts."""

    def __init__(self, name: str, rng: random.Random) -> None:
        self.name = name
        self.rng = rng
        self.ms: list[float] = []
        self.errors = 0
        self.acked: list[tuple[str, str, str]] = []  # (agent, receipt, content)
        self.dropped = 0  # derives refused for backpressure: acks saying nothing was written

    async def run(self, call: AsyncCall, until: float, counter: list[int]) -> None:
        step = 0
        while time.monotonic() < until:
            kind = ("derive", "recall", "search")[step % 3]
            step += 1
            start = time.perf_counter()
            try:
                await self._one(call, kind, counter)
            except Exception as error:  # noqa: BLE001 (counted, reported)
                self.errors += 1
                log(f"{self.name} {kind}: {error}")
            self.ms.append((time.perf_counter() - start) * 1000)

    async def _one(self, call: AsyncCall, kind: str, counter: list[int]) -> None:
        if kind == "derive":
            counter[0] += 1
            content = fact(self.rng, 50_000 + counter[0])
            ack = await call("lambo_derive", derive_params(self.name, content))
            if ack["receipt_state"] == "dropped":  # M-DER-094: not written, and it says so
                self.dropped += 1
            else:
                self.acked.append((self.name, ack["receipt"], content))
        elif kind == "recall":
            query = " ".join(fact(self.rng, 0).split()[:3])
            await call("lambo_recall", {"agent_id": self.name, "query": query})
        else:
            query = " ".join(fact(self.rng, 0).split()[:2])
            await call("knowledge_search_passages", {"query": query})


async def shared(workdir: Path, facts: list[str], seconds: float) -> dict[str, Any]:
    counter = [0]
    async with http_serve(workdir / "shared") as url:
        async with over_http(url) as client:
            await seed(client, facts)
            alone = Mixed("alone", random.Random(1))
            log(f"one client for {seconds / 3:.0f} s")
            await alone.run(client, time.monotonic() + seconds / 3, counter)
        mixes = [Mixed(f"agent-{n}", random.Random(10 + n)) for n in range(AGENTS)]
        log(f"{AGENTS} clients for {seconds:.0f} s")

        async def one(mix: Mixed, until: float) -> None:
            async with over_http(url) as own:
                await mix.run(own, until, counter)

        until = time.monotonic() + seconds
        async with anyio.create_task_group() as tasks:
            for mix in mixes:
                tasks.start_soon(one, mix, until)
        log("checking every acked write")
        acked = [pair for mix in [alone, *mixes] for pair in mix.acked]
        async with over_http(url) as check:
            states = [await settle(check, agent, receipt) for agent, receipt, _ in acked]
            sample = random.Random(5).sample(acked, min(SAMPLE, len(acked)))
            found = 0
            for _, _, content in sample:
                args = {"agent_id": "checker", "query": content, "top_k": 3}
                found += content in orjson.dumps(await check("lambo_recall", args)).decode()
    calls = sum(len(mix.ms) for mix in mixes)
    return {
        "alone": alone,
        "mixes": mixes,
        "calls": calls,
        "rate": calls / seconds,
        "errors": sum(mix.errors for mix in mixes) + alone.errors,
        "acked": len(acked),
        "applied": sum(state == "applied" for state in states),
        "dropped": sum(mix.dropped for mix in [alone, *mixes]),
        "states": dict(Counter(states)),
        "found": found,
        "sample": len(sample),
    }


def rss_kib(pid: int) -> int:
    """The process's resident set (VmRSS, KiB)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no VmRSS for pid {pid}")
    return int(found.group(1))


async def recalls(call: AsyncCall, queries: list[str], count: int) -> list[float]:
    ms = []
    for n in range(count):
        start = time.perf_counter()
        await call("lambo_recall", {"agent_id": "bench", "query": queries[n % len(queries)]})
        ms.append((time.perf_counter() - start) * 1000)
    return ms


async def idle(workdir: Path, facts: list[str], count: int) -> dict[str, Any]:
    """RSS and recall latency of one serve, alone and under `count` idle connections, in
    alternating rounds (the box's noise hits both)."""
    queries = [" ".join(text.split()[:3]) for text in facts]
    held = {"LCG_SERVE_HEADER_TIMEOUT_SECS": "600"}
    alone: list[float] = []
    crowded: list[float] = []
    idle_kib = 0
    alive = 0
    async with http_serve(workdir / "idle", **held) as url, over_http(url) as client:
        pid = PIDS[url]
        await seed(client, facts)
        await recalls(client, queries, RECALLS)  # warm-up
        before_kib = rss_kib(pid)
        host, port = url.removeprefix("http://").removesuffix("/mcp").rsplit(":", 1)
        for round_ in range(ROUNDS):
            alone += await recalls(client, queries, RECALLS // ROUNDS)
            log(f"round {round_ + 1}: opening {count} idle connections")
            sockets = [
                socket.create_connection((host, int(port)), timeout=60) for _ in range(count)
            ]
            try:
                await anyio.sleep(SETTLE_SECONDS)  # every one accepted and set up
                idle_kib = max(idle_kib, rss_kib(pid))
                crowded += await recalls(client, queries, RECALLS // ROUNDS)
                idle_kib = max(idle_kib, rss_kib(pid))
                alive = min(alive or count, sum(_open(conn) for conn in sockets))
            finally:
                for conn in sockets:
                    conn.close()
            await anyio.sleep(SETTLE_SECONDS)  # the closes reach the serve
    return {
        "count": count,
        "alive": alive,
        "before_kib": before_kib,
        "idle_kib": idle_kib,
        "alone": alone,
        "crowded": crowded,
    }


def _open(conn: socket.socket) -> bool:
    conn.setblocking(False)
    try:
        return conn.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def report(times: dict[str, list[float]], run: dict[str, Any], args: argparse.Namespace) -> str:
    p50 = {label: percentile(ms, 50) for label, ms in times.items()}
    p95 = {label: percentile(ms, 95) for label, ms in times.items()}
    eight = [ms for mix in run["mixes"] for ms in mix.ms]
    lines = [
        f"`python -m bench.bench_http --facts {args.facts} --calls {args.calls} "
        f"--seconds {args.seconds:g}`",
        "",
        "| lambo_recall, same facts | p50 ms | p95 ms |",
        "|---|---:|---:|",
        f"| stdio (`lcg serve --mcp-stdio`) | {p50['stdio']:.1f} | {p95['stdio']:.1f} |",
        f"| HTTP (`lcg serve --http`) | {p50['http']:.1f} | {p95['http']:.1f} |",
        f"| **HTTP / stdio** | **{p50['http'] / p50['stdio']:.2f}x** | "
        f"{p95['http'] / p95['stdio']:.2f}x |",
        "",
        "| shared HTTP serve, derive/recall/search | calls | calls/s | p50 ms | p95 ms |",
        "|---|---:|---:|---:|---:|",
        f"| 1 client, {args.seconds / 3:.0f} s | {len(run['alone'].ms)} | "
        f"{len(run['alone'].ms) / (args.seconds / 3):.1f} | "
        f"{percentile(run['alone'].ms, 50):.1f} | {percentile(run['alone'].ms, 95):.1f} |",
        f"| {AGENTS} clients, {args.seconds:g} s | {run['calls']} | {run['rate']:.1f} | "
        f"{percentile(eight, 50):.1f} | {percentile(eight, 95):.1f} |",
        "",
        f"errors: {run['errors']}; acked writes: {run['acked']}, applied: {run['applied']} "
        f"(receipt states {run['states']}); derives dropped for backpressure (their ack says "
        f"nothing was written): {run['dropped']}; found by recall: {run['found']} of a sample "
        f"of {run['sample']} acked",
    ]
    return "\n".join(lines)


def idle_report(run: dict[str, Any]) -> str:
    grown = run["idle_kib"] - run["before_kib"]
    alone, crowded = percentile(run["alone"], 50), percentile(run["crowded"], 50)
    return "\n".join(
        [
            "| one HTTP serve | serve RSS MiB | lambo_recall p50 ms | p95 ms |",
            "|---|---:|---:|---:|",
            f"| no idle connection | {run['before_kib'] / 1024:.1f} | {alone:.1f} | "
            f"{percentile(run['alone'], 95):.1f} |",
            f"| {run['count']:,} idle connections ({run['alive']:,} still open after) | "
            f"{run['idle_kib'] / 1024:.1f} | {crowded:.1f} | "
            f"{percentile(run['crowded'], 95):.1f} |",
            f"| **grown / ratio** | **+{grown / 1024:.1f} MiB** "
            f"({grown / max(run['count'], 1):.1f} KiB a connection) | "
            f"**{crowded / alone:.2f}x** | |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=200)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--only-idle", action="store_true", help="phase 3 alone")
    args = parser.parse_args()
    rng = random.Random(7)
    facts = [fact(rng, n) for n in range(args.facts)]
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        workdir = Path(tmp)
        for name in ("stdio", "http", "shared", "idle"):
            (workdir / name).mkdir()
        if not args.only_idle:
            times = anyio.run(latency, workdir, facts, args.calls)
            run = anyio.run(shared, workdir, facts, args.seconds)
        crowd = anyio.run(idle, workdir, facts, args.idle)
    if not args.only_idle:
        print(report(times, run, args))
        print()
    print(idle_report(crowd))


if __name__ == "__main__":
    main()
