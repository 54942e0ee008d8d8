"""The memory side of a serving process: admission, receipts, soft locks, waits (ADR 0026).

One per workspace open for writing, for the session the process serves. A write is admitted
against the queue bounds (64 outstanding per agent, 1,024 per process), given a receipt,
resolved and appended as a durable intent in the writer's batch, and handed to the intent
processor; the processor's outcomes settle the receipts, which are delivered on the owner's
next response (at most 8) or through lambo_stats. Receipts this process does not hold are
answered from the memory projection, that is from the log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lcg.commands.memory_processor import IntentProcessor
from lcg.commands.writer import WriteContext, Writer
from lcg.domain.ids import GroupId
from lcg.domain.memory import limits
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
from lcg.projections.memory import state
from lcg.projections.memory.state import WriteRow

Reader = Callable[[], Any]  # a fresh read connection of graph.sqlite


@dataclass(frozen=True, slots=True)
class Admitted:
    """A write's receipt and whether it was dropped (which bound refused it)."""

    receipt: ReceiptId
    dropped: DropCause | None


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
    return fields


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
        applied, row.agent_id, row.group_id, detail=row.summary, fields=_settled_fields(row.outcome)
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
    ) -> None:
        self.session = session
        self._writer = writer
        self._reader = reader
        self.processor = processor
        self.clock = clock
        self._lock = threading.RLock()
        self.book = ReceiptBook(intents=self._from_log)
        self.locks = SoftLocks()
        self._waits = 0
        self._waits_by_agent: dict[str, int] = {}
        processor.listeners.append(self._settled)

    # -- writes ---------------------------------------------------------------------------

    def admit(self, agent_id: str, accept: Callable[[WriteContext, str], None]) -> Admitted:
        """Give the write a receipt and append its intent (`accept` resolves and appends it,
        or raises a refusal, after which no receipt was handed out). Over a bound the write
        is dropped: nothing is written."""
        now = self.clock()
        with self._lock:
            dropped = self._over_bound(agent_id)
            if dropped is not None:
                return Admitted(self.book.drop(agent_id, self.session, dropped, now), dropped)
            receipt = self.book.issue(agent_id, self.session, now)
        try:
            self._writer().execute(lambda ctx: accept(ctx, str(receipt)))
        except BaseException:
            with self._lock:
                self.book.withdraw(receipt)
            raise
        self.processor.admitted(str(receipt), agent_id)
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
        with self._lock:
            if outcome_state == "applied":
                assert outcome is not None
                self.book.settle(
                    asked,
                    ReceiptState.APPLIED,
                    now,
                    detail=outcome["summary"],
                    fields=_settled_fields(outcome),
                )
            else:
                conn = self._reader()
                try:
                    row = state.write(conn, receipt)
                finally:
                    conn.close()
                reason = None if row is None else row.summary
                self.book.settle(asked, ReceiptState.FAILED, now, detail=reason)

    # -- receipts -------------------------------------------------------------------------

    def _from_log(self, asked: ReceiptId) -> IntentRecord | None:
        conn = self._reader()
        try:
            row = state.write(conn, str(asked))
        finally:
            conn.close()
        if row is None:
            return None
        return record_of(row, this_process=asked.epoch == self.book.epoch)

    def lookup(self, receipt: str, agent_id: str, wait_ms: int) -> ReceiptAnswer:
        """lambo_stats's receipt object, after waiting up to `wait_ms` for it to settle."""
        asked = ReceiptId.parse(receipt)
        if wait_ms > 0 and self.processor.is_own(str(asked)):
            with self._wait_slot(agent_id) as granted:
                if granted:
                    self.processor.wait(str(asked), wait_ms / 1000)
        with self._lock:
            return self.book.lookup(asked, agent_id, self.session, self.clock())

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

    def close(self) -> None:
        """Stop the processor; writes still pending stay durable intents for the next start."""
        self.processor.stop()
        now = self.clock()
        with self._lock:
            for receipt in self.book.outstanding():
                self.book.settle(receipt, ReceiptState.INTENT_DURABLE, now)
