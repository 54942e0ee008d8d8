"""A group as it stood at one seq: its events 1..N from any log, replayed in a directory of
their own (ADR 0084, ADR 0089).

The one "as of seq" builder. It reads the group's stream through the `LogStore` port (the
workspace's WAL file or its `[store] url` database, lcg.projections.wal.opening) as a reader
beside the writer, and folds the events with the real projections into
`<dir>/.lcg/graph.sqlite`. The live projections, pins and positions are never touched, a
write landing meanwhile cannot show, and an old seq costs what the head costs.

- An export (lcg.interfaces.port.snapshot) reads rows out of the file and drops the
  directory.
- The portal's "as of seq" recall (lcg.interfaces.portal.as_of) asks for `copy_log`: the
  events are also appended, seqs kept, to `<dir>/.lcg/wal.sqlite`, a log file of its own
  whose identity the projections record, so a workspace opened on the directory finds its
  projections at N and replays nothing; it never opens the live log.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from lcg.domain.ids import GroupId
from lcg.projections import registry
from lcg.projections.graph import schema
from lcg.projections.layout import WorkspaceFiles
from lcg.projections.runner import Projection, ProjectionRunner, transaction
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import EventLog

Progress = Callable[[int, int], None]
COPY_PAGE = 5_000  # events per page read and appended


class AsOfSeqTooHigh(Exception):
    def __init__(self, seq: int, head: int) -> None:
        super().__init__(f"as_of_seq {seq} is past the group's last seq {head}")
        self.seq = seq
        self.head = head


class AsOf:
    """The group replayed to `seq` in a temporary directory laid out as a workspace; a
    context manager. `conn` is the projections' connection; `files` the directory's files."""

    def __init__(
        self,
        log: LogStore | None,
        group_id: str,
        as_of_seq: int | None = None,
        *,
        projections: Sequence[Projection] | None = None,
        copy_log: bool = False,
        progress: Progress | None = None,
        prefix: str = "lcg-as-of-",
    ) -> None:
        """`log` None: a workspace with no log yet, an empty group. The caller owns `log`;
        the replay is done when this returns. `projections`: every workspace projection
        unless told (a workspace opened on the directory needs them all)."""
        self.group_id = group_id
        self.where = Path(tempfile.mkdtemp(prefix=prefix))
        self.files = WorkspaceFiles(self.where)
        self.head = self.seq = 0
        self._conn: sqlite3.Connection | None = None
        try:
            self.files.state_dir.mkdir(mode=0o700)
            self._conn = schema.connect(str(self.files.graph_path))
            chosen = tuple(projections) if projections is not None else registry.projections()
            self._build(log, chosen, as_of_seq, copy_log, progress)
        except BaseException:
            self.close()
            raise

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError("the snapshot's projections are closed")
        return self._conn

    def _build(
        self,
        log: LogStore | None,
        projections: tuple[Projection, ...],
        as_of_seq: int | None,
        copy_log: bool,
        progress: Progress | None,
    ) -> None:
        if log is None:
            with transaction(self.conn):
                for projection in projections:
                    projection.install(self.conn)
            return
        self.head = log.head(self.group_id)
        if as_of_seq is not None and as_of_seq > self.head:
            raise AsOfSeqTooHigh(as_of_seq, self.head)
        self.seq = self.head if as_of_seq is None else as_of_seq
        copy = EventLog(self.files.wal_path, log.codec) if copy_log else None
        try:
            runner = ProjectionRunner(self.conn, copy or log, projections)
            runner.install()
            if copy is not None:
                runner.record_wal_identity(copy.identity)
            replayed = 0
            for page in log.read(GroupId(self.group_id), upto=self.seq, page=COPY_PAGE):
                if copy is not None:
                    copy.append(page)
                with transaction(self.conn):
                    runner.apply(page)
                replayed += len(page)
                if progress is not None:
                    progress(replayed, self.seq)
        finally:
            if copy is not None:
                copy.close()

    def close_projections(self) -> None:
        """Close the projections' connection and keep the directory (a workspace opens it)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Close, and remove the directory."""
        try:
            self.close_projections()
        finally:
            shutil.rmtree(self.where, ignore_errors=True)

    def __enter__(self) -> AsOf:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
