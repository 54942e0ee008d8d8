"""Wiring of one workspace: lease, WAL, graph projection, runner and writer, opened in order."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

from lcg.commands.writer import Writer
from lcg.domain.events import EventCodec
from lcg.domain.ids import GroupId
from lcg.interfaces.config import Settings
from lcg.interfaces.private_files import DIR_MODE, make_private
from lcg.projections import registry
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import CountingEmbedder, Embedder
from lcg.projections.faults import LogBehindProjections
from lcg.projections.graph import schema
from lcg.projections.runner import (
    ProjectionRunner,
    applied_seqs,
    behind_log,
    recorded_wal_identity,
)
from lcg.projections.text.scorer import TextScorer
from lcg.projections.text.tables import TEXT_TABLES, TOKENIZER
from lcg.projections.vectors.index import VectorIndex
from lcg.projections.wal.lease import WriterLease
from lcg.projections.wal.store import EventLog

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def attach_hint(settings: Settings) -> str:
    """What a refused second writer can do instead: attach to the holder's socket service."""
    return (
        "if it is the socket service (`lcg serve`), reach the workspace through it: "
        f"`lcg serve --mcp-stdio --connect {settings.socket_path}`"
    )


class WorkspaceClosed(Exception):
    """The workspace was used after close()."""


class ForeignProjections(Exception):
    """A read-only open met projections built from another WAL (the writer sets them aside)."""


class Workspace:
    """An open workspace. The writer holds the lease; read-only opens never write."""

    def __init__(
        self,
        settings: Settings,
        *,
        command: str = "lcg",
        clock: Clock = utc_now,
        read_only: bool = False,
        embedder: Embedder | None = None,
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
        self._cache: EmbeddingCache | None = None
        self._vectors: VectorIndex | None = None
        self._text: TextScorer | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._stack = ExitStack()
        self.embedder = CountingEmbedder(embedder or MiniLmEmbedder(threads=settings.embed_threads))
        self.caught_up = 0
        self.set_aside: list[Path] = []  # projection files of another WAL, renamed at open
        self.catch_up_failures: dict[GroupId, Exception] = {}

    def open(self) -> Self:
        """Take the lease, open the WAL, install the projections and apply any WAL tail.

        Each resource registers its own release as it is opened, so `close` (or a failed
        open) releases exactly what was opened, in reverse order, even if one release fails.
        """
        self._make_private()
        stack = self._stack
        try:
            if not self.read_only:
                lease = WriterLease(
                    self.settings.lease_path,
                    self._command,
                    self.clock(),
                    attach_hint(self.settings),
                )
                lease.acquire()
                self._lease = lease
                stack.callback(self._release, "_lease", lease.release)
            stack.callback(self._close_readers)
            self._refuse_if_the_log_is_lost()
            self._log = EventLog(self.settings.wal_path, EventCodec(), self.settings.durability)
            stack.callback(self._release, "_log", self._log.close)
            recorded = self._recorded_identity(self._log.identity)
            conn = schema.connect(str(self.settings.graph_path))
            stack.callback(self._release, "_runner", conn.close)
            self._runner = ProjectionRunner(conn, self._log, registry.projections())
            self._refuse_if_behind(behind_log(conn, self._log.heads()))
            if not self.read_only:
                self._runner.install()
                if recorded is None:
                    self._runner.record_wal_identity(self._log.identity)
                self._open_for_writing(conn)
        except BaseException:
            self.close()
            raise
        return self

    def _make_private(self) -> None:
        """F7: the state directory is 0700 and its files 0600 (an older one is tightened)."""
        if self.read_only:  # never changes what it reads; a new directory is still private
            self.settings.state_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            return
        for change in make_private(self.settings.state_dir):
            log.warning("tightened the permissions of %s (memory is its owner's alone)", change)

    def _refuse_if_the_log_is_lost(self) -> None:
        """A missing or empty WAL beside applied projections: refused before a new WAL is made
        (one with a new identity would make the projections look foreign at the next open)."""
        graph = self.settings.graph_path
        if EventLog.holds_anything(self.settings.wal_path) or not graph.exists():
            return
        with closing(schema.connect(str(graph), read_only=True)) as peek:
            applied = applied_seqs(peek)
        self._refuse_if_behind([(group, 0, seq) for group, seq in sorted(applied.items()) if seq])

    def _refuse_if_behind(self, behind: list[tuple[str, int, int]]) -> None:
        if behind:
            settings = self.settings
            raise LogBehindProjections(
                settings.wal_path, settings.graph_path, behind, (settings.vectors_dir,)
            )

    def _recorded_identity(self, identity: str) -> str | None:
        """The WAL identity the projection database records; one of another WAL is set aside
        (with the FAISS files derived from it) so that the projections are rebuilt from this
        WAL. None when none is recorded (a new database, or one from before identities)."""
        graph = self.settings.graph_path
        if not graph.exists():
            return None
        with closing(schema.connect(str(graph), read_only=True)) as peek:
            recorded = recorded_wal_identity(peek)
        if recorded is None or recorded == identity:
            return recorded
        if self.read_only:
            raise ForeignProjections(
                f"{graph} was built from another WAL (identity {recorded}, this WAL is "
                f"{identity}); the next writer to open the workspace sets it aside"
            )
        stamp = self.clock().strftime("%Y%m%dT%H%M%S.%fZ")
        for path in (graph, self.settings.vectors_dir):
            for suffix in ("", "-wal", "-shm") if path == graph else ("",):
                source = Path(f"{path}{suffix}")
                if source.exists():
                    target = Path(f"{path}.foreign-{stamp}{suffix}")
                    os.replace(source, target)
                    self.set_aside.append(target)
        log.warning(
            "%s was built from another WAL (identity %s, %s is %s): set aside as %s; the "
            "projections are rebuilt from the WAL",
            graph,
            recorded,
            self.settings.wal_path,
            identity,
            ", ".join(str(path) for path in self.set_aside),
        )
        return None

    def _open_for_writing(self, conn: sqlite3.Connection) -> None:
        stack, runner = self._stack, self.runner
        self.caught_up, self.catch_up_failures = runner.catch_up_each()
        for group, error in self.catch_up_failures.items():
            log.error("group %r could not be caught up from the WAL: %s", group, error)
        cache = EmbeddingCache(self.settings.embeddings_path, self.embedder)
        self._cache = cache
        stack.callback(self._release, "_cache", cache.close)
        vectors = VectorIndex(
            self.settings.vectors_dir,
            cache,
            checkpoint_every=self.settings.vector_checkpoint_every,
            ivf_threshold=self.settings.vector_ivf_threshold,
        )
        vectors.open(conn)
        self._vectors = vectors
        stack.callback(self._release, "_vectors", vectors.checkpoint)
        text = TextScorer(
            self.settings.text_scorer_path,
            TOKENIZER,
            TEXT_TABLES,
            checkpoint_every=self.settings.vector_checkpoint_every,
        )
        text.open(conn)
        self._text = text
        stack.callback(self._release, "_text", lambda: self._checkpoint_text(text, conn))
        self._pool = stack.enter_context(
            ThreadPoolExecutor(max_workers=2, thread_name_prefix="lcg-bm25")
        )
        stack.callback(setattr, self, "_pool", None)
        self._writer = Writer(self.log, runner, self.clock)
        stack.callback(setattr, self, "_writer", None)
        self._writer.listeners.append(vectors)
        self._writer.listeners.append(text)
        for group, error in self.catch_up_failures.items():
            self._writer.block(group, error)
        self._make_private()  # files the libraries just created with the process's umask

    def faults(self) -> list[str]:
        """What keeps this open workspace from taking writes (empty when it is healthy)."""
        return [] if self._writer is None else self._writer.faults()

    def _release(self, attribute: str, release: Callable[[], object]) -> None:
        """Forget a resource, then release it. A failed release (a full disk, a read-only
        file) is logged, never raised: every other step of close still runs (F6), and what
        it could not write is derivable (index files, checkpoints) and rebuilt at the next
        open."""
        setattr(self, attribute, None)
        try:
            release()
        except Exception:
            log.exception(
                "closing the workspace %s: %s could not be released; the other close steps ran",
                self.settings.workspace,
                attribute.lstrip("_"),
            )

    @staticmethod
    def _checkpoint_text(text: TextScorer, conn: sqlite3.Connection) -> None:
        try:
            text.checkpoint(conn)
        except (OSError, sqlite3.Error) as error:  # a cache: rebuilt at the next start
            log.warning("text scorer checkpoint failed at close: %s", error)

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

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            raise WorkspaceClosed("vector search needs the workspace open for writing")
        return self._vectors

    @property
    def text_scorer(self) -> TextScorer:
        if self._text is None:
            raise WorkspaceClosed("text search needs the workspace open for writing")
        return self._text

    @property
    def search_pool(self) -> ThreadPoolExecutor | None:
        """Threads for the BM25 leg of a search (ADR 0016); None when closed."""
        return self._pool

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection to the graph (sees committed writes only)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = schema.connect(str(self.settings.graph_path), read_only=True)
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _close_readers(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._local = threading.local()

    def close(self) -> None:
        """Release everything `open` acquired, newest first; idempotent."""
        stack, self._stack = self._stack, ExitStack()
        stack.close()

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
