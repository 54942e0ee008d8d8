"""A learned reranker over both tools' default results, measured before adopting (issue 31).

    .venv/bin/pip install nanoranker      # its weights are in its wheel; not a dependency
    .venv/bin/python -m bench.rerank_compare [--no-build] [--latency 150]
        [--out bench/results/rerank.md]

No cross-encoder ships its weights in a package this project can install (ADR 0104 lists
what was checked); `nanoranker` is the one reranker found that does: a multilingual
Universal Sentence Encoder (ONNX) embeds the query and each text apart, 64 hashed character
n-grams are added to each, and a small network (`reranker_nn_v2.onnx`) scores the pair. It
is not a cross-encoder (query and text never meet inside a transformer), so what it scores
of a text can be computed when the text is stored.

Passage search: bench.search_stages' workspace (`.bench-cache/stages`); every question is
asked of `search_passages` with the context the tools build and the default floor, once
with num_results 20 (the default as the other benches score it) and once with 50 (the
candidates). Recall: bench.recall_stages' workspace (`.bench-cache/recall-stages`);
`lambo_recall` with top_k 10 (the default as bench.recall_stages scores it) and with 50.
The candidates' first 30 (or all 50) are reranked by the reranker alone, by the mean of its
score and the tool's fused score (each min-max scaled over the candidates), and by
reciprocal rank fusion of the two orders (k 60). Every system is compared with the
candidates' own order (the default ranking of the same hits) per REALTALK category, with
paired bootstrap 95% intervals for R@5, R@10, R@20 and MRR. Latency: the tool's default call
against the call with 30 candidates plus the rerank, interleaved per question (the order
alternating), each query embedded afresh; the reranker as shipped (`nanoranker.rank`, every
candidate embedded per query) and with the texts' features kept (only the query embedded).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from bench.memory_transports import percentile
from bench.realtalk import CATEGORIES, DATA, Conversation, Question, load_realtalk
from bench.recall_common import AGENT, RECALL_TOP_K
from bench.recall_quality import _call
from bench.recall_stages import derive_all, settings_for
from bench.search_common import CACHE, RESULTS, log, require
from bench.search_quality import DEPTH, Ranking, System, bootstrap_delta, distinct, score_system
from bench.search_stages import build
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.queries import reads, search

Floats = npt.NDArray[np.float64]
POOL = 50  # candidates asked for; the first 30 or all 50 are reranked
POOLS = (30, 50)
RRF_K = 60
METRICS = ("R@5", "R@10", "R@20", "MRR")
DEFAULT_CALL = {
    "passages": "passages: default (num_results 10)",
    "recall": "recall: default (top_k 10)",
}


@dataclass(frozen=True, slots=True)
class Candidate:
    """One hit of a tool: the turns it stands for, its text and the tool's fused score."""

    names: tuple[str, ...]
    text: str
    score: float


Asked = list[list[Candidate]]  # per question, the tool's candidates, best first


class Reranker:
    """nanoranker's scorer; a text's features (its embedding and hashed n-grams) are kept,
    since they do not depend on the query."""

    def __init__(self) -> None:
        try:
            self.module: ModuleType = importlib.import_module("nanoranker")
        except ImportError as error:  # pragma: no cover - a bench prerequisite
            raise SystemExit("bench.rerank_compare needs `pip install nanoranker`") from error
        self.features: dict[str, Floats] = {}

    def feature(self, text: str) -> Floats:
        found = self.features.get(text)
        if found is None:
            found = self.features[text] = np.asarray(self.module.embed(text), dtype=np.float64)
        return found

    def scores(self, query: str, texts: Sequence[str], kept: bool = True) -> Floats:
        """The reranker's score of each text for `query` (higher is better)."""
        if not texts:
            return np.zeros(0)
        q = np.asarray(self.module.embed(query), dtype=np.float64)
        rows = [self.feature(t) if kept else np.asarray(self.module.embed(t)) for t in texts]
        pairs = np.concatenate([np.tile(q, (len(rows), 1)), np.array(rows)], axis=1)
        model: Any = self.module.reranker_model
        out = model.run(["output"], {"input": pairs.astype(np.float32)})[0]
        return np.asarray(out, dtype=np.float64).reshape(-1)

    def as_shipped(self, query: str, texts: Sequence[str]) -> list[tuple[str, float]]:
        """The package's own call: every text embedded again."""
        ranked: list[tuple[str, float]] = self.module.rank(query, list(texts), top_n=len(texts))
        return ranked


def _scaled(values: Floats) -> Floats:
    span = float(values.max() - values.min()) if len(values) else 0.0
    return (values - values.min()) / span if span > 0 else np.zeros(len(values))


def reorder(cands: Sequence[Candidate], rerank: Floats, how: str, pool: int) -> list[Candidate]:
    """The first `pool` candidates in a new order (the rest after them, as they were):
    `alone` by the reranker's score, `mean` by the mean of both min-max scaled scores, `rrf`
    by reciprocal rank fusion of the tool's order and the reranker's."""
    head, tail = list(cands[:pool]), list(cands[pool:])
    r = rerank[: len(head)]
    if how == "alone":
        value = r
    elif how == "mean":
        value = 0.5 * _scaled(r) + 0.5 * _scaled(np.array([c.score for c in head]))
    else:
        by_rerank = np.empty(len(head))
        by_rerank[np.argsort(-r, kind="stable")] = np.arange(1, len(head) + 1)
        value = 1.0 / (RRF_K + np.arange(1, len(head) + 1)) + 1.0 / (RRF_K + by_rerank)
    order = sorted(range(len(head)), key=lambda i: (-value[i], i))
    return [head[i] for i in order] + tail


def ranking(cands: Sequence[Candidate]) -> Ranking:
    return distinct([name for c in cands for name in c.names])


SYSTEMS = [
    (f"{label}, top {pool}", how, pool)
    for pool in POOLS
    for label, how in (
        ("reranker alone", "alone"),
        ("mean of reranker and fused score", "mean"),
        ("rrf of both orders", "rrf"),
    )
]


def systems_for(
    label: str, asked: Asked, default: list[Ranking], reranker: Reranker, qs: Sequence[Question]
) -> list[System]:
    """The tool's default, its candidates' own order, and each reranked system."""
    scores = [
        reranker.scores(q.text, [c.text for c in cands[:POOL]])
        for q, cands in zip(qs, asked, strict=True)
    ]
    found = [
        score_system(f"{label}: default", default, qs),
        score_system(f"{label}: candidates' own order", [ranking(c) for c in asked], qs),
    ]
    for name, how, pool in SYSTEMS:
        rows = [ranking(reorder(c, s, how, pool)) for c, s in zip(asked, scores, strict=True)]
        found.append(score_system(f"{label}: {name}", rows, qs))
    return found


def passage_candidates(
    ws: Workspace, conversations: Sequence[Conversation]
) -> tuple[Asked, list[Ranking]]:
    """Per question: search_passages' 50 candidates and its default ranking (20 results)."""
    base = reads.search_context(App(ws).reads)
    asked: Asked = []
    default: list[Ranking] = []
    for conversation in conversations:
        for question in conversation.questions:
            shallow = search.search_passages(base, question.text, [conversation.group], DEPTH)
            default.append(distinct([p["name"] for p in shallow["passages"]]))
            deep = search.search_passages(base, question.text, [conversation.group], POOL)
            asked.append(
                [Candidate((p["name"],), p["content"], p["score"]) for p in deep["passages"]]
            )
    return asked, default


def recall_candidates(
    directory: Path, conversations: Sequence[Conversation], nodes: dict[str, dict[str, list[str]]]
) -> tuple[Asked, list[Ranking]]:
    """Per question: lambo_recall's 50 hits and its default ranking (top_k 10)."""
    asked: Asked = []
    default: list[Ranking] = []
    for conversation in conversations:
        turns = nodes[conversation.group]
        with Workspace(settings_for(directory, conversation.group, {})) as ws:
            app = App(ws)
            for question in conversation.questions:
                params = {"agent_id": AGENT, "query": question.text, "top_k": RECALL_TOP_K}
                shallow = _call(app, "lambo_recall", params)["hits"]
                default.append(distinct([d for h in shallow for d in turns.get(h["node_id"], [])]))
                deep = _call(app, "lambo_recall", params | {"top_k": POOL})["hits"]
                asked.append(
                    [
                        Candidate(tuple(turns.get(h["node_id"], [])), h["content"], h["score"])
                        for h in deep
                    ]
                )
        log(f"  {conversation.group}: recalled")
    return asked, default


def delta_tables(systems: Sequence[System], questions: Sequence[Question]) -> list[str]:
    """Each system minus the candidates' own order (systems[1]), per metric and category,
    with its paired bootstrap 95% interval."""
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    base = systems[1]
    lines: list[str] = []
    for column, metric in enumerate(METRICS):
        lines += [
            "",
            f"{metric} minus the candidates' own order [paired bootstrap 95% interval]:",
            "",
            "| system | " + " | ".join(f"{label} ({int(m.sum())})" for label, m in masks) + " |",
            "|---|" + "---:|" * len(masks),
        ]
        for system in systems[2:]:
            cells = []
            for _, mask in masks:
                d, lo, hi = bootstrap_delta(system.scores[mask, column], base.scores[mask, column])
                cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
            lines.append(f"| {system.label} | " + " | ".join(cells) + " |")
    return lines


def means_table(systems: Sequence[System], questions: Sequence[Question]) -> list[str]:
    categories = np.array([q.category for q in questions])
    lines = [
        "| system | R@5 | R@10 | R@20 | MRR | "
        + " | ".join(f"R@10 {name}" for name in CATEGORIES.values())
        + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(CATEGORIES),
    ]
    for s in systems:
        overall = " | ".join(f"{m:.3f}" for m in s.scores.mean(axis=0))
        by = " | ".join(f"{s.scores[categories == n, 1].mean():.3f}" for n in CATEGORIES)
        lines.append(f"| {s.label} | {overall} | {by} |")
    return lines


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def latency(
    cache: Path,
    conversations: Sequence[Conversation],
    nodes: dict[str, dict[str, list[str]]],
    reranker: Reranker,
    count: int,
) -> list[str]:
    """Each tool's default call against the call with 30 candidates and the rerank (as
    shipped, and with the texts' features kept), interleaved per question, the order
    alternating, each query embedded afresh: p50/p95 ms."""
    asked = [(c.group, q.text) for c in conversations for q in c.questions]
    step = max(1, len(asked) // count)
    asked = asked[::step][:count]
    pool = POOLS[0]
    times: dict[str, list[float]] = {}

    def add(label: str, value: float) -> None:
        times.setdefault(label, []).append(value)

    with Workspace(Settings(workspace=cache / "stages")) as ws:
        base = reads.search_context(App(ws).reads)

        def passages(group: str, text: str, n: int) -> list[str]:
            ws.forget_query_embeddings()
            return [
                p["content"] for p in search.search_passages(base, text, [group], n)["passages"]
            ]

        def systems(group: str, text: str) -> dict[str, Callable[[], object]]:
            return {
                DEFAULT_CALL["passages"]: lambda: passages(group, text, 10),
                "passages: top 30 + rerank as shipped": lambda: reranker.as_shipped(
                    text, passages(group, text, pool)
                ),
                "passages: top 30 + rerank, features kept": lambda: reranker.scores(
                    text, passages(group, text, pool)
                ),
            }

        _interleave(asked, systems, add)
    by_group: dict[str, list[str]] = {}
    for group, text in asked:
        by_group.setdefault(group, []).append(text)
    for name, texts in by_group.items():
        _recall_times(cache / "recall-stages", name, texts, reranker, add)
    lines = [
        f"{len(asked)} questions x 2 per system, interleaved (the order alternating):",
        "",
        "| call | p50 ms | p95 ms | added p50 ms | added p95 ms |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, values in times.items():
        first = times[DEFAULT_CALL[label.split(":")[0]]]
        p50, p95 = percentile(values, 50), percentile(values, 95)
        added50, added95 = p50 - percentile(first, 50), p95 - percentile(first, 95)
        lines.append(f"| {label} | {p50:.1f} | {p95:.1f} | {added50:+.1f} | {added95:+.1f} |")
    return lines


def _recall_times(
    directory: Path,
    group: str,
    texts: Sequence[str],
    reranker: Reranker,
    add: Callable[[str, float], None],
) -> None:
    """lambo_recall's default call against 30 hits and the rerank, one conversation."""
    with Workspace(settings_for(directory, group, {})) as ws:
        app = App(ws)

        def recall(text: str, k: int) -> list[str]:
            ws.forget_query_embeddings()
            hits = _call(app, "lambo_recall", {"agent_id": AGENT, "query": text, "top_k": k})
            return [h["content"] for h in hits["hits"]]

        def systems(_: str, text: str) -> dict[str, Callable[[], object]]:
            return {
                DEFAULT_CALL["recall"]: lambda: recall(text, RECALL_TOP_K),
                "recall: top 30 + rerank as shipped": lambda: reranker.as_shipped(
                    text, recall(text, POOLS[0])
                ),
                "recall: top 30 + rerank, features kept": lambda: reranker.scores(
                    text, recall(text, POOLS[0])
                ),
            }

        _interleave([(group, t) for t in texts], systems, add)


def _interleave(
    asked: Sequence[tuple[str, str]],
    systems: Callable[[str, str], dict[str, Callable[[], object]]],
    add: Callable[[str, float], None],
) -> None:
    for n, (group, text) in enumerate([*asked, *asked]):
        calls = systems(group, text)
        order = list(calls) if n % 2 == 0 else list(calls)[::-1]
        for label in order:
            add(label, _timed(calls[label]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=RESULTS / "rerank.md")
    parser.add_argument("--no-build", action="store_true", help="reuse the built workspaces")
    parser.add_argument("--latency", type=int, default=150, help="questions timed; 0: none")
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    began = time.perf_counter()
    conversations, _ = load_realtalk(args.data)
    questions = [q for c in conversations for q in c.questions]
    node_map = args.cache / "recall-stages" / "bench-nodes.json"
    if not args.no_build:
        build(args.cache / "stages", args.cache, conversations)
        nodes = derive_all(args.cache, args.cache / "recall-stages", conversations, began)
        node_map.write_text(json.dumps(nodes), encoding="utf-8")
    nodes = json.loads(node_map.read_text(encoding="utf-8"))
    reranker = Reranker()
    with Workspace(Settings(workspace=args.cache / "stages")) as ws:
        passage_asked, passage_default = passage_candidates(ws, conversations)
    log(f"passages asked ({time.perf_counter() - began:.0f} s)")
    recall_asked, recall_default = recall_candidates(
        args.cache / "recall-stages", conversations, nodes
    )
    require(len(recall_asked) == len(questions), "one recall per question")
    passage = systems_for("passages", passage_asked, passage_default, reranker, questions)
    log(f"passages reranked ({time.perf_counter() - began:.0f} s)")
    recall = systems_for("recall", recall_asked, recall_default, reranker, questions)
    log(f"recall reranked ({time.perf_counter() - began:.0f} s)")
    lines = [
        "# A learned reranker (nanoranker) over both tools' results on REALTALK",
        "",
        f"{len(questions)} questions; nanoranker "
        f"{importlib.metadata.version('nanoranker')}; reranked: the first 30 or 50 of "
        f"{POOL} candidates; compared with the candidates' own order.",
    ]
    for label, systems in (("knowledge_search_passages", passage), ("lambo_recall", recall)):
        lines += ["", f"## {label}", "", *means_table(systems, questions)]
        lines += delta_tables(systems, questions)
    if args.latency:
        lines += ["", "## Latency", ""]
        lines += latency(args.cache, conversations, nodes, reranker, args.latency)
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    lines += ["", f"Whole run {time.perf_counter() - began:.0f} s; load average at the end {load}."]
    report = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
