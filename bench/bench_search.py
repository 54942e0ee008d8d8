"""Benchmark lcg's passage search: REALTALK retrieval quality, and latency at 10k and 100k.

Run from the repository root:

    .venv/bin/python -m bench.bench_search --quality    # recall@k / MRR on REALTALK
    .venv/bin/python -m bench.bench_search --latency    # ingest rate, p50/p95 search latency
    .venv/bin/python -m bench.bench_search --quality --extraction  # and extraction on vs off
    .venv/bin/python -m bench.bench_search --quality --stages  # and each stage on vs off

Both parts compare lcg with baselines run in the same process on the same data: for quality,
plain BM25 (rank-bm25) and each of lcg's two legs alone; for latency, raw FAISS, raw FTS5 and
the query embedding alone, as ratios (the machines are shared and noisy). The REALTALK data is
read from ../shared/data/realtalk (never copied). Embeddings are cached in workspaces under
.bench-cache/ at the repository root (git-ignored) so repeated runs do not re-run the model.
See bench/README.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import faiss

from bench import search_stages
from bench.realtalk import DATA
from bench.search_common import CACHE, RESULTS, Options, add_stage_flags, log, stage_argv
from bench.search_latency import run_latency
from bench.search_quality import run_quality


def parse_args(argv: Sequence[str] | None) -> tuple[Options, list[str] | None]:
    """The options, and the stage bench's arguments when --stages is given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quality", action="store_true", help="REALTALK recall / MRR")
    parser.add_argument("--latency", action="store_true", help="ingest rate, search p50/p95")
    parser.add_argument("--data", type=Path, default=DATA, help="the REALTALK directory")
    parser.add_argument("--cache", type=Path, default=CACHE, help="bench workspaces (cached)")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000], help="passages (latency)"
    )
    parser.add_argument("--queries", type=int, default=300, help="distinct questions timed")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the queries")
    parser.add_argument("--num-results", type=int, default=10, help="num_results (latency)")
    parser.add_argument(
        "--cold-size", type=int, default=1_000, help="passages ingested with an empty cache"
    )
    parser.add_argument(
        "--source",
        choices=["text", "message"],
        default="text",
        help="episode source of the latency passages (message: indexed with neighbours)",
    )
    parser.add_argument("--profile", action="store_true", help="always profile 50 searches")
    parser.add_argument(
        "--extraction",
        action="store_true",
        help="quality: also store each turn through knowledge_process_chunk (spaCy) and compare",
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="quality: only the first N conversations"
    )
    parser.add_argument(
        "--quality-out",
        type=Path,
        default=None,
        help="default: results/search-quality.md (--extraction: search-quality-extraction.md)",
    )
    parser.add_argument("--latency-out", type=Path, default=RESULTS / "search-latency.md")
    parser.add_argument("--profile-out", type=Path, default=RESULTS / "search-profile.txt")
    add_stage_flags(parser, "bench.search_stages")
    args = parser.parse_args(argv)
    if not (args.quality or args.latency or args.stages):
        parser.error("choose --quality, --latency, --stages or several")
    if args.extraction and not args.quality:
        parser.error("--extraction needs --quality")
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be a positive number of conversations")
    stages = stage_argv(args) if args.stages else None
    options = Options(
        quality=args.quality,
        latency=args.latency,
        data=args.data,
        cache=args.cache,
        sizes=tuple(args.sizes),
        queries=args.queries,
        repeats=args.repeats,
        num_results=args.num_results,
        cold_size=args.cold_size,
        source=args.source,
        profile=args.profile,
        quality_out=args.quality_out
        or RESULTS / ("search-quality-extraction.md" if args.extraction else "search-quality.md"),
        latency_out=args.latency_out,
        profile_out=args.profile_out,
        extraction=args.extraction,
        limit=args.limit,
    )
    return options, stages


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    log(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> int:
    options, stages = parse_args(argv)
    options.cache.mkdir(parents=True, exist_ok=True)
    faiss.omp_set_num_threads(1)  # two OpenMP threads make single queries far slower here
    if options.quality:
        report = run_quality(options)
        print(report)
        write(options.quality_out, report)
    if options.latency:
        report, profile = run_latency(options)
        print(report)
        write(options.latency_out, report)
        if profile is not None:
            write(options.profile_out, profile)
    if stages is not None:  # each stage on vs off (issue 31 item 4)
        search_stages.main(stages)
    return 0


if __name__ == "__main__":
    sys.exit(main())
