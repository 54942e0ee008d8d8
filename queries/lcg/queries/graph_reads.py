"""Graph read tools (seed 000 §Graph reads) with the K-GID omitted-vs-[] contract."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import NotRequired, TypedDict

from lcg.domain import rules
from lcg.domain.ids import GroupId
from lcg.projections.graph import reader
from lcg.projections.graph.reader import EdgeRow, EntityRow, EpisodeRow, GroupFilter


def exact_groups(group_ids: Sequence[str] | None) -> GroupFilter:
    """find_entities, find_relationships, get_nodes/edges_by_group: [] matches nothing."""
    return None if group_ids is None else list(group_ids)


def collapsing_groups(group_ids: Sequence[str] | None) -> GroupFilter:
    """search_passages, list_*, get_entity_neighbors, get_entities_by_source: [] means all."""
    return list(group_ids) if group_ids else None


class NodesResult(TypedDict):
    nodes: list[EntityRow]
    count: int


class EdgesResult(TypedDict):
    edges: list[EdgeRow]
    count: int


class EpisodesResult(TypedDict):
    episodes: list[EpisodeRow]
    count: int


class NeighborsResult(TypedDict):
    center_uuid: str
    nodes: list[EntityRow]
    edges: list[EdgeRow]
    count: int
    node_count: int
    edge_count: int
    merged_into: NotRequired[str]  # the center is a merged alias's tombstone (P-124)


# Without a num_results parameter the by-group reads still answer in bounded size.
GROUP_READ_LIMIT = rules.MAX_NUM_RESULTS


def list_entities(
    conn: sqlite3.Connection, group_ids: Sequence[str] | None, num_results: int = 500
) -> NodesResult:
    nodes = reader.list_entities(conn, collapsing_groups(group_ids), num_results)
    return NodesResult(nodes=nodes, count=len(nodes))


def list_relationships(
    conn: sqlite3.Connection, group_ids: Sequence[str] | None, num_results: int = 1000
) -> EdgesResult:
    edges = reader.list_edges(conn, collapsing_groups(group_ids), num_results)
    return EdgesResult(edges=edges, count=len(edges))


def get_nodes_by_group(conn: sqlite3.Connection, group_ids: Sequence[str] | None) -> NodesResult:
    nodes = reader.list_entities(conn, exact_groups(group_ids), GROUP_READ_LIMIT)
    return NodesResult(nodes=nodes, count=len(nodes))


def get_edges_by_group(conn: sqlite3.Connection, group_ids: Sequence[str] | None) -> EdgesResult:
    edges = reader.list_edges(conn, exact_groups(group_ids), GROUP_READ_LIMIT)
    return EdgesResult(edges=edges, count=len(edges))


def get_edges_by_uuids(conn: sqlite3.Connection, uuids: Sequence[str]) -> EdgesResult:
    edges = reader.edges_by_uuids(conn, uuids)
    return EdgesResult(edges=edges, count=len(edges))


def get_episodes(conn: sqlite3.Connection, group_id: GroupId, last_n: int = 50) -> EpisodesResult:
    episodes = reader.episodes(conn, group_id, last_n)
    return EpisodesResult(episodes=episodes, count=len(episodes))


def get_entity_neighbors(
    conn: sqlite3.Connection,
    entity_uuid: str,
    group_ids: Sequence[str] | None,
    num_results: int = 50,
) -> NeighborsResult:
    nodes, edges = reader.neighbors(conn, entity_uuid, collapsing_groups(group_ids), num_results)
    result = NeighborsResult(
        center_uuid=entity_uuid,
        nodes=nodes,
        edges=edges,
        count=len(nodes) + len(edges),
        node_count=len(nodes),
        edge_count=len(edges),
    )
    canonical = reader.merged_into(conn, entity_uuid)
    if canonical is not None:
        result["merged_into"] = canonical
    return result


class SourceResult(TypedDict):
    source: str
    nodes: list[EntityRow]
    count: int


def get_entities_by_source(
    conn: sqlite3.Connection, source: str, group_ids: Sequence[str] | None, num_results: int = 100
) -> SourceResult:
    """Entities mentioned by the source's episodes (P-119); [] means all groups (K-GID-019)."""
    nodes = reader.entities_by_source(conn, source, collapsing_groups(group_ids), num_results)
    return SourceResult(source=source, nodes=nodes, count=len(nodes))
