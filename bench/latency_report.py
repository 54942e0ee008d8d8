"""The latency benchmark's result types and its markdown report."""

from __future__ import annotations

import os
import platform
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import faiss
import numpy as np

from bench.search_common import INGEST_BATCH, Options

TARGET_P95_MS = 25.0


@dataclass(frozen=True, slots=True)
class IngestRow:
    passages: int
    run: str
    model_texts: int
    seconds: float


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


@dataclass
class Timings:
    label: str
    ms: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return percentile(self.ms, 50)

    @property
    def p95(self) -> float:
        return percentile(self.ms, 95)


@dataclass(frozen=True, slots=True)
class LatencyResult:
    passages: int
    queries: int
    repeats: int
    rows: list[Timings]
    agreement: dict[str, float]
    fusion: str


def render_latency(
    ingest_rows: Sequence[IngestRow],
    results: Sequence[LatencyResult],
    options: Options,
    wall: float,
    filled: tuple[int, float],
) -> str:
    lines = [
        f"# lcg search latency ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"faiss {faiss.__version__}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs (shared); FAISS and onnxruntime on 1 thread; "
        f"whole run {wall:.0f} s.",
        "",
        "Passages: 1-3 REALTALK turns each, distinct, one group, added as "
        f"`{options.source}` episodes through `Writer.execute_many` ({INGEST_BATCH} per "
        "commit)."
        + (
            " As `message` episodes each passage is also indexed with its neighbours' text"
            " (FTS column `context`), which the raw FTS5 baseline does not have."
            if options.source == "message"
            else ""
        ),
        "",
        "## Ingest",
        "",
        "| passages | embedding cache | texts through the model | seconds | passages/s |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in ingest_rows:
        lines.append(
            f"| {row.passages:,} | {row.run} | {row.model_texts:,} | {row.seconds:.1f} "
            f"| {row.passages / row.seconds:,.0f} |"
        )
    cold, warm = ingest_rows[0], ingest_rows[1]
    model_s = (cold.seconds - warm.seconds) / cold.passages  # model seconds per passage
    for row in ingest_rows[2:]:
        estimate = row.seconds + row.passages * model_s
        lines.append(
            f"| {row.passages:,} | model included, **estimated**: the warm row + "
            f"{model_s * 1000:.0f} ms x passages (cold - warm of the {cold.passages:,} rows) "
            f"| ({row.passages:,}) | {estimate:,.0f} | {row.passages / estimate:,.0f} |"
        )
    model_texts, fill_seconds = filled
    if model_texts:
        lines += [
            "",
            f"This run first filled the bench cache: {model_texts:,} texts through the model "
            f"(`EmbeddingCache.embed`, shortest first, chunks of 2,000) in {fill_seconds:.0f} s, "
            f"{model_texts / fill_seconds:,.1f} texts/s.",
        ]
    for result in results:
        lcg = result.rows[0]
        lines += [
            "",
            f"## Search, {result.passages:,} passages",
            "",
            f"{result.queries} REALTALK questions x {result.repeats} repeats = {len(lcg.ms):,} "
            f"timed calls per row, interleaved (order rotated per query); num_results "
            f"{options.num_results}, min_score 0, fusion `{result.fusion}` (the default). "
            f"Top-10 agreement with lcg's legs (50 "
            f"queries): raw FAISS {result.agreement['vector']:.2f}, raw FTS5 "
            f"{result.agreement['text']:.2f}; lcg's in-memory BM25 with lcg's FTS5 bm25 "
            f"{result.agreement['engines']:.2f}.",
            "",
            "| measurement | p50 ms | p95 ms | lcg / this, p50 | lcg / this, p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for timings in result.rows:
            ratio50 = lcg.p50 / timings.p50 if timings.p50 else float("nan")
            ratio95 = lcg.p95 / timings.p95 if timings.p95 else float("nan")
            ratios = "" if timings is lcg else f"**{ratio50:.2f}x** | **{ratio95:.2f}x**"
            lines.append(
                f"| {timings.label} | {timings.p50:.2f} | {timings.p95:.2f} | "
                + (ratios or "- | -")
                + " |"
            )
        verdict = "meets" if lcg.p95 < TARGET_P95_MS else "misses"
        lines += [
            "",
            f"lcg p95 {lcg.p95:.1f} ms {verdict} the {TARGET_P95_MS:.0f} ms target "
            f"(p50 {lcg.p50:.1f} ms, max {max(lcg.ms):.1f} ms).",
        ]
    return "\n".join([*lines, ""])
