"""bench_wal's options and results: a measurement per row, its markdown table, the profiles."""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def profile_report(title: str, profiler: cProfile.Profile, top: int = 15) -> str:
    """The top functions of a profile by cumulative and by own time, as text."""
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    out.write(f"# cProfile of {title}\n\n## by cumulative time\n")
    stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(top)
    out.write("\n## by own (total) time\n")
    stats.sort_stats(pstats.SortKey.TIME).print_stats(top)
    return out.getvalue()


@dataclass(frozen=True, slots=True)
class Measurement:
    """Seconds per repeat for lcg and for its raw baseline, over the same number of events."""

    label: str
    events: int
    lcg: tuple[float, ...]
    raw: tuple[float, ...]

    @property
    def lcg_rate(self) -> float:
        return self.events / min(self.lcg)

    @property
    def raw_rate(self) -> float:
        return self.events / min(self.raw)

    @property
    def ratio(self) -> float:
        """lcg time / raw time, best repeat of each: how many times slower lcg is."""
        return min(self.lcg) / min(self.raw)

    @property
    def paired(self) -> tuple[float, float]:
        """Lowest and highest ratio of the repeats taken side by side."""
        ratios = [lcg / raw for lcg, raw in zip(self.lcg, self.raw, strict=True)]
        return min(ratios), max(ratios)


def render(
    results: Sequence[Measurement], payload: int, repeats: int, wall: float, note: str
) -> str:
    lines = [
        "| benchmark | events | lcg events/s | raw sqlite3 events/s | lcg/raw time "
        "| paired range |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        low, high = r.paired
        lines.append(
            f"| {r.label} | {r.events:,} | {r.lcg_rate:,.0f} | {r.raw_rate:,.0f} "
            f"| **{r.ratio:.2f}x** | {low:.2f}-{high:.2f}x |"
        )
    header = [
        f"# lcg WAL benchmark ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; "
        f"payload ~{payload} bytes; best of {repeats} repeats, lcg and raw interleaved; "
        f"whole run {wall:.0f} s.",
        "",
        "lcg/raw time = lcg seconds / raw sqlite3 seconds for the same events (best repeat "
        "of each); paired range = the ratio repeat by repeat.",
        "",
    ]
    return "\n".join([*header, *lines, "", note, ""])


@dataclass(frozen=True, slots=True)
class Options:
    events: int
    single: int
    batched: int
    batch: int
    fill_batch: int
    repeats: int
    out: Path
    profile_out: Path | None


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        description="lcg WAL appends and replay, each as a ratio to raw sqlite3"
    )
    parser.add_argument("--events", type=int, default=100_000, help="events replayed (c)")
    parser.add_argument("--single", type=int, default=2_000, help="single appends (a)")
    parser.add_argument("--batched", type=int, default=20_000, help="batched appends (b)")
    parser.add_argument("--batch", type=int, default=100, help="events per commit (b)")
    parser.add_argument("--fill-batch", type=int, default=1_000, help="events per commit (c)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per measurement")
    parser.add_argument("--out", type=Path, default=RESULTS / "wal.md")
    parser.add_argument(
        "--profile-out", type=Path, default=RESULTS / "replay-profile.txt", help="cProfile text"
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled runs")
    args = parser.parse_args(argv)
    return Options(
        events=args.events,
        single=args.single,
        batched=args.batched,
        batch=args.batch,
        fill_batch=args.fill_batch,
        repeats=args.repeats,
        out=args.out,
        profile_out=None if args.no_profile else args.profile_out,
    )
