"""The promotion policy a server runs and its knobs: settable ones (§10) and fixed gate bars."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from typing import Final

from lcg.domain.errors import DomainError
from lcg.domain.memory.canonization.ladder import Status
from lcg.domain.memory.evidence import EDGE_MIN_AGE
from lcg.domain.memory.text import ConceptType


class Policy(StrEnum):
    """The promotion policy a server runs (§4), as lambo_stats reports it."""

    SWARM = "Swarm"
    SOLO = "Solo"


def parse_policy(text: str) -> Policy:
    """`promotion_policy` from the settings file or the environment: trimmed, any case."""
    wanted = text.strip().lower()
    for policy in Policy:
        if policy.value.lower() == wanted:
            return policy
    raise DomainError(
        f"promotion_policy: {text!r} is not a promotion policy, expected Swarm | Solo",
        field="promotion_policy",
        rule="Swarm | Solo",
    )


@dataclass(frozen=True, slots=True)
class Knobs:
    """The settable canonization knobs of §10 that the policy reads, with upstream defaults.

    `edge_min_age` is applied by the store when it measures Stage 2 and blast radius; the
    policy applies it itself only to supersession evidence. `eval_interval` is the scheduler's.
    """

    promotion_policy: Policy = Policy.SWARM
    min_peer_count: int = 20
    edge_min_age: timedelta = EDGE_MIN_AGE
    eval_interval: timedelta = timedelta(seconds=60)
    batch_size: int = 50
    repromotion_cooldown: timedelta = timedelta(seconds=300)
    max_canonical_nodes: int = 1000
    supersede: bool = False

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise DomainError("batch_size must be at least 1", field="batch_size", rule="range")
        if self.max_canonical_nodes < 0:
            raise DomainError(
                "max_canonical_nodes must not be negative",
                field="max_canonical_nodes",
                rule="range",
            )
        if self.edge_min_age < timedelta(0) or self.repromotion_cooldown < timedelta(0):
            raise DomainError("durations must not be negative", field="knobs", rule="range")


# Fixed gate constants (§3, §10: not settable).
GC_SURVIVED_BAR: Final = 3
SCORE_PERCENTILE: Final = 0.9
DISTINCT_INTERACTIONS_BAR: Final = 3
COVERAGE_BAR: Final = 0.3
BLAST_RADIUS_BAR: Final = 5

# Solo constants (§4).
SOLO_BANDS: Final = ((10.0, Status.CANONICAL), (6.0, Status.VENERABLE), (3.0, Status.CANDIDATE))
SOLO_SESSION_GAP: Final = timedelta(hours=24)
RESISTANCE: Final[Mapping[ConceptType, float]] = {
    ConceptType.CONSTRAINT: 1.5,
    ConceptType.ENTITY: 1.2,
    ConceptType.LOGIC: 1.1,
    ConceptType.RESOURCE: 1.0,
    ConceptType.OBSERVATION: 0.7,
}
