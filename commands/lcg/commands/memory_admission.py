"""The memory side of a serving process (ADR 0026, ADR 0059): the application service the
lambo tools ask, for the session the process serves.

One per workspace open for writing. A write (`derive`, `record_action`) is checked against the
seed's argument rules (`lcg.domain.memory.arguments`), admitted against the queue bounds (64
outstanding per agent, 1,024 per process), given a receipt, decided and appended as a durable
intent in the writer's batch (`lcg.commands.memory`: load, `lcg.domain.memory.intents`, append),
and handed to the intent processor; the processor's outcomes settle the receipts, which are
delivered on the owner's next response (at most 8) or through lambo_stats. Receipts this
process does not hold are answered from the memory projection, that is from the log. Recalls'
access counts are appended from here too, and the session's jobs are scheduled from here.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

from lcg.commands import memory as memory_commands
from lcg.commands import memory_images, memory_schedule, memory_stats
from lcg.commands.memory_jobs import JobCounters, MemoryJobs
from lcg.commands.memory_processor import IntentProcessor
from lcg.commands.memory_receipts import record_of, settled_fields, stale_report
from lcg.commands.writer import WriteContext, Writer
from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.events import MemoryAccessed
from lcg.domain.ids import GroupId
from lcg.domain.memory import arguments, layers, limits, text
from lcg.domain.memory.acks import WriteAck, action_ack, derive_ack
from lcg.domain.memory.arguments import ActionArgs, DeriveArgs
from lcg.domain.memory.client_vectors import Contract
from lcg.domain.memory.image_calls import DeriveImageArgs
from lcg.domain.memory.locks import (
    SoftLocks,
    check_ttl_seconds,
    release_content,
    release_text,
    reservation_content,
    reservation_text,
)
from lcg.domain.memory.receipts import (
    DropCause,
    IntentRecord,
    Piggyback,
    ReceiptAnswer,
    ReceiptBook,
    ReceiptId,
    ReceiptState,
    standard_answer,
    while_layer_down,
)
from lcg.domain.memory.records import WriteOutcome
from lcg.projections.embedding.port import EmbeddingContract
from lcg.projections.memory import state

Reader = Callable[[], Any]  # this thread's read connection of graph.sqlite (Workspace.reader)
ACCESS_FLUSH_SECONDS = 1.0  # how long recalls' access counts wait before one event
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Admitted:
    """A write's receipt and whether it was dropped (which bound refused it)."""

    receipt: ReceiptId
    dropped: DropCause | None
    retry_after_ms: int = 0  # a dropped write: when to send it again


@dataclass(frozen=True, slots=True)
class MemoryReply:
    """A lambo tool's answer as the application gives it: the text models read and the
    structured content, the caller's settled receipts already piggybacked on both."""

    text: str
    content: dict[str, Any]


class Peers(Protocol):
    """The other sessions the process serves (lcg.interfaces.memory_sessions): a layered
    session's scoped calls act on its layers' services (ADR 0080)."""

    def get(self, session: str | None = None) -> MemoryService: ...
    def foreign_epochs(self, of: MemoryService) -> frozenset[int]: ...
    def draw(self, layer: str, kind: Literal["read", "write"]) -> str | None: ...


class MemoryWrites(Protocol):
    """What a memory write tool may ask of the application: its one entry point per tool
    (ADR 0059). The tools receive this handle, never the workspace."""

    @property
    def session(self) -> GroupId: ...
    def derive(self, args: DeriveArgs, layers: Sequence[str] = ()) -> MemoryReply: ...
    def record_action(self, args: ActionArgs, layers: Sequence[str] = ()) -> MemoryReply: ...
    def derive_image(
        self, args: DeriveImageArgs, layers: Sequence[str], contract: Contract, accept: bool
    ) -> MemoryReply: ...
    def reserve(
        self,
        agent_id: str,
        node_id: str,
        ttl_seconds: int | None,
        release: bool,
        scope: str | None,
        layers: Sequence[str] = (),
    ) -> MemoryReply: ...
    def stats(
        self, agent_id: str, receipt: str | None, wait_ms: int | None, down: str | None = None
    ) -> MemoryReply: ...


class MemoryService:
    """Admission, receipts, locks, waits, access counts and jobs of the session one process
    serves (implements `MemoryWrites`)."""

    def __init__(
        self,
        session: GroupId,
        writer: Callable[[], Writer],
        reader: Reader,
        processor: IntentProcessor,
        clock: Callable[[], datetime],
        promotion_policy: str = "Swarm",
        jobs: MemoryJobs | None = None,
        contract: Callable[[], EmbeddingContract] | None = None,
    ) -> None:
        self.session = session
        self.jobs = jobs
        self._scheduler: BackgroundScheduler | None = None
        self._writer = writer
        self._reader = reader
        self.processor = processor
        self.clock = clock
        self.promotion_policy = promotion_policy
        self._contract = contract
        self._lock = threading.RLock()
        self.book = ReceiptBook(intents=self._from_log)
        self.locks = SoftLocks()
        self._waits = 0
        self._waits_by_agent: dict[str, int] = {}
        self.peers: Peers | None = None  # set by the process's sessions (ADR 0080)
        self._accessed: Counter[str] = Counter()  # recalls' access counts not yet in the log
        self._accessed_since: float | None = None  # monotonic time of the oldest one
        processor.listeners.append(self._settled)
        processor.periodic.append(self.flush_accesses)

    def jobs_or_fail(self) -> MemoryJobs:
        """The session's canonization and GC jobs (a writer-open workspace always has them)."""
        if self.jobs is None:
            raise RuntimeError("this memory service runs no jobs")
        return self.jobs

    # -- the tools' entry points ----------------------------------------------------------

    def derive(self, args: DeriveArgs, layers: Sequence[str] = ()) -> MemoryReply:
        """lambo_derive: check, admit, accept (load, decide, append); the ack. On a layered
        session (`layers`), `scope` names the session written to (ADR 0080)."""
        if layers:
            return self._scoped_derive(args, layers)
        call = arguments.check_derive(args, self.session, self.clock)
        return self.write_call(
            call.agent_id,
            lambda ctx, receipt: memory_commands.accept_derive(ctx, replace(call, receipt=receipt)),
            functools.partial(derive_ack, len(call.concepts)),
        )

    def record_action(self, args: ActionArgs, layers: Sequence[str] = ()) -> MemoryReply:
        """lambo_record_action: check, admit, accept (load, decide, append); the ack."""
        if layers:
            return self._scoped_action(args, layers)
        call = arguments.check_action(args, self.session, self.clock)
        return self.write_call(
            call.agent_id,
            lambda ctx, receipt: memory_commands.accept_action(ctx, replace(call, receipt=receipt)),
            functools.partial(action_ack, call.action),
        )

    def derive_image(
        self, args: DeriveImageArgs, layers: Sequence[str], contract: Contract, accept: bool
    ) -> MemoryReply:
        """lambo_derive_image by a client vector (ADR 0095; lcg.commands.memory_images)."""
        return memory_images.derive_image(self, args, layers, contract, accept)

    def write_target(self, agent_id: str, scope: str | None, stack: Sequence[str]) -> GroupId:
        text.check_agent_id(agent_id)
        target = GroupId(layers.resolve_scope(self.session, stack, scope))
        try:
            self.peer(target)  # the layer served (its jobs scheduled), or refused as not serving
        except (InvalidParams, RuntimeError) as error:
            raise layers.layer_not_serving(target, self.session, str(error)) from error
        self.draw_layer(target, "write")
        return target

    def draw_layer(self, layer: str, kind: Literal["read", "write"]) -> None:
        """A call scoped to one of this session's layers draws one request from the layer's
        own rate (M-REC-251, M-LAY-023); over it, the call is refused as retryable before
        anything is read or written (M-REC-253, M-LAY-024). A call acting on this session
        draws on no layer's."""
        if layer == self.session or self.peers is None:
            return
        refusal = self.peers.draw(layer, kind)
        if refusal is not None:
            raise layers.layer_not_serving(layer, self.session, refusal)

    def _scoped_derive(self, args: DeriveArgs, stack: Sequence[str]) -> MemoryReply:
        """A layered session's derive: written to the session `scope` names, its receipt
        this session's (delivered only here, M-LAY-020); a reference naming another
        session's concept refused (M-LAY-008..010); into a layer, no bare relative path."""
        target = self.write_target(args.agent_id, args.scope, stack)
        call = arguments.check_derive(replace(args, scope=None), target, self.clock)
        into = None if target == self.session else str(target)
        if into is not None:  # what repo_scope covers passes: resources, parent_of ends
            covered = call.repo_scope is not None  # (M-RSC-050, 051)
            entries = [
                (f"concepts[{i}].content", c.content)
                for i, c in enumerate(call.concepts)
                if not (covered and c.concept_type == "resource")
            ]
            for j, (parent, child) in enumerate(() if covered else call.parent_of):
                entries += [(f"parent_of[{j}].parent", parent), (f"parent_of[{j}].child", child)]
            layers.refuse_relative_paths(entries, into)
        others = [s for s in layers.scopes(self.session, stack) if s != target]
        return self.write_call(
            call.agent_id,
            lambda ctx, receipt: memory_commands.accept_scoped_derive(
                ctx, replace(call, receipt=receipt), others, None if into is None else self.session
            ),
            functools.partial(derive_ack, len(call.concepts), written_to=into),
            into,
        )

    def _scoped_action(self, args: ActionArgs, stack: Sequence[str]) -> MemoryReply:
        """A layered session's record_action, as _scoped_derive."""
        target = self.write_target(args.agent_id, args.scope, stack)
        call = arguments.check_action(replace(args, scope=None), target, self.clock)
        into = None if target == self.session else str(target)
        if into is not None and call.repo_scope is None:  # it covers every entry (M-RSC-052)
            entries = [("action", call.action)]
            for name, values in (
                ("produces", call.produces),
                ("modifies", call.modifies),
                ("depends_on", call.depends_on),
            ):
                entries += [(f"{name}[{j}]", value) for j, value in enumerate(values)]
            layers.refuse_relative_paths(entries, into)
        others = [s for s in layers.scopes(self.session, stack) if s != target]
        return self.write_call(
            call.agent_id,
            lambda ctx, receipt: memory_commands.accept_scoped_action(
                ctx, replace(call, receipt=receipt), others, None if into is None else self.session
            ),
            functools.partial(action_ack, call.action, written_to=into),
            into,
        )

    def peer(self, session: str) -> MemoryService:
        """The service of `session` (this one's, or another the process serves)."""
        if session == self.session:
            return self
        if self.peers is None:
            raise RuntimeError("this memory service serves no other session")
        return self.peers.get(session)

    def write_call(
        self,
        agent_id: str,
        accept: Callable[[WriteContext, str], None],
        ack: Callable[..., WriteAck],
        written_to: str | None = None,
    ) -> MemoryReply:
        admitted = self.admit(agent_id, accept, written_to)
        answer = ack(
            admitted.receipt,
            agent_id,
            dropped=admitted.dropped,
            retry_after_ms=admitted.retry_after_ms,
        )
        return self.reply(agent_id, answer.text, dict(answer.structured()), acking=admitted.receipt)

    def reserve(
        self,
        agent_id: str,
        node_id: str,
        ttl_seconds: int | None,
        release: bool,
        scope: str | None,
        layers: Sequence[str] = (),
    ) -> MemoryReply:
        """lambo_reserve: take (or release) an advisory soft lock on a node of the session,
        or, `scope` naming one of its `layers`, of that layer (locks are per session,
        M-RES-006/007); the reply piggybacks this session's receipts."""
        if layers and scope is not None:
            target = self.write_target(agent_id, scope, layers)
            if target != self.session:
                body, content = self.peer(target).reserve_body(
                    agent_id, node_id, ttl_seconds, release
                )
                return self.reply(agent_id, body, content)
        arguments.check_caller(self.session, agent_id, scope)
        body, content = self.reserve_body(agent_id, node_id, ttl_seconds, release)
        return self.reply(agent_id, body, content)

    def reserve_body(
        self, agent_id: str, node_id: str, ttl_seconds: int | None, release: bool
    ) -> tuple[str, dict[str, Any]]:
        """The reservation (or release) in this session, as text and content."""
        node_id = arguments.check_node_id(node_id)
        if state.node(self._reader(), self.session, node_id) is None:
            raise DomainError(
                f"node_id: {node_id} names no node of session '{self.session}'; nothing was "
                "reserved or released",
                field="node_id",
                rule="must name a node of this session",
            )
        now = self.clock()
        with self._lock:
            if release:
                released = self.locks.release(agent_id, node_id, now)
                return release_text(node_id, released), dict(
                    release_content(agent_id, node_id, released)
                )
            reservation = self.locks.reserve(agent_id, node_id, check_ttl_seconds(ttl_seconds), now)
        return reservation_text(reservation), dict(reservation_content(reservation))

    def stats(
        self, agent_id: str, receipt: str | None, wait_ms: int | None, down: str | None = None
    ) -> MemoryReply:
        """lambo_stats: the session's figures, and with a receipt what became of that write
        (after waiting up to `wait_ms` for it to settle; pending while a layer of the call
        is `down` and no serving pipeline knows it, M-STA-089)."""
        arguments.check_caller(self.session, agent_id, None)
        asked = None
        if receipt is not None:
            waited = arguments.check_receipt_wait(receipt, wait_ms)
            asked = self.lookup(receipt, agent_id, waited)
            asked = while_layer_down(asked, down)
        payload = self.stats_payload()
        lines = [memory_stats.stats_text(payload)]
        if asked is not None:
            payload["receipt"] = asked.structured()
            lines.insert(0, asked.text())
        return self.reply(agent_id, "\n".join(lines), payload)

    def reply(
        self,
        agent_id: str,
        body: str,
        content: dict[str, Any],
        *,
        acking: ReceiptId | None = None,
    ) -> MemoryReply:
        """The response, with the caller's settled receipts piggybacked on it (never the one
        it acks: that outcome rides on the next response, even when it applied already)."""
        piggyback = self.piggyback(agent_id, keep=acking)
        if piggyback.receipts:
            body = f"{body}\n\n{piggyback.text()}"
            content = {**content, "write_receipts": piggyback.structured()}
        return MemoryReply(body, content)

    # -- writes ---------------------------------------------------------------------------

    def admit(
        self,
        agent_id: str,
        accept: Callable[[WriteContext, str], None],
        written_to: str | None = None,
    ) -> Admitted:
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
            receipt = self.book.issue(agent_id, self.session, now, written_to)
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

    def _settled(self, receipt: str, outcome_state: str, outcome: WriteOutcome | str) -> None:
        """The processor applied (or refused) a write: settle the receipt this process holds
        (`outcome`: the outcome applied, or the reason refused)."""
        asked = ReceiptId.parse(receipt)
        if asked.epoch != self.book.epoch:
            return  # a previous process's: the log answers for it
        now = self.clock()
        if not isinstance(outcome, WriteOutcome):
            with self._lock:
                self.book.settle(asked, ReceiptState.FAILED, now, detail=outcome)
            return
        with self._lock:
            written_to = GroupId(self.book.written_to(asked) or self.session)  # ADR 0080
        stale = stale_report(self._reader(), written_to, outcome, now)
        with self._lock:
            fields = settled_fields(outcome)
            lines = outcome.candidate_lines
            if stale is not None:
                fields["stale_report"] = stale[0]
                lines = (*lines, *stale[1])
            self.book.settle(
                asked, ReceiptState.APPLIED, now, detail=outcome.summary, lines=lines, fields=fields
            )

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

        try:
            self._writer().execute(append)
        except Exception:  # the store rejected the batch: dropped, and counted (M-STA-027)
            self.processor.counters.dead_lettered += 1
            raise

    def flush_lag_ms(self) -> int:
        """How long the oldest access count has waited for the log (0: nothing waits); every
        acknowledged write is in the log when it is acked (ADR 0026)."""
        with self._lock:
            since = self._accessed_since
        return 0 if since is None else int((time.monotonic() - since) * 1000)

    # -- receipts -------------------------------------------------------------------------

    def _from_log(self, asked: ReceiptId) -> IntentRecord | None:
        row = state.write(self._reader(), str(asked))
        if row is None:
            return None
        owed = self.processor.replays.owes(row.receipt)  # a transient failure's (ADR 0108)
        return record_of(row, this_process=asked.epoch == self.book.epoch, owed=owed)

    def lookup(self, receipt: str, agent_id: str, wait_ms: int) -> ReceiptAnswer:
        """lambo_stats's receipt object, after waiting up to `wait_ms` for it to settle."""
        asked = ReceiptId.parse(receipt)
        if self.peers is not None and asked.epoch in self.peers.foreign_epochs(self):
            # written through another session of this process (a layer's scoped write is
            # answered only where it was written through, M-LAY-021)
            return standard_answer(asked, ReceiptState.FORBIDDEN)
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
        owed = self._from_log(asked)  # an intent, or a transient failure owed its replay
        return owed is not None and owed.state == ReceiptState.PENDING_REPLAY

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

    def piggyback(self, agent_id: str, keep: ReceiptId | None = None) -> Piggyback:
        """The settled receipts this agent's next response carries (at most 8)."""
        with self._lock:
            return self.book.take_piggyback(agent_id, self.session, self.clock(), keep=keep)

    def retained(self) -> int:
        with self._lock:
            return self.book.retained(self.clock())

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the service's lock (the soft locks are not thread-safe on their own)."""
        with self._lock:
            yield

    def stats_payload(self) -> dict[str, Any]:
        """lambo_stats's session payload (lcg.commands.memory_stats)."""
        if self._contract is None:
            raise RuntimeError("this memory service was given no embedding contract")
        conn = self._reader()
        with self._lock:
            flush_depth = len(self._accessed)
        figures = memory_stats.ProcessFigures(
            epoch=self.book.epoch,
            flush_lag_ms=self.flush_lag_ms(),
            flush_depth=flush_depth,
            outstanding=self.processor.outstanding(),
            degraded=self.processor.failure is not None or bool(self._writer().faults()),
            receipts_retained=self.retained(),
            promotion_policy=self.promotion_policy,
        )
        jobs = self.jobs.counters if self.jobs is not None else JobCounters()
        return memory_stats.stats_payload(
            conn, self.session, figures, self.processor.counters, jobs, self._contract()
        )

    # -- lifecycle ------------------------------------------------------------------------

    def schedule(self, tick: timedelta) -> None:
        """Run the canonization cycle and the daemon tick on a schedule
        (lcg.commands.memory_schedule); once."""
        if self.jobs is None or self._scheduler is not None:
            return
        self._scheduler = memory_schedule.start_jobs(self.jobs, self.session, tick)

    def stop_jobs(self) -> None:
        """Stop the scheduled jobs (a running one finishes: each appends all of its events or
        none); idempotent."""
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None

    def close(self) -> None:
        """Stop the jobs, then the processor (shared by a process's sessions: stopping it again
        is harmless); writes still pending stay durable intents for the next start.
        Access counts waiting are appended first (a failure to is logged: they are counts)."""
        self.stop_jobs()
        self.processor.stop()
        try:
            self.flush_accesses(min_age=0.0)
        except Exception:
            log.exception("the access counts of session %r could not be appended", self.session)
        now = self.clock()
        with self._lock:
            for receipt in self.book.outstanding():
                self.book.settle(receipt, ReceiptState.INTENT_DURABLE, now)
