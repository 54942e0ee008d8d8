"""Wiring of one workspace: lease, WAL, graph projection, runner and writer, opened in order."""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from lcg.commands.graph_file import check_the_log, open_graph, open_the_log
from lcg.commands.memory_admission import MemoryService
from lcg.commands.read_hold import ReadHold
from lcg.commands.rebuild_jobs import RebuildJobs
from lcg.commands.writer import CommitListener, Writer
from lcg.domain.ids import GroupId
from lcg.interfaces.config import Settings
from lcg.interfaces.legacy import migrate_legacy_state_dir
from lcg.interfaces.memory_sessions import MemorySessions, open_memory_sessions
from lcg.projections import damage
from lcg.projections.cypher.follower import CypherFollower
from lcg.projections.cypher.store import CypherGraph
from lcg.projections.damage import DamagedFile, Repair
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.choice import chosen_embedder
from lcg.projections.embedding.port import CountingEmbedder, Embedder, Vectors
from lcg.projections.extraction.classify import Classifier, OpenAiCompatibleClassifier
from lcg.projections.extraction.llama_cpp import loaded_extractor
from lcg.projections.extraction.openai_compat import OpenAiCompatibleExtractor
from lcg.projections.extraction.port import Extractor
from lcg.projections.extraction.sampling import SamplingClassifier, SamplingExtractor
from lcg.projections.extraction.spacy_rules import default_extractor
from lcg.projections.faults import CorruptEvent, StorageFailure
from lcg.projections.graph import schema
from lcg.projections.own_files import refuse_foreign_sqlite, refuse_foreign_tree
from lcg.projections.private_files import DIR_MODE, make_private
from lcg.projections.runner import ProjectionRunner
from lcg.projections.text.scorer import TextScorer
from lcg.projections.text.tables import TEXT_TABLES, TOKENIZER
from lcg.projections.vectors.follower import VectorFollower
from lcg.projections.vectors.follower import lanes as vector_lanes
from lcg.projections.vectors.index import VectorIndex
from lcg.projections.wal.lease import WriterLease
from lcg.projections.wal.port import LogStore

if TYPE_CHECKING:
    from lcg.interfaces.pg_node import Node

log = logging.getLogger(__name__)
Clock = Callable[[], datetime]
QUERY_CACHE = 1024  # query embeddings kept per process


def utc_now() -> datetime:
    return datetime.now(UTC)


def shifted_clock(path: Path) -> Clock:
    """The real clock plus the seconds `path` holds (missing or unreadable: none), re-read at
    every reading (LCG_CLOCK_FILE)."""

    def now() -> datetime:
        try:
            shift = float(path.read_text(encoding="utf-8").strip() or 0)
        except (OSError, ValueError):
            shift = 0.0
        return datetime.now(UTC) + timedelta(seconds=shift)

    return now


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
        clock: Clock | None = None,
        read_only: bool = False,
        memory_ids: Callable[[], str] | None = None,
        embedder: Embedder | None = None,
        extractor: Extractor | None = None,
        publishes: bool = False,
    ) -> None:
        self.settings = settings
        self.publishes = publishes  # said in the lease record: a serve that publishes (0066)
        # knowledge_process_chunk's extractor (issue 14): spaCy's rules unless one is given
        self.extractor: Extractor = extractor or configured_extractor(settings)
        # the reprocess tools' classifier: the LLM extractor's endpoint, or none (ADR 0042)
        self.classifier: Classifier | None = configured_classifier(settings)
        self.clock: Clock = clock or (
            utc_now if settings.clock_file is None else shifted_clock(settings.clock_file)
        )
        # the ids the intent processor gives new concepts and interactions (uuid4; tool_docs
        # passes a counter so that its pages come out the same)
        self.memory_ids = memory_ids or (lambda: str(uuid.uuid4()))
        self.read_only = read_only
        self._command = command
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._lease: WriterLease | None = None
        self._log: LogStore | None = None
        self._runner: ProjectionRunner | None = None
        self._writer: Writer | None = None
        self.read_hold = ReadHold()  # knowledge reads wait while a summary backfill runs
        self._cache: EmbeddingCache | None = None
        self._vectors: VectorIndex | None = None
        self._text: TextScorer | None = None
        self._cypher: CypherGraph | None = None
        self._cypher_follower: CypherFollower | None = None
        self._cypher_lock = threading.Lock()  # the first Cypher query opens it, once
        self._pool: ThreadPoolExecutor | None = None
        self._follower: VectorFollower | None = None
        self._memory: MemorySessions | None = None
        self._node: Node | None = None  # on a PostgreSQL log: its follower and leases (0085)
        # A workspace created by this open: its first files are made private once more at the
        # end of the open. Later files are checksummed (0600) or SQLite sidecars (the mode of
        # their database); anything else sits in a 0700 directory and is tightened next open.
        self._new_workspace = False
        self.last_index_time: datetime | None = None  # set by knowledge_build_indices (P-102)
        self._stack = ExitStack()
        self.embedder = CountingEmbedder(
            embedder or chosen_embedder(settings.embedder, settings.embed_threads)
        )
        # Query embeddings, per process: an agent that recalls the same text again does not
        # wait for the model (M-REC-031); stored texts go through the persistent cache instead.
        self._query_cache = functools.lru_cache(maxsize=QUERY_CACHE)(self._embed_query)
        self.embed_query: Callable[[str], Vectors] = self._query_cache
        self.caught_up = 0
        self.set_aside: list[Path] = []  # projection files of another WAL, renamed at open
        self.catch_up_failures: dict[GroupId, Exception] = {}
        self.log_damage: dict[GroupId, CorruptEvent] = {}  # applied events found damaged
        self.repairs: list[Repair] = []  # damaged files set aside and rebuilt by this open
        self.damaged: DamagedFile | None = None  # met by a read since; repaired at next open
        self._cache_repairs_at_open = 0
        self.rebuild_jobs = RebuildJobs(self.clock)  # knowledge_rebuild_status (ADR 0037)

    def open(self) -> Self:
        """Take the lease, open the WAL, install the projections and apply any WAL tail.

        Each resource registers its own release as it is opened, so `close` (or a failed
        open) releases exactly what was opened, in reverse order, even if one release fails.
        """
        migrate_legacy_state_dir(self.settings.workspace)  # K-RDY-001 (idempotent)
        # another user's .lcg/, or a link in it, is refused before anything is chmod-ed,
        # created or opened (issue 24, ADR 0048)
        refuse_foreign_tree(self.settings.state_dir)
        self._new_workspace = not self.settings.state_dir.exists()
        self._make_private()
        try:
            self._open()
        except BaseException as error:
            self.close()
            if self.read_only or not self._blames_graph(error):
                raise
            # the open met damage quick_check cannot see (a row's bytes): once more, without it
            damage.record_damage(self.settings.state_dir, self.settings.graph_path, str(error))
            try:
                self._open()
            except BaseException:
                self.close()
                raise
        return self

    def _open(self) -> None:
        stack = self._stack
        if not self.read_only:
            lease = WriterLease(
                self.settings.lease_path,
                self._command,
                self.clock(),
                attach_hint(self.settings),
                publishes=self.publishes,
            )
            lease.acquire()
            self._lease = lease
            stack.callback(self._release, "_lease", lease.release)
        stack.callback(self._close_readers)
        refuse_foreign_sqlite(self.settings.graph_path, "open the graph")
        self._log = open_the_log(self.settings.files)
        stack.callback(self._release, "_log", self._log.close)
        graph = open_graph(self.settings.files, self._log, self.clock, read_only=self.read_only)
        stack.callback(self._release, "_runner", graph.runner.conn.close)
        self._runner = graph.runner
        self.caught_up = graph.caught_up
        self.repairs.extend(graph.repairs)
        self.set_aside.extend(graph.set_aside)
        self.catch_up_failures = graph.catch_up_failures
        if not self.read_only:
            self._open_for_writing(graph.runner.conn)

    def _make_private(self, *, new_files: bool = False) -> None:
        """F7: the state directory is 0700 and its files 0600. Files that were there before
        this open are tightened with a warning each; `new_files` (the ones the libraries just
        created with the process's umask, in a process that did not set 077) quietly."""
        if self.read_only:  # never changes what it reads; a new directory is still private
            self.settings.state_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            return
        for change in make_private(self.settings.state_dir):
            if new_files:
                log.debug("made private: %s", change)
            else:
                log.warning("tightened the permissions of %s (memory is its owner's alone)", change)

    def _blames_graph(self, error: BaseException) -> bool:
        """Corruption met while opening, in graph.sqlite rather than the WAL."""
        return damage.is_corruption(error) and damage.sqlite_problem(self.settings.wal_path) is None

    def _open_for_writing(self, conn: sqlite3.Connection) -> None:
        stack, runner = self._stack, self.runner
        cache = EmbeddingCache(self.settings.embeddings_path, self.embedder, self.clock)
        self.repairs.extend(cache.repairs)
        self._cache_repairs_at_open = len(cache.repairs)
        self._cache = cache
        stack.callback(self._release, "_cache", cache.close)
        vectors = VectorIndex(
            self.settings.vectors_dir,
            cache,
            checkpoint_every=self.settings.vector_checkpoint_every,
            ivf_threshold=self.settings.vector_ivf_threshold,
            clock=self.clock,
        )
        backlog = vectors.open(conn)  # rows whose texts need the model: embedded as we serve
        self.repairs.extend(vectors.repairs)
        self._vectors = vectors
        stack.callback(self._release, "_vectors", vectors.checkpoint)
        follower: CommitListener = vectors
        if self.settings.vector_follow == "async":
            graph_path = str(self.settings.graph_path)
            self._follower = VectorFollower(
                vectors, lambda: schema.connect(graph_path, read_only=True)
            )
            follower = self._follower
            stack.callback(self._release, "_follower", self._follower.stop)  # before checkpoint
            self._follower.backfill(backlog)
        else:  # sync mode: a write waits for its vectors, so the open does too
            for group, rows in backlog.items():
                vectors.backfill(conn, group, rows)
        text = TextScorer(
            self.settings.text_scorer_path,
            TOKENIZER,
            TEXT_TABLES,
            checkpoint_every=self.settings.vector_checkpoint_every,
            clock=self.clock,
        )
        text.open(conn)
        self.repairs.extend(text.repairs)
        self._text = text
        stack.callback(self._release, "_text", lambda: self._checkpoint_text(text, conn))
        self._pool = stack.enter_context(
            ThreadPoolExecutor(max_workers=2, thread_name_prefix="lcg-bm25")
        )
        stack.callback(setattr, self, "_pool", None)
        self._writer = Writer(self.log, runner, self.clock)
        stack.callback(setattr, self, "_writer", None)
        stack.callback(self.rebuild_jobs.join)  # a background rebuild ends before the writer
        self._writer.listeners.append(follower)
        self._writer.listeners.append(text)
        for group, error in self.catch_up_failures.items():
            self._writer.block(group, error)
        self.log_damage = check_the_log(self.log, runner, self.settings.files)
        for group, corrupt in self.log_damage.items():
            self._writer.refuse_damaged(group, corrupt)
        if self.settings.store_url:
            from lcg.interfaces.pg_node import open_node  # noqa: PLC0415 (psycopg: ADR 0053)

            self._node = open_node(self)
            self._stack.callback(self._release, "_node", self._node.close)  # after the memory
        self._open_memory(cache, vectors)
        if self._new_workspace:  # what the libraries just created in it, with the umask
            self._make_private(new_files=True)

    def _open_cypher(self) -> CypherFollower:
        """The Cypher projection (ADR 0039), opened at its first use: a process that asks no
        Cypher query pays nothing for it (no ladybug database, no follower, no cost per
        write). It is brought in line with the graph (the groups whose position differs are
        copied) and starts following commits while every batch is held off, so no commit
        falls between; it closes before the writer."""
        with self._cypher_lock:
            if self._cypher_follower is not None:
                return self._cypher_follower
            writer = self.writer
            with writer.exclusive():
                cypher = CypherGraph(self.settings.cypher_dir)
                self._stack.callback(self._release, "_cypher", cypher.close)
                cypher.open(writer.runner.conn)
                graph_path = str(self.settings.graph_path)
                follower = CypherFollower(
                    cypher, lambda: schema.connect(graph_path, read_only=True)
                )
                self._stack.callback(self._release, "_cypher_follower", follower.stop)
                writer.listeners.append(follower)
                self._cypher, self._cypher_follower = cypher, follower
            return follower

    def _open_memory(self, cache: EmbeddingCache, vectors: VectorIndex) -> None:
        """The sessions' memory services and their one intent processor (ADR 0026, ADR 0071),
        stopped first at close so that no write is applied while the rest shuts down."""
        self._memory = open_memory_sessions(self, cache, vectors, self._node)
        self._stack.callback(self._release, "_memory", self._memory.close)
        self._memory.processor.start()

    def start_memory_jobs(self) -> None:
        """Run each session's canonization cycle and daemon tick on a schedule (serving
        processes; one-shot commands and tests run the jobs when they choose), a session
        first served later too. Stopped first at close, with the memory services."""
        self.memory_sessions.schedule()

    @property
    def node(self) -> Node | None:
        """The node's follower and leases on a PostgreSQL log (None on a log file)."""
        return self._node

    @property
    def memory_sessions(self) -> MemorySessions:
        """Every session's memory service of this holder (made on first use)."""
        if self._memory is None:
            raise WorkspaceClosed("agent memory needs the workspace open for writing")
        return self._memory

    @property
    def memory(self) -> MemoryService:
        """The agent-memory service of the session this process serves (`settings.session`)."""
        return self.memory_sessions.get()

    def embed_texts(self, texts: Sequence[str]) -> Vectors:
        """Stored texts' vectors through the persistent embedding cache (the model runs only
        for a text it never embedded under this contract)."""
        if self._cache is None:
            return self.embedder.embed(texts)
        return self._cache.embed(texts)

    def forget_query_embeddings(self) -> None:
        """Empty the query-embedding cache (benchmarks measure a query asked the first time)."""
        self._query_cache.cache_clear()

    def _embed_query(self, text: str) -> Vectors:
        vector: Vectors = self.embedder.embed_queries([text])[0]
        vector.setflags(write=False)  # shared by every caller of the cache
        return vector

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until the vector indexes hold every acknowledged write (ADR 0022)."""
        return True if self._follower is None else self._follower.settle(timeout)

    def settle_vectors(
        self,
        groups: Sequence[str] | None,
        kind: str,
        timeout: float,
        helper: sqlite3.Connection | None = None,
    ) -> int:
        """Wait, at most `timeout` seconds, until the vector indexes hold the `kind` vectors
        (`vectors.follower.CONCEPTS` or `KNOWLEDGE`) of the groups (None: every group) that
        were acknowledged before the call; the follower applies them first (ADR 0047).
        With `helper`, a read connection of the calling thread, the caller indexes them
        itself (the intent processor, whose concept texts are cached). Without one, a wait
        the follower's recent rate says cannot end in time is not begun: under a sustained
        burst every read would otherwise pay the whole bound for nothing. Returns how many of
        those writes are still pending (0: all there)."""
        if self._follower is None:
            return 0
        chosen = vector_lanes(groups, kind)
        if self._follower.settle(timeout, chosen, helper=helper, hopeless=helper is None):
            return 0
        return self._follower.pending_in(chosen)

    @property
    def vector_follow_state(self) -> tuple[int, str | None]:
        """(committed events the vector indexes have yet to follow, the follower's failure)."""
        if self._follower is None:
            return 0, None
        return self._follower.pending, self._follower.failure

    def faults(self) -> list[str]:
        """What keeps this open workspace from taking writes (empty when it is healthy)."""
        return [] if self._writer is None else self._writer.faults()

    def probe_log(self) -> str | None:
        """On a PostgreSQL log, a round trip to its server (health_check, ADR 0085): why it
        failed, or None. A log file is not probed (its writes say so)."""
        probe = getattr(self._log, "probe", None)
        if not self.settings.store_url or probe is None:
            return None
        try:
            probe()
        except StorageFailure as failure:
            return f"the log is unreachable, reads answer from the projections: {failure}"
        return None

    def met_corruption(self, error: BaseException) -> DamagedFile:
        """A read or write met corruption in graph.sqlite: refuse further writes and have the
        next open set the file aside and rebuild it (ADR 0020)."""
        path = self.settings.graph_path
        if self.damaged is None:
            if damage.sqlite_problem(self.settings.wal_path) is not None:
                raise error  # the WAL's own damage is not a projection's (ADR 0019)
            # no log here: the DamagedFile raised is the report (the CLI's one line, the
            # service's log when it starts the rebuild)
            self.damaged = DamagedFile(path, str(error))
            try:  # a read-only open records it too: only the marker is written, never the graph
                damage.record_damage(self.settings.state_dir, path, str(error))
            except OSError:
                log.exception("could not record the damage of %s", path)
        return self.damaged

    def damaged_files(self) -> list[Repair]:
        """Files known damaged now (a read met corruption), waiting for the next open."""
        if self.damaged is None:
            return []
        action = "writes refused; set aside and rebuilt from the WAL at the next open"
        path, problem = self.damaged.path, self.damaged.problem
        return [Repair(file=str(path), problem=problem, action=action, set_aside_as=None)]

    def cache_repairs(self) -> list[Repair]:
        """Damage the embedding cache found and mended since it opened (rows, its file)."""
        cache = self._cache
        return [] if cache is None else cache.repairs[self._cache_repairs_at_open :]

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
        if self.damaged is not None:
            raise self.damaged
        if self._writer is None:
            raise WorkspaceClosed("the workspace is not open for writing")
        return self._writer

    @property
    def runner(self) -> ProjectionRunner:
        if self._runner is None:
            raise WorkspaceClosed("the workspace is not open")
        return self._runner

    @property
    def log(self) -> LogStore:
        if self._log is None:
            raise WorkspaceClosed("the workspace is not open")
        return self._log

    @property
    def vectors(self) -> VectorIndex:
        if self._vectors is None:
            raise WorkspaceClosed("vector search needs the workspace open for writing")
        return self._vectors

    @property
    def cypher_follower(self) -> CypherFollower:
        """What follows the writer's commits into the Cypher projection (opened if need be)."""
        if self._writer is None:
            raise WorkspaceClosed("the Cypher projection needs the workspace open for writing")
        return self._open_cypher()

    @property
    def cypher(self) -> CypherGraph:
        """The Cypher projection, once it holds every acknowledged write (ADR 0039)."""
        if self._writer is None:
            raise WorkspaceClosed("Cypher queries need the workspace open for writing")
        self._open_cypher().settle()
        assert self._cypher is not None
        return self._cypher

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


def configured_extractor(settings: Settings) -> Extractor:
    """`[extraction] extractor` (ADR 0033, 0043): spaCy's rules, an OpenAI-compatible
    endpoint, or a GGUF model in this process (checked at start-up: Settings.load)."""
    tuning = settings.tuning
    model_path = settings.llama_model_path
    if tuning.text("extraction", "extractor") == "llama" and model_path is not None:
        return loaded_extractor(
            model_path,
            tuning.get_int("extraction", "threads"),
            tuning.get_int("extraction", "context_tokens"),
            tuning.get_int("extraction", "max_tokens"),
        )
    if tuning.text("extraction", "extractor") == "sampling":
        return SamplingExtractor(tuning.get_int("extraction", "max_tokens"))
    if tuning.text("extraction", "extractor") == "openai":
        return OpenAiCompatibleExtractor(
            tuning.text("extraction", "base_url"),
            tuning.text("extraction", "model"),
            settings.extraction_api_key,
            tuning.get_float("extraction", "timeout_secs"),
        )
    return default_extractor()


def configured_classifier(settings: Settings) -> Classifier | None:
    """The OpenAI-compatible endpoint of `[extraction]`, or the MCP client's model, as a
    classifier; None with spaCy's rules, which cannot classify (the reprocess tools then
    refuse, naming the setting)."""
    tuning = settings.tuning
    if tuning.text("extraction", "extractor") == "sampling":
        return SamplingClassifier()
    if tuning.text("extraction", "extractor") != "openai":
        return None
    return OpenAiCompatibleClassifier(
        tuning.text("extraction", "base_url"),
        tuning.text("extraction", "model"),
        settings.extraction_api_key,
        tuning.get_float("extraction", "timeout_secs"),
    )
