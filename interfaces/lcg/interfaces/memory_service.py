"""The memory side of a serving process: admission, receipts, soft locks, waits (ADR 0026).

One per workspace open for writing, for the session the process serves. A write is admitted
against the queue bounds (64 outstanding per agent, 1,024 per process), given a receipt,
resolved and appended as a durable intent in the writer's batch, and handed to the intent
processor; the processor's outcomes settle the receipts, which are delivered on the owner's
next response (at most 8) or through lambo_stats. Receipts this process does not hold are
answered from the memory projection, that is from the log.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

from lcg.commands.memory_jobs import JobCounters, MemoryJobs
from lcg.commands.memory_processor import IntentProcessor
from lcg.commands.writer import WriteContext, Writer
from lcg.domain.events import MemoryAccessed
from lcg.domain.ids import GroupId
from lcg.domain.memory import evidence, limits
from lcg.domain.memory.canonization import Transition
from lcg.domain.memory.context import quote
from lcg.domain.memory.gc import Sweep
from lcg.domain.memory.locks import SoftLocks
from lcg.domain.memory.receipts import (
    DropCause,
    IntentRecord,
    JsonValue,
    Piggyback,
    ReceiptAnswer,
    ReceiptBook,
    ReceiptId,
    ReceiptState,
)
from lcg.projections.canonization import state as canon
from lcg.projections.embedding.port import EmbeddingContract
from lcg.projections.memory import evidence as memory_evidence
from lcg.projections.memory import state
from lcg.projections.memory.state import WriteRow

Reader = Callable[[], Any]  # this thread's read connection of graph.sqlite (Workspace.reader)
STALE_REPORT_BYTES = 2048  # ids, cited ids and snippets of a receipt's stale rows (M-STL-016)
ACCESS_FLUSH_SECONDS = 1.0  # how long recalls' access counts wait before one event
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Admitted:
    """A write's receipt and whether it was dropped (which bound refused it)."""

    receipt: ReceiptId
    dropped: DropCause | None
    retry_after_ms: int = 0  # a dropped write: when to send it again


def _settled_fields(outcome: dict[str, Any]) -> dict[str, JsonValue]:
    """The receipt object's keys on applied (M-STA-081)."""
    fields: dict[str, JsonValue] = {
        "created": list(outcome["created"]),
        "matched": list(outcome["matched"]),
        "created_count": outcome["created_count"],
        "matched_count": outcome["matched_count"],
        "semantic_merged": outcome["semantic_merged"],
        "reinforced": outcome["reinforced"],
        "edges": outcome["edges_count"],
        "embedded": outcome["embedded"],
    }
    if "action_node" in outcome:
        fields["action_node"] = outcome["action_node"]
    if "replacement_candidates" in outcome:
        fields["replacement_candidates"] = outcome["replacement_candidates"]
    return fields


def _lines(outcome: dict[str, Any]) -> tuple[str, ...]:
    """The receipt text's lines after its state line: one per replacement candidate."""
    return tuple(outcome.get("candidate_lines", ()))


def record_of(row: WriteRow, *, this_process: bool) -> IntentRecord:
    """What the log says about a write, as a receipt state (ADR 0026)."""
    if row.state == "pending":
        owed = ReceiptState.PENDING if this_process else ReceiptState.PENDING_REPLAY
        return IntentRecord(owed, row.agent_id, row.group_id)
    if row.state == "failed":
        return IntentRecord(ReceiptState.FAILED, row.agent_id, row.group_id, detail=row.summary)
    assert row.outcome is not None
    applied = (
        ReceiptState.APPLIED
        if this_process and not row.after_restart
        else ReceiptState.APPLIED_AFTER_RESTART
    )
    return IntentRecord(
        applied,
        row.agent_id,
        row.group_id,
        detail=row.summary,
        lines=_lines(row.outcome),
        fields=_settled_fields(row.outcome),
    )


class MemoryService:
    """Admission, receipts, locks and waits of the session one process serves."""

    def __init__(
        self,
        session: GroupId,
        writer: Callable[[], Writer],
        reader: Reader,
        processor: IntentProcessor,
        clock: Callable[[], datetime],
        promotion_policy: str = "Swarm",
        jobs: MemoryJobs | None = None,
    ) -> None:
        self.session = session
        self.jobs = jobs
        self._scheduler: BackgroundScheduler | None = None
        self._writer = writer
        self._reader = reader
        self.processor = processor
        self.clock = clock
        self.promotion_policy = promotion_policy
        self._lock = threading.RLock()
        self.book = ReceiptBook(intents=self._from_log)
        self.locks = SoftLocks()
        self._waits = 0
        self._waits_by_agent: dict[str, int] = {}
        self._accessed: Counter[str] = Counter()  # recalls' access counts not yet in the log
        self._accessed_since: float | None = None  # monotonic time of the oldest one
        processor.listeners.append(self._settled)
        processor.periodic.append(self.flush_accesses)

    def jobs_or_fail(self) -> MemoryJobs:
        """The session's canonization and GC jobs (a writer-open workspace always has them)."""
        if self.jobs is None:
            raise RuntimeError("this memory service runs no jobs")
        return self.jobs

    # -- writes ---------------------------------------------------------------------------

    def admit(self, agent_id: str, accept: Callable[[WriteContext, str], None]) -> Admitted:
        """Give the write a receipt and append its intent (`accept` resolves and appends it,
        or raises a refusal, after which no receipt was handed out). Over a bound the write
        is dropped: nothing is written."""
        now = self.clock()
        with self._lock:
            dropped = self._over_bound(agent_id)
            if dropped is not None:
                self.processor.counters.dropped += 1
                if dropped is DropCause.CLOSED:
                    self.processor.counters.dropped_closed += 1
                return Admitted(
                    self.book.drop(agent_id, self.session, dropped, now),
                    dropped,
                    self.processor.retry_after_ms(),
                )
            receipt = self.book.issue(agent_id, self.session, now)
            self.processor.admitted(str(receipt), agent_id)  # before the processor can see it
        try:
            self._writer().execute(lambda ctx: accept(ctx, str(receipt)))
        except BaseException:
            with self._lock:
                self.processor.withdrawn(str(receipt), agent_id)
                self.book.withdraw(receipt)
            raise
        self.processor.appended()
        return Admitted(receipt, None)

    def _over_bound(self, agent_id: str) -> DropCause | None:
        if self.processor.stopping():
            return DropCause.CLOSED
        if self.processor.outstanding(agent_id) >= limits.WRITE_QUEUE_LANE_BOUND:
            return DropCause.LANE
        if self.processor.outstanding() >= limits.WRITE_QUEUE_BOUND:
            return DropCause.QUEUE
        return None

    def _settled(self, receipt: str, outcome_state: str, outcome: dict[str, Any] | None) -> None:
        """The processor applied (or refused) a write: settle the receipt this process holds."""
        if outcome_state not in ("applied", "failed"):
            return
        asked = ReceiptId.parse(receipt)
        if asked.epoch != self.book.epoch:
            return  # a previous process's: the log answers for it
        now = self.clock()
        stale = (
            None
            if outcome_state != "applied" or outcome is None
            else self._stale_report(outcome, now)
        )
        with self._lock:
            if outcome_state == "applied":
                assert outcome is not None
                fields = _settled_fields(outcome)
                lines = _lines(outcome)
                if stale is not None:
                    fields["stale_report"] = stale[0]
                    lines = (*lines, *stale[1])
                self.book.settle(
                    asked,
                    ReceiptState.APPLIED,
                    now,
                    detail=outcome["summary"],
                    lines=lines,
                    fields=fields,
                )
            else:
                reason = None if outcome is None else outcome.get("summary")
                self.book.settle(asked, ReceiptState.FAILED, now, detail=reason)

    def _stale_report(
        self, outcome: dict[str, Any], now: datetime
    ) -> tuple[dict[str, JsonValue], tuple[str, ...]] | None:
        """A write carrying `against`: the direct citations of what it contradicted that are
        stale as it settles (M-STL-014..018): at most 50 rows within 2,048 bytes of ids and
        snippets, the true total, and a text line per row. None without a contradiction."""
        targets = [e["target"] for e in outcome.get("edges", []) if e["kind"] == "contradicts"]
        if not targets:
            return None
        conn = self._reader()
        found = memory_evidence.load(conn, self.session, targets)
        rows = evidence.stale_rows(
            found.concepts.values(),
            found.contradictions,
            found.support,
            now,
            targets=[evidence.ConceptId(t) for t in targets],
        )
        nodes = state.nodes_by_uuid(conn, [row.dependent for row in rows[:50]])
        shown: list[JsonValue] = []
        lines: list[str] = [f"stale report: {len(rows)} citation(s) rest on what this contradicted"]
        used = 0
        for row in rows[:50]:
            snippet = quote(nodes[row.dependent].content) if row.dependent in nodes else ""
            size = len(f"{row.dependent}{row.cited}{snippet}".encode())
            if used + size > STALE_REPORT_BYTES:
                break
            used += size
            shown.append({"node_id": row.dependent, "content": snippet, "cited_id": row.cited})
            lines.append(f'  - {row.dependent} "{snippet}" rests on {row.cited}')
        return {"rows": shown, "total": len(rows)}, tuple(lines)

    # -- access counts --------------------------------------------------------------------

    def note_access(self, nodes: Iterable[str]) -> None:
        """A recall returned these concepts: counted in memory, appended by the processor's
        thread within about a second as one MemoryAccessed event (ADR 0027)."""
        with self._lock:
            before = len(self._accessed)
            self._accessed.update(nodes)
            if before == 0 and self._accessed:
                self._accessed_since = time.monotonic()

    def flush_accesses(self, min_age: float = ACCESS_FLUSH_SECONDS) -> None:
        """Append the counts waiting for at least `min_age` seconds (none in a pinned session:
        they are dropped, as a replay to a pin shows the session as it was)."""
        with self._lock:
            since = self._accessed_since
            if not self._accessed or since is None or time.monotonic() - since < min_age:
                return
            counts, self._accessed = dict(self._accessed), Counter()
            self._accessed_since = None
        now = self.clock()

        def append(ctx: WriteContext) -> None:
            if not ctx.is_pinned(self.session):
                ctx.append(self.session, [MemoryAccessed(now, counts)])

        self._writer().execute(append)

    def flush_lag_ms(self) -> int:
        """How long the oldest access count has waited for the log (0: nothing waits); every
        acknowledged write is in the log when it is acked (ADR 0026)."""
        with self._lock:
            since = self._accessed_since
        return 0 if since is None else int((time.monotonic() - since) * 1000)

    # -- receipts -------------------------------------------------------------------------

    def _from_log(self, asked: ReceiptId) -> IntentRecord | None:
        conn = self._reader()
        row = state.write(conn, str(asked))
        if row is None:
            return None
        return record_of(row, this_process=asked.epoch == self.book.epoch)

    def lookup(self, receipt: str, agent_id: str, wait_ms: int) -> ReceiptAnswer:
        """lambo_stats's receipt object, after waiting up to `wait_ms` for it to settle."""
        asked = ReceiptId.parse(receipt)
        if wait_ms > 0 and self._pending(str(asked)):
            with self._wait_slot(agent_id) as granted:
                if granted:
                    self.processor.wait(lambda: not self._pending(str(asked)), wait_ms / 1000)
        with self._lock:
            return self.book.lookup(asked, agent_id, self.session, self.clock())

    def _pending(self, receipt: str) -> bool:
        """Whether the write is still owed: this process's receipt not yet settled in the
        book, or an earlier process's intent without an outcome in the log."""
        asked = ReceiptId.parse(receipt)
        if asked.epoch == self.book.epoch:
            with self._lock:
                return asked in self.book.outstanding()
        conn = self._reader()
        row = state.write(conn, receipt)
        return row is not None and row.state == "pending"

    @contextmanager
    def _wait_slot(self, agent_id: str) -> Iterator[bool]:
        """One of the 16 waits per process and 8 per agent; over either, no wait (the seed)."""
        with self._lock:
            granted = (
                self._waits < limits.MAX_WAITS_PER_SERVER
                and self._waits_by_agent.get(agent_id, 0) < limits.MAX_WAITS_PER_AGENT
            )
            if granted:
                self._waits += 1
                self._waits_by_agent[agent_id] = self._waits_by_agent.get(agent_id, 0) + 1
        try:
            yield granted
        finally:
            if granted:
                with self._lock:
                    self._waits -= 1
                    left = self._waits_by_agent[agent_id] - 1
                    if left:
                        self._waits_by_agent[agent_id] = left
                    else:
                        del self._waits_by_agent[agent_id]

    def piggyback(self, agent_id: str) -> Piggyback:
        """The settled receipts this agent's next response carries (at most 8)."""
        with self._lock:
            return self.book.take_piggyback(agent_id, self.session, self.clock())

    def retained(self) -> int:
        with self._lock:
            return self.book.retained(self.clock())

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the service's lock (the soft locks are not thread-safe on their own)."""
        with self._lock:
            yield

    def stats(self, contract: EmbeddingContract) -> dict[str, Any]:
        """lambo_stats's session payload (M-STA; ADR 0026 for what each figure means here)."""
        conn = self._reader()
        counts = state.counts(conn, self.session)
        (log_depth,) = conn.execute(
            "SELECT COUNT(*) FROM memory_writes WHERE group_id=? AND state='pending'",
            (self.session,),
        ).fetchone()
        counters = self.processor.counters
        jobs = self.jobs.counters if self.jobs is not None else JobCounters()
        clock = canon.clock(conn, self.session)
        samples = sorted(counters.apply_ms)
        outstanding = self.processor.outstanding()
        degraded = self.processor.failure is not None or bool(self._writer().faults())
        with self._lock:
            flush_depth = len(self._accessed)
        payload: dict[str, Any] = {
            "session": self.session,
            "agent": "lcg",  # the serving process; callers' ids are their own (ADR 0026)
            "epoch": f"{self.book.epoch:016x}",  # this process's receipt epoch
            "flush_lag_ms": self.flush_lag_ms(),
            "flush_depth": flush_depth,
            "log_depth": int(log_depth),
            "write_queue_depth": outstanding,
            **counts,
            "daemon_cycles": jobs.daemon_cycles,
            "canonization_cycles": jobs.canonization_cycles,
            "canonization_failures": jobs.canonization_failures,
            "canonical_count": canon.canonical_count(conn, self.session),
            "dead_lettered": 0,
            "degraded": degraded,
            "promotion_policy": self.promotion_policy,
            "embedding_contract": {
                "kind": contract.kind,
                "model": contract.model,
                "dim": contract.dim,
            },
            "embedding_modalities": ["text"],
            "gc": {
                "last_gc_at": None if clock.last_gc_at is None else _rfc3339(clock.last_gc_at),
                "last_gc_epoch": clock.last_gc_epoch,
                "last_sweep": None
                if jobs.last_sweep is None
                else dataclasses.asdict(jobs.last_sweep),
            },
            "write_queue_bound": limits.WRITE_QUEUE_BOUND,
            "write_queue_lane_bound": limits.WRITE_QUEUE_LANE_BOUND,
            "write_queue_measured": bool(samples),
            "write_queue_bound_source": "observed" if samples else "unmeasured",
            "write_queue_items_per_sec": None,
            "write_queue_serial_items_per_sec": None,
            "write_queue_probe_serial_items_per_sec": None,
            "write_queue_probe_optimism": None,
            "write_queue_apply_samples": len(samples),
            "write_queue_apply_ms_p50": _percentile(samples, 0.5),
            "write_queue_apply_ms_p90": _percentile(samples, 0.9),
            "write_queue_apply_ms_max": samples[-1] if samples else None,
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
            "receipts_retained": self.retained(),
        }
        return payload

    @staticmethod
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

    def schedule(self, tick: timedelta) -> None:
        """Start the canonization cycle (every `eval_interval`, the first one interval after
        start) and the daemon tick on apscheduler's thread pool: one instance of each at a
        time, missed runs coalesced into one (ENGINEERING-NOTES: Scheduler)."""
        if self.jobs is None or self._scheduler is not None:
            return
        jobs = self.jobs
        scheduler = BackgroundScheduler(
            job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        )
        scheduler.add_job(
            _logged(
                jobs.run_cycle,
                "canonization cycle",
                lambda hops: _cycle_outcome(self.session, hops),
            ),
            "interval",
            seconds=jobs.knobs.eval_interval.total_seconds(),
            id="canonization",
        )
        scheduler.add_job(
            _logged(jobs.tick, "daemon tick", lambda sweep: _sweep_outcome(self.session, sweep)),
            "interval",
            seconds=tick.total_seconds(),
            id="tick",
        )
        scheduler.start()
        self._scheduler = scheduler

    def close(self) -> None:
        """Stop the jobs (a running one finishes: each appends all of its events or none),
        then the processor; writes still pending stay durable intents for the next start.
        Access counts waiting are appended first (a failure to is logged: they are counts)."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
        self.processor.stop()
        try:
            self.flush_accesses(min_age=0.0)
        except Exception:
            log.exception("the access counts of session %r could not be appended", self.session)
        now = self.clock()
        with self._lock:
            for receipt in self.book.outstanding():
                self.book.settle(receipt, ReceiptState.INTENT_DURABLE, now)


def _rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _sweep_text(sweep: dict[str, Any] | None) -> str:
    if sweep is None:
        return "none in this process"
    return (
        f"{sweep['trigger']}: {sweep['collected']} collected, {sweep['deferred']} deferred "
        f"(cap {sweep['collection_cap']}), {sweep['resources_spared_by_dependents']} resources "
        f"spared, {sweep['survivors_deferred']} survivor bumps pending"
    )


T = TypeVar("T")


def _cycle_outcome(session: str, hops: tuple[Transition, ...]) -> str | None:
    """The line a cycle that moved concepts logs (one that moved none logs nothing)."""
    if not hops:
        return None
    moves = Counter(f"{hop.from_status.value} -> {hop.to_status.value}" for hop in hops)
    moved = ", ".join(f"{count} {move}" for move, count in sorted(moves.items()))
    return f"canonization cycle of session {session!r}: {len(hops)} concept(s) moved ({moved})"


def _sweep_outcome(session: str, sweep: Sweep | None) -> str | None:
    """The line a sweep that collected logs (a tick that swept nothing logs nothing)."""
    if sweep is None or not sweep.collected:
        return None
    return (
        f"gc sweep of session {session!r} ({sweep.trigger}): {len(sweep.collected)} "
        f"collected, {len(sweep.deferred)} deferred"
    )


def _logged(
    job: Callable[[], T], name: str, outcome: Callable[[T], str | None]
) -> Callable[[], None]:
    """A job for the scheduler: what a run did is logged at info when it did something (a
    tick that changed nothing says nothing: ADR 0054); a failure is logged once per distinct
    message and the next run tries again (the cycle counts it in canonization_failures)."""
    last: list[str] = []

    def run() -> None:
        try:
            line = outcome(job())
            if line is not None:
                log.info("%s", line)
        except Exception as error:
            text = f"{type(error).__name__}: {error}"
            if last != [text]:
                log.exception("the %s failed", name)
                last[:] = [text]

    return run


def _percentile(samples: list[float], fraction: float) -> float | None:
    if not samples:
        return None
    return round(samples[min(len(samples) - 1, int(fraction * len(samples)))], 3)
