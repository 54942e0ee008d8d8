"""A group as it was at one seq: its events replayed into a temporary projection (ADR 0084).

An export (and an import's plan) reads one position of the group's stream: the head when it
starts, or the `--as-of-seq` asked for. lcg.projections.as_of (the one "as of seq" builder,
shared with the portal's recall, ADR 0089) reads the group's events up to there from the
workspace's log (a reader beside the writer: it works while a service holds the workspace, as
`lcg log` does) and folds them with the real graph, memory and canonization projections into
a SQLite file in a temporary directory, deleted afterwards. The live projections are never
read, so a write landing during the export cannot show in it, and an old seq is as easy as
the head. Rows are streamed out of the file (bounded memory at any size).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from lcg.projections.as_of import AsOf, AsOfSeqTooHigh, Progress
from lcg.projections.canonization.projection import CanonizationProjection
from lcg.projections.graph.projection import GraphProjection
from lcg.projections.memory.projection import MemoryProjection
from lcg.projections.wal.port import LogStore

__all__ = ["AsOfSeqTooHigh", "Progress", "Snapshot"]


@dataclass(frozen=True, slots=True)
class EntityRow:
    uuid: str
    name: str
    labels: tuple[str, ...]
    summary: str
    attributes: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True)
class EdgeRow:
    uuid: str
    source_uuid: str
    target_uuid: str
    predicate: str
    fact: str
    relation_type: str | None
    valid_at: str | None
    attributes: dict[str, Any]
    created_at: str


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    uuid: str
    name: str
    content: str
    source: str
    source_description: str
    reference_time: str
    created_at: str


@dataclass(frozen=True, slots=True)
class ConceptRow:
    uuid: str
    content: str
    concept_type: str | None
    status: str
    agent_id: str
    created_at: str


@dataclass(frozen=True, slots=True)
class ImageRow:
    """What re-creating an image concept needs (ADR 0095): its id, caption and unit vector
    with the embedding contract it is in, as its lambo_derive_image intent carried them."""

    image_id: str
    caption: str
    values: tuple[float, ...]
    contract: dict[str, Any]  # {kind, model, dim}


@dataclass(frozen=True, slots=True)
class ConceptEdgeRow:
    type: str  # depends_on, contradicts, parent_of, ...
    source: str
    target: str


class Snapshot:
    """A group replayed to `seq` in a temporary projection file; a context manager."""

    def __init__(
        self,
        log: LogStore | None,
        group_id: str,
        as_of_seq: int | None = None,
        progress: Progress | None = None,
    ) -> None:
        """`log` None: a workspace with no WAL yet, an empty group. The caller owns `log`
        (any store: lcg.projections.wal.opening); the replay is done when this returns."""
        self.group_id = group_id
        projections = (GraphProjection(), MemoryProjection(), CanonizationProjection())
        self._as_of = AsOf(
            log,
            group_id,
            as_of_seq,
            projections=projections,
            progress=progress,
            prefix="lcg-export-",
        )
        self.conn = self._as_of.conn
        self.head, self.seq = self._as_of.head, self._as_of.seq

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._as_of.close()

    def _rows(self, sql: str) -> Iterator[sqlite3.Row]:
        cursor = self.conn.execute(sql, (self.group_id,))
        while batch := cursor.fetchmany(1000):
            yield from batch

    def entities(self) -> Iterator[EntityRow]:
        """Live entities (merged aliases left out), oldest first."""
        for row in self._rows(
            "SELECT * FROM entities WHERE group_id=? AND merged_into IS NULL ORDER BY seq"
        ):
            yield EntityRow(
                uuid=row["uuid"],
                name=row["name"],
                labels=tuple(json.loads(row["labels"])),
                summary=row["summary"] or "",
                attributes=_object(row["attributes"]),
                created_at=row["created_at"],
            )

    def edges(self) -> Iterator[EdgeRow]:
        """Active edges with both ends in the group, oldest first (invalidated ones are
        history, which no format here carries)."""
        for row in self._rows(
            "SELECT * FROM relationships WHERE group_id=? AND invalid_at IS NULL"
            " AND source_uuid IS NOT NULL AND target_uuid IS NOT NULL"
            " AND NOT COALESCE(cross_group, 0) ORDER BY seq"
        ):
            yield EdgeRow(
                uuid=row["uuid"],
                source_uuid=row["source_uuid"],
                target_uuid=row["target_uuid"],
                predicate=row["name"],
                fact=row["fact"],
                relation_type=row["relation_type"] or None,
                valid_at=row["valid_at"] or None,
                attributes=_object(row["attributes"]),
                created_at=row["created_at"],
            )

    def episodes(self) -> Iterator[EpisodeRow]:
        for row in self._rows("SELECT * FROM episodes WHERE group_id=? ORDER BY seq"):
            yield EpisodeRow(
                uuid=row["uuid"],
                name=row["name"],
                content=row["content"],
                source=row["source"],
                source_description=row["source_description"] or "",
                reference_time=row["reference_time"],
                created_at=row["created_at"],
            )

    def concepts(self) -> Iterator[ConceptRow]:
        """The session's concepts with their canonization status, oldest first."""
        for row in self._rows(
            "SELECT n.uuid, n.content, n.concept_type, n.agent_id, n.created_at,"
            " COALESCE(c.status, 'None') AS status FROM memory_nodes n"
            " LEFT JOIN canon_nodes c ON c.node_id = n.uuid"
            " WHERE n.group_id=? AND n.node_kind='concept' ORDER BY n.seq"
        ):
            yield ConceptRow(
                uuid=row["uuid"],
                content=row["content"],
                concept_type=row["concept_type"],
                status=row["status"],
                agent_id=row["agent_id"],
                created_at=row["created_at"],
            )

    def concept_keys(self) -> Iterator[tuple[str, str]]:
        """Each concept's node id and canonical key (what identity by key compares)."""
        for row in self._rows(
            "SELECT uuid, canonical_key FROM memory_nodes WHERE group_id=?"
            " AND node_kind='concept' AND canonical_key IS NOT NULL"
        ):
            yield row["uuid"], row["canonical_key"]

    def images(self) -> dict[str, ImageRow]:
        """The group's image concepts by node id: the intent of the write that created each
        (its outcome's seq is the image's row's), whose request holds the vector. Held
        whole: at most one vector (4096 values) per image concept."""
        found: dict[str, ImageRow] = {}
        for row in self._rows(
            "SELECT i.node_id, w.request FROM memory_images i"
            " JOIN memory_writes w ON w.outcome_seq = i.seq AND w.tool = 'lambo_derive_image'"
            " WHERE i.group_id=?"
        ):
            request = json.loads(row["request"])
            found[row["node_id"]] = ImageRow(
                image_id=request["image_id"],
                caption=request["caption"],
                values=tuple(float(value) for value in request["vector"]),
                contract=dict(request["source"]["contract"]),
            )
        return found

    def concept_edges(self) -> Iterator[ConceptEdgeRow]:
        for row in self._rows(
            "SELECT e.kind, e.source, e.target FROM memory_edges e"
            " JOIN memory_nodes s ON s.uuid = e.source AND s.node_kind = 'concept'"
            " JOIN memory_nodes t ON t.uuid = e.target AND t.node_kind = 'concept'"
            " WHERE e.group_id=? ORDER BY e.seq"
        ):
            yield ConceptEdgeRow(type=row["kind"], source=row["source"], target=row["target"])

    def counts(self) -> dict[str, int]:
        def count(sql: str) -> int:
            return int(self.conn.execute(sql, (self.group_id,)).fetchone()[0])

        return {
            "entities": count(
                "SELECT COUNT(*) FROM entities WHERE group_id=? AND merged_into IS NULL"
            ),
            "edges": count(
                "SELECT COUNT(*) FROM relationships WHERE group_id=? AND invalid_at IS NULL"
                " AND source_uuid IS NOT NULL AND target_uuid IS NOT NULL"
                " AND NOT COALESCE(cross_group, 0)"
            ),
            "episodes": count("SELECT COUNT(*) FROM episodes WHERE group_id=?"),
            "concepts": count(
                "SELECT COUNT(*) FROM memory_nodes WHERE group_id=? AND node_kind='concept'"
            ),
        }


def _object(text: str | None) -> dict[str, Any]:
    value = json.loads(text) if text else {}
    return value if isinstance(value, dict) else {}
