"""Failures of the workspace's files, named with the file (and group and seq for the log).

docs/adr/0019-wal-identity-and-storage-failures.md: a log behind its projections, an event
that cannot be read, a file that cannot be written. Each message says what the operator
can do.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path


class StorageFailure(Exception):
    """A file of the workspace could not be read or written (disk full, read-only, I/O)."""

    of_workspace = True  # a failure of the workspace's own files: health is degraded

    def __init__(
        self, path: Path | str, action: str, reason: BaseException | str, *, note: str = ""
    ) -> None:
        self.path = path  # a file, or the description of a server's log (no password)
        self.action = action
        self.reason = reason_of(reason)
        super().__init__(f"cannot {action} {path}: {self.reason}" + (f"; {note}" if note else ""))


class DumpFailed(StorageFailure):
    """A dump's target directory could not be written (full, read-only, a name too long):
    the dump is refused and removed, and the workspace is unaffected, so its health is too."""

    of_workspace = False

    def __init__(self, path: Path, action: str, reason: BaseException | str) -> None:
        note = "nothing of the dump is left; the workspace is unaffected"
        super().__init__(path, action, reason, note=note)


def reason_of(error: BaseException | str) -> str:
    """The OS or SQLite reason, with SQLite's error name when it has one."""
    if isinstance(error, str):
        return error
    name = getattr(error, "sqlite_errorname", None) if isinstance(error, sqlite3.Error) else None
    return f"{error} ({name})" if name else str(error) or type(error).__name__


def is_storage_error(error: BaseException) -> bool:
    """An error of the file or the disk under it, rather than of lcg's own logic."""
    return isinstance(error, OSError | sqlite3.OperationalError | sqlite3.DatabaseError) and not (
        isinstance(error, sqlite3.IntegrityError | sqlite3.ProgrammingError)
    )


class GroupBehind(Exception):
    """A group's projections are behind its WAL and could not be caught up: its writes are
    refused (they would not be visible) until a catch-up succeeds."""

    def __init__(self, group_id: str, applied: int, head: int, cause: BaseException) -> None:
        self.group_id = group_id
        self.cause = cause
        super().__init__(
            f"group {group_id!r} is applied to seq {applied} but its WAL holds seq {head}, "
            f"and catching up failed: {cause}. Nothing was written; catching up is tried again "
            "at the next write"
        )


class CorruptEvent(Exception):
    """An event stored in the WAL cannot be decoded, or (`applied`, found by the check at open,
    ADR 0049) one the projections already applied is missing or no longer what was written:
    the group cannot be applied past it, so its writes are refused."""

    def __init__(
        self, path: Path | str, group_id: str, seq: int, reason: str, *, applied: bool = False
    ) -> None:
        self.path = path
        self.group_id = group_id
        self.seq = seq
        self.reason = reason
        self.applied = applied
        before = seq - 1
        if applied:
            state = (
                f"the event is damaged after it was applied: reads serve what was applied, but "
                f"writes to the group are refused (a rebuild would stop before seq {seq} and "
                "hide them); other groups are unaffected"
            )
        else:
            state = (
                "the group is applied only up to the events before it, and other groups are "
                "unaffected"
            )
        word = "a damaged" if applied else "an unreadable"
        restore = path.name if isinstance(path, Path) else "the log"
        super().__init__(
            f"{path} holds {word} event at seq {seq} of group {group_id!r} ({reason}); "
            f"{state}. Restore {restore} from a backup, or keep the group at the last "
            f"good event: `lcg replay --group {group_id} --to-seq {before} --force-clear` "
            f"rebuilds it from seqs 1..{before} and holds it there (reads work, writes are "
            "refused)"
        )


class LogBehindProjections(Exception):
    """The WAL holds fewer events than the projections applied: it was lost or replaced."""

    def __init__(
        self,
        wal: Path | str,
        graph: Path,
        behind: Sequence[tuple[str, int, int]],
        derived: Sequence[Path] = (),
    ) -> None:
        self.wal = wal
        self.graph = graph
        self.behind = tuple(behind)  # (group, WAL head, applied seq)
        group, head, applied = self.behind[0]
        more = f" (and {len(self.behind) - 1} more groups)" if len(self.behind) > 1 else ""
        aside = graph.parent / "lost-wal"
        name = wal.name if isinstance(wal, Path) else "the log"
        moved = " ".join(str(path) for path in (Path(f"{graph}*"), *derived))
        holds = f"holds seq {head}" if head else "holds no events"
        super().__init__(
            f"{wal} {holds} for group {group!r} but the projections in {graph} "
            f"applied seq {applied}{more}: the log is behind its projections (lost or "
            "replaced?); nothing is written, since a new write would be hidden. Restore "
            f"{name} from a backup; or, if it is really lost, move the projections aside "
            f"(`mkdir {aside} && mv {moved} {aside}/`) and open the workspace again: they are "
            "rebuilt from what the log holds. `lcg recover rebuild_from_workspace_wal` (or "
            "knowledge_recover with that strategy on the serving process) does the latter, "
            "`lcg recover restore_from_backup` restores the dump in .lcg/wal-compacted"
        )


# Every failure above: the CLI exits with EXIT_STORAGE, JSON-RPC answers STORAGE_ERROR.
FAULTS = (StorageFailure, GroupBehind, CorruptEvent, LogBehindProjections)


class Fenced(Exception):
    """A write under a lease whose epoch has moved on: another holder took it over
    (`lcg.projections.wal.pg_lease`, ADR 0075). Here, not there: the writer names it without
    loading psycopg (ADR 0053)."""

    def __init__(self, name: str, epoch: int, current: int | None) -> None:
        now = "nobody holds it" if current is None else f"it is at epoch {current}"
        super().__init__(
            f"the lease {name!r} was taken over (this holder's epoch is {epoch}, {now});"
            " nothing was written"
        )
        self.name = name
        self.epoch = epoch
        self.current = current


class VectorReadRefused(Exception):
    """A vector search refused before FAISS reads: the query's vector is not of the width of
    the index it would search (the embedding contract changed under the query, M-ERR-023). The
    detail is for the operator's log; a caller is told only to re-check the contract."""

    def __init__(self, kind: str, query_width: int, index_width: int) -> None:
        super().__init__(
            f"a {kind} vector read was refused: the query's vector has {query_width} values,"
            f" the index holds vectors of {index_width}"
        )
        self.kind = kind
