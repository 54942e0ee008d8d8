"""Benchmark the find tools' relevance floor on the labelled fixture queries (ADR 0024).

Run from the repository root:

    .venv/bin/python -m bench.bench_find [--out bench/results/find-quality.md]

Writes every label set's corpora (fixtures/lcg/fixtures/data/find-labels.json) into one
workspace embedding with the real MiniLM model, asks each query of a set in its groups through
`knowledge_find_entities` and `knowledge_find_relationships` (num_results 10), and scores the
results against the labels: precision and recall at 10, whether the first hit or one of the
first three is relevant, and how many queries that nothing answers come back empty. Policies:
the tool as before (relevance_floor false), the tool's defaults, and variants of the floors,
each with graph expansion at the default depth 1 and at 0. See bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.search_common import RESULTS, log, require
from lcg.fixtures import corpus
from lcg.fixtures.labels import LabelledQuery, LabelSet, edge_label, find_labels
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.tools.search import search_context
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.queries import relevance, search
from lcg.queries.relevance import Floors

NUM_RESULTS = 10
MINILM = relevance.MINILM
# (row label, floors; None: no floor). The first two are what an agent gets without and with
# the floor; the others show what each part of the rule does and how sensitive it is.
POLICIES: tuple[tuple[str, Floors | None], ...] = (
    ("before: no floor (relevance_floor false)", None),
    ("**default: MiniLM floors + BM25 coverage**", MINILM),
    ("one cosine floor 0.2, every BM25 hit kept (reverted attempt)", Floors(0.2, 0.2, 0.2, 0.0)),
    ("cosine floors only (every BM25 hit kept)", replace(MINILM, coverage=0.0)),
    ("cosine floors + coverage + margin 0.15 of the leg's best", replace(MINILM, margin=0.15)),
    ("name floor 0.40", replace(MINILM, name=0.40)),
    ("summary and fact floors 0.25", replace(MINILM, summary=0.25, fact=0.25)),
    ("summary and fact floors 0.35", replace(MINILM, summary=0.35, fact=0.35)),
    ("coverage 0.30", replace(MINILM, coverage=0.30)),
    ("coverage 0.50", replace(MINILM, coverage=0.50)),
)
DEPTHS = (1, 0)  # graph expansion: the default, and none
Finder = Callable[[str, LabelSet], tuple[list[str], list[str]]]  # -> entity, edge labels


@dataclass(frozen=True, slots=True)
class Score:
    """One policy on one set and kind: means over the judged queries."""

    precision: float  # relevant among those returned (0 when none returned), answerable queries
    recall: float
    first: float  # the first hit is relevant
    top3: float  # a relevant hit is among the first three
    empty: float  # share of the queries nothing answers that return nothing
    answerable: int
    unanswerable: int


def score(results: Sequence[tuple[Sequence[str], tuple[str, ...] | None]]) -> Score:
    """(returned labels, relevant labels or None when not judged) per query."""
    judged = [(got, list(relevant)) for got, relevant in results if relevant is not None]
    answered = [(got, relevant) for got, relevant in judged if relevant]
    nothing = [got for got, relevant in judged if not relevant]
    n = max(len(answered), 1)
    hits = [sum(g in relevant for g in got) for got, relevant in answered]
    return Score(
        precision=sum(h / len(got) for h, (got, _) in zip(hits, answered, strict=True) if got) / n,
        recall=sum(h / len(rel) for h, (_, rel) in zip(hits, answered, strict=True)) / n,
        first=sum(bool(got) and got[0] in rel for got, rel in answered) / n,
        top3=sum(any(g in rel for g in got[:3]) for got, rel in answered) / n,
        empty=sum(not got for got in nothing) / max(len(nothing), 1),
        answerable=len(answered),
        unanswerable=len(nothing),
    )


class Bench:
    """One workspace holding every set's corpora; finders that label what they return."""

    def __init__(self, ws: Workspace, sets: Sequence[LabelSet]) -> None:
        self.app = App(ws)
        self.names: dict[str, str] = {}
        for label_set in sets:
            for name in label_set.corpora:
                written = corpus.write_corpus(self.call, corpus.knowledge(name))
                self.names.update({uuid: entity for entity, uuid in written.entities.items()})
        ws.settle()

    def call(self, name: str, /, **params: Any) -> dict[str, Any]:
        return operations.dispatch(self.app, name, params)

    def entity(self, row: Mapping[str, object]) -> str:
        return self.names[str(row["uuid"])]

    def edge(self, row: Mapping[str, object]) -> str:
        source = self.names[str(row["source_node_uuid"])]
        return edge_label(source, str(row["name"]), self.names[str(row["target_node_uuid"])])

    def tool(self, relevance_floor: bool) -> Finder:
        """The tools as a client calls them (the workspace's expansion depth, 1)."""

        def find(query: str, label_set: LabelSet) -> tuple[list[str], list[str]]:
            params: dict[str, Any] = {"query": query, "group_ids": list(label_set.group_ids)}
            if not relevance_floor:
                params["relevance_floor"] = False
            nodes = self.call("knowledge_find_entities", **params)["nodes"]
            edges = self.call("knowledge_find_relationships", **params)["edges"]
            return [self.entity(n) for n in nodes], [self.edge(e) for e in edges]

        return find

    def direct(self, floors: Floors | None, depth: int) -> Finder:
        """The query functions with other floors or another expansion depth."""
        ctx = replace(search_context(self.app), expand_depth=depth)

        def find(query: str, label_set: LabelSet) -> tuple[list[str], list[str]]:
            groups = list(label_set.group_ids)
            nodes = search.find_entities(ctx, query, groups, NUM_RESULTS, floors)["nodes"]
            edges = search.find_relationships(ctx, query, groups, NUM_RESULTS, floors)["edges"]
            return [self.entity(n) for n in nodes], [self.edge(e) for e in edges]

        return find


Run = dict[str, list[tuple[LabelledQuery, list[str], list[str]]]]  # set name -> results


def run(finder: Finder, sets: Sequence[LabelSet]) -> Run:
    return {s.name: [(q, *finder(q.query, s)) for q in s.queries] for s in sets}


def scores(results: Run, set_name: str) -> tuple[Score, Score]:
    rows = results[set_name]
    entities = score([(got, q.entities) for q, got, _ in rows])
    edges = score([(got, q.edges) for q, _, got in rows])
    return entities, edges


def cells(s: Score) -> list[str]:
    return [
        f"{s.precision:.2f}",
        f"{s.recall:.2f}",
        f"{s.first:.2f}",
        f"{s.top3:.2f}",
        f"{s.empty:.2f}",
    ]


def table(runs: dict[str, Run], sets: Sequence[LabelSet]) -> list[str]:
    head = ["P@10", "R@10", "1st", "top 3", "empty"]
    lines = [
        "| policy | set | "
        + " | ".join(f"entities {h}" for h in head)
        + " | "
        + " | ".join(f"edges {h}" for h in head)
        + " |",
        "|---|---|" + "---:|" * (2 * len(head)),
    ]
    for label, results in runs.items():
        for s in sets:
            entities, edges = scores(results, s.name)
            lines.append(
                f"| {label} | {s.name} | " + " | ".join(cells(entities) + cells(edges)) + " |"
            )
    return lines


def misses(results: Run) -> list[str]:
    """What the default still gets wrong: noise for queries nothing answers, lost answers."""
    out: list[str] = []
    for set_name, rows in results.items():
        for q, entities, edges in rows:
            for kind, got, relevant in (
                ("entities", entities, q.entities),
                ("edges", edges, q.edges),
            ):
                if relevant is None:
                    continue
                if not relevant and got:
                    out.append(f"- {set_name}, {kind}, {q.kind} {q.query!r}: returns {got[:4]}")
                lost = [r for r in relevant if r not in got]
                if lost:
                    out.append(f"- {set_name}, {kind}, {q.kind} {q.query!r}: misses {lost}")
    return out


def report(sets: Sequence[LabelSet], by_depth: dict[int, dict[str, Run]]) -> str:
    counts = ", ".join(
        f"{s.name}: {len(s.queries)} queries, {sum(q.answerable for q in s.queries)} answerable"
        f" (groups {', '.join(s.group_ids)})"
        for s in sets
    )
    lines = [
        "# Find tools: relevance floor on the labelled fixture queries",
        "",
        "`.venv/bin/python -m bench.bench_find`; MiniLM (all-MiniLM-L6-v2 int8), fusion max,"
        f" num_results {NUM_RESULTS}. {counts}. P@10: relevant among the results (0 for an"
        " answerable query that returns nothing); R@10: relevant results over the relevant"
        " labels; 1st / top 3: the first hit / one of the first three is relevant (answerable"
        " queries); empty: share of the queries nothing answers that return nothing.",
        "",
    ]
    for depth in DEPTHS:
        title = f"{depth} (the default)" if depth == 1 else f"{depth} (no neighbours added)"
        lines += [f"## Graph expansion depth {title}", "", *table(by_depth[depth], sets), ""]
    default = by_depth[1][POLICIES[1][0]]
    lines += ["## What the default still gets wrong (depth 1)", "", *misses(default), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=RESULTS / "find-quality.md")
    args = parser.parse_args(argv)
    sets = find_labels()
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(workspace=Path(directory))
        with Workspace(settings, embedder=MiniLmEmbedder(), command="bench_find") as ws:
            bench = Bench(ws, sets)
            log("corpora written; asking the queries")
            by_depth: dict[int, dict[str, Run]] = {depth: {} for depth in DEPTHS}
            for label, floors in POLICIES:
                for depth in DEPTHS:
                    by_depth[depth][label] = run(bench.direct(floors, depth), sets)
            for label, floor_on in ((POLICIES[0][0], False), (POLICIES[1][0], True)):
                as_called = run(bench.tool(floor_on), sets)
                require(
                    as_called == by_depth[1][label],
                    f"{label}: the tool's answers differ from the query functions' at depth 1",
                )
    text = report(sets, by_depth)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
