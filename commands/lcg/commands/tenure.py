"""What a job that must run once across nodes holds: a tenure of a lease (ADR 0085).

On one workspace (the SQLite log) there is none: the flock makes the process the only one,
and its jobs run unfenced. On a shared PostgreSQL log each such job (the intent applier, a
session's canonization and GC) is given a `Tenure`: it runs only while `fence()` names a
lease and epoch, and every batch it writes carries that fence, so a holder paused past its
expiry has its batch refused (`lcg.projections.faults.Fenced`, nothing written) once another
node took the lease over.
"""

from __future__ import annotations

from typing import Protocol

Fence = tuple[str, int]  # a lease's name and the tenure's epoch
INTENTS = "intents"  # the lease of the memory intent applier (every session's intents)


def jobs_lease(session: str) -> str:
    """The lease of a session's canonization cycle and GC tick."""
    return f"jobs:{session}"


class Tenure(Protocol):
    """A job's hold on its lease."""

    def fence(self) -> Fence | None:
        """The lease and epoch while this node holds it; None while another node does (or
        nobody, or the server cannot be reached)."""
        ...
