"""The projections of a workspace, in the order the runner applies them: the one list."""

from __future__ import annotations

from lcg.projections.canonization.projection import CanonizationProjection
from lcg.projections.graph.projection import GraphProjection
from lcg.projections.memory.projection import MemoryProjection
from lcg.projections.runner import Projection
from lcg.projections.text.projection import TextProjection
from lcg.projections.vectors.catalog import VectorCatalogProjection


def projections() -> tuple[Projection, ...]:
    """Fresh instances of every projection (graph, text, vector catalog, memory, canonization).

    Projections never read each other's tables, so their order only fixes which one a
    failure names first."""
    return (
        GraphProjection(),
        TextProjection(),
        VectorCatalogProjection(),
        MemoryProjection(),
        CanonizationProjection(),
    )
