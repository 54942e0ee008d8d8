"""The scheduled memory jobs of one session: the canonization cycle and the daemon tick
(issue 13, ADR 0031).

A job reads the projections, decides with the pure domain rules
(`lcg.domain.memory.canonization`, `lcg.domain.memory.gc`) and appends what it decided as
events through the writer; it never writes a projection itself, so a replay reproduces every
status, collection and history row without running a policy again.

- `run_cycle`: one canonization cycle. The snapshot is read with no lock held; in the writer's
  batch each hop is re-checked against the concept's current status (a concept that moved or
  left meanwhile is skipped) and the cycle's hops are appended as one `ConceptsCanonized`
  event: a killed process leaves the whole cycle or none of it.
- `tick`: the daemon tick. It starts the session's GC clock, drains pending survivor bumps
  (`GcBumped`, at most `bump_chunk` per tick) and, when a trigger holds, sweeps. A sweep is
  planned inside the writer's batch (no write can land between what it read and what it
  collects) and appended as one `GcSwept` event.

A pinned session (a bounded replay holds it) runs no job. Cursors and pending bumps live in
memory and are lost on restart, as upstream's (canonization.md §12.3).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from lcg.commands import job_planner
from lcg.commands.job_planner import Planner
from lcg.commands.tenure import Tenure
from lcg.commands.writer import WriteContext, Writer
from lcg.domain.events import ConceptsCanonized, GcBumped, GcClockStarted, GcSwept
from lcg.domain.ids import GroupId
from lcg.domain.memory import evidence
from lcg.domain.memory.canonization import (
    Cursors,
    CyclePlan,
    Knobs,
    Transition,
)
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc import (
    GcKnobs,
    LastSweep,
    Sweep,
    Trigger,
    anchor_gc_clock,
    drain_bumps,
    should_sweep,
)
from lcg.domain.memory.records import CanonHop, Collected, SweepFigures
from lcg.projections.canonization import state as canon
from lcg.projections.memory import evidence as memory_evidence

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class JobCounters:
    """What lambo_stats reports about this process's jobs (counted per process)."""

    canonization_cycles: int = 0  # cycles that completed or failed
    canonization_failures: int = 0
    daemon_cycles: int = 0
    sweeps_replanned: int = 0  # planned again in the writer's batch: a write came between
    last_sweep: LastSweep | None = None
    warnings: tuple[str, ...] = ()


def transition_payload(hop: Transition) -> CanonHop:
    """A hop as `ConceptsCanonized.transitions` carries it."""
    return CanonHop(
        hop.node_id,
        hop.from_status.value,
        hop.to_status.value,
        hop.blast_radius,
        hop.cause.value,
        None if hop.last_demotion_time is None else hop.last_demotion_time.isoformat(),
        hop.superseded_by,
    )


def sweep_event(sweep: Sweep, now: datetime, epoch: int) -> GcSwept:
    figures = sweep.last_sweep()
    return GcSwept(
        now,
        sweep.trigger.value,
        tuple(Collected(c.node_id, c.reason.value) for c in sweep.collected),
        list(sweep.deferred),
        list(sweep.bumps),
        SweepFigures(
            figures.collected,
            figures.deferred,
            figures.collection_cap,
            figures.cap_bound,
            figures.resources_spared_by_dependents,
            figures.survivors_deferred,
        ),
        epoch,
    )


class MemoryJobs:
    """The canonization cycle and the daemon tick for one session; one job at a time."""

    def __init__(
        self,
        writer: Writer,
        reader: Callable[[], sqlite3.Connection],
        session: GroupId,
        knobs: Knobs,
        gc_knobs: GcKnobs,
        clock: Callable[[], datetime],
        graph_path: str | None = None,
    ) -> None:
        """With `graph_path`, cycles and sweeps are planned in the planning worker process
        (ADR 0045); without, in this process."""
        self.writer = writer
        self._reader = reader
        self.session = session
        self.knobs = knobs
        self.gc_knobs = gc_knobs
        self._clock = clock
        self.cursors = Cursors()
        self.pending_bumps: tuple[ConceptId, ...] = ()
        # The daemon's contradiction list (seed 001 "When it fires"): the concepts whose
        # Contradicted warning recall shows, as of the last tick; None until a tick ran (then
        # recall evaluates the rule itself: one-shot commands and tests run no daemon).
        self.contradiction_list: frozenset[str] | None = None
        self._seen: _Contradicted | None = None
        self.counters = JobCounters()
        self._lock = threading.Lock()
        self.planner = Planner(graph_path, reader, GilYield())
        # On a shared PostgreSQL log: the session's jobs lease (ADR 0085). Scheduled runs
        # happen only while this node holds it, and every batch they write is fenced by it.
        self.tenure: Tenure | None = None

    def held(self) -> bool:
        """Whether this node runs the session's scheduled jobs (always, without a tenure)."""
        return self.tenure is None or self.tenure.fence() is not None

    def _execute(self, handler: Callable[[WriteContext], T]) -> T:
        fence = None if self.tenure is None else self.tenure.fence()
        return self.writer.execute(handler, fence=fence)

    # -- the canonization cycle -----------------------------------------------------------

    def run_cycle(self) -> tuple[Transition, ...]:
        """One cycle now: the hops it appended (empty when nothing moved)."""
        with self._lock:
            now = self._clock()
            try:
                plan = self._plan_cycle(now)
                applied = self._append_cycle(plan.transitions, now)
            except Exception:
                self.counters.canonization_cycles += 1
                self.counters.canonization_failures += 1
                raise
            self.cursors = plan.cursors
            self.counters.canonization_cycles += 1
            return applied

    def _plan_cycle(self, now: datetime) -> CyclePlan:
        """A plan from one snapshot, with no lock held (job_planner.plan_cycle)."""
        return self.planner.cycle(self.session, self.knobs, self.gc_knobs, self.cursors, now)

    def _append_cycle(self, hops: tuple[Transition, ...], now: datetime) -> tuple[Transition, ...]:
        if not hops:
            return ()

        def handler(ctx: WriteContext) -> tuple[Transition, ...]:
            if ctx.is_pinned(self.session):
                return ()
            current = canon.statuses(ctx.conn, [hop.node_id for hop in hops])
            alive = _existing(ctx.conn, [hop.node_id for hop in hops])
            kept: list[Transition] = []
            for hop in hops:  # one hop per concept per cycle (the plan's snapshot rule)
                if hop.node_id in alive and current[hop.node_id] == hop.from_status.value:
                    kept.append(hop)
                    current[hop.node_id] = hop.to_status.value
            if kept:
                payload = tuple(transition_payload(hop) for hop in kept)
                ctx.append(self.session, [ConceptsCanonized(now, payload)])
            return tuple(kept)

        return self._execute(handler)

    # -- the daemon tick ------------------------------------------------------------------

    def tick(self) -> Sweep | None:
        """One daemon tick: start the GC clock, drain bumps, sweep when a trigger holds."""
        with self._lock:
            self.counters.daemon_cycles += 1
            now = self._clock()
            conn = self._reader()
            try:
                conn.execute("BEGIN")  # one snapshot: the position read is the rows read
                clock = canon.clock(conn, self.session)
                self.contradiction_list = self._contradicted(conn, now)
            finally:
                conn.close()
            if clock.epoch == 0:  # a session nothing was written to has no GC clock
                return None
            last_gc_at = clock.last_gc_at
            anchored = anchor_gc_clock(last_gc_at, now, self.gc_knobs)
            if anchored is not None:
                self._append_simple(GcClockStarted(anchored))
                last_gc_at = anchored
            if self.pending_bumps:
                self._drain(now)
                return None
            trigger = should_sweep(
                clock.epoch - clock.last_gc_epoch, last_gc_at, now, self.gc_knobs
            )
            if trigger is None:
                return None
            return self._sweep(trigger, now, dry_run=False)

    def _contradicted(self, conn: sqlite3.Connection, now: datetime) -> frozenset[str]:
        """The contradiction list at `now`; the last tick's while the session's memory rows are
        the ones it read and the clock has not reached the rule's next change (an idle tick of
        a 100k-concept session then reads two rows instead of every contradiction's evidence)."""
        position = canon.memory_position(conn, self.session)
        seen = self._seen
        if (
            seen is not None
            and position is not None
            and seen.position == position
            and seen.at <= now
            and (seen.until is None or now < seen.until)
        ):
            return seen.found
        found, until = contradicted_until(conn, self.session, now, self.knobs)
        self._seen = _Contradicted(position, now, until, found)
        return found

    def sweep(self, trigger: Trigger = Trigger.MUTATIONS, *, dry_run: bool = False) -> Sweep:
        """A sweep now, whatever the triggers say (`lcg gc run`); `dry_run` appends nothing."""
        with self._lock:
            now = self._clock()
            self.pending_bumps = ()  # a new sweep re-judges every survivor
            swept = self._sweep(trigger, now, dry_run=dry_run)
            assert swept is not None
            return swept

    def _sweep(self, trigger: Trigger, now: datetime, *, dry_run: bool) -> Sweep | None:
        """Planned from a snapshot with the writer free; in the writer's batch it is appended
        as planned while the projections are still where the snapshot was read, and planned
        again there otherwise (a write landed meanwhile), so no write ever lands between
        what a sweep read and what it collects."""
        planned = self.planner.sweep(self.session, self.gc_knobs, now, trigger)
        if dry_run:
            return planned.sweep

        def handler(ctx: WriteContext) -> Sweep | None:
            if ctx.is_pinned(self.session):
                return None
            if None not in planned.positions and (
                job_planner.positions(ctx.conn, self.session) == planned.positions
            ):
                sweep, epoch = planned.sweep, planned.epoch
            else:
                self.counters.sweeps_replanned += 1
                sweep, epoch = job_planner.plan_sweep_over(
                    ctx.conn, self.session, self.gc_knobs, now, trigger, self.planner.pause
                )
            ctx.append(self.session, [sweep_event(sweep, now, epoch)])
            return sweep

        swept = self._execute(handler)
        if swept is not None:
            self.pending_bumps = swept.pending_bumps
            self.counters.last_sweep = swept.last_sweep()
            self.counters.warnings = swept.warnings
            for warning in swept.warnings:
                log.warning("session %s: %s", self.session, warning)
        return swept

    def _drain(self, now: datetime) -> None:
        chunk, rest = drain_bumps(self.pending_bumps, self.gc_knobs)

        def handler(ctx: WriteContext) -> None:
            if ctx.is_pinned(self.session):
                return
            alive = _existing(ctx.conn, chunk)
            bumped = [str(node) for node in chunk if node in alive]
            if bumped:
                ctx.append(self.session, [GcBumped(now, bumped)])

        self._execute(handler)
        self.pending_bumps = rest

    def _append_simple(self, event: GcClockStarted) -> None:
        def handler(ctx: WriteContext) -> None:
            if not ctx.is_pinned(self.session):
                ctx.append(self.session, [event])

        self._execute(handler)


class GilYield:
    """A job's pause between chunks of pure-Python work: every few milliseconds it lets a
    thread waiting for the GIL (a lambo_recall on the serving process) take it, before the
    interpreter's 5 ms switch interval would. Each pause is a system call, and on a loaded
    machine it can cost the job its time slice (1-2 ms measured at load 5 on 2 cores), so it
    is not made more often (bench_canon: 1 ms and 3 ms helped recall alike)."""

    def __init__(self, every: float = 0.003) -> None:
        self._every = every
        self._last = time.perf_counter()

    def __call__(self) -> None:
        now = time.perf_counter()
        if now - self._last >= self._every:
            time.sleep(0)  # releases the GIL: a waiting thread takes it
            self._last = time.perf_counter()


@dataclass(frozen=True, slots=True)
class _Contradicted:
    """A tick's contradiction list, what it was read from, and until when it holds."""

    position: int | None  # the memory projection's position in the session
    at: datetime
    until: datetime | None  # the rule's next change over those rows; None: never
    found: frozenset[str]


def contradicted_now(
    conn: sqlite3.Connection, session: str, now: datetime, knobs: Knobs
) -> frozenset[str]:
    """The concepts of the session a Contradicted warning fires on at `now` (the rule of
    lcg.domain.memory.evidence over every contradicted concept)."""
    return contradicted_until(conn, session, now, knobs)[0]


def contradicted_until(
    conn: sqlite3.Connection, session: str, now: datetime, knobs: Knobs
) -> tuple[frozenset[str], datetime | None]:
    """`contradicted_now`, and the instant after `now` until which it holds if the session's
    rows do not change (`evidence.next_change`)."""
    targets = memory_evidence.contradicted_targets(conn, session)
    if not targets:
        return frozenset(), None
    loaded = memory_evidence.load(conn, session, targets)
    fired = evidence.current_contradictions(
        loaded.concepts.values(), loaded.contradictions, loaded.support, now, knobs.edge_min_age
    )
    until = evidence.next_change(loaded.contradictions, loaded.support, now, knobs.edge_min_age)
    return frozenset(fired), until


def _existing(conn: sqlite3.Connection, nodes: Sequence[str]) -> set[str]:
    """Which of `nodes` are still concepts in memory."""
    found: set[str] = set()
    for start in range(0, len(nodes), 500):
        part = list(nodes[start : start + 500])
        marks = ",".join("?" * len(part))
        found.update(
            str(row[0])
            for row in conn.execute(
                f"SELECT uuid FROM memory_nodes WHERE uuid IN ({marks}) AND node_kind='concept'",
                part,
            )
        )
    return found
