"""A layered session's recall (seed 001 "Layered sessions", ADR 0080): the session and each
of its layers recalled as its own plain recall (its own dedupe, contradiction and floor
rules), then merged under one max_tokens budget (lcg.domain.memory.layers.merge) and
rendered once. A layer that cannot be read leaves the session's own hits and one warning.

The layers' recalls run on the read handle's search pool while this thread recalls the session
(SQLite, FAISS, numpy and the embedder release the GIL), all reading one embedding of the query.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass, replace
from datetime import datetime

from lcg.domain.errors import DomainError
from lcg.domain.memory import context, layers, questions
from lcg.domain.memory.layers import SessionHits
from lcg.projections.embedding.port import Vectors
from lcg.projections.text.scorer import TextScorer
from lcg.projections.vectors.index import VectorIndex
from lcg.queries.memory_reads import SessionJobs
from lcg.queries.memory_recall import Recalled, RecalledHit, RecallRequest, recall_memory
from lcg.queries.reads import ReadHandle, ReadSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LayerRead:
    """A layer as the call may read it: its jobs, or why it is not serving (None: it is)."""

    session: str
    jobs: SessionJobs | None
    unavailable: str | None = None


def recall_layered(
    reads: ReadHandle,
    jobs: SessionJobs | None,
    request: RecallRequest,
    stack: Sequence[LayerRead],
) -> Recalled:
    """The merged recall of `request.session` and its layers `stack`; every hit names its
    session (M-REC-243). A layer not serving, or failing to answer, leaves one warning
    (M-REC-252) and the rest of the stack's hits."""
    shared = _SharedQuery(reads, request.query)
    started = _start_layers(reads, request, stack, shared)
    own = recall_memory(_CallReads(reads, shared, reads.search_pool), jobs, request)
    parts: list[SessionHits] = []
    found: dict[tuple[str, str], RecalledHit] = {
        (request.session, hit.node_id): hit for hit in own.hits
    }
    down: list[str] = []
    for layer, future in zip(stack, started, strict=True):
        if layer.unavailable is not None:
            down.append(layer.session)
            continue
        try:
            got = (
                future.result()
                if future is not None
                else recall_memory(reads, layer.jobs, replace(request, session=layer.session))
            )
        except DomainError:
            raise
        except Exception:
            log.warning("layer %s could not be read", layer.session, exc_info=True)
            down.append(layer.session)
            continue
        if not layers.same_anchor(own.anchor, got.anchor):
            continue  # its traversal answers another concept than the caller's (M-REC-100)
        found.update({(layer.session, hit.node_id): hit for hit in got.hits})
        parts.append(_session_hits(layer.session, got))
    merged = layers.merge(_session_hits(request.session, own), parts, request.top_k)
    views = [view for _, view in merged.hits]
    rendered = context.render_context(views, request.max_tokens, header=own.header)
    hits = tuple(
        replace(
            found[(session, view.node_id)],
            session=session,
            truncated_in_context=rendered.truncated == view.node_id,
            also_skipped_redundant=tuple(
                (layer, item)
                for layer, copy in merged.absorbed.get(view.node_id, ())
                for item in found[(layer, copy)].skipped_redundant
            )
            if session == request.session
            else (),
        )
        for session, view in merged.hits
    )
    unavailable = [
        layers.UNAVAILABLE_WARNING.format(layer=layer, session=request.session) for layer in down
    ]
    return Recalled(rendered.text, hits, (*merged.warnings, *unavailable), tuple(views), own.header)


def _session_hits(session: str, recalled: Recalled) -> SessionHits:
    companions = frozenset(hit.node_id for hit in recalled.hits if hit.companion_of)
    return SessionHits(session, recalled.views, companions, recalled.warnings)


def _start_layers(
    reads: ReadHandle, request: RecallRequest, stack: Sequence[LayerRead], shared: _SharedQuery
) -> list[Future[Recalled] | None]:
    """Each serving layer's recall started on the search pool (None: recalled on this thread
    afterwards), reading the call's one embedding of the query. A dependency question is
    recalled in turn, as before: a layer's anchor is compared with the session's."""
    pool = reads.search_pool
    serving = [layer for layer in stack if layer.unavailable is None]
    if pool is None or not serving or questions.is_dependency_question(request.query):
        return [None for _ in stack]
    inline = _CallReads(reads, shared, None)
    return [
        None
        if layer.unavailable is not None
        else pool.submit(recall_memory, inline, layer.jobs, replace(request, session=layer.session))
        for layer in stack
    ]


class _SharedQuery:
    """The call's query embedded once for every session it reads: the first thread to ask
    embeds it, any other waits for that (the workspace's query cache does not join two threads
    missing it at once, and a second MiniLM call would cost as much as the first). Meanwhile
    the pool runs the BM25 legs, as a plain recall runs its one."""

    def __init__(self, reads: ReadHandle, query: str) -> None:
        self._reads = reads
        self._query = query
        self._lock = threading.Lock()
        self._embedding: Future[Vectors] | None = None

    def embed(self, text: str) -> Vectors:
        if text != self._query:
            return self._reads.embed_query(text)
        with self._lock:
            mine = self._embedding is None
            if self._embedding is None:
                self._embedding = Future()
            embedding = self._embedding
        if mine:
            try:
                embedding.set_result(self._reads.embed_query(text))
            except BaseException as error:  # noqa: BLE001 (raised again below, in each thread)
                embedding.set_exception(error)
        return embedding.result()


class _CallReads:
    """`reads` for one session's recall within a merged one: the call's shared embedding of
    the query, and a search pool or none. A recall that itself runs on the pool has none: its
    BM25 leg runs on its own thread, so no pool task ever waits for another (with every worker
    waiting so, none would be left to run what they wait for)."""

    def __init__(self, reads: ReadHandle, shared: _SharedQuery, pool: Executor | None) -> None:
        self._reads = reads
        self._shared = shared
        self._pool = pool

    @property
    def settings(self) -> ReadSettings:
        return self._reads.settings

    @property
    def vectors(self) -> VectorIndex:
        return self._reads.vectors

    @property
    def text_scorer(self) -> TextScorer:
        return self._reads.text_scorer

    @property
    def search_pool(self) -> Executor | None:
        return self._pool

    @property
    def clock(self) -> Callable[[], datetime]:
        return self._reads.clock

    def reader(self) -> sqlite3.Connection:
        return self._reads.reader()

    def embed_query(self, text: str) -> Vectors:
        return self._shared.embed(text)

    def settle_vectors(self, groups: Sequence[str] | None, kind: str, timeout: float) -> int:
        return self._reads.settle_vectors(groups, kind, timeout)
