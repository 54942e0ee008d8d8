"""The Cypher projection: the graph's entities and live edges in a ladybug database (ADR 0039).

It follows committed writes (through `CypherFollower`, off the writer's thread) and copies
the rows the events touched from graph.sqlite, so it always equals the graph projection it
mirrors. Ladybug shares no
transaction with graph.sqlite: each group's mirrored graph position is written in the same
ladybug transaction as its rows, and at open every group whose position (or whose WAL) differs
from graph.sqlite's is copied again. Cypher sent by clients runs in a read-only transaction.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import ladybug
import orjson

from lcg.domain.errors import InvalidParams
from lcg.domain.events import (
    ChunkExtracted,
    ConceptsCanonized,
    CorrectionsApplied,
    DomainEvent,
    EntitiesMerged,
    EntityCreated,
    EntityRevised,
    EntityTypesAssigned,
    EpisodeAdded,
    EpisodeDeleted,
    GcBumped,
    GcClockStarted,
    GcSwept,
    GroupPurged,
    MemoryAccessed,
    MemoryWriteAccepted,
    MemoryWriteApplied,
    MemoryWriteFailed,
    RelationshipCreated,
    RelationshipInvalidated,
    RelationshipRevised,
    RelationTypesAssigned,
    SummaryEmbedded,
)
from lcg.projections.positions import recorded_wal_identity
from lcg.projections.wal.store import RecordedEvent

DATABASE_FILE = "graph.lbug"
# Ladybug's defaults take 80% of RAM for its buffer pool and reserve 8 TiB of address space
# per database: a process holding a few workspaces (tests, benchmarks) would run out of it.
BUFFER_POOL_BYTES = 256 * 1024 * 1024
MAX_DATABASE_BYTES = 64 * 1024**3
HANDLES: frozenset[type[DomainEvent]] = frozenset(
    {
        EntityCreated,
        EntityRevised,
        RelationshipCreated,
        RelationshipRevised,
        RelationshipInvalidated,
        EntitiesMerged,
        GroupPurged,
        RelationTypesAssigned,
        EntityTypesAssigned,
    }
)
# they change no entity or edge row the projection mirrors (episodes, mentions, memory, gc)
IGNORES: frozenset[type[DomainEvent]] = frozenset(
    {
        CorrectionsApplied,  # a record of which corrections ran; their changes are events
        EpisodeAdded,
        EpisodeDeleted,
        ChunkExtracted,
        SummaryEmbedded,
        MemoryWriteAccepted,
        MemoryWriteApplied,
        MemoryWriteFailed,
        MemoryAccessed,
        ConceptsCanonized,
        GcClockStarted,
        GcSwept,
        GcBumped,
    }
)

SCHEMA = (
    "CREATE NODE TABLE IF NOT EXISTS Entity(uuid STRING, group_id STRING, name STRING,"
    " summary STRING, labels STRING[], attributes STRING, created_at STRING, PRIMARY KEY(uuid))",
    "CREATE REL TABLE IF NOT EXISTS RELATES(FROM Entity TO Entity, uuid STRING, group_id STRING,"
    " name STRING, fact STRING, relation_type STRING, attributes STRING, valid_at STRING,"
    " invalid_at STRING, created_at STRING)",
    "CREATE NODE TABLE IF NOT EXISTS CypherPosition(group_id STRING, position INT64,"
    " PRIMARY KEY(group_id))",
    "CREATE NODE TABLE IF NOT EXISTS CypherWal(one INT64, identity STRING, PRIMARY KEY(one))",
)
# Statements that would end the read-only transaction, or reach outside the database.
_REFUSED_START = re.compile(
    r"^\s*(BEGIN|COMMIT|ROLLBACK|CHECKPOINT|ATTACH|DETACH|USE|INSTALL|LOAD|UPDATE|EXPORT"
    r"|IMPORT|COPY)\b",
    re.IGNORECASE,
)
_OUTSIDE = re.compile(r"\bLOAD\s+(WITH\s+HEADERS\s*\([^)]*\)\s*)?FROM\b|\bCOPY\b", re.IGNORECASE)
MUTATION_RULE = (
    "must be a read query; knowledge_query_cypher refuses Cypher that writes (CREATE, MERGE,"
    " SET, DELETE, DROP, ALTER, COPY...): such a change would bypass the WAL and be lost at"
    " the next rebuild; write through knowledge_assert_entity / knowledge_assert_relationship"
)
_WRITE_REFUSED = "write query inside a read-only transaction"  # ladybug's own words
Row = dict[str, object]


class CypherGraph:
    """Entity nodes and RELATES edges mirrored from graph.sqlite, queried with Cypher."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.failure: str | None = None
        self.resynced: list[str] = []  # groups copied again at open (status, tests)
        self._lock = threading.Lock()
        self._db: ladybug.Database | None = None
        self._conn: ladybug.Connection | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def open(self, graph: sqlite3.Connection) -> None:
        """Open (or create) the database, then copy every group that is not at the graph's
        position again (a crash between the two commits, a rebuild while closed, a new WAL)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._lock:
            self._db = ladybug.Database(
                str(self.directory / DATABASE_FILE),
                buffer_pool_size=BUFFER_POOL_BYTES,
                max_db_size=MAX_DATABASE_BYTES,
            )
            self._conn = ladybug.Connection(self._db)
            for statement in SCHEMA:
                self._conn.execute(statement)
            self._sync_stale(graph)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
            if self._db is not None:
                self._db.close()
            self._conn = self._db = None

    # -- CommitListener ---------------------------------------------------------------------

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        """Copy the rows the batch's events touched, and each group's new position."""
        with self._lock:
            if self.failure is not None:  # an earlier batch was lost: bring every group in line
                self._sync_stale(conn)
                self.failure = None
                return
            try:
                with self._transaction() as tx:
                    for item in recorded:
                        _follow(tx, conn, item)
                    positions = _graph_positions(conn)
                    for group in {item.group_id for item in recorded}:
                        _set_position(tx, group, positions.get(group, 0))
            except Exception as error:
                self.failure = f"CypherGraph: {error}"
                raise

    def rebuilt(self, conn: sqlite3.Connection, groups: Iterable[str] | None) -> None:
        """Copy the rebuilt groups (None: every group) again."""
        with self._lock:
            if groups is None:
                self._copy_all(conn)
            else:
                for group in groups:
                    self._copy_group(conn, group)

    # -- reads ------------------------------------------------------------------------------

    def query(self, text: str) -> tuple[list[str], list[Row]]:
        """Run one read statement; (columns, rows). Writes and bad Cypher name `query`."""
        if _REFUSED_START.match(text) or _OUTSIDE.search(text):
            raise InvalidParams("query", MUTATION_RULE)
        with self._lock:
            conn = self._connection()
            # prepared inside the transaction: one prepared before it is not checked as a write
            conn.execute("BEGIN TRANSACTION READ ONLY")
            try:
                return _read(conn, text)
            finally:
                _end_read(conn)

    def positions(self) -> dict[str, int]:
        """The graph position each group was last copied at."""
        with self._lock:
            return _positions(self._connection())

    # -- copying ----------------------------------------------------------------------------

    def _sync_stale(self, graph: sqlite3.Connection) -> None:
        conn = self._connection()
        wal = recorded_wal_identity(graph) or ""
        result = _single(conn.execute("MATCH (w:CypherWal) RETURN w.identity"))
        if [[wal]] != _lists(result):
            self._copy_all(graph)
            return
        mine, theirs = _positions(conn), _graph_positions(graph)
        stale = sorted(g for g in mine.keys() | theirs.keys() if mine.get(g) != theirs.get(g))
        for group in stale:
            self._copy_group(graph, group)
        self.resynced = stale

    def _copy_all(self, graph: sqlite3.Connection) -> None:
        with self._transaction() as tx:
            tx.execute("MATCH (n:Entity) DETACH DELETE n")
            tx.execute("MATCH (p:CypherPosition) DELETE p")
            tx.execute("MATCH (w:CypherWal) DELETE w")
            tx.execute(
                "CREATE (:CypherWal {one: 1, identity: $w})",
                {"w": recorded_wal_identity(graph) or ""},
            )
        groups = graph.execute("SELECT DISTINCT group_id FROM entities").fetchall()
        for (group,) in groups:
            self._copy_group(graph, str(group))
        self.resynced = sorted(str(g) for (g,) in groups)

    def _copy_group(self, graph: sqlite3.Connection, group: str) -> None:
        with self._transaction() as tx:
            tx.execute("MATCH (n:Entity) WHERE n.group_id = $g DETACH DELETE n", {"g": group})
            for row in graph.execute(
                "SELECT * FROM entities WHERE group_id=? AND merged_into IS NULL", (group,)
            ):
                _put_entity(tx, row)
            for row in graph.execute("SELECT * FROM relationships WHERE group_id=?", (group,)):
                _put_edge(tx, row)
            _set_position(tx, group, _graph_positions(graph).get(group, 0))

    @contextmanager
    def _transaction(self) -> Iterator[ladybug.Connection]:
        conn = self._connection()
        conn.execute("BEGIN TRANSACTION")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _connection(self) -> ladybug.Connection:
        if self._conn is None:
            raise RuntimeError("the Cypher projection is closed")
        return self._conn


def _read(conn: ladybug.Connection, text: str) -> tuple[list[str], list[Row]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        prepared = conn.prepare(text)
    if not prepared.is_success():  # a parse or binder error, a write, several statements
        detail = prepared.get_error_message().splitlines()[0]
        if _WRITE_REFUSED in detail:
            raise InvalidParams("query", MUTATION_RULE)
        raise InvalidParams("query", "must be one valid Cypher statement", detail)
    try:
        result = _single(conn.execute(prepared))
    except RuntimeError as error:
        if _WRITE_REFUSED in str(error):
            raise InvalidParams("query", MUTATION_RULE) from error
        raise InvalidParams("query", "must be valid Cypher", str(error)) from error
    columns = result.get_column_names()
    rows = [dict(zip(columns, values, strict=True)) for values in _lists(result)]
    result.close()
    return columns, rows


def _end_read(conn: ladybug.Connection) -> None:
    """Roll the read-only transaction back; an engine error may already have ended it."""
    try:
        conn.execute("ROLLBACK")
    except RuntimeError as error:
        if "No active transaction" not in str(error):
            raise


def _follow(tx: ladybug.Connection, graph: sqlite3.Connection, item: RecordedEvent) -> None:
    """Apply one event by copying the row it changed as graph.sqlite holds it now."""
    event = item.event
    if isinstance(event, GroupPurged):
        tx.execute("MATCH (n:Entity) WHERE n.group_id = $g DETACH DELETE n", {"g": item.group_id})
    elif isinstance(event, EntityCreated | EntityRevised):
        row = graph.execute("SELECT * FROM entities WHERE uuid=?", (event.entity_uuid,)).fetchone()
        if row is None:  # purged later in the batch
            tx.execute("MATCH (n:Entity {uuid: $u}) DETACH DELETE n", {"u": event.entity_uuid})
        else:
            _put_entity(tx, row)
    elif isinstance(event, RelationshipCreated | RelationshipRevised | RelationshipInvalidated):
        _copy_edge(tx, graph, event.edge_uuid)
    elif isinstance(event, RelationTypesAssigned | EntityTypesAssigned):
        _follow_typing(tx, graph, event)
    elif isinstance(event, EntitiesMerged):  # aliases leave (tombstones are not read)
        for alias in event.alias_uuids:
            tx.execute("MATCH (n:Entity {uuid: $u}) DETACH DELETE n", {"u": alias})
        for edge in (*event.rewritten, *event.self_loops, *event.duplicates, *event.duplicate_of):
            _copy_edge(tx, graph, edge)  # now the canonical's, or invalidated: left out


def _follow_typing(
    tx: ladybug.Connection,
    graph: sqlite3.Connection,
    event: RelationTypesAssigned | EntityTypesAssigned,
) -> None:
    """A typing run's edges (or entities), copied as graph.sqlite holds them now."""
    if isinstance(event, RelationTypesAssigned):
        for edge in event.edge_uuids:
            _copy_edge(tx, graph, edge)
        return
    for entity in event.entity_uuids:
        row = graph.execute("SELECT * FROM entities WHERE uuid=?", (entity,)).fetchone()
        if row is not None:
            _put_entity(tx, row)


def _copy_edge(tx: ladybug.Connection, graph: sqlite3.Connection, edge_uuid: str) -> None:
    row = graph.execute("SELECT * FROM relationships WHERE uuid=?", (edge_uuid,)).fetchone()
    if row is not None:
        _put_edge(tx, row)


def _put_entity(tx: ladybug.Connection, row: sqlite3.Row) -> None:
    tx.execute(
        "MERGE (n:Entity {uuid: $uuid}) SET n.group_id = $group_id, n.name = $name,"
        " n.summary = $summary, n.labels = $labels, n.attributes = $attributes,"
        " n.created_at = $created_at",
        {
            "uuid": row["uuid"],
            "group_id": row["group_id"],
            "name": row["name"],
            "summary": row["summary"],
            "labels": list(orjson.loads(row["labels"] or "[]")),
            "attributes": row["attributes"],
            "created_at": row["created_at"],
        },
    )


def _put_edge(tx: ladybug.Connection, row: sqlite3.Row) -> None:
    """Replace the edge; an invalidated one (invalid_at set) is left out: live edges only."""
    tx.execute(
        "MATCH (:Entity {uuid: $source})-[r:RELATES]->() WHERE r.uuid = $uuid DELETE r",
        {"source": row["source_uuid"], "uuid": row["uuid"]},
    )
    if row["invalid_at"] is not None:
        return
    tx.execute(
        "MATCH (a:Entity {uuid: $source}), (b:Entity {uuid: $target}) CREATE (a)-[:RELATES"
        " {uuid: $uuid, group_id: $group_id, name: $name, fact: $fact,"
        " relation_type: $relation_type, attributes: $attributes, valid_at: $valid_at,"
        " invalid_at: NULL, created_at: $created_at}]->(b)",
        {
            "source": row["source_uuid"],
            "target": row["target_uuid"],
            **{key: row[key] for key in _EDGE_COLUMNS},
        },
    )


_EDGE_COLUMNS = (
    "uuid",
    "group_id",
    "name",
    "fact",
    "relation_type",
    "attributes",
    "valid_at",
    "created_at",
)


def _set_position(tx: ladybug.Connection, group: str, position: int) -> None:
    tx.execute(
        "MERGE (p:CypherPosition {group_id: $g}) SET p.position = $p", {"g": group, "p": position}
    )


def _positions(conn: ladybug.Connection) -> dict[str, int]:
    result = _single(conn.execute("MATCH (p:CypherPosition) RETURN p.group_id, p.position"))
    return {str(group): int(str(position)) for group, position in _lists(result)}


def _graph_positions(graph: sqlite3.Connection) -> dict[str, int]:
    """The graph projection's applied seq per group (what the mirrored rows reflect)."""
    rows = graph.execute(
        "SELECT group_id, position FROM projection_positions WHERE projection='graph'"
    ).fetchall()
    return {str(group): int(position) for group, position in rows}


def _single(result: ladybug.QueryResult | list[ladybug.QueryResult]) -> ladybug.QueryResult:
    if isinstance(result, list):
        raise TypeError("one statement gives one result")
    return result


def _lists(result: ladybug.QueryResult) -> list[list[object]]:
    return [list(values) for values in result.get_all()]
