"""Wiring of one workspace: lease, WAL, graph projection, runner and writer, opened in order."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from lcg.commands.writer import Writer
from lcg.domain.events import EventCodec
from lcg.interfaces.config import Settings
from lcg.projections import registry
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import CountingEmbedder, Embedder
from lcg.projections.graph import schema
from lcg.projections.runner import ProjectionRunner
from lcg.projections.text.scorer import TextScorer
from lcg.projections.text.tables import FAMILIES, TOKENIZER
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
        self.embedder = CountingEmbedder(embedder or MiniLmEmbedder(threads=settings.embed_threads))
        self.caught_up = 0

    def open(self) -> Self:
        """Take the lease, open the WAL, install the projections and apply any WAL tail."""
        self.settings.state_dir.mkdir(parents=True, exist_ok=True)
        if not self.read_only:
            self._lease = WriterLease(
                self.settings.lease_path, self._command, self.clock(), attach_hint(self.settings)
            )
            self._lease.acquire()
        try:
            self._log = EventLog(self.settings.wal_path, EventCodec(), self.settings.durability)
            conn = schema.connect(str(self.settings.graph_path))
            self._runner = ProjectionRunner(conn, self._log, registry.projections())
            if not self.read_only:
                self._runner.install()
                self.caught_up = self._runner.catch_up()
                self._cache = EmbeddingCache(self.settings.embeddings_path, self.embedder)
                self._vectors = VectorIndex(
                    self.settings.vectors_dir,
                    self._cache,
                    checkpoint_every=self.settings.vector_checkpoint_every,
                    ivf_threshold=self.settings.vector_ivf_threshold,
                )
                self._vectors.open(conn)
                self._text = TextScorer(
                    self.settings.text_scorer_path,
                    TOKENIZER,
                    FAMILIES,
                    checkpoint_every=self.settings.vector_checkpoint_every,
                )
                self._text.open(conn)
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="lcg-bm25")
                self._writer = Writer(self._log, self._runner, self.clock)
                self._writer.listeners.append(self._vectors)
                self._writer.listeners.append(self._text)
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

    def close(self) -> None:
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        self._local = threading.local()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        if self._vectors is not None:
            self._vectors.checkpoint()
            self._vectors = None
        if self._text is not None and self._runner is not None:
            try:
                self._text.checkpoint(self._runner.conn)
            except (OSError, sqlite3.Error) as error:  # a cache: rebuilt at the next start
                log.warning("text scorer checkpoint failed at close: %s", error)
        self._text = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None
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
