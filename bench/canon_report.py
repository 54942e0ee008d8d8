"""The report of bench_canon (bench/bench_canon.py): what a run measured, as the markdown of
bench/results/canon.md."""

from __future__ import annotations

import argparse
import os
import platform
import re
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench.memory_transports import percentile

BENCH = Path(__file__).resolve().parent
AIM_CYCLE_S = 1.0
SPAN = timedelta(days=400)  # the session's writes, evenly over this, ending an hour ago


@dataclass
class JobRun:
    """One timed job: wall time, its pieces, events appended, and what it did."""

    wall: float
    pieces: dict[str, float]
    events: int
    did: int  # hops of a cycle; concepts collected by a sweep


@dataclass
class SizeResult:
    size: int
    writes: int = 0
    edges: int = 0
    build_s: float = 0.0
    sweeps: list[JobRun] = field(default_factory=list)
    drain_ticks: list[float] = field(default_factory=list)
    idle_ticks: list[float] = field(default_factory=list)
    concepts_at_cycle: int = 0
    survived_3: int = 0
    cycles: list[JobRun] = field(default_factory=list)
    profiled_s: float = 0.0
    profile: str = ""
    traced_peak_mb: float = 0.0
    traced_s: float = 0.0
    maxrss_mb: tuple[float, float] = (0.0, 0.0)
    trigger_mutations: int = 0
    trigger_tick: JobRun | None = None
    before: list[dict[str, Any]] = field(default_factory=list)  # canon_pieces rounds
    # (cycle plan here, sweep plan here, cycle plan in the worker, sweep plan in the worker)
    where: list[tuple[float, float, float, float]] = field(default_factory=list)
    worker_start_s: float = 0.0
    after: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RecallResult:
    size: int
    build_s: float = 0.0
    embed_s: float = 0.0
    idle: list[list[float]] = field(default_factory=list)  # per round, ms
    busy: list[list[float]] = field(default_factory=list)  # jobs planned in the worker
    busy_here: list[list[float]] = field(default_factory=list)  # jobs planned in-process
    jobs_done: list[tuple[int, int]] = field(default_factory=list)  # (cycles, sweeps) per round
    jobs_done_here: list[tuple[int, int]] = field(default_factory=list)
    concepts: tuple[int, int] = (0, 0)
    vectors: int = 0


# -- the report ---------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def _p(values: list[float], q: float) -> float:
    return percentile(values, q) * 1000


def report(
    options: argparse.Namespace,
    sizes: list[SizeResult],
    recall: RecallResult | None,
    wall: float,
) -> str:
    lines = [
        f"{time.strftime('%Y-%m-%d')}, {platform.machine()} {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.1f} at the end), Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}; default knobs (Swarm, batch_size 50, gc_interval 10,000); "
        f"whole run {wall:.0f} s.",
        "",
        "**Sessions** (synthetic lambo_derive outcomes, `bench/canon_session.py`; writes "
        f"spread over {SPAN.days} days)",
        "",
        "| concepts | writes | edges | build (appends + every projection) |",
        "|---:|---:|---:|---:|",
    ]
    for r in sizes:
        lines.append(f"| {r.size:,} | {r.writes:,} | {r.edges:,} | {r.build_s:.1f} s |")
    lines += [
        "",
        "**Canonization cycle** (`run_cycle()`, every concept at gc_survived >= 3; ms; "
        "pieces timed inside the same calls)",
        "",
        "| concepts | cycle | **wall** | snapshot load | scores + measures | plan | append "
        "| hops | events appended | aim < 1 s at 100k |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in sizes:
        for number, c in enumerate(r.cycles, 1):
            aim = ""
            if r.size >= 100_000:
                aim = "met" if c.wall < AIM_CYCLE_S else "not met"
            lines.append(
                f"| {r.concepts_at_cycle:,} | {number} | **{_ms(c.wall)}** "
                f"| {_ms(c.pieces.get('load', 0))} | {_ms(c.pieces.get('session_stats', 0))} "
                f"| {_ms(c.pieces.get('plan', 0))} | {_ms(c.pieces.get('append', 0))} "
                f"| {c.did} | {c.events} | {aim} |"
            )
    lines += [
        "",
        "| concepts | cycle under cProfile | cycle under tracemalloc | tracemalloc peak "
        "| ru_maxrss before / after that cycle |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        lines.append(
            f"| {r.concepts_at_cycle:,} | {r.profiled_s:.2f} s | {r.traced_s:.2f} s "
            f"| {r.traced_peak_mb:,.0f} MiB | {r.maxrss_mb[0]:,.0f} / {r.maxrss_mb[1]:,.0f} MiB |"
        )
    lines += [
        "",
        "**GC sweep** (`sweep()`; ms; planned from a snapshot, then the append is the writer "
        "batch: the GcSwept event, its projection deletes and bumps, the commit)",
        "",
        "| concepts | sweep | **wall** | snapshot load | gc_evidence | plan_sweep "
        "| append | collected | events appended |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        for number, s in enumerate(r.sweeps, 1):
            lines.append(
                f"| {r.size:,} | {number} | **{_ms(s.wall)}** | {_ms(s.pieces.get('load', 0))} "
                f"| {_ms(s.pieces.get('facts', 0))} | {_ms(s.pieces.get('plan', 0))} "
                f"| {_ms(s.pieces.get('append', 0))} | {s.did:,} | {s.events} |"
            )
    lines += [
        "",
        "**Daemon tick** (ms)",
        "",
        "| concepts | nothing due: p50 / p95 (n) | draining bumps (500 per tick): p50 / p95 (n) "
        "| trigger fires (mutations since the last sweep): wall, of which load / facts / plan "
        "/ append | collected |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        t = r.trigger_tick
        assert t is not None
        lines.append(
            f"| {r.size:,} | {_p(r.idle_ticks, 50):.2f} / {_p(r.idle_ticks, 95):.2f} "
            f"({len(r.idle_ticks)}) | {_p(r.drain_ticks, 50):.1f} / {_p(r.drain_ticks, 95):.1f} "
            f"({len(r.drain_ticks)}) | {_ms(t.wall)}: {_ms(t.pieces.get('load', 0))} / "
            f"{_ms(t.pieces.get('facts', 0))} / {_ms(t.pieces.get('plan', 0))} / "
            f"{_ms(t.pieces.get('append', 0))} ({r.trigger_mutations:,}) | {t.did:,} |"
        )
    lines += _where_lines(sizes)
    lines += _compare_lines(options, [r for r in sizes if r.before])
    if recall is not None:
        lines += _recall_lines(recall)
    return "\n".join(lines) + "\n"


def _where_lines(sizes: list[SizeResult]) -> list[str]:
    lines = [
        "",
        "**Where the plans are made** (ADR 0045): a cycle's plan and a sweep's plan, nothing "
        "appended, by this process and by the planning worker process, alternately, on the "
        "same snapshot; ms per round; the worker's spawn timed once per size",
        "",
        "| concepts | worker spawn | cycle plan here / worker | sweep plan here / worker "
        "| worker / here (cycle, sweep; median) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        if not r.where:
            continue
        cycles = " ; ".join(f"{_ms(c)} / {_ms(w)}" for c, _, w, _ in r.where)
        sweeps = " ; ".join(f"{_ms(s)} / {_ms(w)}" for _, s, _, w in r.where)
        cycle_ratio = percentile([w / c for c, _, w, _ in r.where], 50)
        sweep_ratio = percentile([w / s for _, s, _, w in r.where], 50)
        lines.append(
            f"| {r.concepts_at_cycle:,} | {_ms(r.worker_start_s)} | {cycles} | {sweeps} "
            f"| {cycle_ratio:.2f}x, {sweep_ratio:.2f}x |"
        )
    return lines


def _compare_lines(options: argparse.Namespace, compared: list[SizeResult]) -> list[str]:
    lines: list[str] = []
    if compared:
        lines += [
            "",
            f"**Before / after, same run** (`bench/canon_pieces.py`, dry planning pieces, "
            f"child processes, {options.rounds} rounds on the same snapshot, who goes first "
            "alternating; best round in ms; ratio = before / after, range over the paired rounds)",
            "",
            "| concepts | job | piece | before | after | **before / after** | range |",
            "|---:|---|---|---:|---:|---:|---:|",
        ]
        for r in compared:
            for job, names in (
                ("cycle", ("load", "session_stats", "plan", "total")),
                ("sweep", ("load", "facts", "plan", "total")),
            ):
                for name in names:
                    b = [x[job][name] for x in r.before]
                    a = [x[job][name] for x in r.after]
                    ratios = [x / y for x, y in zip(b, a, strict=True)]
                    label = f"**{name}**" if name == "total" else name
                    lines.append(
                        f"| {r.concepts_at_cycle:,} | {job} | {label} | {_ms(min(b))} "
                        f"| {_ms(min(a))} | **{min(b) / min(a):.2f}x** "
                        f"| {min(ratios):.2f}-{max(ratios):.2f}x |"
                    )
            same = {x["cycle"]["hops"] for x in r.before + r.after}
            swept = {x["sweep"]["collected"] for x in r.before + r.after}
            lines.append(
                f"| {r.concepts_at_cycle:,} | check | hops / collected, every round, both "
                f"versions | {sorted(same)} / {sorted(swept)} | | | |"
            )
            digests = {
                (x["cycle"].get("digest"), x["sweep"].get("digest")) for x in r.before + r.after
            }
            verdict = "identical" if len(digests) == 1 else f"{len(digests)} different"
            lines.append(
                f"| {r.concepts_at_cycle:,} | check | decisions (digest of the plan and the "
                f"sweep), every round, both versions | {verdict} | | | |"
            )
    return lines


def _recall_lines(r: RecallResult) -> list[str]:
    lines = [
        "",
        f"**lambo_recall while the jobs run** ({r.size:,} concepts with vectors, "
        f"{r.vectors:,} concept vectors; session built in {r.build_s:.0f} s, the follower "
        f"embedded it in {r.embed_s:.0f} s; {len(r.idle[0])} queries per block, the query "
        "embedding forgotten before each; ms)",
        "",
        "| round | planned in | idle p50 / p95 | cycles + sweeps running p50 / p95 "
        "| **p50 ratio** | **p95 ratio** | cycles / sweeps during the block |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    blocks = (("the worker", r.busy, r.jobs_done), ("this process", r.busy_here, r.jobs_done_here))
    for number, idle in enumerate(r.idle):
        for where, busy_blocks, done_blocks in blocks:
            busy, done = busy_blocks[number], done_blocks[number]
            lines.append(
                f"| {number + 1} | {where} | {percentile(idle, 50):.1f} / "
                f"{percentile(idle, 95):.1f} "
                f"| {percentile(busy, 50):.1f} / {percentile(busy, 95):.1f} "
                f"| **{percentile(busy, 50) / percentile(idle, 50):.2f}x** "
                f"| **{percentile(busy, 95) / percentile(idle, 95):.2f}x** "
                f"| {done[0]} / {done[1]} |"
            )
    idle = [x for block in r.idle for x in block]
    for where, busy_blocks, _ in blocks:
        busy = [x for block in busy_blocks for x in block]
        lines.append(
            f"| all | {where} | {percentile(idle, 50):.1f} / {percentile(idle, 95):.1f} "
            f"| {percentile(busy, 50):.1f} / {percentile(busy, 95):.1f} "
            f"| **{percentile(busy, 50) / percentile(idle, 50):.2f}x** "
            f"| **{percentile(busy, 95) / percentile(idle, 95):.2f}x** "
            f"| concepts {r.concepts[0]:,} -> {r.concepts[1]:,} |"
        )
    return lines


def no_machine_paths(text: str) -> str:
    """The profile's file names relative to the repository, or to the Python installation."""
    text = text.replace(str(BENCH.parent) + os.sep, "")
    return re.sub(r"\S*/lib/python3\.\d+/", "<python>/", text)
