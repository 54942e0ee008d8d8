"""The conflict and high-risk markers of a recall hit (canonization.md §7, upstream's
daemon/conflict.rs and events.rs; OQ-23 in part).

- **Conflict**: two or more agents wrote edges between it and other concepts (depends_on,
  parent_of, produces, modifies; not contradictions) within the last 30 s, at least one of
  them a Dependency or Causal edge:
  `Agent <X> wrote to it <n> seconds ago`, X being the latest of those writers other than the
  agent asking (the latest writer when only the asker wrote last).
- **High-risk**: a high-value concept (Canonical, Venerable, or a live blast radius of at least
  5) was written, or had an edge written to or from it, within the last 30 s:
  `High-risk modification: high-value node <c> (<Status>[, blast radius n]) modified within 30s`.

Both are worked out at recall from what memory holds, and change no score, rank or status.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from lcg.domain.memory.context import conflict_line, high_risk_line

WINDOW: Final = timedelta(seconds=30)
DEPENDENCY_OR_CAUSAL: Final = frozenset({"depends_on", "produces", "modifies"})
# Edits between concepts: a contradiction is not one ("a conflict stays about concurrent
# edits", seed 001 "Saying an existing concept is wrong"), nor a write's provenance edge.
EDITS: Final = DEPENDENCY_OR_CAUSAL | {"parent_of"}
HIGH_VALUE: Final = frozenset({"Canonical", "Venerable"})
HIGH_BLAST_RADIUS: Final = 5


@dataclass(frozen=True, slots=True)
class RecentWrite:
    """A write touching the concept: an edge to or from it (`kind`), or the concept itself
    (`kind` None: created, reinforced or contradicted)."""

    agent_id: str
    at: datetime
    kind: str | None = None


def _recent(writes: Sequence[RecentWrite], now: datetime) -> list[RecentWrite]:
    return [w for w in writes if timedelta(0) <= now - w.at <= WINDOW]


def conflict(writes: Sequence[RecentWrite], now: datetime, asking_agent: str) -> str | None:
    edges = [w for w in _recent(writes, now) if w.kind in EDITS]
    if len({w.agent_id for w in edges}) < 2:
        return None
    if not any(w.kind in DEPENDENCY_OR_CAUSAL for w in edges):
        return None
    others = [w for w in edges if w.agent_id != asking_agent] or edges
    latest = max(others, key=lambda w: (w.at, w.agent_id))
    return conflict_line(latest.agent_id, int((now - latest.at).total_seconds()))


def high_risk(
    content: str, status: str, blast_radius: int, writes: Sequence[RecentWrite], now: datetime
) -> str | None:
    if status not in HIGH_VALUE and blast_radius < HIGH_BLAST_RADIUS:
        return None
    if not _recent(writes, now):
        return None
    return high_risk_line(content, status, blast_radius if blast_radius > 0 else None)
