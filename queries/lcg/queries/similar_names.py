"""Entities of a group whose names embed close to extracted names (process_chunk's resolution
after the name, issue 14): read before the write, off the writer's thread, so the model never
runs inside a batch; the batch re-checks that the entity still exists (ADR 0033)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from lcg.domain import rules
from lcg.domain.extraction import SimilarName, prefix_alias, same_numbers
from lcg.projections.embedding.port import Vectors
from lcg.projections.graph import reader, state
from lcg.projections.vectors import catalog
from lcg.projections.vectors.index import VectorIndex

CANDIDATES = 4  # nearest name vectors looked at per name
SOURCE_ENTITIES = 1_000  # entities of one source file looked at for a prefix alias


def source_aliases(
    conn: sqlite3.Connection, group_id: str, source_file: str, names: Sequence[str]
) -> dict[str, SimilarName]:
    """By name key: for each name no entity of the group carries itself, the one entity that
    earlier chunks of the same source file mention whose name begins with all its words
    ("Kestrel" after "Kestrel Scheduler", issue 26), as the spaCy rules merge them within a
    chunk; none when two such names exist."""
    wanted = [n for n in names if state.entity_by_name(conn, group_id, n) is None]
    if not wanted:
        return {}
    rows = reader.entities_by_source(conn, source_file, [group_id], SOURCE_ENTITIES)
    by_name = {row["name"]: row["uuid"] for row in rows}
    found: dict[str, SimilarName] = {}
    for name in wanted:
        longer = prefix_alias(name, by_name)
        if longer is not None:
            found[rules.name_key(name)] = SimilarName(by_name[longer], longer, 1.0)
    return found


def similar_names(
    conn: sqlite3.Connection,
    vectors: VectorIndex,
    embed: Callable[[Sequence[str]], Vectors],
    group_id: str,
    names: Sequence[str],
    threshold: float,
) -> dict[str, SimilarName]:
    """By name key: the group entity whose name is nearest at or above `threshold` (cosine),
    for each name no entity of the group carries itself; names with other numbers are never
    candidates. Empty when `threshold` is above 1 (resolution by embedding off)."""
    wanted = [n for n in names if state.entity_by_name(conn, group_id, n) is None]
    if threshold > 1 or not wanted:
        return {}
    found: dict[str, SimilarName] = {}
    for name, vector in zip(wanted, embed(wanted), strict=True):
        hits = vectors.search("entity", [group_id], vector, CANDIDATES)
        entries = catalog.describe(conn, [hit.vec_id for hit in hits])
        for hit in hits:
            entry = entries.get(hit.vec_id)
            if entry is None or entry.embedding != catalog.NAME or hit.score < threshold:
                continue
            entity = state.entity_by_uuid(conn, entry.owner_uuid)
            if entity is None or entity.group_id != group_id or entity.merged_into is not None:
                continue
            if same_numbers(name, entity.name):
                found[rules.name_key(name)] = SimilarName(entity.uuid, entity.name, hit.score)
                break
    return found
