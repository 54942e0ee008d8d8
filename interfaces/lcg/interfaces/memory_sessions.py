"""The memory services of one workspace holder, one per session, made on first use (ADR 0071).

The workspace lease is per workspace, so the process that holds it serves every session of
it: its own (`settings.session`, opened with the workspace) and any other a call names (a
new, empty session when it holds nothing yet, as a new `lambo serve --session X` is). Each
session gets its own `MemoryService` (receipts, soft locks, waits, access counts) and, in a
serving process, its own scheduled canonization and GC jobs. They share the one intent
processor, which applies every session's intents in stream order (`pending_writes` reads
them all) and bounds the process's write queue as a whole.

Close stops every session's jobs first, then the processor, then each service (its access
counts appended, its unsettled receipts left as durable intents), so no write is applied
while the rest shuts down.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from lcg.commands.memory_admission import MemoryService
from lcg.commands.memory_jobs import MemoryJobs
from lcg.commands.memory_processor import IntentProcessor
from lcg.commands.tenure import INTENTS, jobs_lease
from lcg.domain.errors import InvalidParams
from lcg.domain.ids import GroupId
from lcg.domain.memory.identity import MINILM_MERGE_THRESHOLD
from lcg.interfaces.config import Settings, session_name
from lcg.interfaces.layer_rates import Kind, LayerRates
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.port import Vectors
from lcg.projections.graph import schema
from lcg.projections.vectors import catalog
from lcg.projections.vectors.follower import CONCEPTS
from lcg.projections.vectors.index import VectorIndex

if TYPE_CHECKING:
    from lcg.interfaces.pg_node import Node
    from lcg.interfaces.workspace import Workspace

# Sessions one process serves at once: each costs a service and a scheduler thread, so a
# caller naming ever new sessions is refused past this rather than exhausting the process.
MAX_SESSIONS: Final = 256

MakeService = Callable[[GroupId, IntentProcessor], MemoryService]


class MemorySessions:
    """Every session's memory service of one open workspace; thread-safe."""

    def __init__(
        self,
        settings: Settings,
        processor: IntentProcessor,
        make: MakeService,
        limit: int = MAX_SESSIONS,
    ) -> None:
        self.default = GroupId(settings.session)
        self.processor = processor
        self._tick = settings.tuning.tick_interval
        tuning = settings.tuning
        self.rates = LayerRates(  # each layer's own rate (ADR 0088)
            tuning.get_float("serve", "per_session_rps"), tuning.get_int("serve", "burst")
        )
        self._make = make
        self._limit = limit
        self._lock = threading.Lock()
        self._services: dict[GroupId, MemoryService] = {}
        self._scheduled: timedelta | None = None  # set once the serving process asks for jobs
        self._closed = False
        self.get(self.default)

    def get(self, session: str | None = None) -> MemoryService:
        """The session's service (None: the process's own session), made on first use with
        its jobs scheduled if this process runs jobs. `session` is checked by the session
        name rule (its field named `session`)."""
        name = self.default if session is None else GroupId(session_name(session, "session"))
        with self._lock:
            found = self._services.get(name)
            if found is not None:
                return found
            if self._closed:
                raise RuntimeError("the workspace's memory sessions are closed")
            if len(self._services) >= self._limit:
                raise InvalidParams(
                    "session",
                    f"one process serves at most {self._limit} sessions at once",
                    f"{len(self._services)} are open; {name!r} would be one more",
                )
            service = self._make(name, self.processor)
            service.peers = self  # a layered session's scoped calls reach its layers (0080)
            self._services[name] = service
            if self._scheduled is not None:
                service.schedule(self._scheduled)
            return service

    def foreign_epochs(self, of: MemoryService) -> frozenset[int]:
        """The receipt epochs of every other session's service: a receipt one of them issued
        is answered only there (a write scoped to a layer, M-LAY-021)."""
        with self._lock:
            return frozenset(s.book.epoch for s in self._services.values() if s is not of)

    def draw(self, layer: str, kind: Kind) -> str | None:
        """One request of a call scoped to `layer` from the layer's own rate: None when
        taken, else why not (M-REC-251, M-LAY-023)."""
        return self.rates.draw(layer, kind)

    def sessions(self) -> list[GroupId]:
        """The sessions served so far, the process's own first."""
        with self._lock:
            return list(self._services)

    def schedule(self) -> None:
        """Run every session's canonization cycle and daemon tick on a schedule, those made
        later too (serving processes; one-shot commands run the jobs when they choose)."""
        self.processor.start_probe()  # a serving process times the embedder at start (0101)
        with self._lock:
            self._scheduled = self._tick
            services = list(self._services.values())
        for service in services:
            service.schedule(self._tick)

    def close(self) -> None:
        """Stop every session's jobs, then the processor, then each service; idempotent."""
        with self._lock:
            self._closed = True
            services = list(self._services.values())
        for service in services:
            service.stop_jobs()
        self.processor.stop()
        for service in services:
            service.close()


def open_memory_sessions(
    workspace: Workspace, cache: EmbeddingCache, vectors: VectorIndex, node: Node | None = None
) -> MemorySessions:
    """The memory of a workspace open for writing: the intent processor (not started) and
    the process's own session's service; other sessions' services are made from the same
    parts when first named. On a PostgreSQL log (`node`), the processor applies intents
    and each session's jobs run only while this node holds their lease (ADR 0085)."""
    settings = workspace.settings
    graph_path = str(settings.graph_path)

    def read_graph() -> sqlite3.Connection:
        return schema.connect(graph_path, read_only=True)

    def search(session: GroupId, vector: Vectors, k: int) -> list[tuple[str, float]]:
        hits = vectors.search("concept", [session], vector, k)
        described = catalog.describe(workspace.reader(), [hit.vec_id for hit in hits])
        return [
            (described[hit.vec_id].owner_uuid, hit.score) for hit in hits if hit.vec_id in described
        ]

    processor = IntentProcessor(
        workspace.writer,
        read_graph,
        cache.embed,
        search,
        lambda session, timeout, conn: (
            workspace.settle_vectors([session], CONCEPTS, timeout, conn) == 0
        ),
        workspace.clock,
        workspace.memory_ids,
        MINILM_MERGE_THRESHOLD,
        # the startup probe times the bare model: no cache, not counted (ADR 0101)
        probe_embed=workspace.embedder.inner.embed,
    )
    if node is not None:
        processor.tenure = node.tenure(INTENTS, lambda _epoch: processor.appended())
        node.on_followed.append(processor.appended)  # followed intents and outcomes
    tuning = settings.tuning

    def make(session: GroupId, shared: IntentProcessor) -> MemoryService:
        jobs = MemoryJobs(
            workspace.writer,
            read_graph,
            session,
            tuning.knobs(),
            tuning.gc_knobs(),
            workspace.clock,
            graph_path,
        )
        if node is not None:
            jobs.tenure = node.tenure(jobs_lease(session))
        return MemoryService(
            session,
            lambda: workspace.writer,
            workspace.reader,
            shared,
            workspace.clock,
            settings.promotion_policy,
            jobs,
            lambda: workspace.embedder.contract,
        )

    return MemorySessions(settings, processor, make)
