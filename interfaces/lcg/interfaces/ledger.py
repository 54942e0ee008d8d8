"""The call ledger of `serve --ledger FILE` (seed 001, ADR 0079): JSON lines appended by one
writer thread through a bounded queue, so that no tool call ever waits for the file.

A line is accepted onto the queue or dropped at once (`channel_full`: the writer fell behind);
a batch whose open or write fails, a line still queued when the serve stops, and a line
appended after it stopped are dropped as `write_failed`. `written + dropped + queued` is
every line ever appended. The file is opened at start-up (created 0600 if missing), so a path
that cannot be opened refuses the serve naming `--ledger`; a FIFO is opened by the writer
before it takes any line, so one without a reader parks the writer, holding nothing, and never
a call: the queue depth is then exactly the lines waiting.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import queue
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import orjson

from lcg.domain.errors import InvalidParams

FLAG: Final = "--ledger"
BATCH: Final = 512  # lines one write() carries at most
STOP_WAIT_SECONDS: Final = 2.0  # at shutdown, how long the writer may still flush
_IDLE_POLL: Final = 0.2

log = logging.getLogger("lcg.ledger")


@dataclasses.dataclass(slots=True)
class _Counts:
    written: int = 0
    channel_full: int = 0
    write_failed: int = 0
    queued: int = 0


class CallLedger:
    """The ledger file's writer and its counters; `append` is safe from any thread."""

    def __init__(self, path: Path, capacity: int, fd: int | None = None) -> None:
        self.path = path
        self._fd = fd  # opened at start-up, or None: the writer opens it (a FIFO)
        self._queue: queue.Queue[tuple[str | None, bytes]] = queue.Queue(maxsize=capacity)
        self._lock = threading.Lock()
        self._total = _Counts()
        self._by_session: dict[str, _Counts] = {}
        self._closed = False
        self._stop = threading.Event()
        self._warned = False
        self._heartbeat: threading.Thread | None = None
        self._writer = threading.Thread(target=self._run, name="lcg-ledger", daemon=True)
        self._writer.start()

    # -- the call path ------------------------------------------------------------------------

    def append(self, session: str | None, record: dict[str, Any]) -> None:
        """Queue one line for `session` (None: a line of no session), or count its drop."""
        data = orjson.dumps(record) + b"\n"
        with self._lock:
            counts = [self._total, *self._session_counts(session)]
            if self._closed:
                for c in counts:
                    c.write_failed += 1
                return
            try:
                self._queue.put_nowait((session, data))
            except queue.Full:
                for c in counts:
                    c.channel_full += 1
                return
            for c in counts:
                c.queued += 1

    def keys(self, session: str | None, whole_file: bool) -> dict[str, Any]:
        """lambo_stats's six ledger keys: the whole file's figures, or only the lines
        appended for `session` (a serve holding several sessions, M-STA-166)."""
        with self._lock:
            counts = self._total if whole_file or session is None else self._of(session)
            return {
                "ledger_path": str(self.path),
                "ledger_written_lines": counts.written,
                "ledger_dropped_lines": counts.channel_full + counts.write_failed,
                "ledger_dropped_channel_full": counts.channel_full,
                "ledger_dropped_write_failed": counts.write_failed,
                "ledger_queued_lines": counts.queued,
            }

    # -- heartbeat ------------------------------------------------------------------------------

    def beat_every(self, seconds: float, beat: Callable[[], None]) -> None:
        """Call `beat` (which appends the heartbeat lines) every `seconds` until close."""
        if seconds <= 0 or self._heartbeat is not None:
            return

        def run() -> None:
            while not self._stop.wait(seconds):
                try:
                    beat()
                except Exception:
                    log.warning("ledger heartbeat failed", exc_info=True)

        self._heartbeat = threading.Thread(target=run, name="lcg-ledger-heartbeat", daemon=True)
        self._heartbeat.start()

    # -- shutdown -------------------------------------------------------------------------------

    def close(self, wait: float = STOP_WAIT_SECONDS) -> None:
        """Stop accepting lines; the writer flushes what is queued for up to `wait` seconds,
        and what is still queued after that is dropped as write_failed."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        self._writer.join(wait)
        while True:
            try:
                session, _ = self._queue.get_nowait()
            except queue.Empty:
                break
            self._settle([session], ok=False)
        if self._writer.is_alive():
            self._unpark()
        if not self._writer.is_alive() and self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _unpark(self) -> None:
        """A writer parked in a FIFO's open is let go (a reader opens and closes it), so that
        no thread outlives the serve; it finds the queue empty and ends."""
        try:
            if not stat.S_ISFIFO(self.path.stat().st_mode):
                return
            reader = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return
        try:
            self._writer.join(_IDLE_POLL * 5)
        finally:
            os.close(reader)

    # -- the writer thread ------------------------------------------------------------------------

    def _run(self) -> None:
        if self._fd is None:  # a FIFO: parks here, holding no line, until a reader opens it
            try:
                self._fd = _open(self.path)
            except OSError as error:
                self._warn(error)  # retried with each batch, which is dropped if it fails
        while True:
            try:
                first = self._queue.get(timeout=_IDLE_POLL)
            except queue.Empty:
                if self._stop.is_set():
                    return
                continue
            batch = [first]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            ok = self._write(b"".join(data for _, data in batch))
            self._settle([session for session, _ in batch], ok=ok)

    def _write(self, data: bytes) -> bool:
        try:
            if self._fd is None:
                self._fd = _open(self.path)  # blocks on a FIFO until a reader opens it
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as error:
            self._warn(error)
            return False
        return True

    def _warn(self, error: OSError) -> None:
        if not self._warned:
            self._warned = True
            log.warning("the call ledger %s: %s; lines are dropped", self.path, error)

    def _settle(self, sessions: list[str | None], *, ok: bool) -> None:
        with self._lock:
            for session in sessions:
                for c in (self._total, *self._session_counts(session)):
                    c.queued -= 1
                    if ok:
                        c.written += 1
                    else:
                        c.write_failed += 1

    def _session_counts(self, session: str | None) -> list[_Counts]:
        return [] if session is None else [self._of(session)]

    def _of(self, session: str) -> _Counts:
        found = self._by_session.get(session)
        if found is None:
            found = self._by_session[session] = _Counts()
        return found


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)


def open_ledger(path: Path, capacity: int) -> CallLedger:
    """The ledger at `path`, created 0600 if missing; a path that cannot be opened for
    appending (a missing directory, a directory, no permission) is refused naming --ledger
    and the path. A FIFO is checked for write permission only: its open waits for a reader,
    which the writer thread does."""
    try:
        if stat.S_ISFIFO(path.stat().st_mode):
            if not os.access(path, os.W_OK):
                raise PermissionError(13, "Permission denied")
            return CallLedger(path, capacity)
    except FileNotFoundError:
        pass
    except OSError as error:
        raise _refused(path, error) from None
    try:
        fd = _open(path)
    except OSError as error:
        raise _refused(path, error) from None
    return CallLedger(path, capacity, fd)


def _refused(path: Path, error: OSError) -> InvalidParams:
    return InvalidParams(
        FLAG, "must name a file this process can append to", f"{path}: {error.strerror}"
    )
