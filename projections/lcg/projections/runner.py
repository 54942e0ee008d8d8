"""The projection runner: feeds each group's events to the projections, exactly once, in order.

Positions live in the projection database and are written in the same transaction as the
rows (docs/adr/0004-projection-checkpointing.md). An event at or below a projection's position
is a no-op, so re-applying a page after a crash changes nothing. Each projection receives a
group's events a page (or a write batch) at a time, after the runner has dropped the ones at
or below its position and checked there is no gap (docs/adr/0017-write-and-replay-fast-paths.md).
The projection database records the identity of the WAL its positions refer to
(docs/adr/0019-wal-identity-and-storage-failures.md).
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from lcg.domain.ids import GroupId
from lcg.projections.damage import is_corruption
from lcg.projections.dispatch import Subscription
from lcg.projections.faults import StorageFailure, is_storage_error
from lcg.projections.positions import GroupPosition, read_position, read_positions
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import RecordedEvent

Progress = Callable[[int, int], None]
Positions = dict[tuple[str, str], int]  # (projection, group_id) -> applied seq


class Projection(Protocol):
    """A read model that can be dropped and rebuilt from the log."""

    name: str
    version: int

    @property
    def subscription(self) -> Subscription:
        """The event families it reads, and what of them it folds."""

    def install(self, conn: sqlite3.Connection) -> None: ...

    def apply(self, conn: sqlite3.Connection, events: Sequence[RecordedEvent]) -> None:
        """Fold consecutive events of one group, in seq order (dispatch.EventTable.apply)."""

    def reset(self, conn: sqlite3.Connection, group_id: str) -> None: ...

    def reset_all(self, conn: sqlite3.Connection) -> None: ...


class ProjectionError(Exception):
    """A projection could not apply an event; the runner stopped and nothing of it was kept."""


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except BaseException:
        # A failed COMMIT (a full disk) may leave the transaction open: never let the next
        # BEGIN fail with "cannot start a transaction within a transaction".
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


class ProjectionRunner:
    """Applies events to every projection and keeps their per-group positions."""

    def __init__(
        self, conn: sqlite3.Connection, log: LogStore, projections: Sequence[Projection]
    ) -> None:
        self.conn = conn
        self.log = log
        self.projections = tuple(projections)
        self.failure: str | None = None
        self.path = Path(conn.execute("PRAGMA database_list").fetchone()[2])

    def install(self) -> list[str]:
        """Create schemas and positions; reset projections whose version changed."""
        bumped: list[str] = []
        with transaction(self.conn):
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS projection_positions (projection TEXT NOT NULL,"
                " group_id TEXT NOT NULL, position INTEGER NOT NULL, pinned_to INTEGER,"
                " PRIMARY KEY (projection, group_id))"
            )
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS projection_versions ("
                "projection TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            self.conn.execute(
                "CREATE TABLE IF NOT EXISTS projection_wal (one INTEGER PRIMARY KEY"
                " CHECK (one = 1), identity TEXT NOT NULL)"
            )
            for projection in self.projections:
                projection.install(self.conn)
                row = self.conn.execute(
                    "SELECT version FROM projection_versions WHERE projection=?",
                    (projection.name,),
                ).fetchone()
                if row is not None and row[0] == projection.version:
                    continue
                if row is not None:
                    projection.reset_all(self.conn)
                    self.conn.execute(
                        "DELETE FROM projection_positions WHERE projection=?", (projection.name,)
                    )
                    bumped.append(projection.name)
                self.conn.execute(
                    "INSERT OR REPLACE INTO projection_versions VALUES (?, ?)",
                    (projection.name, projection.version),
                )
        return bumped

    def record_wal_identity(self, identity: str) -> None:
        """Note which WAL the positions refer to (a new database, or one adopted at open)."""
        with transaction(self.conn):
            self.conn.execute("INSERT OR REPLACE INTO projection_wal VALUES (1, ?)", (identity,))

    def position(self, group_id: str) -> GroupPosition:
        return read_position(self.conn, self.names, group_id)

    def positions(self) -> dict[GroupId, GroupPosition]:
        return read_positions(self.conn, self.names, self.log.groups())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.projections)

    def apply(self, batch: Sequence[RecordedEvent]) -> None:
        """Apply events inside the caller's open transaction and store the new positions."""
        positions: Positions = {}
        moved: set[tuple[str, str]] = set()
        self.apply_tracked(batch, positions, moved)
        self.store_positions({key: positions[key] for key in moved})

    def apply_tracked(
        self,
        batch: Sequence[RecordedEvent],
        positions: Positions,
        moved: set[tuple[str, str]],
    ) -> None:
        """Apply events, keeping positions in `positions` (read lazily) for a later store and
        the keys it moved in `moved`.

        Events at or below a projection's position are skipped; a gap is an error, since
        applying past it would make the projection differ from a replay.
        """
        for events in _runs_by_group(batch):
            group_id = events[0].group_id
            for projection in self.projections:
                key = (projection.name, group_id)
                current = positions.get(key)
                if current is None:
                    current = positions[key] = self._stored_position(projection.name, group_id)
                todo = events if events[0].seq > current else [r for r in events if r.seq > current]
                if not todo:
                    continue
                if todo[0].seq != current + 1 or todo[-1].seq != current + len(todo):
                    first = next((r.seq for r in todo if r.seq != current + 1), todo[0].seq)
                    raise ProjectionError(
                        f"projection {projection.name!r} of group {group_id!r} is at "
                        f"seq {current}; cannot apply seq {first} without the events "
                        "between them"
                    )
                self._apply_run(projection, todo)
                positions[key] = todo[-1].seq
                moved.add(key)

    def store_positions(self, positions: Positions) -> None:
        """Write positions (same transaction as the rows they describe); pins are kept."""
        for (name, group_id), position in positions.items():
            self._store_position(name, group_id, position, keep_pin=True)

    def catch_up(self, groups: Sequence[GroupId] | None = None) -> int:
        """Apply every unapplied event of every unpinned group; returns how many were applied.

        The first group that cannot be caught up raises; `catch_up_each` goes on past it.
        """
        applied = 0
        for group in groups if groups is not None else self.log.groups():
            applied += self._catch_up_group(group)
        return applied

    def catch_up_each(self) -> tuple[int, dict[GroupId, Exception]]:
        """Catch up every group; a group that fails (an unreadable event, a full disk) is
        returned with its error and the others are still applied."""
        applied = 0
        failed: dict[GroupId, Exception] = {}
        for group in self.log.groups():
            try:
                applied += self._catch_up_group(group)
            except Exception as error:  # noqa: BLE001 (returned to the caller, per group)
                failed[group] = error
        return applied, failed

    def _catch_up_group(self, group: GroupId) -> int:
        state = self.position(group)
        if state.pinned_to is not None:
            return 0
        applied = 0
        for page in self.log.read(group, after=state.position):
            with transaction(self.conn):
                self.apply(page)
            applied += len(page)
        return applied

    def rebuild(
        self,
        group_id: GroupId,
        *,
        from_seq: int = 0,
        to_seq: int | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Reset the group (full rebuild) or resume it, then replay up to `to_seq`.

        One transaction: a crash mid-rebuild leaves the previous state. A bounded rebuild
        pins the group at its end; an unbounded one releases any pin. The pin is recorded in
        the WAL first (ADR 0023): if the rebuild fails the WAL's pin is put back, and if the
        process dies between the two, the next open brings the graph to the WAL's pin.
        """
        head = self.log.head(group_id)
        upto = head if to_seq is None else min(to_seq, head)
        pin = upto if to_seq is not None else None
        before = (self.log.pins() or {}).get(group_id)
        if before != pin:
            self.log.set_pins({group_id: pin})
        try:
            return self._rebuild(group_id, from_seq, upto, pin, progress)
        except BaseException as error:
            if before != pin:
                self.log.set_pins({group_id: before})
            if is_storage_error(error) and not is_corruption(error):  # read-only, full, I/O
                raise StorageFailure(self.path, f"rebuild group {group_id!r} in", error) from error
            raise

    def _rebuild(
        self,
        group_id: GroupId,
        from_seq: int,
        upto: int,
        pin: int | None,
        progress: Progress | None,
    ) -> int:
        replayed = 0
        gc_was_enabled = gc.isenabled()
        gc.disable()  # allocation-heavy decode loop: collection pauses double replay time
        try:
            with transaction(self.conn):
                if from_seq == 0:
                    after = 0
                    for projection in self.projections:
                        projection.reset(self.conn, group_id)
                        self._store_position(projection.name, group_id, 0, keep_pin=False)
                else:
                    after = self._resume_point(group_id, from_seq)
                for page in self.log.read(group_id, after=after, upto=upto):
                    self.apply(page)
                    replayed += len(page)
                    if progress is not None:
                        progress(replayed, upto - after)
                for projection in self.projections:
                    self.conn.execute(
                        "UPDATE projection_positions SET pinned_to=? WHERE projection=?"
                        " AND group_id=?",
                        (pin, projection.name, group_id),
                    )
        finally:
            if gc_was_enabled:
                gc.enable()
        return replayed

    def reconcile_pins(self) -> list[GroupId]:
        """Make the graph's pins the WAL's (ADR 0023), before catching up: a group the WAL pins
        is replayed to its pin when the graph does not hold it there (a graph.sqlite rebuilt
        after damage, or a crash between recording a pin and the replay); a pin the WAL
        released is released. A WAL from before pins adopts the graph's. Returns the groups
        that were replayed."""
        recorded = self.log.pins()
        current = {
            group: position.pinned_to
            for group, position in self.positions().items()
            if position.pinned_to is not None
        }
        if recorded is None:
            if current:
                self.log.set_pins(dict(current))
            return []
        replayed: list[GroupId] = []
        for group, seq in sorted(recorded.items()):
            if current.get(group) != seq:
                self.rebuild(group, to_seq=seq)
                replayed.append(group)
        released = [group for group in current if group not in recorded]
        if released:
            with transaction(self.conn):
                self.conn.executemany(
                    "UPDATE projection_positions SET pinned_to=NULL WHERE group_id=?",
                    [(group,) for group in released],
                )
        return replayed

    def pin_all_at_zero(self) -> None:
        """After the graph is dropped but the WAL kept: hold every group empty until a replay."""
        self.log.set_pins(dict.fromkeys(self.log.groups(), 0))
        with transaction(self.conn):
            for projection in self.projections:
                projection.reset_all(self.conn)
            self.conn.execute("DELETE FROM projection_positions")
            for group in self.log.groups():
                for projection in self.projections:
                    self.conn.execute(
                        "INSERT INTO projection_positions VALUES (?, ?, 0, 0)",
                        (projection.name, group),
                    )

    def reset_all(self) -> None:
        """Drop every projection's rows and positions (the WAL was erased)."""
        with transaction(self.conn):
            for projection in self.projections:
                projection.reset_all(self.conn)
            self.conn.execute("DELETE FROM projection_positions")

    def _resume_point(self, group_id: str, from_seq: int) -> int:
        current = self.position(group_id).position
        if from_seq - 1 > current:
            raise ProjectionError(
                f"from_seq {from_seq} would skip seqs {current + 1}..{from_seq - 1} of group "
                f"{group_id!r}, which is applied only to seq {current}; resume from at most "
                f"{current + 1}"
            )
        return current

    def _apply_run(self, projection: Projection, events: Sequence[RecordedEvent]) -> None:
        try:
            projection.apply(self.conn, events)
        except Exception as error:
            if is_storage_error(error):  # the disk or the file, not the projection's logic
                raise StorageFailure(self.path, "write to", error) from error
            first, last = events[0], events[-1]
            self.failure = (
                f"projection {projection.name!r} failed on group {first.group_id!r} seqs "
                f"{first.seq}..{last.seq} (from {first.event.wire_name}): {error}"
            )
            raise ProjectionError(self.failure) from error

    def stored_position(self, name: str, group_id: str) -> int:
        """One projection's committed position for a group (0 if it never applied any)."""
        return self._stored_position(name, group_id)

    def _stored_position(self, name: str, group_id: str) -> int:
        row = self.conn.execute(
            "SELECT position FROM projection_positions WHERE projection=? AND group_id=?",
            (name, group_id),
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _store_position(self, name: str, group_id: str, position: int, *, keep_pin: bool) -> None:
        if keep_pin:
            self.conn.execute(
                "INSERT INTO projection_positions VALUES (?, ?, ?, NULL)"
                " ON CONFLICT (projection, group_id) DO UPDATE SET position=excluded.position",
                (name, group_id, position),
            )
        else:
            self.conn.execute(
                "INSERT OR REPLACE INTO projection_positions VALUES (?, ?, ?, NULL)",
                (name, group_id, position),
            )


def _runs_by_group(batch: Sequence[RecordedEvent]) -> list[Sequence[RecordedEvent]]:
    """The batch cut into runs of consecutive events of the same group (usually one run)."""
    if not batch:
        return []
    first = batch[0].group_id
    if all(r.group_id == first for r in batch):
        return [batch]
    runs: list[list[RecordedEvent]] = []
    for recorded in batch:
        if runs and runs[-1][-1].group_id == recorded.group_id:
            runs[-1].append(recorded)
        else:
            runs.append([recorded])
    return list(runs)
