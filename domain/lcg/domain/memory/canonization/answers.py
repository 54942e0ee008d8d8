"""What the policy answers: inspect's admission and its text lines, a cycle's transitions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from lcg.domain.memory.canonization.ladder import Status
from lcg.domain.memory.canonization.measures import Cause, Cursors, Demotion
from lcg.domain.memory.canonization.policy import Policy
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.identity import is_node_uuid, short_id


@dataclass(frozen=True, slots=True)
class Check:
    """One gate of the next hop, as inspect's `admission.checks[]` carries it."""

    gate: str
    stage: int
    current: float | None
    bar: float
    comparison: str
    met: bool


@dataclass(frozen=True, slots=True)
class SoloTerms:
    """`admission.solo`: the Solo score's terms (key names decided here, §4 [I])."""

    sessions: int
    human_confirmed: int
    valid_actions: int
    reverts: int
    resistance: float
    raw: float
    score: float
    band: Status


@dataclass(frozen=True, slots=True)
class Admission:
    """Why a concept is or is not promoted next (M-INS-030..043).

    `reasons` are the indented lines (one per failing gate, then the held line); `stamp` is
    the blast radius the hop would record; `lines()` is the text section.
    """

    policy: Policy
    status: Status
    next: Status | None
    eligible: bool
    checks: tuple[Check, ...]
    solo: SoloTerms | None
    reasons: tuple[str, ...]
    held_by: ConceptId | None = None
    last_demotion: Demotion | None = None
    stamp: int | None = None

    def lines(self) -> tuple[str, ...]:
        """The canonization section of lambo_inspect's text."""
        head = f"canonization ({self.policy}): {self.status}"
        if self.next is not None:
            head += f" -> {self.next} {'eligible' if self.eligible else 'refused'}"
        lines = [head, *(f"  {reason}" for reason in self.reasons)]
        if self.last_demotion is not None:
            lines.append(last_demotion_line(self.last_demotion))
        return tuple(lines)


@dataclass(frozen=True, slots=True)
class Transition:
    """One hop the cycle decided; the job appends it as a canonization event."""

    node_id: ConceptId
    from_status: Status
    to_status: Status
    blast_radius: int | None
    cause: Cause
    occurred_at: datetime
    last_demotion_time: datetime | None = None
    superseded_by: ConceptId | None = None


@dataclass(frozen=True, slots=True)
class CyclePlan:
    """A cycle's transitions, in the order they apply, and the cursors after it."""

    transitions: tuple[Transition, ...]
    cursors: Cursors = Cursors()


# --- text -------------------------------------------------------------------------------------


def _rfc3339(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _id(node_id: ConceptId) -> str:
    return short_id(node_id) if is_node_uuid(node_id) else node_id


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def last_demotion_line(demotion: Demotion) -> str:
    """`last demotion <t>: budget`, or `...: superseded by "<content>" (id <id>)` (M-INS-041)."""
    when = f"last demotion {_rfc3339(demotion.at)}"
    if demotion.cause is not Cause.SUPERSESSION or demotion.superseded_by is None:
        return f"{when}: {demotion.cause}"
    by = _id(demotion.superseded_by)
    if demotion.superseded_by_content is None:
        # Decision: once the superseding concept is gone, the id alone names it (M-CAN-053).
        return f"{when}: superseded by (id {by})"
    return f'{when}: superseded by "{demotion.superseded_by_content}" (id {by})'


def held_line(by: ConceptId) -> str:
    """M-INS-043's line for a Venerable held by a contradicting concept with newer evidence."""
    return f"held: contradicted by {_id(by)} with newer evidence"


def reason_line(check: Check) -> str:
    current = "none" if check.current is None else _num(check.current)
    stage = f"- stage {check.stage}: "
    match check.gate:
        case "peer_count":
            text = f"{current} peer concepts in the session, needs at least {_num(check.bar)}"
        case "gc_survived":
            text = f"survived {current} garbage collections, needs at least {_num(check.bar)}"
        case "score_p90":
            text = f"score {current} not above the session's 90th percentile {_num(check.bar)}"
        case "distinct_interactions":
            text = f"dependents from {current} other interactions, needs at least {_num(check.bar)}"
        case "coverage":
            text = f"dependents cover {current} of the session, needs at least {_num(check.bar)}"
        case "cooldown":
            text = f"demoted {current} seconds ago, cooling down for {_num(check.bar)}"
        case "blast_radius":
            text = f"blast radius {current}, needs more than {_num(check.bar)}"
        case "canonical_budget":
            text = f"canonical budget full ({current} of {_num(check.bar)})"
        case _:
            text = f"solo score {current}, needs at least {_num(check.bar)}"
    return stage + text
