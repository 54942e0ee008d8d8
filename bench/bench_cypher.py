"""Benchmark the Cypher projection (ADR 0039): its cost per write, and a 2-hop query's latency.

Run from the repository root:

    .venv/bin/python -m bench.bench_cypher [--entities 1000] [--repeats 3] [--queries 200]

Writes: `--entities` `knowledge_assert_entity` dispatches into a fresh workspace, once with the
Cypher projection following the commits and once with its listener taken off the writer
(`ws.writer.listeners.remove(ws.cypher_follower)`), interleaved repeat by repeat in one process; the
hashing embedder, so the model is out of both. Reported as best times and their ratio.
Query: a ring of `--entities` entities, each with edges to the next two (2 x entities edges,
written through `knowledge_assert_relationship`, untimed), then `--queries` 2-hop
`knowledge_query_cypher` calls from one entity each: median and p95 of the whole dispatch.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.bench_wal import open_workspace, require
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.projections.embedding.hashing import HashingEmbedder

TWO_HOPS = (
    "MATCH (a:Entity {{name: '{name}'}})-[:RELATES]->(:Entity)-[:RELATES]->(c:Entity)"
    " RETURN DISTINCT c.name AS name"
)


def time_writes(entities: int, *, follow: bool) -> tuple[float, float]:
    """(seconds until every write was acknowledged, until the Cypher graph held them too)."""
    with tempfile.TemporaryDirectory(prefix="lcg-bench-cypher-") as directory:
        ws = open_workspace(Path(directory), HashingEmbedder())
        try:
            follower = ws.cypher_follower  # opens the projection (it opens at first use)
            if not follow:
                ws.writer.listeners.remove(follower)
            app = App(ws)
            started = time.perf_counter()
            for i in range(entities):
                operations.dispatch(app, "knowledge_assert_entity", {"name": f"e{i:05d}"})
            acknowledged = time.perf_counter() - started
            ws.cypher_follower.settle()
            followed = time.perf_counter() - started
            ws.settle()
            count = operations.dispatch(
                app, "knowledge_query_cypher", {"query": "MATCH (n:Entity) RETURN count(*) AS n"}
            )["rows"][0]["n"]
            require(count == (entities if follow else 0), f"cypher holds {count} entities")
            return acknowledged, followed
        finally:
            ws.close()


def time_queries(entities: int, queries: int) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="lcg-bench-cypher-") as directory:
        ws = open_workspace(Path(directory), HashingEmbedder())
        try:
            app = App(ws)
            for i in range(entities):
                operations.dispatch(app, "knowledge_assert_entity", {"name": f"e{i:05d}"})
            for i in range(entities):
                for step in (1, 2):
                    operations.dispatch(
                        app,
                        "knowledge_assert_relationship",
                        {
                            "source_name": f"e{i:05d}",
                            "target_name": f"e{(i + step) % entities:05d}",
                            "predicate": "next",
                        },
                    )
            latencies: list[float] = []
            for q in range(queries):
                query = TWO_HOPS.format(name=f"e{(q * 7) % entities:05d}")
                started = time.perf_counter()
                rows = operations.dispatch(app, "knowledge_query_cypher", {"query": query})["rows"]
                latencies.append(time.perf_counter() - started)
                require(len(rows) == 3, f"a 2-hop query found {len(rows)} entities, not 3")
            return latencies
        finally:
            ws.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    with_cypher: list[tuple[float, float]] = []
    without: list[tuple[float, float]] = []
    for _ in range(args.repeats):
        without.append(time_writes(args.entities, follow=False))
        with_cypher.append(time_writes(args.entities, follow=True))
    latencies = sorted(time_queries(args.entities, args.queries))
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    n = args.entities
    bare, ack, followed = (
        min(t for t, _ in without),
        min(t for t, _ in with_cypher),
        min(f for _, f in with_cypher),
    )
    print("| measurement | value |")
    print("|---|---|")
    print(f"| {n} assert_entity, without the Cypher projection | {bare:.2f} s |")
    print(f"| {n} assert_entity with it, until acknowledged | {ack:.2f} s ({ack / bare:.2f}x) |")
    print(f"| ... until the Cypher graph holds them | {followed:.2f} s ({followed / bare:.2f}x) |")
    median = statistics.median(latencies)
    print(f"| 2-hop query, median ({args.queries} calls) | {median * 1e3:.2f} ms |")
    print(f"| 2-hop query, p95 | {p95 * 1e3:.2f} ms |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
