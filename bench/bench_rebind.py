"""Benchmark `knowledge_rebind_pointers` over 10k cross-group pointers (ADR 0041).

Run from the repository root:

    .venv/bin/python -m bench.bench_rebind [--pointers 10000] [--repeats 3]

Each repeat gets a fresh workspace (hashing embedder): one entity in group `hub`, then
`--pointers` edges of `hub` added through `knowledge_add_cross_group_edge`'s handler in
batches of 500, each target a pointer to a distinct name of group `people`, which holds none
yet (every pointer unbound); then one entity per name in `people` (batches of 500; untimed).
Timed, each through `operations.dispatch(app, "knowledge_rebind_pointers", ...)`: (1) the
first rebind, which looks every name up and binds all of them (one PointersRebound event
carrying every binding); (2) a second call with no change to `people`: every pointer is
skipped by the staleness gate (nothing looked up, nothing appended); (3) after one more
entity in `people`, a call that re-resolves every pointer again (same entities, new
bound_at_seq). Each row checks the result's counts. Best of `--repeats`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench.bench_wal import open_workspace, require
from lcg.commands import cross_group, handlers
from lcg.domain.commands import AddCrossGroupEdge, AssertEntity, NameEndpoint, UuidEndpoint
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder

BATCH = 500
NOW = datetime(2026, 12, 2, tzinfo=UTC)
PEOPLE, HUB = GroupId("people"), GroupId("hub")


def entity(group: GroupId, name: str, uuid: str) -> AssertEntity:
    return AssertEntity(group, name, None, ("Entity",), "", "{}", EntityUuid(uuid), NOW)


def fill(ws: Workspace, pointers: int) -> None:
    ws.writer.execute(lambda ctx: handlers.assert_entity(ctx, entity(HUB, "Paper", "paper")))
    edges = [
        AddCrossGroupEdge(
            HUB,
            "CITES",
            UuidEndpoint(EntityUuid("paper")),
            NameEndpoint(PEOPLE, f"Person {i:05d}"),
            f"the paper cites person {i}",
            None,
            None,
            EdgeUuid(f"edge-{i}"),
            NOW,
        )
        for i in range(pointers)
    ]
    for start in range(0, pointers, BATCH):
        chunk = edges[start : start + BATCH]
        ws.writer.execute_many(
            [partial(cross_group.add_cross_group_edge, command=c) for c in chunk]
        )
    people = [entity(PEOPLE, f"person {i:05d}", f"p-{i}") for i in range(pointers)]
    for start in range(0, pointers, BATCH):
        names = people[start : start + BATCH]
        ws.writer.execute_many([partial(handlers.assert_entity, command=c) for c in names])


def timed(app: App) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    result = operations.dispatch(app, "knowledge_rebind_pointers", {"source_group_id": "people"})
    return time.perf_counter() - start, result


def measure(pointers: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = open_workspace(Path(tmp), HashingEmbedder())
        try:
            fill(ws, pointers)
            app = App(ws)
            status = operations.dispatch(app, "knowledge_status", {})
            require(status["cross_group_pointers"]["unbound"] == pointers, "pointers not unbound")
            first, result = timed(app)
            require((result["checked"], result["bound"]) == (pointers, pointers), "not bound")
            second, result = timed(app)
            require(result["staleness_skipped"] == pointers, "second call not gated")
            require(result["checked"] == 0, "second call re-resolved")
            ws.writer.execute(
                lambda ctx: handlers.assert_entity(ctx, entity(PEOPLE, "Someone", "someone"))
            )
            third, result = timed(app)
            require(result["checked"] == pointers, "a source-group change did not open the gate")
            visible = operations.dispatch(
                app,
                "knowledge_get_entity_neighbors",
                {"entity_uuid": "paper", "num_results": 10_000},
            )
            require(len(visible["edges"]) == min(pointers, 10_000), "bound edges not visible")
        finally:
            ws.close()
    return first, second, third


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pointers", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    runs = [measure(args.pointers) for _ in range(args.repeats)]
    first, second, third = (min(run[i] for run in runs) for i in range(3))
    print(
        "| pointers | first rebind (binds all) | second call (gated no-op)"
        " | after a source write (re-resolves all) |"
    )
    print("|---:|---:|---:|---:|")
    print(
        f"| {args.pointers:,} | {first * 1000:.0f} ms | {second * 1000:.1f} ms"
        f" | {third * 1000:.0f} ms |"
    )


if __name__ == "__main__":
    main()
