"""The session's concepts and edges indexed once, which the sweep walks and the scores read."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Final, TypeVar

from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc.facts import FactColumns
from lcg.domain.memory.gc.knobs import EDGE_BONUS, PROVENANCE_KINDS, EdgeKind

_T = TypeVar("_T")

_PROVENANCE_VALUES: Final = frozenset(kind.value for kind in PROVENANCE_KINDS)
_UNCONNECTING_VALUES: Final = frozenset({EdgeKind.PRECEDES.value, EdgeKind.CONTRADICTS.value})

Pause = Callable[[], None]
"""Called between chunks of a long pass over a session's rows or edges. A job on a thread that
others share passes one that lets them run; the rules themselves never wait."""
PAUSE_EVERY: Final = 512


def no_pause() -> None:
    """Run a pass straight through."""


def paced(items: Iterable[_T], pause: Pause) -> Iterator[_T]:
    """`items`, calling `pause()` before each `PAUSE_EVERY` of them."""
    if pause is no_pause:
        yield from items
        return
    rest = iter(items)
    while chunk := tuple(islice(rest, PAUSE_EVERY)):
        pause()
        yield from chunk


@dataclass(frozen=True, slots=True)
class Graph:
    """The session's concepts (by row: row i is `facts.node_ids[i]`) and their edges, indexed
    once per sweep.

    Contradicts edges are left out of everything here: a contradiction keeps nothing connected
    and changes no score (M-CAN-014, M-CAN-045); its two protections read `EvidenceInputs`.
    `neighbours` is empty unless the graph was built to be walked.
    """

    facts: FactColumns
    row: Mapping[str, int]
    neighbours: Sequence[list[int]]
    anchored: Sequence[int]
    incident: Sequence[int]
    bonus: Sequence[float]
    derived_by: Sequence[int]
    dependents: frozenset[int]
    most_incident: int
    pause: Pause


def _rows(node_ids: Sequence[ConceptId]) -> dict[str, int]:
    row: dict[str, int] = dict(zip(node_ids, range(len(node_ids)), strict=True))
    if len(row) != len(node_ids):
        seen: set[str] = set()
        for node in node_ids:
            if node in seen:
                raise ValueError(f"concept {node} is listed twice")
            seen.add(node)
    return row


_BONUS_SUMS: dict[tuple[int, int, int], float] = {}


def bonus_sum(steady: int, parents: int, produces: int) -> float:
    """A concept's edge bonus summed edge by edge in the (kind, source, target) order of its
    distinct edges: depends_on and modifies (0.02 each), then parent_of (0.015), then produces
    (0.02). Float sums depend on their order, so the order is the one a sorted edge list gives,
    whatever order the edges arrive in; equal counts give the same sum, so it is kept."""
    key = (steady, parents, produces)
    found = _BONUS_SUMS.get(key)
    if found is None:
        total = 0.0
        for _ in range(steady):
            total += EDGE_BONUS[EdgeKind.DEPENDS_ON]
        for _ in range(parents):
            total += EDGE_BONUS[EdgeKind.PARENT_OF]
        for _ in range(produces):
            total += EDGE_BONUS[EdgeKind.PRODUCES]
        found = _BONUS_SUMS[key] = total
    return found


def build_graph(facts: FactColumns, *, walk: bool = True, pause: Pause = no_pause) -> Graph:
    """Index the session once, in one pass over the edges that turns their ends into rows:
    every later pass reads small ints (a pass over 250k edges' strings is memory-bound)."""
    row = _rows(facts.node_ids)
    size = len(facts.node_ids)
    incident = [0] * size
    steady, parent_edges, produced = [0] * size, [0] * size, [0] * size
    derivers: set[tuple[str, int]] = set()
    pairs: set[tuple[int, int]] = set()  # (source, target) of structural edges, distinct
    parents: set[int] = set()
    neighbours: list[list[int]] = [[] for _ in range(size)] if walk else []
    at = row.get
    # A re-sent edge is one edge; kind values compare as strings (EdgeKind is a StrEnum).
    edges = facts.edges if facts.edges_distinct else set(facts.edges)
    for kind, source_text, target_text in paced(edges, pause):
        target = at(target_text)
        if kind in _PROVENANCE_VALUES:
            if target is not None:
                incident[target] += 1
                derivers.add((source_text, target))
            continue
        if kind in _UNCONNECTING_VALUES:
            continue
        source = at(source_text)
        if source is None or target is None or source == target:
            continue
        incident[source] += 1
        incident[target] += 1
        if kind == EdgeKind.PARENT_OF:
            parent_edges[source] += 1
            parent_edges[target] += 1
            parents.add(source)
        elif kind == EdgeKind.PRODUCES:
            produced[source] += 1
            produced[target] += 1
        elif kind in (EdgeKind.DEPENDS_ON, EdgeKind.MODIFIES):
            steady[source] += 1
            steady[target] += 1
        if walk:
            neighbours[source].append(target)
            neighbours[target].append(source)
        pairs.add((source, target))
    derived_by = [0] * size
    for _, target in derivers:
        derived_by[target] += 1
    return Graph(
        facts=facts,
        row=row,
        neighbours=neighbours,
        anchored=[node for node in range(size) if derived_by[node]],
        incident=incident,
        bonus=list(map(bonus_sum, steady, parent_edges, produced)),
        derived_by=derived_by,
        dependents=_with_dependents(size, pairs, parents),
        most_incident=max(incident, default=0),
        pause=pause,
    )


def _with_dependents(size: int, pairs: set[tuple[int, int]], parents: set[int]) -> frozenset[int]:
    """Concepts others depend on: another concept has a structural edge into it (it is cited,
    a parent_of child, or an action's target), it has parent_of children (the seed's dependents),
    or it is some concept's only structural source (upstream's blast radius)."""
    sources = [0] * size
    only = [0] * size
    for source, target in pairs:
        sources[target] += 1
        only[target] = source
    found = set(parents)
    for target in range(size):
        if sources[target]:
            found.add(target)
            if sources[target] == 1:
                found.add(only[target])
    return frozenset(found)


def reachable_rows(graph: Graph, removed: Iterable[int] = ()) -> bytearray:
    """Concepts reachable from any interaction, edges followed either way, without `removed`:
    a flag per row (1: reachable)."""
    blocked = bytearray(len(graph.facts.node_ids))
    for node in removed:
        blocked[node] = 1
    seen = bytearray(len(blocked))
    stack = [node for node in graph.anchored if not blocked[node]]
    for node in stack:
        seen[node] = 1
    neighbours, pause = graph.neighbours, graph.pause
    walked = 0
    while stack:
        walked += 1
        if not walked % PAUSE_EVERY:
            pause()
        for other in neighbours[stack.pop()]:
            if not seen[other] and not blocked[other]:
                seen[other] = 1
                stack.append(other)
    return seen
