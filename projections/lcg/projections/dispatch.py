"""What a projection folds and what it ignores: a typed table of batch handlers per event type.

The one rule (docs/adr/0017-write-and-replay-fast-paths.md): every event type in
`lcg.domain.events.EVENT_TYPES` is either handled or explicitly ignored by each projection;
an event in neither set is an error (`UnhandledEvent`) at run time and in
tests/test_projection_registry.py, so a new event type is declared by every projection before
it can be appended.

Handlers receive a run of consecutive events of one type and one group, in seq order, so they
can write a page's rows with one `executemany`; a run never spans another event type, so
creates, revisions, deletions and purges still apply in stream order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from lcg.domain.events import DomainEvent
from lcg.domain.ids import GroupId, Seq
from lcg.projections.wal.store import RecordedEvent

E = TypeVar("E", bound=DomainEvent)
BatchHandler = Callable[[sqlite3.Connection, GroupId, Sequence[tuple[Seq, E]]], None]


class UnhandledEvent(Exception):
    """A projection met an event type it neither handles nor declares as ignored."""


class EventTable:
    """Batch handlers by event type, plus the types a projection declares it ignores."""

    def __init__(self, name: str, ignores: Iterable[type[DomainEvent]] = ()) -> None:
        self.name = name
        self.ignores: frozenset[type[DomainEvent]] = frozenset(ignores)
        self._handlers: dict[type[DomainEvent], BatchHandler[Any]] = {}

    @property
    def handles(self) -> frozenset[type[DomainEvent]]:
        return frozenset(self._handlers)

    def on(self, cls: type[E]) -> Callable[[BatchHandler[E]], BatchHandler[E]]:
        """Register the decorated function as the handler of runs of `cls` events."""

        def register(handler: BatchHandler[E]) -> BatchHandler[E]:
            if cls in self._handlers or cls in self.ignores:
                raise ValueError(f"{self.name}: {cls.__name__} is declared twice")
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
