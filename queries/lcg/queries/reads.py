"""What a read-side query may read: the read handle (ADR 0060).

A query receives a `ReadHandle`, never the workspace: this thread's read connection, the
vector indexes and the in-memory BM25 scorer, the query embedder, the bounded wait for the
vector follower, the clock and the settings that shape a read. The tools' `app.reads`
(`lcg.interfaces.handles.Reads`, ADR 0063) is one: the open workspace, typed as this
Protocol's extension. The memory family's queries read through it, and the knowledge family's
search does (`search_context`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from datetime import datetime
from typing import Literal, Protocol

from lcg.domain.memory.layers import LayerMerge
from lcg.projections.embedding.port import Vectors
from lcg.projections.text.scorer import TextScorer
from lcg.projections.vectors.follower import KNOWLEDGE
from lcg.projections.vectors.index import VectorIndex
from lcg.queries.fusion import Fusion
from lcg.queries.search import SearchContext
from lcg.queries.stages import Stages


class SelectionSettings(Protocol):
    """[selection] of the settings file: how recall picks among its ranked hits (#181)."""

    @property
    def skip_redundant(self) -> bool: ...

    @property
    def similar_signals(self) -> bool: ...

    @property
    def stages(self) -> Stages:
        """[retrieval]: passage search's and recall's stages after fusion (ADR 0068)."""
        ...

    @property
    def recall_defaults(self) -> tuple[int, int, int]:
        """[recall]: lambo_recall's top_k, max_tokens and traversal_depth when not sent."""
        ...

    @property
    def supersession_line(self) -> str:
        """[embedder] suspected_supersession_line: auto | on | off."""
        ...

    @property
    def layer_merge(self) -> LayerMerge:
        """[serve] layer_merge: how a layered recall orders its sessions' hits (ADR 0107)."""
        ...


class ReadSettings(Protocol):
    """The settings a read depends on, read when the query needs them."""

    @property
    def search_fusion(self) -> Fusion: ...

    @property
    def search_expand_depth(self) -> int: ...

    @property
    def vector_read_wait_ms(self) -> int:
        """How long a read waits for its groups' vectors to be indexed (ADR 0047)."""
        ...

    @property
    def bm25_engine(self) -> Literal["memory", "fts5"]: ...

    @property
    def tuning(self) -> SelectionSettings: ...


class ReadHandle(Protocol):
    """The connections and indexes a query reads, and nothing it could write through."""

    @property
    def settings(self) -> ReadSettings: ...

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def text_scorer(self) -> TextScorer:
        """The in-memory BM25 scorer, whatever `bm25_engine` says (a query chooses)."""
        ...

    @property
    def search_pool(self) -> Executor | None:
        """Threads for the BM25 leg while this one embeds the query; None: this thread."""
        ...

    @property
    def clock(self) -> Callable[[], datetime]:
        """The workspace clock: the one source of `now`."""
        ...

    def reader(self) -> sqlite3.Connection:
        """This thread's read connection to the graph (committed writes only)."""
        ...

    def embed_query(self, text: str) -> Vectors: ...

    def settle_vectors(self, groups: Sequence[str] | None, kind: str, timeout: float) -> int:
        """Wait, at most `timeout` seconds, for the `kind` vectors of the groups acknowledged
        before the call; how many are still pending (0: all indexed)."""
        ...


def search_context(reads: ReadHandle) -> SearchContext:
    """What a search reads, as the settings configure it (its vector wait: the knowledge
    lane of the groups it reads)."""
    settings = reads.settings
    wait_ms = settings.vector_read_wait_ms
    return SearchContext(
        conn=reads.reader(),
        vectors=reads.vectors,
        embed_query=reads.embed_query,
        fusion=settings.search_fusion,
        expand_depth=settings.search_expand_depth,
        text_scorer=reads.text_scorer if settings.bm25_engine == "memory" else None,
        pool=reads.search_pool,
        await_vectors=lambda groups: reads.settle_vectors(groups, KNOWLEDGE, wait_ms / 1000),
        stages=settings.tuning.stages,
    )
