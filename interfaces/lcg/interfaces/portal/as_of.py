""" "As of seq N" (issue 29): the memory of one session as it stood at seq N, read-only, never
touching the live group (ADR 0077).

A snapshot is a workspace of its own in a temporary directory, made by the one "as of seq"
builder (lcg.projections.as_of, shared with export, ADR 0089): a WAL holding the session's
events 1..N (read from the live log through the LogStore port, the seqs kept), its
projections replayed to N as they were copied, and a copy of the embedding cache (so the
vectors embed nothing the live workspace already embedded), opened like any workspace, which
finds its projections at N. Queries then run against it through the same query layer as the
live ones. Snapshots are kept in a small LRU keyed by (session, N); the evicted one is closed
and its directory removed.
"""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Final

from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections import as_of

KEPT: Final = 2  # snapshots open at once (each is a workspace: files, a vector index)
COPY_PAGE: Final = as_of.COPY_PAGE


class Snapshots:
    """The open snapshots of one live workspace, by (session, seq)."""

    def __init__(self, live: Workspace, kept: int = KEPT) -> None:
        self._live = live
        self._kept = kept
        self._lock = threading.Lock()  # one snapshot is built at a time
        self._open: OrderedDict[tuple[str, int], tuple[Workspace, Path]] = OrderedDict()

    def app(self, session: str, seq: int) -> App:
        """An App reading the session as of `seq` (made on first use)."""
        key = (session, seq)
        with self._lock:
            found = self._open.get(key)
            if found is None:
                found = self._build(session, seq)
                self._open[key] = found
                while len(self._open) > self._kept:
                    _, (old, where) = self._open.popitem(last=False)
                    _discard(old, where)
            else:
                self._open.move_to_end(key)
            return App(found[0])

    def close(self) -> None:
        with self._lock:
            while self._open:
                _, (old, where) = self._open.popitem(last=False)
                _discard(old, where)

    def _build(self, session: str, seq: int) -> tuple[Workspace, Path]:
        live = self._live
        upto = min(seq, live.log.head(session))  # as before: a seq past the head is the head
        built = as_of.AsOf(live.log, session, upto, copy_log=True, prefix="lcg-as-of-")
        where = built.where
        try:
            built.close_projections()  # the workspace below opens them itself
            # its own log file (the copy), never the live [store] url's database
            settings = dataclasses.replace(
                live.settings, workspace=where, session=session, store_url=""
            )
            _copy_sqlite(live.settings.embeddings_path, settings.embeddings_path)
            for made in settings.state_dir.iterdir():  # memory is its owner's alone (0600)
                made.chmod(0o600)
            workspace = Workspace(settings, command="lcg portal (as of seq)").open()
        except BaseException:
            shutil.rmtree(where, ignore_errors=True)
            raise
        return workspace, where


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a SQLite file (the backup API: the live writer is not stopped);
    nothing when there is none."""
    if not source.exists():
        return
    reading = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    writing = sqlite3.connect(target)
    try:
        reading.backup(writing)
    finally:
        reading.close()
        writing.close()


def _discard(workspace: Workspace, where: Path) -> None:
    try:
        workspace.close()
    finally:
        shutil.rmtree(where, ignore_errors=True)
