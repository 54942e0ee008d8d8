"""The Cypher projection: the graph's entities and live edges in a ladybug database (ADR 0039).

It follows committed writes (through `CypherFollower`, off the writer's thread) and copies
the rows the events touched from graph.sqlite, so it always equals the graph projection it
mirrors. Ladybug shares no
transaction with graph.sqlite: each group's mirrored graph position is written in the same
ladybug transaction as its rows, and at open every group whose position (or whose WAL) differs
from graph.sqlite's is copied again. Cypher sent by clients runs in a read-only transaction.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import os
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
    CROSS_GROUP_FAMILY,
    CURATION_FAMILY,
    GROUP_FAMILY,
    KNOWLEDGE_FAMILY,
    TYPING_FAMILY,
    ChunkExtracted,
    CorrectionsApplied,
    CrossGroupEdgeAdded,
    EntitiesMerged,
    EntityCreated,
    EntityRevised,
    EntityTypesAssigned,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    PointersRebound,
    RelationshipCreated,
    RelationshipInvalidated,
    RelationshipRevised,
    RelationTypesAssigned,
    SummaryEmbedded,
)
from lcg.projections.dispatch import Subscription
from lcg.projections.positions import recorded_wal_identity
from lcg.projections.wal.store import RecordedEvent

DATABASE_FILE = "graph.lbug"
# Ladybug's defaults take 80% of RAM for its buffer pool and reserve 8 TiB of address space
# per database: a process holding a few workspaces (tests, benchmarks) would run out of it.
BUFFER_POOL_BYTES = 256 * 1024 * 1024
MAX_DATABASE_BYTES = 64 * 1024**3
log = logging.getLogger("lcg.cypher")
COPY_ROWS = 5_000  # rows per ladybug transaction when a group is copied again
# What the mirror folds (`_follow`): the events that change an entity or edge row of graph.sqlite.
SUBSCRIPTION = Subscription(
    "cypher",
    reads=(GROUP_FAMILY, KNOWLEDGE_FAMILY, CURATION_FAMILY, CROSS_GROUP_FAMILY, TYPING_FAMILY),
    handles=(
        EntityCreated,
        EntityRevised,
        RelationshipCreated,
        RelationshipRevised,
        RelationshipInvalidated,
        EntitiesMerged,
        GroupPurged,
        CrossGroupEdgeAdded,
        PointersRebound,
        RelationTypesAssigned,
        EntityTypesAssigned,
    ),
    # they change no entity or edge row (episodes, mentions, summary vectors); which
    # corrections ran is a record, their changes are events of their own
    ignores=(EpisodeAdded, EpisodeDeleted, ChunkExtracted, SummaryEmbedded, CorrectionsApplied),
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
        """Close the database; on a disk that can no longer be written, leave it open.

        Ladybug writes at close (its WAL, a checkpoint) and, when that write fails, throws a
        C++ exception from a destructor, which aborts the whole process (SIGABRT): a
        serving process whose disk turned read-only would die at knowledge_close instead of
        finishing its other close steps. So when the directory cannot be written, the
        handles are abandoned (kept alive until the process ends, never destroyed); the
        projection is rebuildable, and the next open copies any group that is not in line."""
        with self._lock:
            conn, db = self._conn, self._db
            self._conn = self._db = None
            if db is None:
                return
            problem = _unwritable(self.directory)
            if problem is not None:
                log.warning(
                    "the Cypher projection in %s is left unclosed: %s (closing it would abort"
                    " the process; it is copied again at the next open if it is behind)",
                    self.directory,
                    problem,
                )
                _abandon(conn)
                _abandon(db)
                return
            if conn is not None:
                conn.close()
            db.close()

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
                    created: set[str] = set()  # edges new in this batch: nothing to replace
                    for item in recorded:
                        _follow(tx, conn, item, created)
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
        """Copy the group again, COPY_ROWS rows per ladybug transaction: one transaction
        for a large group filled the buffer pool (it failed at 100k entities). The group's
        position is deleted with its nodes and written with the last rows, so a copy cut
        short leaves the group stale, and the next open copies it again (`_sync_stale`)."""
        with self._transaction() as tx:
            tx.execute("MATCH (n:Entity) WHERE n.group_id = $g DETACH DELETE n", {"g": group})
            tx.execute("MATCH (p:CypherPosition) WHERE p.group_id = $g DELETE p", {"g": group})
        # The group's nodes and their edges are gone: CREATE, never MERGE or replace (a
        # per-edge delete-match made a 100k-edge copy take minutes).
        rows = itertools.chain(
            (
                (True, row)
                for row in graph.execute(
                    "SELECT * FROM entities WHERE group_id=? AND merged_into IS NULL", (group,)
                )
            ),
            (
                (False, row)
                for row in graph.execute(
                    "SELECT * FROM relationships WHERE group_id=? AND invalid_at IS NULL",
                    (group,),
                )
            ),
            # other groups' cross-group edges to its entities: the DETACH DELETE took them,
            # their rows are unchanged (ADR 0041)
            ((False, row) for row in graph.execute(_FOREIGN_EDGES, (group, group, group))),
        )
        while True:
            chunk = list(itertools.islice(rows, COPY_ROWS))
            with self._transaction() as tx:
                for is_entity, row in chunk:
                    if is_entity:
                        _put_entity(tx, row, new=True)
                    else:
                        _put_edge(tx, row, new=True)
                if len(chunk) < COPY_ROWS:
                    _set_position(tx, group, _graph_positions(graph).get(group, 0))
                    return

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


_ABANDONED: list[object] = []


def _abandon(handle: object) -> None:
    """Keep a ladybug handle alive for the rest of the process: one extra reference that is
    never released, so neither close() nor interpreter shutdown runs its destructor."""
    if handle is not None:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(handle))
        _ABANDONED.append(handle)


def _unwritable(directory: Path) -> str | None:
    """Why a file cannot be written in `directory` now (None: it can)."""
    probe = directory / f".close-probe-{os.getpid()}"
    try:
        descriptor = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(descriptor, b"x")
        finally:
            os.close(descriptor)
        probe.unlink()
    except OSError as error:
        return f"{error.strerror or error}"
    return None


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


def _follow(
    tx: ladybug.Connection, graph: sqlite3.Connection, item: RecordedEvent, created: set[str]
) -> None:
    """Apply one event by copying the row it changed as graph.sqlite holds it now. An edge
    created in this batch (`created`) has no earlier copy to replace: it is created once, and
    any later event of the batch that touches it replaces that copy."""
    event = item.event
    if isinstance(event, GroupPurged):
        tx.execute("MATCH (n:Entity) WHERE n.group_id = $g DETACH DELETE n", {"g": item.group_id})
    elif isinstance(event, EntityCreated | EntityRevised):
        row = graph.execute("SELECT * FROM entities WHERE uuid=?", (event.entity_uuid,)).fetchone()
        if row is None:  # purged later in the batch
            tx.execute("MATCH (n:Entity {uuid: $u}) DETACH DELETE n", {"u": event.entity_uuid})
        else:
            _put_entity(tx, row)
    elif isinstance(event, RelationshipCreated) and event.edge_uuid not in created:
        created.add(event.edge_uuid)
        _copy_edge(tx, graph, event.edge_uuid, new=True)
    elif isinstance(
        event,
        RelationshipCreated | RelationshipRevised | RelationshipInvalidated | CrossGroupEdgeAdded,
    ):  # a cross-group edge is mirrored once both of its ends are bound
        _copy_edge(tx, graph, event.edge_uuid)
    elif isinstance(event, PointersRebound):
        _follow_rebind(tx, graph, event)
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


def _follow_rebind(
    tx: ladybug.Connection, graph: sqlite3.Connection, event: PointersRebound
) -> None:
    """A rebind: an end may have moved or gone, so its edges are dropped and copied again."""
    edges = list(dict.fromkeys(str(b["edge_uuid"]) for b in event.bindings))
    if edges:  # one scan of the rels for the whole event (rel properties have no index)
        tx.execute("MATCH ()-[r:RELATES]->() WHERE r.uuid IN $u DELETE r", {"u": edges})
    for edge in edges:
        _copy_edge(tx, graph, edge)
    for edge in (*event.self_loops, *event.duplicates):
        _copy_edge(tx, graph, edge)


# Other groups' cross-group edges with an end among a group's entities (ADR 0041)
_FOREIGN_EDGES = (
    "SELECT * FROM relationships WHERE cross_group = 1 AND group_id != ? AND invalid_at IS NULL"
    " AND (source_uuid IN (SELECT uuid FROM entities WHERE group_id = ?)"
    " OR target_uuid IN (SELECT uuid FROM entities WHERE group_id = ?))"
)


def _copy_edge(
    tx: ladybug.Connection, graph: sqlite3.Connection, edge_uuid: str, *, new: bool = False
) -> None:
    row = graph.execute("SELECT * FROM relationships WHERE uuid=?", (edge_uuid,)).fetchone()
    if row is not None:
        _put_edge(tx, row, new=new)


_CREATE_ENTITY = (
    "CREATE (n:Entity {uuid: $uuid, group_id: $group_id, name: $name, summary: $summary,"
    " labels: $labels, attributes: $attributes, created_at: $created_at})"
)
_MERGE_ENTITY = (
    "MERGE (n:Entity {uuid: $uuid}) SET n.group_id = $group_id, n.name = $name,"
    " n.summary = $summary, n.labels = $labels, n.attributes = $attributes,"
    " n.created_at = $created_at"
)


def _run(tx: ladybug.Connection, text: str, parameters: dict[str, object]) -> None:
    """Execute with every None parameter written as a NULL literal: ladybug binds a None
    parameter as ANY and prepares the statement again on each call (an edge copy took 5-10x
    longer with a NULL relation_type or valid_at than with a NULL literal)."""
    nulls = [name for name, value in parameters.items() if value is None]
    for name in nulls:
        text = re.sub(rf"\${name}\b", "NULL", text)
        del parameters[name]
    tx.execute(text, parameters)


def _put_entity(tx: ladybug.Connection, row: sqlite3.Row, *, new: bool = False) -> None:
    """Upsert the entity's node; `new`: it is known not to be there (CREATE is ~3x faster)."""
    _run(
        tx,
        _CREATE_ENTITY if new else _MERGE_ENTITY,
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


def _put_edge(tx: ladybug.Connection, row: sqlite3.Row, *, new: bool = False) -> None:
    """Replace the edge; an invalidated one (invalid_at set) is left out: live edges only.
    `new`: no copy of it is there to delete (that match costs ~1 ms an edge)."""
    if not new:
        tx.execute(
            "MATCH (:Entity {uuid: $source})-[r:RELATES]->() WHERE r.uuid = $uuid DELETE r",
            {"source": row["source_uuid"], "uuid": row["uuid"]},
        )
    if row["invalid_at"] is not None:
        return
    _run(
        tx,
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
