"""Write receipts (seed 001): the id, its twelve states, the server's book, acks and piggyback text.

Time arrives as a value: every call takes ``now``, a timezone-aware UTC ``datetime`` the shell
reads from its clock once per call (the id carries Unix milliseconds, so a wall clock is needed
anyway). Randomness is confined to the default epoch of a new book; tests pass one.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Final, TypeAlias

from lcg.domain.errors import InvalidParams
from lcg.domain.memory.locks import require_utc
from lcg.domain.memory.piggyback import fair_share

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None

RETENTION_SECONDS: Final = 300
RETAINED_RECEIPTS: Final = 4096
PIGGYBACK_PER_RESPONSE: Final = 8
_MAX_64: Final = (1 << 64) - 1
_UNIX_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

# Exactly what ReceiptId.format writes, and nothing else: a receipt is only ever copied from an
# ack, so any other spelling (upper case, padding, a missing part) was never handed out.
_RECEIPT = re.compile(r"lwr1\.([0-9a-f]{16})\.(0|[1-9a-f][0-9a-f]{0,15})\.([1-9a-f][0-9a-f]{0,15})")
_RECEIPT_RULE: Final = (
    "must be a receipt id as a write ack prints it: lwr1.<16 hex>.<hex>.<hex>"
    " (for example lwr1.708217ebbf356946.1a01fa59db7.16)"
)


@dataclass(frozen=True, slots=True)
class ReceiptId:
    """``lwr1.<epoch:016x>.<issued_unix_ms:x>.<seq:x>`` (canonization.md §9)."""

    epoch: int
    issued_unix_ms: int
    seq: int

    def __post_init__(self) -> None:
        if not 0 <= self.epoch <= _MAX_64 or not 0 <= self.issued_unix_ms <= _MAX_64:
            raise ValueError("epoch and issued_unix_ms must fit in 64 bits")
        if not 1 <= self.seq <= _MAX_64:
            raise ValueError("seq counts from 1 and fits in 64 bits")

    def format(self) -> str:
        return f"lwr1.{self.epoch:016x}.{self.issued_unix_ms:x}.{self.seq:x}"

    def __str__(self) -> str:
        return self.format()

    @classmethod
    def parse(cls, text: str, field_name: str = "receipt") -> ReceiptId:
        """The id ``text`` spells; anything else is a parameter error naming ``field_name``."""
        match = _RECEIPT.fullmatch(text)
        if match is None:
            raise InvalidParams(field_name, _RECEIPT_RULE)
        epoch, issued, seq = (int(part, 16) for part in match.groups())
        return cls(epoch, issued, seq)


class ReceiptState(StrEnum):
    """The twelve states a receipt answers with; there is no "unknown" (M-STA-100)."""

    APPLIED = "applied"
    PENDING = "pending"
    PENDING_REPLAY = "pending_replay"
    FAILED = "failed"
    INTENT_DURABLE = "intent_durable"
    CLOSE_UNFLUSHED = "close_unflushed"
    APPLIED_AFTER_RESTART = "applied_after_restart"
    DROPPED = "dropped"
    EXPIRED = "expired"
    RESTART_LOST = "restart_lost"
    NEVER_ISSUED = "never_issued"
    FORBIDDEN = "forbidden"


# The seed's table, one sentence each, for a model to read after "<state> — ". The seed words
# only pending's exactly (OQ-21); the others keep its wording, lower-cased and joined by ";".
STATE_DETAILS: Final[Mapping[ReceiptState, str]] = {
    ReceiptState.APPLIED: (
        "the write is in the server's in-memory graph, so recall finds it;"
        " it reaches the store with the next flush"
    ),
    ReceiptState.PENDING: "admitted, not yet applied; ask again",
    ReceiptState.PENDING_REPLAY: (
        "admitted by an earlier server on this session, recorded as a durable intent,"
        " and still owed a replay; ask again, and recall rather than re-deriving"
    ),
    ReceiptState.FAILED: "attempted and rejected; nothing was written",
    ReceiptState.INTENT_DURABLE: (
        "the session closed before this write was applied and the close's final flush"
        " completed, so the write is not lost: it is recorded as a durable intent, and the"
        " next server on this session re-attempts it in the order you sent it;"
        " ask about this receipt id there"
    ),
    ReceiptState.CLOSE_UNFLUSHED: (
        "the session closed before this write was applied and the close could not complete"
        " its final flush; the write may or may not have been saved as an intent (if an"
        " earlier flush took it, the next server re-attempts it; if not, it is lost);"
        " recall before re-deriving"
    ),
    ReceiptState.APPLIED_AFTER_RESTART: (
        "the write was applied across a restart; recall finds the concepts"
    ),
    ReceiptState.DROPPED: (
        "never attempted: the queue was full when you were acked; nothing was written"
    ),
    ReceiptState.EXPIRED: (
        "this server issued the receipt and no longer holds its outcome (receipts are kept"
        f" for {RETENTION_SECONDS} seconds); recall to see whether the write is there"
    ),
    ReceiptState.RESTART_LOST: (
        "a different server process issued it and no durable record of it survived;"
        " the write may or may not have been applied before that process ended;"
        " recall before re-deriving"
    ),
    ReceiptState.NEVER_ISSUED: "this server has never handed out that id",
    ReceiptState.FORBIDDEN: (
        "this receipt belongs to another agent_id or another session; ask with the"
        " agent_id that made the write, at the session it was written through"
    ),
}

# What a book can settle one of its own receipts as; the rest answer lookups of receipts it
# does not hold (a previous process's, or none at all).
SETTLED_STATES: Final = frozenset(
    {
        ReceiptState.APPLIED,
        ReceiptState.FAILED,
        ReceiptState.DROPPED,
        ReceiptState.INTENT_DURABLE,
        ReceiptState.CLOSE_UNFLUSHED,
    }
)


class DropCause(StrEnum):
    """Which bound refused a dropped write, so its receipt can say so (M-DER-095)."""

    LANE = "lane"
    QUEUE = "queue"
    CLOSED = "closed"


DROP_DETAILS: Final[Mapping[DropCause, str]] = {
    DropCause.LANE: (
        "never attempted: your lane was full (write_queue_lane_bound, 64 outstanding writes"
        " per agent_id) when you were acked; nothing was written"
    ),
    DropCause.QUEUE: (
        "never attempted: the write queue was full (write_queue_bound, 1024 outstanding"
        " writes across every agent) when you were acked; nothing was written"
    ),
    DropCause.CLOSED: (
        "never attempted: the session was shutting down when you were acked; nothing was written"
    ),
}

DROP_HINTS: Final[Mapping[DropCause, str]] = {
    DropCause.LANE: (
        "Nothing was written: send it again in about {retry_after_ms} ms, once one of your"
        " earlier writes has settled (lambo_stats with its receipt and wait_ms waits for it);"
        " this receipt will not change."
    ),
    DropCause.QUEUE: (
        "Nothing was written: send it again in about {retry_after_ms} ms, once the queue has"
        " room; this receipt will not change."
    ),
    DropCause.CLOSED: (
        "Nothing was written: send it again once a lambo serve holds the session again;"
        " this receipt will not change."
    ),
}


@dataclass(frozen=True, slots=True)
class ReceiptAnswer:
    """What a receipt says: lambo_stats's receipt object and one piggybacked receipt."""

    receipt: str
    state: ReceiptState
    detail: str
    lines: tuple[str, ...] = ()
    fields: Mapping[str, JsonValue] = field(default_factory=dict)

    def text(self) -> str:
        """``receipt <id>: <state> — <detail>``, then any detail lines (candidates, stale)."""
        return "\n".join((f"receipt {self.receipt}: {self.state} — {self.detail}", *self.lines))

    def structured(self) -> dict[str, JsonValue]:
        return {"id": self.receipt, "state": str(self.state), "detail": self.detail, **self.fields}


@dataclass(frozen=True, slots=True)
class IntentRecord:
    """A previous process's durable intent for a receipt, as the log answers for it.

    ``agent_id`` or ``session`` is None for an older intent that lacks its destination: it
    answers forbidden to everyone (M-STA-088).
    """

    state: ReceiptState
    agent_id: str | None
    session: str | None
    detail: str | None = None
    lines: tuple[str, ...] = ()
    fields: Mapping[str, JsonValue] = field(default_factory=dict)


IntentLookup = Callable[[ReceiptId], IntentRecord | None]
"""Answers from the log for a receipt this book does not hold; ``mapping.get`` will do."""


@dataclass(slots=True)
class _Held:
    receipt: ReceiptId
    agent_id: str
    session: str
    state: ReceiptState = ReceiptState.PENDING
    detail: str = STATE_DETAILS[ReceiptState.PENDING]
    lines: tuple[str, ...] = ()
    fields: Mapping[str, JsonValue] = field(default_factory=dict)
    settled_at: datetime | None = None
    written_to: str | None = None  # a write scoped to a layer: that layer (ADR 0080)

    def answer(self) -> ReceiptAnswer:
        return ReceiptAnswer(str(self.receipt), self.state, self.detail, self.lines, self.fields)


@dataclass(frozen=True, slots=True)
class Piggyback:
    """The settled receipts one response carries, and how many still wait for later ones."""

    receipts: tuple[ReceiptAnswer, ...]
    waiting: int

    def text(self) -> str:
        return write_receipts_block(self.receipts, self.waiting)

    def structured(self) -> list[JsonValue]:
        return [answer.structured() for answer in self.receipts]


class ReceiptBook:
    """The receipts one server process issued: states, retention, lookups and piggyback queues.

    Retention (M-STA-091) counts from settlement: a settled outcome is held for 300 s, and
    while more than 4096 receipts are held the oldest settled ones go first. An unsettled
    receipt is never dropped (the write queue bounds them at 1024). An outcome that leaves
    the book is no longer piggybacked either; asking for it answers expired.
    """

    def __init__(
        self,
        epoch: int | None = None,
        *,
        intents: IntentLookup | None = None,
        retention_seconds: int = RETENTION_SECONDS,
        capacity: int = RETAINED_RECEIPTS,
    ) -> None:
        self.epoch = secrets.randbits(64) if epoch is None else epoch
        if not 0 <= self.epoch <= _MAX_64:
            raise ValueError("epoch must fit in 64 bits")
        self._intents = intents
        self._retention = timedelta(seconds=retention_seconds)
        self._capacity = capacity
        self._highest_seq = 0
        self._held: dict[int, _Held] = {}
        self._settled: dict[int, datetime] = {}  # seq -> settled_at, in settlement order
        self._undelivered: dict[tuple[str, str], set[int]] = {}

    @property
    def highest_seq(self) -> int:
        return self._highest_seq

    def retained(self, now: datetime) -> int:
        """How many receipts the book holds (lambo_stats's receipts_retained)."""
        self._expire(now)
        return len(self._held)

    def outstanding(self) -> tuple[ReceiptId, ...]:
        """Receipts not yet settled, oldest first: what a shutdown must settle."""
        return tuple(e.receipt for e in self._held.values() if e.settled_at is None)

    def issue(
        self, agent_id: str, session: str, now: datetime, written_to: str | None = None
    ) -> ReceiptId:
        """A pending receipt for a write ``agent_id`` sent through ``session`` (to a layer)."""
        now = self._expire(now)
        self._highest_seq += 1
        issued_ms = (now - _UNIX_EPOCH) // timedelta(milliseconds=1)
        receipt = ReceiptId(self.epoch, issued_ms, self._highest_seq)
        self._held[receipt.seq] = _Held(receipt, agent_id, session, written_to=written_to)
        return receipt

    def written_to(self, receipt: ReceiptId) -> str | None:
        entry = self._held.get(receipt.seq)  # the layer its write was scoped to, if any
        return None if entry is None or entry.receipt != receipt else entry.written_to

    def drop(self, agent_id: str, session: str, cause: DropCause, now: datetime) -> ReceiptId:
        """A receipt for a write refused at admission: settled dropped, not piggybacked.

        Its ack already says dropped (``derive_ack(..., dropped=cause)``), so nothing is owed.
        """
        receipt = self.issue(agent_id, session, now)
        self.settle(receipt, ReceiptState.DROPPED, now, detail=DROP_DETAILS[cause], piggyback=False)
        return receipt

    def withdraw(self, receipt: ReceiptId) -> None:
        """Forget a pending receipt that was never handed out (its write was refused before
        the ack); its seq stays used."""
        entry = self._held.get(receipt.seq)
        if entry is not None and entry.receipt == receipt and entry.settled_at is None:
            del self._held[receipt.seq]

    def settle(
        self,
        receipt: ReceiptId,
        state: ReceiptState,
        now: datetime,
        *,
        detail: str | None = None,
        lines: tuple[str, ...] = (),
        fields: Mapping[str, JsonValue] | None = None,
        piggyback: bool = True,
    ) -> None:
        """Record a held receipt's outcome and queue it for its owner's next response.

        ``piggyback=False`` for an outcome the caller already saw, such as a dropped ack.
        A pending receipt settles once; the one later change is close_unflushed becoming
        intent_durable when a retried shutdown's flush completes (M-STA-110).
        """
        now = require_utc(now)
        if state not in SETTLED_STATES:
            raise ValueError(f"a held receipt cannot settle as {state}")
        entry = self._held.get(receipt.seq)
        if entry is None or entry.receipt != receipt:
            raise ValueError(f"{receipt} is not held by this book")
        retried_close = (entry.state, state) == (
            ReceiptState.CLOSE_UNFLUSHED,
            ReceiptState.INTENT_DURABLE,
        )
        if entry.state is not ReceiptState.PENDING and not retried_close:
            raise ValueError(f"{receipt} already settled as {entry.state}")
        extra = dict(fields or {})
        if extra.keys() & {"id", "state", "detail"}:
            raise ValueError("fields may not replace id, state or detail")
        entry.state = state
        entry.detail = STATE_DETAILS[state] if detail is None else detail
        entry.lines = lines
        entry.fields = extra
        entry.settled_at = now
        self._settled.pop(receipt.seq, None)
        self._settled[receipt.seq] = now
        if piggyback:
            self._undelivered.setdefault((entry.agent_id, entry.session), set()).add(receipt.seq)
        self._expire(now)

    def lookup(
        self, receipt: str | ReceiptId, agent_id: str, session: str, now: datetime
    ) -> ReceiptAnswer:
        """What lambo_stats answers for ``receipt`` asked by ``agent_id`` through ``session``.

        The order of canonization.md §9. Forbidden needs an owner to compare with, so it wins
        only while the receipt is held or its intent names one (OQ-17); a receipt this book no
        longer holds answers expired or never_issued to anyone. The owner asking for a settled
        receipt by id takes it off its piggyback queue; anyone else leaves it there (M-STA-087).
        """
        asked = receipt if isinstance(receipt, ReceiptId) else ReceiptId.parse(receipt)
        self._expire(now)
        entry = self._held.get(asked.seq) if asked.epoch == self.epoch else None
        if entry is not None:
            return self._held_answer(asked, entry, agent_id, session)
        return self._unheld_answer(asked, agent_id, session)

    def _held_answer(
        self, asked: ReceiptId, entry: _Held, agent_id: str, session: str
    ) -> ReceiptAnswer:
        if entry.receipt != asked:  # our seq with another issue time: never handed out
            return standard_answer(asked, ReceiptState.NEVER_ISSUED)
        if (entry.agent_id, entry.session) != (agent_id, session):
            return standard_answer(asked, ReceiptState.FORBIDDEN)
        self._mark_delivered(entry)
        return entry.answer()

    def _unheld_answer(self, asked: ReceiptId, agent_id: str, session: str) -> ReceiptAnswer:
        record = None if self._intents is None else self._intents(asked)
        if record is not None:
            return _from_intent(asked, record, agent_id, session)
        if asked.epoch != self.epoch:
            return standard_answer(asked, ReceiptState.RESTART_LOST)
        if asked.seq > self._highest_seq:
            return standard_answer(asked, ReceiptState.NEVER_ISSUED)
        return standard_answer(asked, ReceiptState.EXPIRED)

    def take_piggyback(
        self,
        agent_id: str,
        session: str,
        now: datetime,
        limit: int = PIGGYBACK_PER_RESPONSE,
        *,
        keep: ReceiptId | None = None,
    ) -> Piggyback:
        """Up to ``limit`` settled receipts not yet delivered to this owner, oldest write first.

        Each is delivered once: taking it here removes it from the queue. The sessions written
        to (the session, its layers) share the slots: ``fair_share`` (M-LAY-022). ``keep`` is
        the receipt the response itself acks: its outcome belongs to the owner's *next*
        response, so it stays queued even when the write applied before its ack was written.
        """
        self._expire(now)
        key = (agent_id, session)
        queued = self._undelivered.get(key, set())
        kept = keep.seq if keep is not None else None
        offered = sorted(seq for seq in queued if seq != kept)
        chosen = fair_share(offered, lambda seq: self._held[seq].written_to, max(limit, 0))
        queued.difference_update(chosen)
        if not queued:
            self._undelivered.pop(key, None)
        return Piggyback(tuple(self._held[seq].answer() for seq in chosen), len(queued))

    def _mark_delivered(self, entry: _Held) -> None:
        key = (entry.agent_id, entry.session)
        queued = self._undelivered.get(key)
        if queued is not None:
            queued.discard(entry.receipt.seq)
            if not queued:
                del self._undelivered[key]

    def _expire(self, now: datetime) -> datetime:
        now = require_utc(now)
        while self._settled:
            seq, settled_at = next(iter(self._settled.items()))
            if len(self._held) <= self._capacity and settled_at + self._retention > now:
                break
            self._forget(seq)
        return now

    def _forget(self, seq: int) -> None:
        entry = self._held.pop(seq)
        del self._settled[seq]
        self._mark_delivered(entry)


def standard_answer(asked: ReceiptId, state: ReceiptState) -> ReceiptAnswer:
    """The answer of a receipt in `state` with its standard detail (e.g. forbidden)."""
    return ReceiptAnswer(str(asked), state, STATE_DETAILS[state])


def while_layer_down(answer: ReceiptAnswer, down: str | None) -> ReceiptAnswer:
    """A receipt no serving pipeline knows (another process's, with no record in the log)
    may be the down layer's while a layer is not serving: pending, to ask again (M-STA-089)."""
    if down is None or answer.state is not ReceiptState.RESTART_LOST:
        return answer
    detail = (
        f"no serving pipeline knows this receipt, and layer {down} is down, so it may be"
        " that layer's; ask again once the layer is serving"
    )
    return ReceiptAnswer(answer.receipt, ReceiptState.PENDING, detail)


def _from_intent(
    asked: ReceiptId, record: IntentRecord, agent_id: str, session: str
) -> ReceiptAnswer:
    if (record.agent_id, record.session) != (agent_id, session):
        return standard_answer(asked, ReceiptState.FORBIDDEN)
    detail = STATE_DETAILS[record.state] if record.detail is None else record.detail
    return ReceiptAnswer(str(asked), record.state, detail, record.lines, record.fields)


def write_receipts_block(receipts: tuple[ReceiptAnswer, ...], waiting: int = 0) -> str:
    """The ``write receipts:`` block a response carries; empty when there is nothing to say.

    The seed names the block but not its layout (OQ-21): a header line, then each receipt
    exactly as lambo_stats words it (``receipt <id>: <state> — <detail>`` and its indented
    lines), then how many are still waiting when more than one response's worth settled.
    """
    if not receipts:
        return ""
    lines = ["write receipts:", *(answer.text() for answer in receipts)]
    if waiting:
        lines.append(f"{waiting} more receipt(s) waiting; they arrive on your next tool responses")
    return "\n".join(lines)
