"""knowledge_canonicalize_relations over 10k edges: dry run, apply, re-run (ADR 0042).

    .venv/bin/python -m bench.bench_typing [--edges 10000] [--out bench/results/typing.md]

One workspace (MiniLM, the real embedder) holding one group of `--edges` edges between 1,000
entities, built untimed by appending the events in batches of 1,000: 40% of the predicates
match the ontology lexically (a name, an alias or a keyword), 10% are arrow-named noise, 50%
are residual (`RELATED`) with a distinct fact each, which the fallback embeds. The vector
projection embeds every fact at write time, so the fallback finds them in the embedding cache;
`model texts` counts what the model really embedded during the first of a row's calls. Each
timed call is one `operations.dispatch` of the tool, as MCP and the socket run it; the apply
runs once, every other row `--repeats` times (the best is shown).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from lcg.commands.writer import WriteContext
from lcg.domain.events import DomainEvent, EntityCreated, RelationshipCreated
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.minilm import MiniLmEmbedder

GROUP = GroupId("bench")
ENTITIES = 1_000
BATCH = 1_000
NOW = datetime(2026, 1, 1, tzinfo=UTC)
ONTOLOGY = """\
relation_types:
  - {name: WORKS_FOR, description: A person is employed by an organization., aliases: [employed by]}
  - {name: LOCATED_IN, description: A place is situated inside a larger place., keywords: [inside]}
  - {name: HOLDS, description: A person holds a position or title., aliases: [has role]}
  - {name: KNOWS, description: Two people know each other., aliases: [acquainted with]}
  - {name: FOUNDED, description: A person founded an organization., keywords: [founder]}
"""
LEXICAL = ("employed_by", "WORKS_FOR", "LIVES_INSIDE", "has role", "acquainted with", "FOUNDER")
TOPICS = ("ships", "bread", "violins", "rockets", "tea", "maps", "clocks", "glass", "wool")


def _edge(index: int, source: EntityUuid, target: EntityUuid) -> RelationshipCreated:
    kind = index % 10
    if kind < 4:
        predicate, fact = LEXICAL[index % len(LEXICAL)], f"Edge {index} is typed by its name."
    elif kind == 4:
        predicate, fact = "PERSON -> ORGANIZATION", f"Noise edge {index}."
    else:
        topic = TOPICS[index % len(TOPICS)]
        predicate, fact = "RELATED", f"Entity {index} trades {topic} with partner {index % 97}."
    return RelationshipCreated(
        NOW, EdgeUuid(f"edge-{index}"), source, target, predicate, fact, None, "{}", None
    )


def _append(ctx: WriteContext, events: list[DomainEvent]) -> None:
    ctx.append(GROUP, events)


def build(ws: Workspace, edges: int) -> None:
    entities = [EntityUuid(f"entity-{i}") for i in range(ENTITIES)]
    events: list[DomainEvent] = [
        EntityCreated(NOW, uuid, f"Entity {i}", ("Entity",), "", "{}")
        for i, uuid in enumerate(entities)
    ]
    events += [
        _edge(i, entities[i % ENTITIES], entities[(i * 7 + 1) % ENTITIES]) for i in range(edges)
    ]
    for start in range(0, len(events), BATCH):
        ws.writer.execute(partial(_append, events=events[start : start + BATCH]))
    ws.settle()
    (ws.settings.state_dir / "ontology.yaml").write_text(ONTOLOGY, encoding="utf-8")


def timed(ws: Workspace, params: dict[str, object]) -> tuple[float, int, int, dict[str, object]]:
    texts, head = ws.embedder.texts, ws.log.head(GROUP)
    started = time.perf_counter()
    result = operations.dispatch(App(ws), "knowledge_canonicalize_relations", params)
    elapsed = time.perf_counter() - started
    return elapsed, ws.embedder.texts - texts, ws.log.head(GROUP) - head, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", type=int, default=10_000)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = MiniLmEmbedder()
    model.embed(["warm up"])
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="lcg-bench-typing-") as directory,
        Workspace(Settings(workspace=Path(directory)), embedder=model) as ws,
    ):
        print(f"building {args.edges} edges ...", file=sys.stderr)
        build(ws, args.edges)
        calls: tuple[tuple[str, dict[str, object]], ...] = (
            ("dry run", {"group_id": GROUP, "dry_run": True}),
            (
                "dry run, threshold 0.2",
                {"group_id": GROUP, "dry_run": True, "embedding_threshold": 0.2},
            ),
            ("apply", {"group_id": GROUP}),
            ("re-run (all at target)", {"group_id": GROUP}),
        )
        for label, params in calls:
            # the apply runs once (it changes the graph); the others repeat, the best is kept
            repeats = 1 if label == "apply" else args.repeats
            runs = [timed(ws, params) for _ in range(repeats)]
            elapsed, texts, events, result = min(runs, key=lambda run: run[0])
            rows.append((label, elapsed, runs[0][1], events, result))
            print(f"{label}: {[round(run[0], 2) for run in runs]} s", file=sys.stderr)
    lines = [
        "| call | edges | seconds | edges/s | model texts | events appended | mapped / noise /"
        " residual (promoted) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for label, elapsed, texts, events, result in rows:
        total = int(str(result["total_edges"]))
        counts = (
            f"{result['mapped_count']} / {result['noise_count']} / {result['residual_count']}"
            f" ({result['embedding_fallback_promoted']})"
        )
        lines.append(
            f"| {label} | {total:,} | {elapsed:.2f} |"
            f" {total / elapsed:,.0f} | {texts} | {events} | {counts} |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
