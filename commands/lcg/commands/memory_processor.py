"""The intent processor: applies acknowledged memory writes in stream order (ADR 0026).

One thread per serving process. It reads the intents without an outcome from the memory
projection (so the intents a previous process left are found the same way at start), and for
each one: works out which items the write may create, embeds their framed texts in one
batched call through the embedding cache, searches the session's concept index for close
concepts (once the vector index holds the session's earlier concepts: this thread indexes
those itself, their texts being cached, and waits at most `VECTOR_WAIT` seconds for any the
vector follower is indexing, never for other groups' writes, issue 24), then runs
`memory_apply.apply_write` in the writer's batch, which appends the outcome. Waiters
(`lambo_stats` with `wait_ms`) are woken per settled receipt.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from lcg.commands import memory_apply
from lcg.commands.memory_apply import Prepared, Similar
from lcg.commands.memory_probe import ProbeFigures, StartupProbe
from lcg.commands.memory_replay import Replays, embedder_failure, in_stream_order
from lcg.commands.tenure import Fence, Tenure
from lcg.commands.writer import WriteContext, Writer
from lcg.domain.ids import GroupId
from lcg.domain.memory.identity import canonical_key, matches_by_key
from lcg.domain.memory.intents import END_TYPE, TARGET_TYPE
from lcg.domain.memory.records import DeriveRequest, ImageRequest, WriteOutcome
from lcg.projections.embedding.port import Vectors
from lcg.projections.faults import Fenced
from lcg.projections.memory import state
from lcg.projections.memory.state import WriteRow

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], Vectors]
Search = Callable[[GroupId, Vectors, int], list[tuple[str, float]]]
SIMILAR_K = 8
# Seconds an apply waits for the session's earlier concept vectors. The follower applies a
# waited-for session first, so this is one batch of other work at most; past it the write is
# applied with the index as it is (a close concept not in it yet is not merged into).
VECTOR_WAIT = 2.0
DEFAULT_SERVICE_MS = 100.0
RETRY_FLOOR_MS = 50
RETRY_CAP_MS = 34_000  # lambo_stats's wait_ms cap (M-STA-005)
ACK_HEAD_START = 0.002  # seconds an ack's response gets before its write is applied


@dataclass
class Counters:
    """What lambo_stats reports about the write queue of this process."""

    accepted: int = 0
    applied: int = 0
    failed: int = 0
    replayed: int = 0  # a previous process's intents this one applied
    # a previous process's intents (and transient failures, ADR 0108) found at start, not
    # yet settled
    replay_owed: int = 0
    dropped: int = 0
    dropped_closed: int = 0
    vector_waits_missed: int = 0  # applies that went ahead without the session's vectors
    deferred: int = 0  # left pending at a clean shutdown, for the next process
    abandoned: int = 0
    dead_lettered: int = 0  # batches of access counts the store rejected, dropped (M-STA-027)
    apply_ms: deque[float] = field(default_factory=lambda: deque(maxlen=256))
    # how long one apply takes this thread (prepare and append), for a dropped write's retry
    service_ms: deque[float] = field(default_factory=lambda: deque(maxlen=64))
    probe: ProbeFigures | None = None  # the startup probe's figures once it finished (0101)


class IntentProcessor:
    """Applies pending intents on its own thread; `settled` wakes waiters per receipt."""

    def __init__(
        self,
        writer: Writer,
        reader: Callable[[], sqlite3.Connection],
        embed: Embed,
        search: Search,
        settle_vectors: Callable[[GroupId, float, sqlite3.Connection], bool],
        clock: Callable[[], datetime],
        new_id: Callable[[], str],
        threshold: float,
        probe_embed: Embed | None = None,
    ) -> None:
        self.writer = writer
        self._reader = reader
        self._embed = embed
        self._search = search
        self._settle_vectors = settle_vectors
        self._clock = clock
        self._new_id = new_id
        self.threshold = threshold
        self.counters = Counters()
        self._own: dict[str, float] = {}  # receipts this process accepted -> monotonic ack time
        self._outstanding: dict[str, int] = {}  # per agent, this process's unsettled writes
        self._lock = threading.Condition()
        self._settles = 0  # writes settled so far, counted under _lock (see wait)
        self._wake = threading.Event()
        self._running = threading.Event()  # cleared while paused
        self._running.set()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.failure: str | None = None
        # (receipt, state, the outcome if applied / the reason if failed)
        self.listeners: list[Callable[[str, str, WriteOutcome | str], None]] = []
        self.periodic: list[Callable[[], None]] = []  # run after each drain (access counts)
        # On a shared PostgreSQL log (ADR 0085): the intents lease. This node applies intents
        # only while it holds it; otherwise the holder does and the outcomes arrive here by
        # the log follower, settling this process's receipts.
        self.tenure: Tenure | None = None
        # The startup probe (ADR 0101), timing the bare embedder (no cache) at start.
        self.probe = (
            None if probe_embed is None else StartupProbe(probe_embed, on_done=self._probed)
        )
        self._probing = False
        self.replays = Replays()  # an earlier server's transient failures (ADR 0108)

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        conn = self._reader()
        try:
            owed = len(state.pending_writes(conn, limit=1_000_000))
            self.counters.replay_owed = owed + self.replays.owed(conn)[1]
        finally:
            conn.close()
        self._thread = threading.Thread(target=self._run, name="lcg-intents", daemon=True)
        self._thread.start()
        self._wake.set()

    def start_probe(self) -> None:
        """Start the startup probe on its thread, once (ADR 0101): a serving process does at
        start; a one-shot command never loads a model for it."""
        with self._lock:
            if self.probe is None or self._probing:
                return
            self._probing = True
        self.probe.start()

    def probed(self, timeout: float) -> bool:
        """Wait at most `timeout` seconds for the startup probe, started now if it was not
        (tests, benchmarks); True once it finished (or there is none). Its figures are then
        in the counters."""
        if self.probe is None:
            return True
        self.start_probe()
        return self.probe.wait(timeout)

    def _probed(self, figures: ProbeFigures) -> None:
        with self._lock:
            self.counters.probe = figures

    def stop(self, timeout: float = 30.0) -> None:
        """Finish the write being applied and stop; what is still pending stays durable in the
        log as intents for the next process (`deferred`)."""
        with self._lock:
            self._stopping = True
            probing = self._probing
        if probing and self.probe is not None:
            self.probe.stop(timeout)  # no probe thread may be in the model at exit
        self._running.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        with self._lock:
            self.counters.deferred = sum(self._outstanding.values())

    # -- admission ------------------------------------------------------------------------

    def outstanding(self, agent_id: str | None = None) -> int:
        with self._lock:
            if agent_id is None:
                return sum(self._outstanding.values())
            return self._outstanding.get(agent_id, 0)

    def retry_after_ms(self) -> int:
        """When a write dropped at a bound may find room: one apply of every write queued
        now (the agent's oldest may be behind all of them), at the recent median apply time
        (100 ms before any is measured); within lambo_stats's wait_ms cap."""
        with self._lock:
            samples = sorted(self.counters.service_ms)
            queued = sum(self._outstanding.values())
        each = samples[len(samples) // 2] if samples else DEFAULT_SERVICE_MS
        return max(RETRY_FLOOR_MS, min(RETRY_CAP_MS, round(each * max(1, queued))))

    def admitted(self, receipt: str, agent_id: str) -> None:
        """An intent of this process is about to be appended: count it first, so that the
        thread, which may read it as soon as it commits, never takes it for an earlier
        process's. `appended` wakes the thread once it is in; `withdrawn` undoes a refusal."""
        with self._lock:
            self._own[receipt] = time.monotonic()
            self._outstanding[agent_id] = self._outstanding.get(agent_id, 0) + 1
            self.counters.accepted += 1

    def withdrawn(self, receipt: str, agent_id: str) -> None:
        """The intent was not appended (refused): forget it."""
        with self._lock:
            if self._own.pop(receipt, None) is None:
                return
            left = self._outstanding.get(agent_id, 1) - 1
            if left > 0:
                self._outstanding[agent_id] = left
            else:
                self._outstanding.pop(agent_id, None)
            self.counters.accepted -= 1

    def appended(self) -> None:
        """An admitted intent is durable: wake the thread to apply it."""
        self._wake.set()

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hold the thread between writes (tests, and work that must see no apply); on
        resume it reads the pending intents afresh, in stream order."""
        self._running.clear()
        try:
            yield
        finally:
            self._running.set()
            self._wake.set()

    def stopping(self) -> bool:
        with self._lock:
            return self._stopping

    def wait(self, done: Callable[[], bool], timeout: float) -> None:
        """Block until `done()` (checked after every write this thread settles) or `timeout`
        seconds pass.

        `done()` runs without this processor's lock: it takes the caller's own lock, which
        MemoryService.admit holds while it asks this processor for its bounds, so calling it
        under ours would deadlock against a concurrent write. A settle between the check and
        the wait is seen through `_settles`, so no wake-up is missed."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                seen = self._settles
            if done():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            with self._lock:
                if self._settles == seen:
                    self._lock.wait(min(left, 1.0))

    # -- the thread -----------------------------------------------------------------------

    def _run(self) -> None:
        conn = self._reader()
        backoff = 0.0
        try:
            while True:
                if self._wake.wait(max(1.0, backoff)):
                    # Woken by an ack: let its caller's response go out before this thread
                    # takes the GIL (the ack races the apply otherwise; bench_memory).
                    time.sleep(ACK_HEAD_START)
                self._wake.clear()
                if self.stopping():
                    return
                try:
                    self._drain(conn)
                    for work in self.periodic:
                        work()
                    backoff = 0.0
                except Exception as error:  # the intents stay pending and durable: retried
                    failure = f"{type(error).__name__}: {error}"
                    if failure != self.failure:  # logged once per distinct failure
                        log.exception("the intent processor could not apply pending writes")
                    self.failure = failure
                    backoff = min(30.0, max(0.5, backoff * 2))
        finally:
            conn.close()

    def _drain(self, conn: sqlite3.Connection) -> None:
        fence: Fence | None = None
        if self.tenure is not None:
            self._settle_followed(conn)
            fence = self.tenure.fence()
            if fence is None:
                return  # another node holds the intents lease: it applies them
        while not self.stopping():
            replays, added = self.replays.owed(conn)  # ADR 0108
            if added:  # failures another node recorded since this server started
                with self._lock:
                    self.counters.replay_owed += added
            pending = in_stream_order(state.pending_writes(conn, limit=64), replays, limit=64)
            if not pending:
                return
            for row in pending:
                if not self._running.is_set():
                    # Paused: the batch was read before intents appended meanwhile, so it is
                    # read afresh on resume and every pending intent takes its place in
                    # stream order (per session; sessions have no order between them).
                    self._running.wait()
                    break
                if self.stopping():
                    return
                if self.tenure is not None and self.tenure.fence() != fence:
                    return  # the tenure was lost (or renewed as another): stop applying
                try:
                    self._apply(conn, row, fence)
                except Fenced as fenced:
                    log.info("the intent applier stopped: %s", fenced)
                    return

    def _settle_followed(self, conn: sqlite3.Connection) -> None:
        """Settle this process's receipts whose outcome another node appended (ADR 0085):
        the log follower applied it to the memory projection, so the row is no longer
        pending."""
        conn.rollback()  # a fresh snapshot: what the follower committed since
        with self._lock:
            owned = list(self._own)
        for receipt in owned:
            row = state.write(conn, receipt)
            if row is None or row.state == "pending":
                continue
            outcome = row.outcome if row.state == "applied" else None
            settled = "applied" if row.state == "applied" else "failed"
            self._settled(row, settled, outcome or row.summary or row.state, own=True)

    def _apply(self, conn: sqlite3.Connection, row: WriteRow, fence: Fence | None = None) -> None:
        started = time.monotonic()
        settled = None
        try:
            settled = self._apply_one(conn, row, fence)
        finally:  # timed before the receipt settles: its caller's stats see the rate
            with self._lock:
                self.counters.service_ms.append((time.monotonic() - started) * 1000)
        if settled is not None:
            self._settled(row, *settled)

    def _apply_one(
        self, conn: sqlite3.Connection, row: WriteRow, fence: Fence | None
    ) -> tuple[str, WriteOutcome | str, bool, bool] | None:
        """Apply `row`; its outcome to settle (state, outcome, this process's own, a replay
        still owed after it), if any."""
        prepared = self._prepare(conn, row)
        with self._lock:
            own = row.receipt in self._own
        after_restart = not own

        def handler(ctx: WriteContext) -> tuple[str, WriteOutcome | str | None]:
            current = state.write(ctx.conn, row.receipt)
            if current is None or current.state != row.state:  # settled meanwhile
                return ("skipped", None)
            if ctx.is_pinned(GroupId(row.group_id)):  # pinned since it was read: it waits
                return ("skipped", None)
            return memory_apply.apply_write(
                ctx, row, prepared, self._new_id, self._clock(), after_restart=after_restart
            )

        outcome_state, outcome = self.writer.execute(handler, fence=fence)
        self.failure = None
        if outcome_state == "skipped" or outcome is None:
            return None
        return (outcome_state, outcome, own, outcome_state == "failed" and prepared.replay_owed)

    def _settled(
        self,
        row: WriteRow,
        outcome_state: str,
        outcome: WriteOutcome | str,
        own: bool,
        still_owed: bool = False,
    ) -> None:
        # The counters first, then the receipt: a caller that sees its receipt settled (a
        # wait may find it so without waking, on its first look) sees the counters count it.
        with self._lock:
            acked = self._own.pop(row.receipt, None)
            if own:
                left = self._outstanding.get(row.agent_id, 1) - 1
                if left > 0:
                    self._outstanding[row.agent_id] = left
                else:
                    self._outstanding.pop(row.agent_id, None)
            elif not still_owed:  # a durable intent the embedder failed stays owed (0108)
                self.counters.replay_owed = max(0, self.counters.replay_owed - 1)
            if outcome_state == "applied":
                if own:
                    self.counters.applied += 1
                else:
                    self.counters.replayed += 1
            elif outcome_state == "failed":
                self.counters.failed += 1
            if acked is not None and outcome_state == "applied":
                self.counters.apply_ms.append((time.monotonic() - acked) * 1000)
        for listener in self.listeners:  # receipts settle before any waiter wakes
            listener(row.receipt, outcome_state, outcome)
        with self._lock:
            self._settles += 1
            self._lock.notify_all()

    def _prepare(self, conn: sqlite3.Connection, row: WriteRow) -> Prepared:
        """Embed what the write may create (one batched call) and find its close concepts."""
        session = GroupId(row.group_id)
        framed = memory_apply.texts_to_embed(row)
        types = _item_types(row)
        todo = {
            item: text
            for item, text in framed.items()
            if not (
                matches_by_key(types.get(item, END_TYPE))
                and state.concepts_with_key(conn, session, canonical_key(item.strip()))
            )
        }
        prepared = Prepared(embedding_texts=dict(framed))
        if not todo:
            return prepared
        items = list(todo)
        try:
            vectors = self._embed([todo[item] for item in items])
        except Exception as error:  # transient: owed a replay at its first attempt (0108)
            log.exception("embedding the texts of write %s failed", row.receipt)
            replaying = row.state == state.FAILED_TRANSIENT
            failure = embedder_failure(error, replaying=replaying)
            prepared.embedder_failure, prepared.replay_owed = failure
            if prepared.replay_owed:  # before its failure is written: never owed here
                self.replays.failed_here(row.receipt)
            return prepared
        if not self._settle_vectors(session, VECTOR_WAIT, conn):
            self.counters.vector_waits_missed += 1
            log.warning(
                "write %s applied without waiting longer for session %s's concept vectors"
                " (over %.1f s): a close concept not indexed yet is not merged into",
                row.receipt,
                session,
                VECTOR_WAIT,
            )
        for item, vector in zip(items, vectors, strict=True):
            hits = self._search(session, vector, SIMILAR_K)
            prepared.similar[item] = [
                Similar(uuid, cosine) for uuid, cosine in hits if cosine >= self.threshold
            ]
        return prepared


def _item_types(row: WriteRow) -> dict[str, str]:
    """Each item's concept type (derive concepts as sent; ends and targets by their rule)."""
    if isinstance(row.request, DeriveRequest):
        return {c.content: c.concept_type for c in row.request.concepts}
    if isinstance(row.request, ImageRequest):  # its parent_of ends, entities
        return {}
    return dict.fromkeys(memory_apply.texts_to_embed(row), TARGET_TYPE)
