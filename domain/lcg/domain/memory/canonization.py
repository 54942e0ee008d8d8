"""Canonization policy: which concepts the next cycle promotes or demotes, and why (inspect).

Pure functions over what the store measured (canonization.md §1-§6, M-CAN, M-INS-030..043).
The scheduled job measures a `SessionStats`, asks `plan_cycle` for the transitions and appends
them as events; `lambo_inspect` asks `evaluate` about one concept. Both read one gate function,
so inspect's admission is the cycle's own decision. The clock arrives as `now`.

Decisions on what the spec leaves open (tagged [I] there) are marked "Decision" below.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from functools import cached_property
from itertools import islice
from typing import Final

from lcg.domain.errors import DomainError
from lcg.domain.memory.evidence import (
    EDGE_MIN_AGE,
    Concept,
    ConceptId,
    Contradiction,
    Support,
    current_contradiction,
)
from lcg.domain.memory.identity import is_node_uuid, short_id
from lcg.domain.memory.text import ConceptType

# --- the ladder -------------------------------------------------------------------------------


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

_NEXT: Final[Mapping[Status, Status]] = {
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


# --- knobs ------------------------------------------------------------------------------------


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


# --- what the store measures ------------------------------------------------------------------


class Cause(StrEnum):
    """Why a transition happened."""

    PROMOTION = "promotion"
    BUDGET = "budget"
    SUPERSESSION = "supersession"


@dataclass(frozen=True, slots=True)
class Demotion:
    """A concept's last demotion: when, why, and by what (supersession only).

    `superseded_by_content` is None once the superseding concept is no longer in memory.
    """

    at: datetime
    cause: Cause
    superseded_by: ConceptId | None = None
    superseded_by_content: str | None = None


@dataclass(frozen=True, slots=True)
class SoloMeasures:
    """Solo's inputs for one concept (§4).

    `support_times`: about-times of the interactions with a Derives edge into the concept and
    of the origin interactions of concepts with a Causal or Dependency edge into it.
    `reverts`: the concept's audit events that move it down the ladder.
    """

    support_times: tuple[datetime, ...] = ()
    human_confirmed: int = 0
    valid_actions: int = 0
    reverts: int = 0


@dataclass(frozen=True, slots=True)
class ConceptStats:
    """What one cycle measures about one concept (every count already aged by the store).

    `score` is the daemon score S(c) (§3). `distinct_interactions` and `coverage` are Stage 2's
    (inbound structural edges from concepts, aged, the concept's own interaction excluded).
    `blast_radius` is the aged blast radius (the document's set: citers and parent_of
    children), read by Stage 3 and the budget.
    """

    node_id: ConceptId
    status: Status
    concept_type: ConceptType = ConceptType.ENTITY
    canonical_key: str | None = None
    score: float = 0.0
    gc_survived: int = 0
    distinct_interactions: int = 0
    coverage: float = 0.0
    blast_radius: int = 0
    last_demotion: Demotion | None = None
    solo: SoloMeasures = SoloMeasures()


@dataclass(frozen=True, slots=True)
class SupersessionEvidence:
    """What §6 needs, as the contradiction rules read it (lcg.domain.memory.evidence).

    `concepts`: the first write of every concept involved (targets and contradicting ones).
    `interaction_extent`: the session's interaction extent, the denominator of coverage.
    """

    concepts: tuple[Concept, ...] = ()
    contradictions: tuple[Contradiction, ...] = ()
    support: tuple[Support, ...] = ()
    interaction_extent: timedelta = timedelta(0)


@dataclass(frozen=True, slots=True)
class Cursors:
    """The round-robin cursors of Stage 2 and Stage 3 (in memory, reset on restart)."""

    stage2: ConceptId | None = None
    stage3: ConceptId | None = None


@dataclass(frozen=True, slots=True)
class SessionStats:
    """One pre-cycle snapshot of a session: every concept's measures, and the cursors."""

    concepts: tuple[ConceptStats, ...]
    evidence: SupersessionEvidence = SupersessionEvidence()
    cursors: Cursors = Cursors()


@dataclass(frozen=True)  # no slots: `ladder` is worked out once per rows
class ConceptRows:
    """Every concept of a session as columns (row i of each is one concept): what a cycle
    reads about all of them. The rest of a concept's `ConceptStats` (`Measures`) is read only
    for the concepts the cycle's windows evaluate (`cycle_needs`), so a cycle over 100k
    concepts builds no object per concept."""

    node_ids: Sequence[ConceptId]
    statuses: Sequence[Status]
    concept_types: Sequence[ConceptType]
    canonical_keys: Sequence[str | None]
    scores: Sequence[float]
    gc_survived: Sequence[int]

    def __post_init__(self) -> None:
        size = len(self.node_ids)
        columns = (
            self.statuses,
            self.concept_types,
            self.canonical_keys,
            self.scores,
            self.gc_survived,
        )
        if any(len(column) != size for column in columns):
            raise DomainError(
                "every concept column needs one value per concept",
                field="concepts",
                rule="columns",
            )

    @cached_property
    def ladder(self) -> _Ladder:
        """The rows by status in id order (`cycle_needs` and `plan_cycle_over` share it)."""
        return _Ladder.of(self)

    @classmethod
    def of(cls, concepts: Sequence[ConceptStats]) -> ConceptRows:
        """The rows of measured concepts."""
        return cls(
            node_ids=[c.node_id for c in concepts],
            statuses=[c.status for c in concepts],
            concept_types=[c.concept_type for c in concepts],
            canonical_keys=[c.canonical_key for c in concepts],
            scores=[c.score for c in concepts],
            gc_survived=[c.gc_survived for c in concepts],
        )


@dataclass(frozen=True, slots=True)
class Measures:
    """The part of a concept's `ConceptStats` that is not in its `ConceptRows` row."""

    distinct_interactions: int = 0
    coverage: float = 0.0
    blast_radius: int = 0
    last_demotion: Demotion | None = None
    solo: SoloMeasures = SoloMeasures()

    @classmethod
    def of(cls, stats: ConceptStats) -> Measures:
        """A measured concept's measures."""
        return cls(
            stats.distinct_interactions,
            stats.coverage,
            stats.blast_radius,
            stats.last_demotion,
            stats.solo,
        )


# --- what the policy answers ------------------------------------------------------------------


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


def _reason(check: Check) -> str:
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


# --- measures the policy derives --------------------------------------------------------------


def p90(scores: Iterable[float]) -> float:
    """Nearest-rank 90th percentile; a NaN, infinite or negative score counts as 0 (§3)."""
    clean = sorted(s if math.isfinite(s) and s > 0 else 0.0 for s in scores)
    if not clean:
        return 0.0
    return clean[math.ceil(SCORE_PERCENTILE * len(clean)) - 1]


def solo_sessions(times: Iterable[datetime]) -> int:
    """Distinct sessions: the first time, then each at least 24 h after the last counted."""
    counted = 0
    last: datetime | None = None
    for at in sorted(set(times)):
        if last is None or at - last >= SOLO_SESSION_GAP:
            counted += 1
            last = at
    return counted


def solo_band(score: float) -> Status:
    """The status a Solo score reaches (bands inclusive)."""
    for floor, status in SOLO_BANDS:
        if score >= floor:
            return status
    return Status.NONE


def solo_terms(stats: ConceptStats) -> SoloTerms:
    """Solo's score of a concept: (sessions + 4 human + 2 actions - 3 reverts) x resistance."""
    measures = stats.solo
    sessions = solo_sessions(measures.support_times)
    raw = float(
        sessions + 4 * measures.human_confirmed + 2 * measures.valid_actions - 3 * measures.reverts
    )
    resistance = RESISTANCE[stats.concept_type]
    score = raw * resistance
    return SoloTerms(
        sessions,
        measures.human_confirmed,
        measures.valid_actions,
        measures.reverts,
        resistance,
        raw,
        score,
        solo_band(score),
    )


# --- supersession (§6) ------------------------------------------------------------------------


def _first_support(pieces: Iterable[Support]) -> list[Support]:
    """One record per dependence, its first write's: a re-sent citation is not new support."""
    first: dict[tuple[str, ConceptId, ConceptId], Support] = {}
    for piece in pieces:
        key = (piece.kind.value, piece.concept, piece.target)
        known = first.get(key)
        if known is None or (piece.written_at, piece.interaction) < (
            known.written_at,
            known.interaction,
        ):
            first[key] = piece
    return list(first.values())


def _first_contradictions(edges: Iterable[Contradiction]) -> list[Contradiction]:
    first: dict[tuple[ConceptId, ConceptId], Contradiction] = {}
    for edge in edges:
        key = (edge.source, edge.target)
        known = first.get(key)
        if known is None or edge.written_at < known.written_at:
            first[key] = edge
    return list(first.values())


def _outweighs(
    target: Concept,
    edge: Contradiction,
    piece: Support,
    target_support: Sequence[Support],
    now: datetime,
    min_age: timedelta,
) -> bool:
    """Whether `piece` (support of the contradicting concept) is newer than `target`'s counted
    support, judged by the contradiction rule itself: a contradiction dated like `piece` and
    declared by the agent who declared `edge` would be current on `target`. So T's support is
    counted exactly as for the warning (aged, not T's own write, not the declaring agent's).
    Decision: the piece must also be newer than T itself, as a contradiction must."""
    probe = Contradiction(
        target.node_id,
        edge.source,
        edge.source_key,
        edge.agent_id,
        piece.written_at,
        piece.about_time,
    )
    return current_contradiction(target, (probe,), target_support, now, min_age) is not None


def coverage(times: Iterable[datetime], extent: timedelta) -> float:
    """Spread of interaction times over the session's interaction extent (§3 Stage 2):
    no evidence gives 0, a zero extent gives 1."""
    spread = sorted(times)
    if not spread:
        return 0.0
    if extent <= timedelta(0):
        return 1.0
    return (spread[-1] - spread[0]) / extent


@dataclass(frozen=True, slots=True)
class _Pair:
    """A Contradicts edge with both ends' first writes and their support."""

    target: Concept
    source: Concept
    edge: Contradiction
    target_support: Sequence[Support]
    source_support: Sequence[Support]


def _has_newer_support(pair: _Pair, extent: timedelta, now: datetime, min_age: timedelta) -> bool:
    """§6: the contradicting concept's support newer than the target's latest counted support
    comes from at least 3 interactions other than its own, with coverage >= 0.3 [I]."""
    earliest: dict[str, datetime] = {}
    for piece in pair.source_support:
        if (
            piece.written_at > now
            or now - piece.written_at < min_age
            or piece.interaction == pair.source.interaction
            or piece.wrote_target
            or piece.concept == pair.target.node_id
        ):
            continue
        if not _outweighs(pair.target, pair.edge, piece, pair.target_support, now, min_age):
            continue
        known = earliest.get(piece.interaction)
        earliest[piece.interaction] = piece.dated if known is None else min(known, piece.dated)
    if len(earliest) < DISTINCT_INTERACTIONS_BAR:
        return False
    return coverage(earliest.values(), extent) >= COVERAGE_BAR


def _contradiction_rank(edge: Contradiction) -> tuple[float, bool, str, str]:
    """One C per T: the newest contradiction, then canonical key (none last), then id (§7)."""
    return (-edge.dated.timestamp(), edge.source_key is None, edge.source_key or "", edge.source)


def superseders(
    evidence: SupersessionEvidence,
    targets: Iterable[ConceptId],
    now: datetime,
    min_age: timedelta = EDGE_MIN_AGE,
) -> dict[ConceptId, Contradiction]:
    """For each of `targets` that a contradicting concept supersedes at `now`, the
    contradiction whose source does it (§6). A Canonical target is demoted by it; a Venerable
    one is held."""
    concepts = {concept.node_id: concept for concept in evidence.concepts}
    support: dict[ConceptId, list[Support]] = {}
    for piece in _first_support(evidence.support):
        support.setdefault(piece.target, []).append(piece)
    edges: dict[ConceptId, list[Contradiction]] = {}
    for edge in _first_contradictions(evidence.contradictions):
        if edge.written_at <= now and edge.source != edge.target:
            edges.setdefault(edge.target, []).append(edge)
    found: dict[ConceptId, Contradiction] = {}
    for target_id in set(targets):
        target = concepts.get(target_id)
        if target is None:
            continue
        passing = [
            edge
            for edge in edges.get(target_id, ())
            if edge.source in concepts
            and _has_newer_support(
                _Pair(
                    target,
                    concepts[edge.source],
                    edge,
                    support.get(target_id, ()),
                    support.get(edge.source, ()),
                ),
                evidence.interaction_extent,
                now,
                min_age,
            )
        ]
        if passing:
            found[target_id] = min(passing, key=_contradiction_rank)
    return found


# --- the gates --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Context:
    """What every gate reads about the whole session, computed once per snapshot."""

    peer_count: int
    p90: float
    canonical_count: int
    superseded_by: Mapping[ConceptId, ConceptId]


def _index(session: SessionStats) -> dict[ConceptId, ConceptStats]:
    by_id: dict[ConceptId, ConceptStats] = {}
    for stats in session.concepts:
        if stats.node_id in by_id:
            raise DomainError(
                f"concept {stats.node_id} measured twice", field="concepts", rule="unique ids"
            )
        by_id[stats.node_id] = stats
    return by_id


def _context(session: SessionStats, knobs: Knobs, now: datetime) -> _Context:
    peers = [c.score for c in session.concepts if c.status is not Status.CANONICAL]
    canonical = sum(1 for c in session.concepts if c.status is Status.CANONICAL)
    superseded: dict[ConceptId, ConceptId] = {}
    if knobs.supersede:
        high = (c.node_id for c in session.concepts if c.status in _HIGH)
        found = superseders(session.evidence, high, now, knobs.edge_min_age)
        superseded = {target: edge.source for target, edge in found.items()}
    return _Context(len(peers), p90(peers), canonical, superseded)


_HIGH: Final = frozenset({Status.VENERABLE, Status.CANONICAL})


def _at_least(gate: str, stage: int, current: float, bar: float) -> Check:
    return Check(gate, stage, current, bar, ">=", current >= bar)


def _cooldown(stats: ConceptStats, knobs: Knobs, now: datetime) -> Check:
    bar = knobs.repromotion_cooldown.total_seconds()
    if stats.last_demotion is None:
        return Check("cooldown", 3, None, bar, ">=", True)
    since = (now - stats.last_demotion.at).total_seconds()
    return Check("cooldown", 3, since, bar, ">=", since >= bar)


def _budget(ctx: _Context, knobs: Knobs) -> Check:
    count, bar = ctx.canonical_count, knobs.max_canonical_nodes
    return Check("canonical_budget", 3, count, bar, "<", count < bar)


def _clean(score: float) -> float:
    return score if math.isfinite(score) and score > 0 else 0.0


def _swarm_checks(
    stats: ConceptStats, ctx: _Context, knobs: Knobs, now: datetime
) -> tuple[Check, ...]:
    match stats.status:
        case Status.NONE:
            score = _clean(stats.score)
            return (
                _at_least("peer_count", 1, ctx.peer_count, knobs.min_peer_count),
                _at_least("gc_survived", 1, stats.gc_survived, GC_SURVIVED_BAR),
                Check("score_p90", 1, score, ctx.p90, ">", score > ctx.p90),
            )
        case Status.CANDIDATE:
            return (
                _at_least(
                    "distinct_interactions",
                    2,
                    stats.distinct_interactions,
                    DISTINCT_INTERACTIONS_BAR,
                ),
                _at_least("coverage", 2, stats.coverage, COVERAGE_BAR),
            )
        case Status.VENERABLE:
            radius = stats.blast_radius
            return (
                _cooldown(stats, knobs, now),
                Check("blast_radius", 3, radius, BLAST_RADIUS_BAR, ">", radius > BLAST_RADIUS_BAR),
                _budget(ctx, knobs),
            )
        case _:
            return ()


def _solo_checks(
    stats: ConceptStats, terms: SoloTerms, ctx: _Context, knobs: Knobs, now: datetime
) -> tuple[Check, ...]:
    bars = {floor_status: floor for floor, floor_status in SOLO_BANDS}
    match stats.status:
        case Status.NONE:
            return (_at_least("solo_band", 1, terms.score, bars[Status.CANDIDATE]),)
        case Status.CANDIDATE:
            return (_at_least("solo_band", 2, terms.score, bars[Status.VENERABLE]),)
        case Status.VENERABLE:
            return (
                _cooldown(stats, knobs, now),
                _at_least("solo_band", 3, terms.score, bars[Status.CANONICAL]),
                _budget(ctx, knobs),
            )
        case _:
            return ()


def _stamp(stats: ConceptStats, policy: Policy) -> int | None:
    """The blast radius a hop records: the measured value on the Stage-3 hop (under Solo only
    when the blast test passed too), else null (the stored value of a non-Canonical concept,
    which only a Stage-3 hop sets and every demotion resets)."""
    if stats.status is not Status.VENERABLE:
        return None
    if policy is Policy.SOLO and stats.blast_radius <= BLAST_RADIUS_BAR:
        return None
    return stats.blast_radius


def _admit(stats: ConceptStats, ctx: _Context, knobs: Knobs, now: datetime) -> Admission:
    policy = knobs.promotion_policy
    terms = solo_terms(stats) if policy is Policy.SOLO else None
    if terms is None:
        checks = _swarm_checks(stats, ctx, knobs, now)
    else:
        checks = _solo_checks(stats, terms, ctx, knobs, now)
    held_by = ctx.superseded_by.get(stats.node_id) if stats.status is Status.VENERABLE else None
    reasons = [_reason(check) for check in checks if not check.met]
    if held_by is not None:
        reasons.append(held_line(held_by))
    following = _NEXT.get(stats.status)
    return Admission(
        policy=policy,
        status=stats.status,
        next=following,
        eligible=following is not None and not reasons,
        checks=checks,
        solo=terms,
        reasons=tuple(reasons),
        held_by=held_by,
        last_demotion=stats.last_demotion,
        stamp=_stamp(stats, policy),
    )


def evaluate(concept: ConceptId, session: SessionStats, knobs: Knobs, now: datetime) -> Admission:
    """lambo_inspect's admission for `concept`: the gates of its next hop as the next cycle
    measures them (M-INS-037). `eligible` says every gate holds now; the cycle's batch and
    round-robin order decide when the hop is taken."""
    by_id = _index(session)
    if concept not in by_id:
        raise DomainError(
            f"concept {concept} is not in the snapshot", field="concept", rule="known"
        )
    return _admit(by_id[concept], _context(session, knobs, now), knobs, now)


def evaluate_over(
    concept: ConceptId,
    rows: ConceptRows,
    measures: Measures,
    knobs: Knobs,
    now: datetime,
    evidence: SupersessionEvidence = SupersessionEvidence(),
) -> Admission:
    """`evaluate` over the rows a cycle reads and the one concept's `measures`: the gates
    `plan_cycle_over` judges it by, with the session-wide context (peer count, p90, the
    Canonical count, supersession) worked out from the rows as the cycle works it out."""
    ladder = rows.ladder
    row = next((i for i, node in enumerate(rows.node_ids) if node == concept), None)
    if row is None:
        raise DomainError(
            f"concept {concept} is not in the snapshot", field="concept", rule="known"
        )
    stats = ConceptStats(
        concept,
        rows.statuses[row],
        rows.concept_types[row],
        rows.canonical_keys[row],
        rows.scores[row],
        rows.gc_survived[row],
        measures.distinct_interactions,
        measures.coverage,
        measures.blast_radius,
        measures.last_demotion,
        measures.solo,
    )
    return _admit(stats, ladder.context(evidence, knobs, now), knobs, now)


# --- the cycle (§2) ---------------------------------------------------------------------------


def _ring(
    members: Sequence[int], ids: Sequence[ConceptId], cursor: ConceptId | None, size: int
) -> tuple[list[int], ConceptId | None]:
    """Up to `size` members (rows in id order) from the first id after `cursor`, wrapping; the
    cursor becomes the window's last id (unchanged when there is nothing to take)."""
    if not members:
        return [], cursor
    start = 0
    if cursor is not None:
        start = next((i for i, m in enumerate(members) if ids[m] > cursor), 0)
    window = [members[(start + k) % len(members)] for k in range(min(size, len(members)))]
    return window, ids[window[-1]]


def _stage3_order(stats: ConceptStats) -> tuple[float, bool, str, str]:
    key = stats.canonical_key
    return (-_clean(stats.score), key is None, key or "", stats.node_id)


def _budget_order(stats: ConceptStats) -> tuple[int, bool, str, str]:
    key = stats.canonical_key
    return (stats.blast_radius, key is None, key or "", stats.node_id)


def _promotion(stats: ConceptStats, admission: Admission, now: datetime) -> Transition:
    if admission.next is None:
        raise IllegalTransition(f"{stats.node_id} is {stats.status}: no hop up", rule="ladder")
    return Transition(
        stats.node_id, stats.status, admission.next, admission.stamp, Cause.PROMOTION, now
    )


def _demotion(
    stats: ConceptStats, cause: Cause, now: datetime, by: ConceptId | None = None
) -> Transition:
    return Transition(stats.node_id, stats.status, Status.NONE, None, cause, now, now, by)


@dataclass(frozen=True, slots=True)
class _Ladder:
    """A snapshot's rows by status, each list in id order."""

    rows: ConceptRows
    by_status: Mapping[Status, list[int]]

    @classmethod
    def of(cls, rows: ConceptRows) -> _Ladder:
        ids = rows.node_ids
        if len(set(ids)) != len(ids):
            seen: set[ConceptId] = set()
            for node in ids:
                if node in seen:
                    raise DomainError(
                        f"concept {node} measured twice", field="concepts", rule="unique ids"
                    )
                seen.add(node)
        by_status: dict[Status, list[int]] = {status: [] for status in Status}
        statuses = rows.statuses
        for row in sorted(range(len(ids)), key=ids.__getitem__):
            by_status[statuses[row]].append(row)
        return cls(rows, by_status)

    def context(self, evidence: SupersessionEvidence, knobs: Knobs, now: datetime) -> _Context:
        """`_context` over the rows."""
        rows = self.rows
        canonical = len(self.by_status[Status.CANONICAL])
        peers = [
            score
            for score, status in zip(rows.scores, rows.statuses, strict=True)
            if status is not Status.CANONICAL
        ]
        superseded: dict[ConceptId, ConceptId] = {}
        if knobs.supersede:
            high = (rows.node_ids[row] for status in _HIGH for row in self.by_status[status])
            found = superseders(evidence, high, now, knobs.edge_min_age)
            superseded = {target: edge.source for target, edge in found.items()}
        return _Context(len(peers), p90(peers), canonical, superseded)

    def stage1(self, ctx: _Context, knobs: Knobs) -> list[int]:
        """The None rows in id order that can pass Stage 1. Under Swarm its gates read only the
        rows, so those failing them are left out here (at 100k concepts most are); under Solo
        every None row is a candidate until its band is known."""
        nones = self.by_status[Status.NONE]
        if knobs.promotion_policy is Policy.SOLO:
            return nones
        if ctx.peer_count < knobs.min_peer_count:
            return []
        survived, scores = self.rows.gc_survived, self.rows.scores
        return [
            row
            for row in nones
            if survived[row] >= GC_SURVIVED_BAR and _clean(scores[row]) > ctx.p90
        ]

    def windows(
        self, cursors: Cursors, knobs: Knobs
    ) -> tuple[list[int], ConceptId | None, list[int], ConceptId | None]:
        """Stage 2's and Stage 3's ring windows (rows) and the cursors after them. While the
        Canonical budget is full, Stage 3 has no window and its cursor stays."""
        ids = self.rows.node_ids
        candidates = self.by_status[Status.CANDIDATE]
        window2, stage2 = _ring(candidates, ids, cursors.stage2, knobs.batch_size)
        window3: list[int] = []
        stage3 = cursors.stage3
        if knobs.max_canonical_nodes - len(self.by_status[Status.CANONICAL]) > 0:
            venerables = self.by_status[Status.VENERABLE]
            window3, stage3 = _ring(venerables, ids, stage3, knobs.batch_size)
        return window2, stage2, window3, stage3


def cycle_needs(
    rows: ConceptRows, knobs: Knobs, cursors: Cursors = Cursors()
) -> tuple[ConceptId, ...]:
    """The concepts whose `Measures` the next cycle over `rows` reads, in id order: Stage 2's
    and Stage 3's windows, every Canonical while the budget overflows, and under Solo every None
    concept (Stage 1 under Swarm reads only the rows)."""
    ladder = rows.ladder
    window2, _, window3, _ = ladder.windows(cursors, knobs)
    needed = set(window2) | set(window3)
    if knobs.promotion_policy is Policy.SOLO:
        needed.update(ladder.by_status[Status.NONE])
    canonical = ladder.by_status[Status.CANONICAL]
    if len(canonical) > knobs.max_canonical_nodes:
        needed.update(canonical)
    return tuple(sorted(rows.node_ids[row] for row in needed))


def plan_cycle_over(
    rows: ConceptRows,
    measures: Mapping[ConceptId, Measures],
    knobs: Knobs,
    now: datetime,
    evidence: SupersessionEvidence = SupersessionEvidence(),
    cursors: Cursors = Cursors(),
) -> CyclePlan:
    """`plan_cycle_with_cursors` over rows and the measures of (at least) the `cycle_needs`
    concepts; a needed concept without measures is refused."""
    ladder = rows.ladder
    ctx = ladder.context(evidence, knobs, now)

    def stats(row: int, *, measured: bool = True) -> ConceptStats:
        node = rows.node_ids[row]
        found = measures.get(node)
        if found is None:
            if measured:
                raise DomainError(
                    f"concept {node} is not measured", field="measures", rule="cycle_needs"
                )
            found = _UNMEASURED
        return ConceptStats(
            node,
            rows.statuses[row],
            rows.concept_types[row],
            rows.canonical_keys[row],
            rows.scores[row],
            rows.gc_survived[row],
            found.distinct_interactions,
            found.coverage,
            found.blast_radius,
            found.last_demotion,
            found.solo,
        )

    plan: list[Transition] = []
    # Decision: the policy's Stage-1 candidates are the None concepts that pass every Stage-1
    # gate, so the batch (no cursor) never starves behind concepts that fail.
    # Judged in id order until the batch is full: the rest could not enter it.
    solo = knobs.promotion_policy is Policy.SOLO
    judged = (stats(row, measured=solo) for row in ladder.stage1(ctx, knobs))
    admitted = ((c, _admit(c, ctx, knobs, now)) for c in judged)
    eligible = ((c, a) for c, a in admitted if a.eligible)
    plan += [_promotion(c, a, now) for c, a in islice(eligible, knobs.batch_size)]

    window2, stage2, window3, stage3 = ladder.windows(cursors, knobs)
    for row in window2:
        candidate = stats(row)
        admission = _admit(candidate, ctx, knobs, now)
        if admission.eligible:
            plan.append(_promotion(candidate, admission, now))

    remaining = knobs.max_canonical_nodes - ctx.canonical_count
    for venerable in sorted((stats(row) for row in window3), key=_stage3_order):
        admission = _admit(venerable, ctx, knobs, now)
        if remaining > 0 and admission.eligible:
            plan.append(_promotion(venerable, admission, now))
            remaining -= 1

    canonical = ladder.by_status[Status.CANONICAL]
    kept = [row for row in canonical if rows.node_ids[row] not in ctx.superseded_by]
    for row in canonical:
        by = ctx.superseded_by.get(rows.node_ids[row])
        if by is not None:
            plan.append(_demotion(stats(row, measured=False), Cause.SUPERSESSION, now, by))
    overflow = len(kept) - knobs.max_canonical_nodes
    if overflow > 0:
        ranked = sorted((stats(row) for row in kept), key=_budget_order)
        plan += [_demotion(c, Cause.BUDGET, now) for c in ranked[:overflow]]
    return CyclePlan(tuple(plan), Cursors(stage2, stage3))


_UNMEASURED: Final = Measures()


def plan_cycle_with_cursors(session: SessionStats, knobs: Knobs, now: datetime) -> CyclePlan:
    """One canonization cycle over a pre-cycle snapshot (§2): Stage 1 (first `batch_size`
    eligible None concepts by id), Stage 2 and Stage 3 (round-robin windows), then
    supersession demotions (§6, when on) and budget demotions. A concept takes at most one hop.
    The plan depends on the snapshot's content, never on the order of `session.concepts`."""
    by_id = _index(session)
    measures = {node: Measures.of(stats) for node, stats in by_id.items()}
    rows = ConceptRows.of(session.concepts)
    return plan_cycle_over(rows, measures, knobs, now, session.evidence, session.cursors)


def plan_cycle(session: SessionStats, knobs: Knobs, now: datetime) -> list[Transition]:
    """The transitions of one cycle, in the order they apply (see `plan_cycle_with_cursors`,
    which also gives the cursors the next cycle starts from)."""
    return list(plan_cycle_with_cursors(session, knobs, now).transitions)
