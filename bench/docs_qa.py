"""A second corpus for the relevance floor (issue 31 item 3): the project's own docs.

    .venv/bin/python -m bench.docs_qa --write-passages   # (re)cut bench/data/docs-qa-passages.json
    .venv/bin/python -m bench.docs_qa                    # writes bench/results/docs-qa-floor.md

The passages are README.md and docs/architecture.md as they stood when the set was made, cut at
their headings (`#` to `###`) and then by `lcg.domain.passages.split` (at most 1,000
characters, at sentence ends): 143 passages, kept in bench/data/docs-qa-passages.json so the
questions keep their evidence when the docs change. The questions
(bench/data/docs-qa-questions.json) were written by hand, each after reading the passage(s)
that answer it, and labelled with those passages' ids; `kind` says whether the question reuses
the passage's words (`keyword`) or says it in other words (`paraphrase`).

Each passage is one `text` episode of one group in a fresh workspace (MiniLM int8, the
product's defaults otherwise); every question is asked of `search_passages` with the search
context the tools build, num_results 20, at min_score 0 and at the tool's default 0.5 (and
0.3); R@10, R@20 (recall of the evidence ids) and MRR, paired bootstrap 95% intervals.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import faiss
import numpy as np

from bench.realtalk import CATEGORIES, load_realtalk
from bench.realtalk import DATA as REALTALK
from bench.search_common import CACHE, RESULTS, Item, ingest, log, reset_workspace
from bench.search_quality import bootstrap_delta, score_system
from bench.search_stages import build
from bench.search_stages import rankings as stage_rankings
from lcg.domain import passages as passage_split
from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.queries import reads, search
from lcg.queries.stages import OFF

DATA = Path(__file__).resolve().parent / "data"
PASSAGES = DATA / "docs-qa-passages.json"
QUESTIONS = DATA / "docs-qa-questions.json"
SOURCES = {"README": "README.md", "architecture": "docs/architecture.md"}
GROUP = GroupId("docs")
FLOORS = (0.0, 0.3, 0.5)
OFF_TOPIC = "off-topic"  # a question nothing in the corpus answers: every result is noise
DEPTH = 20


@dataclass(frozen=True, slots=True)
class DocQuestion:
    text: str
    evidence: list[str]
    kind: str


def cut(text: str) -> list[str]:
    """A document's passages: its sections (at `#`-`###` headings), each split as episodes are."""
    sections = re.split(r"\n(?=#{1,3} )", text)
    return [p for section in sections for p in passage_split.split(section)]


def write_passages(root: Path) -> None:
    rows = [
        {"id": f"{name}#{n}", "text": passage}
        for name, path in SOURCES.items()
        for n, passage in enumerate(cut((root / path).read_text(encoding="utf-8")))
    ]
    PASSAGES.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"{len(rows)} passages -> {PASSAGES}")


def load() -> tuple[dict[str, str], list[DocQuestion]]:
    passages = {row["id"]: row["text"] for row in json.loads(PASSAGES.read_text("utf-8"))}
    questions = [
        DocQuestion(row["question"], list(row["evidence"]), row["kind"])
        for row in json.loads(QUESTIONS.read_text("utf-8"))
    ]
    for q in questions:
        unknown = [e for e in q.evidence if e not in passages]
        if unknown or (not q.evidence) != (q.kind == OFF_TOPIC):
            raise ValueError(f"question {q.text!r}: evidence {unknown or '[]'} names no passage")
    return passages, questions


def scores(ranking: Sequence[str], evidence: Sequence[str]) -> tuple[float, float, float]:
    wanted = set(evidence)
    r10 = len(wanted & set(ranking[:10])) / len(wanted)
    r20 = len(wanted & set(ranking[:20])) / len(wanted)
    first = next((n for n, name in enumerate(ranking, start=1) if name in wanted), None)
    return r10, r20, 1.0 / first if first else 0.0


def run(directory: Path) -> str:
    passages, questions = load()
    reset_workspace(directory)
    when = datetime(2026, 12, 6, tzinfo=UTC)
    items = [Item(GROUP, pid, text, when, "text") for pid, text in passages.items()]
    found: dict[float, list[list[str]]] = {floor: [] for floor in FLOORS}
    with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
        ingest(ws, items, "docs ingest")
        ws.settle(3600)
        ctx = reads.search_context(App(ws).reads)
        for q in questions:
            for floor in FLOORS:
                result = search.search_passages(ctx, q.text, [GROUP], DEPTH, floor)
                found[floor].append([p["name"] for p in result["passages"]])
    return report(passages, questions, found)


def report(
    passages: dict[str, str], questions: Sequence[DocQuestion], found: dict[float, list[list[str]]]
) -> str:
    answerable = [n for n, q in enumerate(questions) if q.kind != OFF_TOPIC]
    asked = [questions[n] for n in answerable]
    table = {
        f: np.array([scores(found[f][n], questions[n].evidence) for n in answerable])
        for f in FLOORS
    }
    kinds = sorted({q.kind for q in asked})
    masks = [("all", np.ones(len(asked), dtype=bool))]
    masks += [(k, np.array([q.kind == k for q in asked])) for k in kinds]
    off = [n for n, q in enumerate(questions) if q.kind == OFF_TOPIC]
    lines = [
        f"# The relevance floor on the docs corpus ({len(passages)} passages, "
        f"{len(asked)} questions with evidence, {len(off)} off-topic)",
        "",
        "Kept of the first 10 (the tool's num_results): for the answerable questions, the "
        "passages that are not evidence (noise) and the evidence; for the off-topic ones, "
        "everything (all noise).",
        "",
        "| min_score | questions | R@10 | R@20 | MRR | noise kept of 10 | evidence kept of 10 |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for floor in FLOORS:
        for label, mask in masks:
            m = table[floor][mask].mean(axis=0)
            picked = [answerable[i] for i in np.flatnonzero(mask)]
            noise = np.mean([len(set(found[floor][n][:10]) - set(questions[n].evidence))
                             for n in picked])  # fmt: skip
            hits = np.mean([len(set(found[floor][n][:10]) & set(questions[n].evidence))
                            for n in picked])  # fmt: skip
            lines.append(
                f"| {floor} | {label} ({mask.sum()}) | {m[0]:.3f} | {m[1]:.3f} | {m[2]:.3f} | "
                f"{noise:.2f} | {hits:.2f} |"
            )
        if off:
            kept = np.mean([len(found[floor][n][:10]) for n in off])
            empty = sum(1 for n in off if not found[floor][n])
            lines.append(
                f"| {floor} | {OFF_TOPIC} ({len(off)}) | - | - | - | {kept:.2f} "
                f"({empty} answered nothing) | - |"
            )
    lines += [
        "",
        "| difference | questions | R@10 [95% CI] | R@20 [95% CI] |",
        "|---|---|---:|---:|",
    ]
    for floor in FLOORS[1:]:
        for label, mask in masks:
            cells = []
            for col in (0, 1):
                d, lo, hi = bootstrap_delta(table[floor][mask, col], table[0.0][mask, col])
                cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
            lines.append(f"| {floor} - 0 | {label} ({mask.sum()}) | " + " | ".join(cells) + " |")
    missed = [
        f"- {questions[n].text!r}: evidence {questions[n].evidence}, kept at 0.5: "
        f"{found[0.5][n][:10]}"
        for n in answerable
        if scores(found[0.5][n], questions[n].evidence)[0]
        < scores(found[0.0][n], questions[n].evidence)[0]
    ]
    lines += ["", "Questions whose R@10 the 0.5 floor lowers:", "", *(missed or ["- none"]), ""]
    return "\n".join(lines)


def realtalk(directory: Path) -> str:
    """The same floors on REALTALK (bench.search_stages' workspace, built if missing), by
    category: R@10 / R@20 against min_score 0, and what each keeps of the first 10."""
    conversations, _ = load_realtalk(REALTALK)
    questions = [q for c in conversations for q in c.questions]
    if not (directory / ".lcg").exists():
        build(directory, directory.parent, conversations)
    systems = {f"floor {f}": (OFF, f, DEPTH) for f in FLOORS}
    with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
        found = stage_rankings(ws, conversations, systems)
    scored = {f: score_system(f"floor {f}", found[f"floor {f}"], questions) for f in FLOORS}
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    lines = [
        f"# The relevance floor on REALTALK ({len(questions)} questions), passage search's "
        "default fusion",
        "",
        "| min_score | category | R@10 | R@20 | R@10 - 0 [95% CI] | R@20 - 0 [95% CI] | "
        "noise kept of 10 | evidence kept of 10 |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for f in FLOORS:
        for label, mask in masks:
            a, b = scored[f].scores[mask], scored[0.0].scores[mask]
            d10 = "{:+.3f} [{:+.3f}, {:+.3f}]".format(*bootstrap_delta(a[:, 1], b[:, 1]))
            d20 = "{:+.3f} [{:+.3f}, {:+.3f}]".format(*bootstrap_delta(a[:, 2], b[:, 2]))
            picked = [int(n) for n in np.flatnonzero(mask)]
            top = [set(found[f"floor {f}"][n][:10]) for n in picked]
            wanted = [set(questions[n].evidence) for n in picked]
            noise = np.mean([len(t - w) for t, w in zip(top, wanted, strict=True)])
            hits = np.mean([len(t & w) for t, w in zip(top, wanted, strict=True)])
            lines.append(
                f"| {f} | {label} ({mask.sum()}) | {a[:, 1].mean():.3f} | {a[:, 2].mean():.3f} | "
                f"{d10} | {d20} | {noise:.2f} | {hits:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=RESULTS / "docs-qa-floor.md")
    parser.add_argument("--write-passages", action="store_true", help="cut the docs again")
    parser.add_argument("--realtalk", action="store_true", help="the floors on REALTALK")
    args = parser.parse_args(argv)
    if args.realtalk:
        faiss.omp_set_num_threads(1)
        text = realtalk(args.cache / "stages")
        (RESULTS / "realtalk-floor.md").write_text(text, encoding="utf-8")
        print(text)
        return 0
    if args.write_passages:
        write_passages(Path(__file__).resolve().parent.parent)
        return 0
    faiss.omp_set_num_threads(1)
    began = time.perf_counter()
    report = run(args.cache / "docs-qa")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    log(f"whole run {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
