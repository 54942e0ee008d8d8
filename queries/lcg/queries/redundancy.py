"""What memory says about pairs of recall hits, for ``[selection] skip_redundant`` (#181).

The pure repeat rule is lcg.domain.memory.redundancy; this reads its facts for the hits
checked: ``contradicts`` edges and possibly-superseded pairs among them (never repeats), and,
with ``similar_signals``, ``semantic`` edges between two of them and the cosine of their stored
concept vectors (the texts the vector catalog embedded, through the persistent embedding cache,
so no text is embedded anew).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from lcg.domain.memory.redundancy import PairFacts, pair
from lcg.projections.vectors import catalog
from lcg.projections.vectors.index import VectorIndex


def _pairs_of(
    conn: sqlite3.Connection, sql: str, group: str, nodes: Sequence[str]
) -> frozenset[frozenset[str]]:
    marks = ",".join("?" * len(nodes))
    rows = conn.execute(sql.format(marks=marks), (group, *nodes, *nodes)).fetchall()
    return frozenset(pair(str(a), str(b)) for a, b in rows if a != b)


def pair_facts(
    conn: sqlite3.Connection,
    vectors: VectorIndex,
    group: str,
    nodes: Sequence[str],
    *,
    similar_signals: bool,
    threshold: float,
) -> PairFacts:
    """The facts about every pair of ``nodes`` (the hits checked) in session ``group``."""
    nodes = list(dict.fromkeys(nodes))
    if len(nodes) < 2:
        return PairFacts(threshold=threshold)
    edges = (
        "SELECT source, target FROM memory_edges WHERE group_id=? AND kind='{kind}'"
        " AND source IN ({{marks}}) AND target IN ({{marks}})"
    )
    contradictions = _pairs_of(conn, edges.format(kind="contradicts"), group, nodes)
    superseded = _pairs_of(
        conn,
        "SELECT older, newer FROM memory_superseded WHERE group_id=? AND older IN ({marks})"
        " AND newer IN ({marks})",
        group,
        nodes,
    )
    if not similar_signals:
        return PairFacts(contradictions, superseded, threshold=threshold)
    semantic = _pairs_of(conn, edges.format(kind="semantic"), group, nodes)
    return PairFacts(
        contradictions, superseded, semantic, _cosines(conn, vectors, nodes), threshold
    )


def _cosines(
    conn: sqlite3.Connection, vectors: VectorIndex, nodes: Sequence[str]
) -> dict[frozenset[str], float]:
    """Cosine of the stored concept vectors of each pair of ``nodes`` that both have one."""
    marks = ",".join("?" * len(nodes))
    texts: dict[str, str] = {}
    for owner, text in conn.execute(  # the newest row per owner, as catalog.embedded_text
        "SELECT owner_uuid, text FROM vector_catalog WHERE embedding=?"
        f" AND owner_uuid IN ({marks}) ORDER BY vec_id",
        (catalog.CONCEPT, *nodes),
    ):
        texts[str(owner)] = str(text)
    owners = [node for node in nodes if node in texts]
    if len(owners) < 2:
        return {}
    matrix = np.asarray(vectors.cache.embed([texts[owner] for owner in owners]), dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1.0, norms)
    similarity = matrix @ matrix.T
    return {
        pair(owners[i], owners[j]): float(similarity[i, j])
        for i, j in combinations(range(len(owners)), 2)
    }
