"""Benchmark the Cypher projection (ADR 0039): its cost per write, and a 2-hop query's latency.

Run from the repository root:

    .venv/bin/python -m bench.bench_cypher [--entities 1000] [--repeats 3] [--queries 200]
    .venv/bin/python -m bench.bench_cypher --scale 100000 [--queries 200]

Writes: `--entities` `knowledge_assert_entity` dispatches into a fresh workspace, once with the
Cypher projection following the commits and once with its listener taken off the writer
(`ws.writer.listeners.remove(ws.cypher_follower)`), interleaved repeat by repeat in one process; the
hashing embedder, so the model is out of both. Reported as best times and their ratio.
Query: a ring of `--entities` entities, each with edges to the next two (2 x entities edges,
written through `knowledge_assert_relationship`, untimed), then `--queries` 2-hop
`knowledge_query_cypher` calls from one entity each: median and p95 of the whole dispatch.

Scale (`--scale N`): the same ring at N entities (N assert_entity and 2N assert_relationship
commands through `Writer.execute_many`, 1,000 per WAL commit, untimed: 3N events), then timed:
the graph projection's full rebuild of the group from the WAL with the Cypher follower off the
writer (the baseline: what every rebuild costs), the Cypher projection's copy of the rebuilt
group (what a rebuild adds once Cypher is in use), and `--queries` 2-hop queries at that size.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from bench.bench_wal import open_workspace, require
from lcg.commands import handlers
from lcg.commands.writer import WriteContext
from lcg.domain.commands import AssertEntity, AssertRelationship
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder

GROUP = GroupId("liminis")
BATCH = 1000

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


def _execute(ws: Workspace, work: Sequence[Callable[[WriteContext], object]]) -> None:
    for start in range(0, len(work), BATCH):
        outcomes = ws.writer.execute_many(work[start : start + BATCH])
        failed = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
        if failed:
            raise failed[0]


def build_ring(ws: Workspace, entities: int) -> None:
    """N entities, each with RELATES edges to the next two (3N events), in writer batches."""
    now = ws.clock()
    _execute(
        ws,
        [
            partial(
                handlers.assert_entity,
                command=AssertEntity(
                    group_id=GROUP,
                    name=f"e{i:06d}",
                    entity_uuid=None,
                    labels=(),
                    summary="",
                    attributes="{}",
                    new_uuid=EntityUuid(str(uuid.uuid4())),
                    now=now,
                ),
            )
            for i in range(entities)
        ],
    )
    _execute(
        ws,
        [
            partial(
                handlers.assert_relationship,
                command=AssertRelationship(
                    group_id=GROUP,
                    source_name=f"e{i:06d}",
                    target_name=f"e{(i + step) % entities:06d}",
                    predicate="next",
                    fact=None,
                    relation_type=None,
                    attributes="{}",
                    valid_at=None,
                    new_uuid=EdgeUuid(str(uuid.uuid4())),
                    now=now,
                ),
            )
            for i in range(entities)
            for step in (1, 2)
        ],
    )


def time_scale(entities: int, queries: int) -> dict[str, float]:
    """Rebuild costs and 2-hop latency over a ring of `entities` (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="lcg-bench-cypher-") as directory:
        ws = open_workspace(Path(directory), HashingEmbedder())
        try:
            app = App(ws)
            started = time.perf_counter()
            build_ring(ws, entities)
            ws.settle()
            cypher = ws.cypher_follower  # opens the projection and copies the group
            cypher.settle()
            built = time.perf_counter() - started
            events = ws.log.head(GROUP)
            require(events == 3 * entities, f"the ring has {events} events, not {3 * entities}")
            ws.writer.listeners.remove(cypher)
            started = time.perf_counter()
            replayed = ws.runner.rebuild(GROUP, from_seq=0)
            graph_rebuild = time.perf_counter() - started
            require(replayed == events, f"the rebuild replayed {replayed} of {events} events")
            started = time.perf_counter()
            cypher.rebuilt(ws.runner.conn, [GROUP])
            cypher_copy = time.perf_counter() - started
            ws.writer.listeners.append(cypher)
            count = operations.dispatch(
                app,
                "knowledge_query_cypher",
                {"query": "MATCH ()-[r:RELATES]->() RETURN count(r) AS n"},
            )["rows"][0]["n"]
            require(count == 2 * entities, f"cypher holds {count} edges, not {2 * entities}")
            latencies: list[float] = []
            for q in range(queries):
                query = TWO_HOPS.format(name=f"e{(q * 7919) % entities:06d}")
                started = time.perf_counter()
                rows = operations.dispatch(app, "knowledge_query_cypher", {"query": query})["rows"]
                latencies.append(time.perf_counter() - started)
                require(len(rows) == 3, f"a 2-hop query found {len(rows)} entities, not 3")
            latencies.sort()
            return {
                "events": float(events),
                "build": built,
                "graph_rebuild": graph_rebuild,
                "cypher_copy": cypher_copy,
                "median": statistics.median(latencies),
                "p95": latencies[int(0.95 * (len(latencies) - 1))],
            }
        finally:
            ws.close()


def report_scale(entities: int, queries: int) -> None:
    r = time_scale(entities, queries)
    events = int(r["events"])
    print(
        f"| measurement ({entities:,} entities, {2 * entities:,} edges, {events:,} events)"
        " | value |"
    )
    print("|---|---|")
    print(f"| build through the writer, 1,000 per commit (untimed setup) | {r['build']:.1f} s |")
    print(f"| graph projection rebuild from the WAL (baseline) | {r['graph_rebuild']:.1f} s |")
    print(
        f"| Cypher projection copy of the rebuilt group | {r['cypher_copy']:.1f} s"
        f" ({r['cypher_copy'] / r['graph_rebuild']:.2f}x the rebuild) |"
    )
    print(f"| 2-hop query, median ({queries} calls) | {r['median'] * 1e3:.2f} ms |")
    print(f"| 2-hop query, p95 | {r['p95'] * 1e3:.2f} ms |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entities", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--scale", type=int, default=0, help="the ring at this size instead")
    args = parser.parse_args(argv)
    if args.scale:
        report_scale(args.scale, args.queries)
        return 0
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
