"""Passage search's stages (ADR 0068) and its relevance floor, each on vs off, on REALTALK.

    .venv/bin/python -m bench.search_stages [--out bench/results/search-stages.md]

The REALTALK turns are ingested as `message` episodes (as `bench_search --quality` does,
into `.bench-cache/stages`, its embedding cache seeded from `.bench-cache/realtalk`), then
every question is asked of `lcg.queries.search.search_passages` with the search context the
tools build (`reads.search_context`), its `stages` replaced per system: the very function
`knowledge_search_passages` runs. R@5/R@10/R@20/MRR per category, and each system's R@10
against "off" with a paired bootstrap 95% interval per category.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

from bench.realtalk import CATEGORIES, DATA, Conversation, Question, load_realtalk
from bench.search_common import CACHE, RESULTS, Item, ingest, log, reset_workspace
from bench.search_quality import (
    DEPTH,
    Ranking,
    System,
    bootstrap_delta,
    distinct,
    quality_tables,
    score_system,
)
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.queries import reads, search
from lcg.queries.stages import OFF, Stages

# label -> (stages, min_score, num_results)
Systems = dict[str, tuple[Stages, float, int]]
SYSTEMS: Systems = {
    "off": (OFF, 0.0, DEPTH),
    "session 0.1": (Stages(session_weight=0.1), 0.0, DEPTH),
    "session 0.2": (Stages(session_weight=0.2), 0.0, DEPTH),
    "session 0.35": (Stages(session_weight=0.35), 0.0, DEPTH),
    "diversify 3": (Stages(per_session=3), 0.0, DEPTH),
    "diversify 5": (Stages(per_session=5), 0.0, DEPTH),
    "time": (Stages(time_filter=True), 0.0, DEPTH),
    "entity hop 0.5": (Stages(entity_hop=0.5), 0.0, DEPTH),
    "entity hop 0.9": (Stages(entity_hop=0.9), 0.0, DEPTH),
    "vector x0.8 of best": (Stages(vector_weight=0.8), 0.0, DEPTH),
    "vector x0.9 of best": (Stages(vector_weight=0.9), 0.0, DEPTH),
    "vector x1.0 of best": (Stages(vector_weight=1.0), 0.0, DEPTH),
    "speaker 0.3": (Stages(speaker_weight=0.3), 0.0, DEPTH),
    "floor 0.3 (the tool's default, ADR 0098)": (OFF, 0.3, DEPTH),
    "floor 0.5": (OFF, 0.5, DEPTH),
    "floor 0.7": (OFF, 0.7, DEPTH),
}


def build(directory: Path, cache: Path, conversations: Sequence[Conversation]) -> None:
    seed = cache / "realtalk" / ".lcg" / "embeddings.sqlite"
    target = directory / ".lcg" / "embeddings.sqlite"
    if seed.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed, target)
    reset_workspace(directory)
    items = [
        Item(t.group, t.dia_id, t.body, t.time, "message") for c in conversations for t in c.turns
    ]
    with Workspace(Settings(workspace=directory)) as ws:
        ingest(ws, items, "REALTALK ingest")


def rankings(
    ws: Workspace,
    conversations: Sequence[Conversation],
    systems: dict[str, tuple[Stages, float, int]],
) -> dict[str, list[Ranking]]:
    app = App(ws)
    base = reads.search_context(app.reads)
    found: dict[str, list[Ranking]] = {label: [] for label in systems}
    for conversation in conversations:
        for question in conversation.questions:
            for label, (stages, floor, depth) in systems.items():
                ctx = replace(base, stages=stages)
                result = search.search_passages(
                    ctx, question.text, [conversation.group], depth, floor
                )
                found[label].append(distinct([p["name"] for p in result["passages"]]))
    return found


Pairs = Sequence[tuple[str, str]]  # (system, the system it is compared with)


def against_off(systems: Sequence[System]) -> list[tuple[str, str]]:
    """Every system but the first against the first ("off")."""
    return [(system.label, systems[0].label) for system in systems[1:]]


def category_masks(questions: Sequence[Question]) -> list[tuple[str, npt.NDArray[np.bool_]]]:
    """("all", every question), then one mask per REALTALK category."""
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    return masks + [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]


def stage_table(
    systems: Sequence[System], questions: Sequence[Question], pairs: Pairs | None = None
) -> str:
    """Each system's R@10 minus its baseline's (off's unless `pairs` say), with its paired
    bootstrap 95% interval, per category."""
    masks = category_masks(questions)
    by_label = {system.label: system for system in systems}
    lines = [
        "R@10 (and R@20) minus the baseline (off), paired bootstrap 95% interval within each"
        " category:",
        "",
        "| system | baseline | " + " | ".join(label for label, _ in masks) + " |",
        "|---|---|" + "---:|" * len(masks),
    ]
    for label, base in pairs if pairs is not None else against_off(systems):
        system, off = by_label[label].scores, by_label[base].scores
        cells = []
        for _, mask in masks:
            d10, lo, hi = bootstrap_delta(system[mask, 1], off[mask, 1])
            d20 = system[mask, 2].mean() - off[mask, 2].mean()
            cells.append(f"{d10:+.3f} [{lo:+.3f}, {hi:+.3f}] (R@20 {d20:+.3f})")
        lines.append(f"| {label} | {base} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


METRICS = ("R@5", "R@10", "R@20", "MRR")  # the columns of System.scores


def metric_table(
    systems: Sequence[System], questions: Sequence[Question], pairs: Pairs, column: int
) -> str:
    """One metric (a column of System.scores) of each system minus its baseline's, with the
    paired bootstrap 95% interval, per category."""
    masks = category_masks(questions)
    by_label = {system.label: system for system in systems}
    lines = [
        f"{METRICS[column]} minus the baseline, paired bootstrap 95% interval within each"
        " category:",
        "",
        "| system | baseline | " + " | ".join(label for label, _ in masks) + " |",
        "|---|---|" + "---:|" * len(masks),
    ]
    for label, base in pairs:
        a, b = by_label[label].scores[:, column], by_label[base].scores[:, column]
        cells = []
        for _, mask in masks:
            delta, low, high = bootstrap_delta(a[mask], b[mask])
            cells.append(f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]")
        lines.append(f"| {label} | {base} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stage_args(
    argv: Sequence[str] | None,
    doc: str,
    out: Path,
    more: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """The options of a stage bench (this one, bench.recall_stages); `more` adds its own."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--no-build", action="store_true", help="reuse the built workspace")
    if more is not None:
        more(parser)
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    return args


def stage_report(
    title: str,
    lead: str,
    systems: Sequence[System],
    questions: Sequence[Question],
    out: Path,
    pairs: Pairs | None = None,
) -> str:
    """The report of a stage bench: every system's metrics, each against its baseline (off
    unless `pairs` say); written to `out` and returned."""
    pairs = against_off(systems) if pairs is None else pairs
    report = "\n".join(
        [
            f"# {title}",
            "",
            lead,
            "",
            quality_tables(systems, questions, pairs),
            "",
            stage_table(systems, questions, pairs),
            "",
            *(
                part
                for column in (0, 2, 3)  # R@5, R@20, MRR: each with its interval
                for part in (metric_table(systems, questions, pairs, column), "")
            ),
        ]
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = stage_args(argv, __doc__ or "", RESULTS / "search-stages.md")
    began = time.perf_counter()
    conversations, _ = load_realtalk(args.data)
    questions = [q for c in conversations for q in c.questions]
    directory = args.cache / "stages"
    if not args.no_build:
        build(directory, args.cache, conversations)
    with Workspace(Settings(workspace=directory)) as ws:
        log(f"{len(questions)} questions x {len(SYSTEMS)} systems ...")
        found = rankings(ws, conversations, SYSTEMS)
    systems = [score_system(label, found[label], questions) for label in SYSTEMS]
    lead = (
        f"{len(questions)} questions; `search_passages` with num_results {DEPTH}; "
        f"whole run {time.perf_counter() - began:.0f} s."
    )
    print(
        stage_report(
            "Passage search's stages and floor on REALTALK", lead, systems, questions, args.out
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
