"""What a tool function may reach: narrow handles onto the open workspace (issue 25, ADR 0063).

A tool never holds the `Workspace` (the bootstrap that opens, wires and closes everything). It
gets `app.reads` (what it may read), `app.writes` (what it may ask to be written, and the
models a write runs outside the writer) and, for the operator's tools, `app.upkeep` (the
workspace's own state: health, repairs, index files). Each is a Protocol the workspace
satisfies, so mypy refuses a tool that reaches past it, and an adapter (HTTP, the portal)
that builds an `App` hands the same three to every tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from lcg.queries.reads import ReadHandle

if TYPE_CHECKING:
    from lcg.commands.read_hold import ReadHold
    from lcg.commands.rebuild_jobs import RebuildJobs
    from lcg.commands.writer import Writer
    from lcg.interfaces.config import Settings
    from lcg.projections.cypher.store import CypherGraph
    from lcg.projections.damage import DamagedFile, Repair
    from lcg.projections.embedding.port import Embedder, Vectors
    from lcg.projections.extraction.classify import Classifier
    from lcg.projections.extraction.port import Extractor
    from lcg.projections.runner import ProjectionRunner
    from lcg.projections.wal.port import LogStore


class Reads(ReadHandle, Protocol):
    """The read side: a `lcg.queries.reads.ReadHandle` (this thread's read connection, the
    FAISS and BM25 indexes, the query embedder, the bounded vector wait, the clock: what the
    read-side queries take, ADR 0060) with the whole settings, and what the knowledge tools
    read besides: the embedder's contract, the Cypher mirror and the log's marks. Nothing here
    can change what is stored."""

    @property
    def settings(self) -> Settings: ...

    @property
    def embedder(self) -> Embedder: ...

    @property
    def cypher(self) -> CypherGraph: ...

    @property
    def log(self) -> LogStore: ...


class Writes(Protocol):
    """The write side: the writer every write goes through, the rebuild jobs, and what a write
    runs before it is decided (the extractor, the classifier, stored texts' embeddings)."""

    @property
    def writer(self) -> Writer: ...

    @property
    def read_hold(self) -> ReadHold: ...

    @property
    def rebuild_jobs(self) -> RebuildJobs: ...

    @property
    def extractor(self) -> Extractor: ...

    @property
    def classifier(self) -> Classifier | None: ...

    def embed_texts(self, texts: Sequence[str]) -> Vectors: ...


class Upkeep(Protocol):
    """The operator's view of the open workspace: its health for knowledge_status, the files a
    checkpoint writes, and the index time knowledge_build_indices records."""

    last_index_time: datetime | None

    @property
    def read_only(self) -> bool: ...

    @property
    def damaged(self) -> DamagedFile | None: ...

    @property
    def repairs(self) -> list[Repair]: ...

    @property
    def runner(self) -> ProjectionRunner: ...

    @property
    def vector_follow_state(self) -> tuple[int, str | None]: ...

    def cache_repairs(self) -> list[Repair]: ...

    def damaged_files(self) -> list[Repair]: ...

    def faults(self) -> list[str]: ...

    def settle(self, timeout: float | None = None) -> bool: ...
