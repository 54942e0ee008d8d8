"""The single-writer lease of a workspace: an flock on `.lcg/writer.lock` naming its holder.

The kernel drops an flock when its process dies, even by SIGKILL, so a crashed writer never
leaves a stale lease behind; the holder's description is only for the error message.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from lcg.projections.faults import StorageFailure
from lcg.projections.own_files import open_own

PUBLISHES = "publishes"  # the record's key: its holder will publish a forwarding socket


class WorkspaceBusy(Exception):
    """Another process holds the workspace's writer lease."""

    def __init__(self, path: Path, holder: str, alternative: str | None = None) -> None:
        message = (
            f"workspace {path.parent.parent} is held by another writer ({holder}); "
            "only one process may write a workspace at a time: stop that process or wait "
            "for it to finish"
        )
        super().__init__(message if alternative is None else f"{message}; {alternative}")
        self.holder = holder


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds the lease, for the other process's error message."""

    pid: int
    host: str
    command: str
    since: str

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}, `{self.command}`, since {self.since}"


class WriterLease:
    """Held for as long as a process may append to the workspace's WAL."""

    def __init__(
        self,
        path: Path,
        command: str,
        now: datetime,
        busy_alternative: str | None = None,
        *,
        publishes: bool = False,
    ) -> None:
        self.path = path
        self._busy_alternative = busy_alternative  # what to do instead, for WorkspaceBusy
        self._holder = Holder(os.getpid(), socket.gethostname(), command, now.isoformat())
        # a serve that will say in this record where it publishes, once open (ADR 0066)
        self._publishes = publishes
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        # never through a link, never another user's file (issue 24): own_files refuses both
        fd = open_own(self.path, os.O_RDWR | os.O_CREAT, "take the writer lease")
        handle = os.fdopen(fd, "r+", encoding="utf-8")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = _describe(handle.read())
            handle.close()
            raise WorkspaceBusy(self.path, holder, self._busy_alternative) from None
        try:
            handle.seek(0)
            handle.truncate()
            record = _as_dict(self._holder)
            if self._publishes:
                record[PUBLISHES] = True
            handle.write(json.dumps(record))
            handle.flush()
        except OSError as error:  # a full disk: the lock is let go, the file named (exit 7)
            with contextlib.suppress(OSError):  # closing flushes again and fails again
                handle.close()
            raise StorageFailure(self.path, "write the writer lease", error) from error
        self._file = handle

    def release(self) -> None:
        if self._file is None:
            return
        self._file.seek(0)
        self._file.truncate()
        fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
        self._file.close()
        self._file = None

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _as_dict(holder: Holder) -> dict[str, object]:
    return {
        "pid": holder.pid,
        "host": holder.host,
        "command": holder.command,
        "since": holder.since,
    }


def _describe(text: str) -> str:
    try:
        data = json.loads(text)
        return Holder(
            int(data["pid"]), str(data["host"]), str(data["command"]), str(data["since"])
        ).describe()
    except (ValueError, KeyError, TypeError):
        return "a process that has not written its name yet"


def read_record(path: Path) -> dict[str, object] | None:
    """The lease record as its holder last wrote it, read without taking the lock: None when
    there is none, or while it is being written (the reader asks again)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def annotate(path: Path, fields: dict[str, object]) -> None:
    """Add `fields` to the record of a lease this process holds (where its holder publishes,
    ADR 0066). The flock is held on another descriptor of this process; the lock is advisory,
    so this one may write. A record naming another process is left alone."""
    record = read_record(path)
    if record is None or record.get("pid") != os.getpid():
        raise ValueError(f"{path}: this process does not hold the lease")
    text = json.dumps({**record, **fields})
    fd = open_own(path, os.O_WRONLY, "publish in the writer lease")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.truncate()
