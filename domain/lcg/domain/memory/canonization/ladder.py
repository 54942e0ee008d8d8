"""The canonization ladder: the statuses a concept climbs and the hops allowed between them (§1)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from lcg.domain.errors import DomainError


class Status(StrEnum):
    """A concept's canonization status, as canonization events name it on the wire."""

    NONE = "None"
    CANDIDATE = "Candidate"
    VENERABLE = "Venerable"
    CANONICAL = "Canonical"


LEGAL_TRANSITIONS: Final = frozenset(
    {
        (Status.NONE, Status.CANDIDATE),
        (Status.CANDIDATE, Status.VENERABLE),
        (Status.VENERABLE, Status.CANONICAL),
        (Status.CANONICAL, Status.NONE),
        # Root-goal concepts only; the evaluator never takes it.
        (Status.NONE, Status.VENERABLE),
    }
)

NEXT: Final[Mapping[Status, Status]] = {
    Status.NONE: Status.CANDIDATE,
    Status.CANDIDATE: Status.VENERABLE,
    Status.VENERABLE: Status.CANONICAL,
}


class IllegalTransition(DomainError):
    """A canonization hop the ladder does not allow, or one that starts from a stale status."""


def check_transition(current: Status, from_status: Status, to_status: Status) -> None:
    """Refuse a hop that is not on the ladder, or whose `from_status` is not `current` (§1)."""
    if from_status is not current:
        raise IllegalTransition(
            f"transition from {from_status} refused: the concept is {current}",
            field="from_status",
            rule="current status",
        )
    if (from_status, to_status) not in LEGAL_TRANSITIONS:
        raise IllegalTransition(
            f"transition {from_status} -> {to_status} is not on the ladder",
            field="to_status",
            rule="legal transition",
        )
