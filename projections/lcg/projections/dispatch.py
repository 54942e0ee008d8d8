"""What a projection folds and what it ignores: the event families it reads, and a typed table
of batch handlers per event type.

The one rule (docs/adr/0017-write-and-replay-fast-paths.md, by family since
docs/adr/0057-event-families.md): a projection reads whole event families
(`lcg.domain.events.EVENT_FAMILIES`); every event type of a family it reads is either handled
or named as ignored, and every event type of the other families is ignored without being
named. An event of a family it reads in neither set is an error (`UnhandledEvent`) at run time
and in tests/unit/test_projection_registry.py, so a new event type is declared by every
projection that reads its family before it can be appended.

Handlers receive a run of consecutive events of one type and one group, in seq order, so they
can write a page's rows with one `executemany`; a run never spans another event type, so
creates, revisions, deletions and purges still apply in stream order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, TypeVar

from lcg.domain.events import EVENT_FAMILIES, DomainEvent, EventFamily
from lcg.domain.ids import GroupId, Seq
from lcg.projections.wal.store import RecordedEvent

E = TypeVar("E", bound=DomainEvent)
BatchHandler = Callable[[sqlite3.Connection, GroupId, Sequence[tuple[Seq, E]]], None]


class UnhandledEvent(Exception):
    """A projection met an event type of a family it reads that it neither handles nor
    declares as ignored."""


class Subscription:
    """The event families a projection reads, and of their events the ones it handles and the
    ones it names as ignored; it ignores every event of the families it does not read."""

    def __init__(
        self,
        name: str,
        *,
        reads: Iterable[EventFamily],
        ignores: Iterable[type[DomainEvent]] = (),
        handles: Iterable[type[DomainEvent]] = (),
    ) -> None:
        self.name = name
        self.reads = tuple(reads)
        self._read = frozenset(cls for family in self.reads for cls in family.events)
        self._handled: set[type[DomainEvent]] = set()
        named: set[type[DomainEvent]] = set()
        for cls in ignores:
            self._check(cls, named)
            named.add(cls)
        self.named_ignores = frozenset(named)
        # Every event type it ignores: the ones it names and those of the families it does
        # not read (an event in no family is in neither, and is an error wherever it is met).
        self.ignores = self.named_ignores | frozenset(
            cls for family in EVENT_FAMILIES for cls in family.events if cls not in self._read
        )
        for cls in handles:
            self.declare_handled(cls)

    @property
    def handles(self) -> frozenset[type[DomainEvent]]:
        return frozenset(self._handled)

    @property
    def unclaimed(self) -> frozenset[type[DomainEvent]]:
        """The event types of the families it reads that it neither handles nor names as
        ignored: none, once it is fully declared."""
        return self._read - self._handled - self.named_ignores

    def declare_handled(self, cls: type[DomainEvent]) -> None:
        self._check(cls, self._handled | self.named_ignores)
        self._handled.add(cls)

    def _check(self, cls: type[DomainEvent], declared: Container[type[DomainEvent]]) -> None:
        if cls in declared:
            raise ValueError(f"{self.name}: {cls.__name__} is declared twice")
        if cls not in self._read:
            family = next((f.name for f in EVENT_FAMILIES if cls in f.events), None)
            if family is None:
                raise ValueError(
                    f"{self.name}: {cls.__name__} is in no event family; add it to one in"
                    " lcg.domain.events.EVENT_FAMILIES"
                )
            raise ValueError(
                f"{self.name}: {cls.__name__} is of the {family} family, which {self.name}"
                " does not read: read the family, or leave the event undeclared (the events"
                " of a family a projection does not read are ignored without being named)"
            )


class EventTable(Subscription):
    """Batch handlers by event type, over the families a projection reads."""

    def __init__(
        self,
        name: str,
        *,
        reads: Iterable[EventFamily],
        ignores: Iterable[type[DomainEvent]] = (),
    ) -> None:
        super().__init__(name, reads=reads, ignores=ignores)
        self._handlers: dict[type[DomainEvent], BatchHandler[Any]] = {}

    def on(self, cls: type[E]) -> Callable[[BatchHandler[E]], BatchHandler[E]]:
        """Register the decorated function as the handler of runs of `cls` events."""

        def register(handler: BatchHandler[E]) -> BatchHandler[E]:
            self.declare_handled(cls)
            self._handlers[cls] = handler
            return handler

        return register

    def apply(self, conn: sqlite3.Connection, events: Sequence[RecordedEvent]) -> None:
        """Fold the events in order, one handler call per run of the same type and group."""
        start = 0
        while start < len(events):
            first = events[start]
            kind, group = type(first.event), first.group_id
            end = start + 1
            while (
                end < len(events)
                and type(events[end].event) is kind
                and events[end].group_id == group
            ):
                end += 1
            handler = self._handlers.get(kind)
            if handler is not None:
                handler(conn, group, [(r.seq, r.event) for r in events[start:end]])
            elif kind not in self.ignores:
                raise UnhandledEvent(
                    f"projection {self.name!r} neither handles nor ignores {kind.__name__}"
                    f" ({first.event.wire_name}); declare it in its EventTable"
                )
            start = end
