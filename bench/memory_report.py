"""bench_memory's result types and its markdown report."""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import time
from dataclasses import dataclass, field

from bench.memory_transports import percentile

WARMUP = 20
ACK_AIM = 2.0  # durable ack <= 2x a status call on the same transport
APPLIED_AIM_MS = 20.0  # applied p50 for a one-concept derive on a warm model


@dataclass
class Latency:
    """One transport's samples in one round (ms)."""

    status: list[float] = field(default_factory=list)
    derive: list[float] = field(default_factory=list)
    episode: list[float] = field(default_factory=list)  # knowledge_add_episode, a durable write
    waited: list[float] = field(default_factory=list)  # ack -> the wait_ms answer, client side
    model: list[float] = field(default_factory=list)  # one framed text, the model alone
    processor: tuple[float, float, int] = (0.0, 0.0, 0)  # the server's p50, p90, samples


@dataclass
class Burst:
    status_per_s: float
    acked_per_s: float
    applied_per_s: float
    ack_ms: list[float]


def _mid(values: list[float]) -> float:
    return statistics.median(values)


def report(
    options: argparse.Namespace,
    latencies: dict[str, list[Latency]],
    bursts: dict[tuple[str, int], list[Burst]],
    wall: float,
) -> str:
    load = os.getloadavg()[0]
    lines = [
        f"{time.strftime('%Y-%m-%d')}, {platform.machine()} {os.cpu_count()} cores (load "
        f"average {load:.1f} at the end), Python {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}; bundled MiniLM; {options.repeats} rounds, "
        f"{options.calls} timed iterations per transport after {WARMUP} warm-up ones; "
        f"whole run {wall:.0f} s. Each cell: the median over rounds of that round's figure; "
        "ranges: the per-round ratios.",
        "",
        "**Ack latency** (one-concept `lambo_derive` vs `knowledge_status`, same transport)",
        "",
        "| transport | status p50 / p95 | derive ack p50 / p95 | **derive / status p50** "
        "| p95 ratio | p50 ratio range | aim <= 2x | add_episode ack p50 / p95 "
        "| derive / add_episode p50 |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for label, rounds in latencies.items():
        s50 = _mid([percentile(r.status, 50) for r in rounds])
        s95 = _mid([percentile(r.status, 95) for r in rounds])
        d50 = _mid([percentile(r.derive, 50) for r in rounds])
        d95 = _mid([percentile(r.derive, 95) for r in rounds])
        e50 = _mid([percentile(r.episode, 50) for r in rounds])
        e95 = _mid([percentile(r.episode, 95) for r in rounds])
        ratios = [percentile(r.derive, 50) / percentile(r.status, 50) for r in rounds]
        ratio = _mid(ratios)
        to_episode = _mid([percentile(r.derive, 50) / percentile(r.episode, 50) for r in rounds])
        lines.append(
            f"| {label} | {s50:.2f} / {s95:.2f} ms | {d50:.2f} / {d95:.2f} ms | **{ratio:.1f}x** "
            f"| {_mid([percentile(r.derive, 95) / percentile(r.status, 95) for r in rounds]):.1f}x "
            f"| {min(ratios):.1f}-{max(ratios):.1f}x "
            f"| {'met' if ratio <= ACK_AIM else 'not met'} | {e50:.2f} / {e95:.2f} ms "
            f"| {to_episode:.1f}x |"
        )
    lines += [
        "",
        "**Ack -> applied** (the same iterations; the model alone: one framed text of the same "
        "shape, in the bench process, between iterations)",
        "",
        "| transport | processor's samples p50 / p90 | client: ack -> wait_ms answer p50 / p90 "
        "| model alone p50 / p90 | **applied p50 / model p50** | aim p50 <= 20 ms |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label, rounds in latencies.items():
        p50 = _mid([r.processor[0] for r in rounds])
        p90 = _mid([r.processor[1] for r in rounds])
        w50 = _mid([percentile(r.waited, 50) for r in rounds])
        w90 = _mid([percentile(r.waited, 90) for r in rounds])
        m50 = _mid([percentile(r.model, 50) for r in rounds])
        m90 = _mid([percentile(r.model, 90) for r in rounds])
        ratios = [r.processor[0] / percentile(r.model, 50) for r in rounds]
        lines.append(
            f"| {label} | {p50:.1f} / {p90:.1f} ms | {w50:.1f} / {w90:.1f} ms "
            f"| {m50:.1f} / {m90:.1f} ms | **{_mid(ratios):.2f}x** "
            f"({min(ratios):.2f}-{max(ratios):.2f}) "
            f"| {'met' if p50 <= APPLIED_AIM_MS else 'not met'} |"
        )
    # the model's one-text rate in each round: the median of that round's transports
    rates = [
        1000 / _mid([percentile(runs[r].model, 50) for runs in latencies.values()])
        for r in range(options.repeats)
    ]
    lines += [
        "",
        f"**Derives per second** ({options.derives} derives per agent, back to back; the "
        f"model alone: {_mid(rates):.0f} texts/s one at a time, from the rows above)",
        "",
        "| agents | transport | status calls/s | derives acked/s | **acked / status** "
        "| ack p50 / p95 under load | applied/s end to end | **applied / model rate** |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (label, agents), runs in sorted(bursts.items(), key=lambda item: item[0][1]):
        status = _mid([b.status_per_s for b in runs])
        acked = _mid([b.acked_per_s for b in runs])
        applied = _mid([b.applied_per_s for b in runs])
        a50 = _mid([percentile(b.ack_ms, 50) for b in runs])
        a95 = _mid([percentile(b.ack_ms, 95) for b in runs])
        ratio = _mid([b.acked_per_s / b.status_per_s for b in runs])
        of_model = _mid([b.applied_per_s / rate for b, rate in zip(runs, rates, strict=True)])
        lines.append(
            f"| {agents} | {label} | {status:,.0f} | {acked:,.0f} | **{ratio:.2f}x** "
            f"| {a50:.1f} / {a95:.1f} ms | {applied:.1f} | **{of_model:.2f}x** |"
        )
    return "\n".join(lines) + "\n"
