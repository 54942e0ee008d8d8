"""Wiring of one workspace: lease, WAL, graph projection, runner and writer, opened in order."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from lcg.commands.writer import Writer
from lcg.domain.events import EventCodec
from lcg.interfaces.config import Settings
from lcg.projections.graph import schema
from lcg.projections.graph.projection import GraphProjection
from lcg.projections.runner import ProjectionRunner
from lcg.projections.wal.lease import WriterLease
from lcg.projections.wal.store import EventLog

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class WorkspaceClosed(Exception):
    """The workspace was used after close()."""


class Workspace:
    """An open workspace. The writer holds the lease; read-only opens never write."""

    def __init__(
        self,
        settings: Settings,
        *,
        command: str = "lcg",
        clock: Clock = utc_now,
        read_only: bool = False,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.read_only = read_only
        self._command = command
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._lease: WriterLease | None = None
        self._log: EventLog | None = None
        self._runner: ProjectionRunner | None = None
        self._writer: Writer | None = None
        self.caught_up = 0

    def open(self) -> Self:
        """Take the lease, open the WAL, install the projections and apply any WAL tail."""
        self.settings.state_dir.mkdir(parents=True, exist_ok=True)
        if not self.read_only:
            self._lease = WriterLease(self.settings.lease_path, self._command, self.clock())
            self._lease.acquire()
        try:
            self._log = EventLog(self.settings.wal_path, EventCodec(), self.settings.durability)
            conn = schema.connect(str(self.settings.graph_path))
            self._runner = ProjectionRunner(conn, self._log, [GraphProjection()])
            if not self.read_only:
                self._runner.install()
                self.caught_up = self._runner.catch_up()
                self._writer = Writer(self._log, self._runner, self.clock)
        except BaseException:
            self.close()
            raise
        return self

    @property
    def writer(self) -> Writer:
        if self._writer is None:
            raise WorkspaceClosed("the workspace is not open for writing")
        return self._writer

    @property
    def runner(self) -> ProjectionRunner:
        if self._runner is None:
            raise WorkspaceClosed("the workspace is not open")
        return self._runner

    @property
    def log(self) -> EventLog:
        if self._log is None:
            raise WorkspaceClosed("the workspace is not open")
        return self._log

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection to the graph (sees committed writes only)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = schema.connect(str(self.settings.graph_path), read_only=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._local = threading.local()
        if self._runner is not None:
            self._runner.conn.close()
            self._runner = None
        if self._log is not None:
            self._log.close()
            self._log = None
        self._writer = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
