"""The operator's handles on the memory jobs (issue 13): `lcg canon status|run|history` and
`lcg gc run`. They are dispatched like every tool (here, or by the service that holds the
workspace) but not advertised over MCP: agents see the seed's tools only.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

from pydantic import Field

from lcg.commands.memory_admission import MemoryService
from lcg.domain.memory.gc import Trigger
from lcg.interfaces.app import App
from lcg.interfaces.params import Params
from lcg.projections.canonization import state as canon
from lcg.projections.memory import state

SessionArg = Annotated[
    str | None,
    Field(default=None, description="The session (default: the one the call is for)."),
]


class CanonParams(Params):
    session: SessionArg = None


class HistoryParams(Params):
    session: SessionArg = None
    node_id: Annotated[
        str | None, Field(default=None, description="One concept's transitions only.")
    ] = None
    limit: Annotated[int, Field(ge=1, le=100_000, description="Newest transitions kept.")] = 1000


class GcParams(Params):
    session: SessionArg = None
    dry_run: Annotated[bool, Field(description="Decide and report, append nothing.")] = False


def _service(app: App, session: str | None) -> MemoryService:
    """The named session's service (None: the call's): the process holding the workspace
    serves every session of it (ADR 0071)."""
    return app.for_session(session).memory


def canon_status(app: App, q: CanonParams) -> dict[str, Any]:
    """The session's canonization: the policy and knobs, concepts per status, this process's
    cycle counters and the GC clock."""
    service = _service(app, q.session)
    jobs = service.jobs_or_fail()
    conn = app.reads.reader()
    per_status = canon.status_counts(conn, service.session)
    clock = canon.clock(conn, service.session)
    counts = state.counts(conn, service.session)
    knobs = jobs.knobs
    return {
        "session": service.session,
        "promotion_policy": knobs.promotion_policy.value,
        "concept_count": counts["concept_count"],
        "statuses": per_status,
        "canonization_cycles": jobs.counters.canonization_cycles,
        "canonization_failures": jobs.counters.canonization_failures,
        "daemon_cycles": jobs.counters.daemon_cycles,
        "knobs": {
            "min_peer_count": knobs.min_peer_count,
            "edge_min_age_secs": knobs.edge_min_age.total_seconds(),
            "eval_interval_secs": knobs.eval_interval.total_seconds(),
            "batch_size": knobs.batch_size,
            "repromotion_cooldown_secs": knobs.repromotion_cooldown.total_seconds(),
            "max_canonical_nodes": knobs.max_canonical_nodes,
            "supersede": knobs.supersede,
            "gc_interval": jobs.gc_knobs.gc_interval,
            "gc_max_interval_secs": jobs.gc_knobs.gc_max_interval.total_seconds(),
            "gc_idle_floor": jobs.gc_knobs.gc_idle_floor,
        },
        "gc": {
            "epoch": clock.epoch,
            "last_gc_epoch": clock.last_gc_epoch,
            "last_gc_at": None if clock.last_gc_at is None else clock.last_gc_at.isoformat(),
            "sweeps": clock.sweeps,
            "collected": clock.collected,
            "survivor_bumps_pending": len(jobs.pending_bumps),
        },
    }


def canon_run(app: App, q: CanonParams) -> dict[str, Any]:
    """Run one canonization cycle now; the transitions it appended."""
    jobs = _service(app, q.session).jobs_or_fail()
    hops = jobs.run_cycle()
    return {
        "transitions": [
            {
                "node_id": hop.node_id,
                "from_status": hop.from_status.value,
                "to_status": hop.to_status.value,
                "blast_radius": hop.blast_radius,
                "cause": hop.cause.value,
            }
            for hop in hops
        ],
        "canonization_cycles": jobs.counters.canonization_cycles,
    }


def canon_history(app: App, q: HistoryParams) -> dict[str, Any]:
    """The session's transitions, oldest first (one concept's with node_id)."""
    service = _service(app, q.session)
    rows = canon.history(app.reads.reader(), service.session, q.node_id, q.limit)
    return {
        "rows": [
            {
                "seq": row.seq,
                "node_id": row.node_id,
                "from_status": row.from_status,
                "to_status": row.to_status,
                "blast_radius": row.blast_radius,
                "cause": row.cause,
                "occurred_at": row.occurred_at.isoformat(),
                "superseded_by": row.superseded_by,
            }
            for row in rows
        ]
    }


def gc_run(app: App, q: GcParams) -> dict[str, Any]:
    """Sweep now, whatever the triggers say; dry_run decides and appends nothing."""
    service = _service(app, q.session)
    jobs = service.jobs_or_fail()
    sweep = jobs.sweep(Trigger.MUTATIONS, dry_run=q.dry_run)
    ids = [c.node_id for c in sweep.collected]
    nodes = state.nodes_by_uuid(app.reads.reader(), ids) if q.dry_run else {}
    return {
        "dry_run": q.dry_run,
        **dataclasses.asdict(sweep.last_sweep()),
        "collected_ids": [
            {
                "node_id": c.node_id,
                "reason": c.reason.value,
                **({"content": nodes[c.node_id].content} if c.node_id in nodes else {}),
            }
            for c in sweep.collected
        ],
        "deferred_ids": list(sweep.deferred),
        "protected": len(sweep.protected),
        "warnings": list(sweep.warnings),
    }
