"""What the memory family's queries share: the session's jobs as a read sees them, and a
stored concept type as answers show it (ADR 0060)."""

from __future__ import annotations

from typing import Protocol

from lcg.domain.memory.canonization import Knobs
from lcg.domain.memory.gc import GcKnobs
from lcg.domain.memory.text import ConceptType


class SessionJobs(Protocol):
    """The session's canonization and GC jobs, read only: the daemon's contradiction list
    and the knobs the next cycle measures with (read at the moment a query needs them)."""

    @property
    def contradiction_list(self) -> frozenset[str] | None:
        """The concepts whose Contradicted line recall shows, as of the daemon's last tick;
        None until a tick ran (recall then evaluates the rule itself)."""
        ...

    @property
    def knobs(self) -> Knobs: ...

    @property
    def gc_knobs(self) -> GcKnobs: ...


def display_type(concept_type: str | None) -> str:
    """A stored concept type as hits and labels show it (`Entity`, M-DER-008)."""
    return ConceptType(concept_type or ConceptType.ENTITY.value).display
