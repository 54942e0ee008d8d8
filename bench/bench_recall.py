"""Benchmark lambo_recall: evidence recall on REALTALK, and latency at 10k and 100k concepts.

Run from the repository root:

    .venv/bin/python -m bench.bench_recall --quality    # recall@k on REALTALK vs search
    .venv/bin/python -m bench.bench_recall --latency    # p50/p95, with and without contradictions
    .venv/bin/python -m bench.bench_recall --quality --stages  # and each stage on vs off

Quality derives every REALTALK turn as an observation through lambo_derive (one session per
conversation), asks every question through lambo_recall and scores the evidence with the
search bench's scoring, beside knowledge_search_passages in the same run. Latency builds
sessions of 10k and 100k concepts through the memory write path in bulk and times lambo_recall
with its default arguments, each query embedded afresh, then again once 10% of the concepts
are contradicted (ratios to the first run, same process). Embeddings are cached in workspaces
under .bench-cache/ at the repository root (git-ignored). See bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import faiss

from bench import recall_stages
from bench.realtalk import DATA
from bench.recall_common import RecallOptions
from bench.recall_latency import run_recall_latency
from bench.recall_quality import run_recall_quality
from bench.search_common import CACHE, RESULTS, add_stage_flags, log, stage_argv


def parse_args(argv: Sequence[str] | None) -> tuple[RecallOptions, list[str] | None]:
    """The options, and the stage bench's arguments when --stages is given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quality", action="store_true", help="REALTALK evidence recall")
    parser.add_argument("--latency", action="store_true", help="lambo_recall p50/p95")
    parser.add_argument("--data", type=Path, default=DATA, help="the REALTALK directory")
    parser.add_argument("--cache", type=Path, default=CACHE, help="bench workspaces (cached)")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000], help="concepts (latency)"
    )
    parser.add_argument("--queries", type=int, default=300, help="distinct questions timed")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the queries")
    parser.add_argument(
        "--contradicted", type=float, default=0.1, help="share of concepts contradicted"
    )
    parser.add_argument("--quality-out", type=Path, default=RESULTS / "recall-quality.md")
    parser.add_argument("--latency-out", type=Path, default=RESULTS / "recall-latency.md")
    add_stage_flags(parser, "bench.recall_stages")
    args = parser.parse_args(argv)
    if not (args.quality or args.latency or args.stages):
        parser.error("choose --quality, --latency, --stages or several")
    stages = stage_argv(args) if args.stages else None
    options = RecallOptions(
        quality=args.quality,
        latency=args.latency,
        data=args.data,
        cache=args.cache,
        sizes=tuple(args.sizes),
        queries=args.queries,
        repeats=args.repeats,
        contradicted=args.contradicted,
        quality_out=args.quality_out,
        latency_out=args.latency_out,
    )
    return options, stages


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    log(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> int:
    options, stages = parse_args(argv)
    options.cache.mkdir(parents=True, exist_ok=True)
    faiss.omp_set_num_threads(1)  # as bench_search: one OpenMP thread for single queries
    if options.quality:
        report = run_recall_quality(options)
        print(report)
        write(options.quality_out, report)
    if options.latency:
        report = run_recall_latency(options)
        print(report)
        write(options.latency_out, report)
    if stages is not None:  # each stage on vs off (issue 31 item 4)
        recall_stages.main(stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
