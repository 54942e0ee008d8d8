"""The raw sqlite3 + FTS5 baseline of bench_replay_cli.py: a mixed stream's replay, plain.

What lcg's projections write for the three kinds of event the bench's workspace holds, written
the plain way (bench/wal_raw.py's replay, extended to entities and relationships): the stream's
rows are read from lcg's WAL, each state is decoded with orjson, and per page of 5,000 one
`executemany` per table inserts the graph rows (`episodes`, `entities`, `relationships`), the
FTS5 rows (`fts_passages`, `fts_entities`, `fts_edges`: lcg's columns and tokenizer) and the
`vector_catalog` rows (a passage, a name, a non-blank summary, a fact), into empty tables with
lcg's own DDL, in one transaction. As in bench_wal, not in the baseline: the `text_docs` and
`text_changes` bookkeeping, positions, the typed events, and everything after the commit (the
FAISS indexes and the BM25 scorer).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from bench.wal_raw import PAGE, connect
from lcg.projections.text.tables import TEXT_TABLES, TOKENIZER
from lcg.projections.wal.store import stream_id

SELECT = (
    "SELECT originator_version, topic, state FROM stored_events WHERE originator_id=?"
    " ORDER BY originator_version"
)
GRAPH_TABLES = ("episodes", "entities", "relationships", "vector_catalog")
FTS_DDL = [
    f"CREATE VIRTUAL TABLE {t.name} USING fts5({', '.join(t.columns)}, tokenize='{TOKENIZER}')"
    for t in TEXT_TABLES
    if t.kind in ("passage", "entity", "edge")
]
INSERTS = {
    "episodes": "INSERT INTO episodes (uuid, group_id, name, content, source,"
    " source_description, reference_time, created_at, chunk_id, source_file, seq)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
    "entities": "INSERT INTO entities (uuid, group_id, name, name_key, labels, summary,"
    " attributes, created_at, seq) VALUES (?,?,?,?,?,?,?,?,?)",
    "relationships": "INSERT INTO relationships (uuid, group_id, source_uuid, target_uuid,"
    " name, fact, relation_type, attributes, valid_at, invalid_at, created_at, episodes, seq)"
    " VALUES (?,?,?,?,?,?,?,?,?,NULL,?,'[]',?)",
    "fts_passages": "INSERT INTO fts_passages (content, context) VALUES (?, '')",
    "fts_entities": "INSERT INTO fts_entities (name, summary) VALUES (?, ?)",
    "fts_edges": "INSERT INTO fts_edges (name, fact) VALUES (?, ?)",
    "vector_catalog": "INSERT INTO vector_catalog (group_id, embedding, owner_uuid, part, text,"
    " seq) VALUES (?,?,?,0,?,?)",
}


def read_model_ddl(graph: Path) -> list[str]:
    """lcg's CREATE statements of the graph and catalog tables (indexes included)."""
    conn = sqlite3.connect(f"file:{graph}?mode=ro", uri=True)
    try:
        marks = ",".join("?" * len(GRAPH_TABLES))
        rows = conn.execute(
            f"SELECT sql FROM sqlite_master WHERE tbl_name IN ({marks}) AND sql IS NOT NULL"
            " ORDER BY type DESC",
            GRAPH_TABLES,
        ).fetchall()
    finally:
        conn.close()
    return [str(row[0]) for row in rows]


def _rows(group: str, page: Sequence[tuple[int, str, bytes]]) -> dict[str, list[tuple[Any, ...]]]:
    """The page's rows by table, in stream order within each table."""
    out: dict[str, list[tuple[Any, ...]]] = {table: [] for table in INSERTS}
    for seq, topic, state in page:
        d = orjson.loads(state)
        if topic == "episode_added":
            out["episodes"].append(
                (
                    d["episode_uuid"],
                    group,
                    d["name"],
                    d["body"],
                    d["source"],
                    d["source_description"],
                    d["reference_time"],
                    d["occurred_at"],
                    d["chunk_id"],
                    d["source_file"],
                    seq,
                )
            )
            out["fts_passages"].append((d["body"],))
            out["vector_catalog"].append(
                (group, "passage_embedding", d["episode_uuid"], d["body"], seq)
            )
        elif topic == "entity_created":
            key = " ".join(d["name"].split()).casefold()
            out["entities"].append(
                (
                    d["entity_uuid"],
                    group,
                    d["name"],
                    key,
                    orjson.dumps(d["labels"]).decode(),
                    d["summary"],
                    d["attributes"],
                    d["occurred_at"],
                    seq,
                )
            )
            out["fts_entities"].append((d["name"], d["summary"]))
            out["vector_catalog"].append(
                (group, "name_embedding", d["entity_uuid"], d["name"], seq)
            )
            if d["summary"].strip():
                out["vector_catalog"].append(
                    (group, "summary_embedding", d["entity_uuid"], d["summary"], seq)
                )
        elif topic == "relationship_created":
            out["relationships"].append(
                (
                    d["edge_uuid"],
                    group,
                    d["source_uuid"],
                    d["target_uuid"],
                    d["predicate"],
                    d["fact"],
                    d["relation_type"],
                    d["attributes"],
                    d["valid_at"],
                    d["occurred_at"],
                    seq,
                )
            )
            out["fts_edges"].append((d["predicate"], d["fact"]))
            out["vector_catalog"].append((group, "fact_embedding", d["edge_uuid"], d["fact"], seq))
        else:
            raise RuntimeError(f"raw replay: no baseline for {topic!r}")
    return out


def replay(wal: Path, target: Path, group: str, ddl: Sequence[str]) -> tuple[float, int]:
    """Replay the group's stream into fresh tables; returns (seconds, vector_catalog rows)."""
    source = sqlite3.connect(f"file:{wal}?mode=ro", uri=True)
    conn = connect(target)
    try:
        for statement in [*ddl, *FTS_DDL]:
            conn.execute(statement)
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        cursor = source.execute(SELECT, (stream_id(group).hex,))
        while page := cursor.fetchmany(PAGE):
            for table, rows in _rows(group, page).items():
                conn.executemany(INSERTS[table], rows)
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        catalog = int(conn.execute("SELECT COUNT(*) FROM vector_catalog").fetchone()[0])
    finally:
        source.close()
        conn.close()
    return elapsed, catalog
