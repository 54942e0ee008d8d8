"""The portal (issue 29, ADR 0077/0078): recall through `/api/recall` vs `lambo_recall` over
MCP, and the graph page's time to first draw at 5,000 nodes.

    .venv/bin/python -m bench.bench_portal [--facts 200] [--calls 300] [--nodes 5000]
        [--loads 3] [--only-graph] [--graph-workspace DIR]

1. Recall: one `lcg serve --http` seeded with `--facts` facts serves both `/mcp` and `/api/`;
   the same queries go to `lambo_recall` (the SDK's streamable HTTP client) and to
   `GET /api/recall` (one keep-alive httpx2 client), interleaved call by call so the box's
   noise hits both; 20 warm-up rounds are not counted. p50, p95, and the API/MCP ratio of p50
   (aim <= 1.2x).
2. Graph: a second serve seeded with `--nodes` concepts (then each written again citing the
   one before it: a chain of N-1 edges), the graph page opened in headless Chromium (playwright on
   Debian's chromium) in two modes, interleaved load by load: all nodes in one first draw
   (`first=0`, the baseline) and the page's default (the first 500, then the rest in
   batches; ADR 0087). Timed from navigation start to cytoscape's first render
   (`window.lcgGraphDrawnMs` is the draw alone, from the data's arrival) and to all nodes
   drawn; `--loads` loads per mode, medians. The graph's serve embeds with the hashing
   embedder (seeding 10,000 writes with MiniLM takes most of an hour on a loaded box; the
   page does not depend on it); `--graph-workspace` keeps it for the next run. Progress goes
   to stderr; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from bench.bench_http import http_serve, over_http, seed
from bench.memory_transports import AsyncCall, fact, percentile

CHROMIUM = "/usr/bin/chromium"
WARM_UP = 20


def log(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


async def recall_latency(workdir: Path, facts: list[str], calls: int) -> dict[str, list[float]]:
    queries = [" ".join(text.split()[:3]) for text in facts]
    times: dict[str, list[float]] = {"mcp": [], "api": []}
    async with http_serve(workdir / "recall") as url, over_http(url) as mcp:
        log("seeding")
        await seed(mcp, facts)
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=120) as http:

            async def api(query: str) -> None:
                answer = await http.get(f"{base}/api/recall", params={"query": query})
                answer.raise_for_status()
                assert answer.json()["hits"], query

            async def over(query: str) -> None:
                found = await mcp("lambo_recall", {"agent_id": "bench", "query": query})
                assert found["hits"], query

            runs = {"mcp": over, "api": api}
            for n in range(calls + WARM_UP):
                query = queries[n % len(queries)]
                for label in ("mcp", "api") if n % 2 else ("api", "mcp"):
                    start = time.perf_counter()
                    await runs[label](query)
                    if n >= WARM_UP:
                        times[label].append((time.perf_counter() - start) * 1000)
    return times


async def derive_until_admitted(call: AsyncCall, concepts: list[dict[str, object]]) -> str:
    """A derive, sent again while the agent's write lane is full (a dropped ack wrote
    nothing, M-DER-094); "" when a cited text is not a concept (it merged into another)."""
    params = {"agent_id": "seeder", "concepts": concepts}
    while True:
        try:
            ack = await call("lambo_derive", params)
        except RuntimeError:
            return ""
        if ack["receipt_state"] != "dropped":
            return str(ack["receipt"])
        await anyio.sleep(0.2)


async def seed_graph(call: AsyncCall, facts: list[str]) -> int:
    """The concepts, settled; then each written again citing the one before it (a derive of
    an existing text lands on its concept and adds the edge). The edges refused: returned."""
    refused = 0
    for citing in (False, True):
        receipt = ""
        for n in range(0, len(facts), 20):
            concepts: list[dict[str, object]] = [
                {
                    "content": facts[m],
                    "concept_type": ("logic", "entity", "observation")[m % 3],
                    **({"depends_on": [facts[m - 1]]} if citing and m else {}),
                }
                for m in range(n, min(n + 20, len(facts)))
            ]
            got = await derive_until_admitted(call, concepts)
            if not got:  # one by one: only the concept citing a merged text is left out
                for one in concepts:
                    single = await derive_until_admitted(call, [one])
                    refused += not single
                    got = single or got
            receipt = got or receipt
            if n % 1000 == 0:
                log(f"  {'edges' if citing else 'nodes'}: {n} of {len(facts)}")
        while True:
            args = {"agent_id": "seeder", "receipt": receipt, "wait_ms": 30_000}
            if (await call("lambo_stats", args))["receipt"]["state"] != "pending":
                break
    return refused


MODES = {"all at once (first=0)": "?first=0", "in steps (default first draw)": ""}
Draws = dict[str, dict[str, list[float]]]


def draw_times(base: str, loads: int) -> tuple[Draws, int]:
    """Each mode's times over `loads` loads, the modes interleaved load by load: navigation
    start to first draw, the data's arrival to first draw, navigation start to all drawn."""
    from playwright.sync_api import sync_playwright

    times: Draws = {mode: {"first": [], "draw": [], "all": []} for mode in MODES}
    drawn = 0
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        for n in range(loads):
            for mode in list(MODES)[:: 1 if n % 2 else -1]:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.goto(f"{base}/portal/graph{MODES[mode]}")
                page.wait_for_selector("#graph[data-complete]", timeout=600_000)
                times[mode]["first"].append(float(page.evaluate("window.lcgGraphFirstDrawAt")))
                times[mode]["draw"].append(float(page.evaluate("window.lcgGraphDrawnMs")))
                times[mode]["all"].append(float(page.evaluate("window.lcgGraphAllDrawnAt")))
                drawn = int(page.get_attribute("#graph", "data-complete") or 0)
                log(f"  {mode}: first draw {times[mode]['first'][-1]:.0f} ms")
                page.close()
        browser.close()
    return times, drawn


async def graph_draw(workdir: Path, nodes: int, loads: int, kept: Path | None) -> tuple[Draws, int]:
    rng = random.Random(7)
    facts = [fact(rng, n) for n in range(nodes)]
    where = kept or workdir / "graph"
    seeded = (where / ".lcg").exists()
    # the hashing embedder (ADR 0061): what is timed is the page, not the seeding's model
    graph_serve = http_serve(where, LCG_EMBEDDER="hashing")
    async with graph_serve as url, over_http(url) as mcp:
        refused = 0
        if not seeded:
            log(f"seeding {nodes} concepts")
            refused = await seed_graph(mcp, facts)
        base = url.removesuffix("/mcp")
        async with httpx2.AsyncClient(timeout=120) as http:
            stats = (await http.get(f"{base}/api/stats")).json()["stats"]
        log(f"concepts {stats['concept_count']}, edges {stats['edge_count']}, refused {refused}")
        return await anyio.to_thread.run_sync(draw_times, base, loads)


def report(
    times: dict[str, list[float]],
    graph: tuple[Draws, int],
    args: argparse.Namespace,
) -> str:
    p50 = {label: percentile(ms, 50) for label, ms in times.items()}
    p95 = {label: percentile(ms, 95) for label, ms in times.items()}
    draws, drawn = graph
    recall = (
        []
        if args.only_graph
        else [
            f"recall: {args.facts} facts, {args.calls} calls each, interleaved",
            "",
            "| path | p50 ms | p95 ms |",
            "|---|---|---|",
            f"| `lambo_recall` over MCP (HTTP) | {p50['mcp']:.2f} | {p95['mcp']:.2f} |",
            f"| `GET /api/recall` | {p50['api']:.2f} | {p95['api']:.2f} |",
            f"| ratio API / MCP (p50) | {p50['api'] / p50['mcp']:.2f}x | |",
            "",
        ]
    )
    median = {m: {k: statistics.median(v) for k, v in t.items()} for m, t in draws.items()}
    baseline, steps = (median[m] for m in MODES)
    rows = [
        f"| {mode} | {t['first']:.0f} | {t['draw']:.0f} | {t['all']:.0f} |"
        for mode, t in median.items()
    ]
    return "\n".join(
        [
            *recall,
            f"graph page: {drawn} nodes drawn, {args.loads} loads per mode, medians",
            "",
            "| graph page | navigation start to first draw ms | data arrived to first draw ms"
            " | navigation start to all drawn ms |",
            "|---|---:|---:|---:|",
            *rows,
            f"| ratio steps / all at once | {steps['first'] / baseline['first']:.2f}x"
            f" | {steps['draw'] / baseline['draw']:.2f}x | {steps['all'] / baseline['all']:.2f}x |",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--facts", type=int, default=200)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--only-graph", action="store_true", help="Skip the recall part.")
    parser.add_argument(
        "--graph-workspace",
        type=Path,
        default=None,
        help="The graph's workspace: seeded when new, reused as it is when it holds one.",
    )
    args = parser.parse_args()
    rng = random.Random(1)
    facts = [fact(rng, n) for n in range(args.facts)]
    with tempfile.TemporaryDirectory() as where:
        workdir = Path(where)
        times: dict[str, list[float]] = {"mcp": [0.0], "api": [0.0]}
        if not args.only_graph:
            times = anyio.run(recall_latency, workdir, facts, args.calls)
            p50 = {k: round(percentile(v, 50), 2) for k, v in times.items()}
            log(f"recall p50 ms: {p50}")
        graph = anyio.run(graph_draw, workdir, args.nodes, args.loads, args.graph_workspace)
    print(report(times, graph, args))


if __name__ == "__main__":
    main()
