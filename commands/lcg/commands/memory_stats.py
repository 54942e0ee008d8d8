"""lambo_stats's session payload and its text (M-STA; ADR 0026 for what each figure means
here): the projection's counts beside the write queue, receipt book and jobs of this process."""

from __future__ import annotations

import dataclasses
import sqlite3
from datetime import UTC, datetime
from typing import Any

from lcg.commands.memory_jobs import JobCounters
from lcg.commands.memory_processor import Counters
from lcg.domain.ids import GroupId
from lcg.domain.memory import limits
from lcg.projections.canonization import state as canon
from lcg.projections.embedding.port import EmbeddingContract
from lcg.projections.memory import state


@dataclasses.dataclass(frozen=True, slots=True)
class ProcessFigures:
    """What this process knows about its session beside the log (read under its locks)."""

    epoch: int  # the receipt book's
    flush_lag_ms: int
    flush_depth: int
    outstanding: int
    degraded: bool
    receipts_retained: int
    promotion_policy: str


def stats_payload(
    conn: sqlite3.Connection,
    session: GroupId,
    figures: ProcessFigures,
    counters: Counters,
    jobs: JobCounters,
    contract: EmbeddingContract,
) -> dict[str, Any]:
    """lambo_stats's structured content (without the receipt)."""
    counts = state.counts(conn, session)
    (log_depth,) = conn.execute(  # the writes recorded, not yet applied: pending intents,
        # and those owed a replay after a transient failure (ADR 0108)
        "SELECT COUNT(*) FROM memory_writes WHERE group_id=? AND state IN ('pending', ?)",
        (session, state.FAILED_TRANSIENT),
    ).fetchone()
    clock = canon.clock(conn, session)
    samples = sorted(counters.apply_ms)
    service = sorted(counters.service_ms)  # one apply on the processor's thread, serially
    outstanding = figures.outstanding
    rates = rate_keys(service, counters)
    payload: dict[str, Any] = {
        "session": session,
        "agent": "lcg",  # the serving process; callers' ids are their own (ADR 0026)
        "epoch": f"{figures.epoch:016x}",  # this process's receipt epoch
        "flush_lag_ms": figures.flush_lag_ms,
        "flush_depth": figures.flush_depth,
        "log_depth": int(log_depth),
        "write_queue_depth": outstanding,
        **counts,
        "daemon_cycles": jobs.daemon_cycles,
        "canonization_cycles": jobs.canonization_cycles,
        "canonization_failures": jobs.canonization_failures,
        "canonical_count": canon.canonical_count(conn, session),
        "dead_lettered": counters.dead_lettered,
        "degraded": figures.degraded,
        "promotion_policy": figures.promotion_policy,
        "embedding_contract": {
            "kind": contract.kind,
            "model": contract.model,
            "dim": contract.dim,
        },
        "embedding_modalities": ["text"],
        "gc": {
            "last_gc_at": None if clock.last_gc_at is None else _rfc3339(clock.last_gc_at),
            "last_gc_epoch": clock.last_gc_epoch,
            "last_sweep": None if jobs.last_sweep is None else dataclasses.asdict(jobs.last_sweep),
        },
        "write_queue_bound": limits.WRITE_QUEUE_BOUND,
        "write_queue_lane_bound": limits.WRITE_QUEUE_LANE_BOUND,
        **rates,
        "write_queue_apply_samples": len(samples),
        "write_queue_apply_ms_p50": _percentile(samples, 0.5),
        "write_queue_apply_ms_p90": _percentile(samples, 0.9),
        "write_queue_apply_ms_max": _percentile(samples, 1.0),  # rounded as p50 and p90 are
        "write_queue_outstanding": outstanding,
        "write_queue_accepted": counters.accepted,
        "write_queue_applied": counters.applied,
        "write_queue_failed": counters.failed,
        "write_queue_abandoned": counters.abandoned,
        "write_queue_deferred": counters.deferred,
        "write_queue_replayed": counters.replayed,
        "write_queue_replay_owed": counters.replay_owed,
        "write_queue_dropped": counters.dropped,
        "write_queue_dropped_closed": counters.dropped_closed,
        "receipts_retained": figures.receipts_retained,
    }
    return payload


def stats_text(payload: dict[str, Any]) -> str:
    """The text summary; it ends with the embedding: line (M-STA-056)."""
    contract = payload["embedding_contract"]
    gc = payload["gc"]
    return "\n".join(
        [
            f"session {payload['session']}: {payload['node_count']} nodes "
            f"({payload['concept_count']} concepts, {payload['interaction_count']} "
            f"interactions), {payload['edge_count']} edges",
            f"flush_lag_ms {payload['flush_lag_ms']}; log depth {payload['log_depth']}; "
            f"write queue {payload['write_queue_outstanding']} outstanding "
            f"(bound {payload['write_queue_bound']}, lane {payload['write_queue_lane_bound']}),"
            f" {payload['write_queue_applied']} applied, {payload['write_queue_failed']} "
            f"failed, {payload['write_queue_dropped']} dropped, "
            f"{payload['write_queue_replay_owed']} owed from a previous server",
            f"degraded: {'yes' if payload['degraded'] else 'no'}; promotion_policy: "
            f"{payload['promotion_policy']}; canonical {payload['canonical_count']} after "
            f"{payload['canonization_cycles']} canonization cycle(s)",
            f"gc: last_gc_at {gc['last_gc_at'] or 'never'}, last_gc_epoch "
            f"{gc['last_gc_epoch']}, last sweep {_sweep_text(gc['last_sweep'])}",
            f"embedding: {contract['kind']} {contract['model']} {contract['dim']}-d; "
            f"modalities {', '.join(payload['embedding_modalities'])}",
        ]
    )


def _rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _sweep_text(sweep: dict[str, Any] | None) -> str:
    if sweep is None:
        return "none in this process"
    return (
        f"{sweep['trigger']}: {sweep['collected']} collected, {sweep['deferred']} deferred "
        f"(cap {sweep['collection_cap']}, {'bound' if sweep['cap_bound'] else 'not bound'}), "
        f"{sweep['resources_spared_by_dependents']} resources "
        f"spared, {sweep['survivors_deferred']} survivor bumps pending"
    )


def rate_keys(service_ms: list[float], counters: Counters) -> dict[str, Any]:
    """The rate keys (M-STA-126..131, ADR 0101): the startup probe's figures until this
    process has timed an apply of its own, then the observed serial rate, with the probe's
    serial figure kept beside it and their ratio. The four-wide figure is only ever the
    probe's (the processor applies one write at a time, so nothing four-wide is observed)."""
    observed = _serial_rate(service_ms)
    probe = counters.probe
    probe_serial = None if probe is None else probe.serial_per_sec
    source = "observed" if observed is not None else "probe" if probe else "unmeasured"
    return {
        "write_queue_measured": source != "unmeasured",
        "write_queue_bound_source": source,
        "write_queue_items_per_sec": None if probe is None else probe.wide_per_sec,
        "write_queue_serial_items_per_sec": observed if observed is not None else probe_serial,
        "write_queue_probe_serial_items_per_sec": probe_serial,
        "write_queue_probe_optimism": (
            None if observed is None or probe_serial is None else round(probe_serial / observed, 3)
        ),
    }


def _serial_rate(service_ms: list[float]) -> float | None:
    """Writes per second one after another, at the median observed apply (M-STA-128)."""
    median = _percentile(service_ms, 0.5)
    return None if not median else round(1000 / median, 1)


def _percentile(samples: list[float], fraction: float) -> float | None:
    if not samples:
        return None
    return round(samples[min(len(samples) - 1, int(fraction * len(samples)))], 3)
