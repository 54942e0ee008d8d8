"""Relation and entity typing rules: pure deciders for canonicalize, backfill and reprocess.

Canonicalize (K-RT-008..021, A-02, A-03): noise edges first, then a lexical pass over the
edge's predicate and current relation_type against the ontology's names, aliases and
keywords, then (for the residual edges only) the embedding fallback's nearest type at or
above the threshold. Backfill mints fact-prefix pseudo-types (K-RT-023, A-21). Reprocess
takes a classifier's verdicts. Each returns what to write; a handler appends it as events.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from lcg.domain.ids import EdgeUuid, EntityUuid
from lcg.domain.ontology import UNCLASSIFIED, Ontology

Scope = Literal["untyped", "off_ontology", "all"]
SCOPES: Final[tuple[Scope, ...]] = ("untyped", "off_ontology", "all")
# an arrow-named edge ("PERSON -> ORGANIZATION") is extraction noise
NOISE: Final = re.compile(r"^[A-Z][A-Z0-9 ]*\s*(→|->)\s*[A-Z][A-Z0-9 ]*$")
PSEUDO_WORDS: Final = 4  # P-128: the first 4 words of the fact
Outcome = Literal["mapped", "promoted", "noise", "residual"]


@dataclass(frozen=True, slots=True)
class EdgeRow:
    """What typing reads of an active edge."""

    uuid: EdgeUuid
    predicate: str
    fact: str
    relation_type: str | None


@dataclass(frozen=True, slots=True)
class EntityRow:
    uuid: EntityUuid
    name: str
    summary: str
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Assignment:
    """One edge's new relation_type and why (lexical, fallback, noise, residual, ...)."""

    edge_uuid: EdgeUuid
    relation_type: str
    reason: str


def normalize(term: str) -> str:
    """`works for` and `Works-For` both read WORKS_FOR."""
    return "_".join(re.findall(r"[A-Z0-9]+", term.upper()))


def is_noise(edge: EdgeRow) -> bool:
    return bool(NOISE.match(edge.predicate.strip())) or bool(
        edge.relation_type and NOISE.match(edge.relation_type.strip())
    )


def is_untyped(relation_type: str | None) -> bool:
    return relation_type is None or not relation_type.strip()


class LexicalIndex:
    """Names and aliases (whole-term matches), then keywords (a whole-word run inside the
    term), in the ontology's declaration order."""

    def __init__(self, ontology: Ontology) -> None:
        self.exact: dict[str, str] = {}
        self.keywords: list[tuple[str, str]] = []
        for declared in ontology.relation_types:
            for term in (declared.name, *declared.aliases):
                self.exact.setdefault(normalize(term), declared.name)
        for declared in ontology.relation_types:
            for keyword in declared.keywords:
                if normalize(keyword):
                    self.keywords.append((f"_{normalize(keyword)}_", declared.name))

    def match(self, edge: EdgeRow) -> str | None:
        """The declared type the predicate or current relation_type names; never the fact
        (K-RT-009)."""
        terms = [normalize(t) for t in (edge.relation_type or "", edge.predicate) if t.strip()]
        terms = [t for t in terms if t and t != UNCLASSIFIED]
        for term in terms:
            if term in self.exact:
                return self.exact[term]
        for term in terms:
            for keyword, name in self.keywords:
                if keyword in f"_{term}_":
                    return name
        return None


@dataclass(frozen=True, slots=True)
class CanonicalizePlan:
    """Where every edge lands and what would be written (edges already at their target are
    not in `writes`: K-RT-017/018)."""

    outcomes: Mapping[EdgeUuid, Outcome]
    writes: tuple[Assignment, ...]

    def count(self, outcome: Outcome) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)


def lexical_pass(
    ontology: Ontology, edges: Sequence[EdgeRow]
) -> tuple[dict[EdgeUuid, tuple[Outcome, str | None]], list[EdgeRow]]:
    """Each edge's noise or lexical outcome, and the residual edges left for the fallback."""
    index = LexicalIndex(ontology)
    decided: dict[EdgeUuid, tuple[Outcome, str | None]] = {}
    residual: list[EdgeRow] = []
    for edge in edges:
        if is_noise(edge):
            # noise keeps a rich relation_type; an untyped one becomes UNCLASSIFIED
            decided[edge.uuid] = ("noise", UNCLASSIFIED if is_untyped(edge.relation_type) else None)
        elif (name := index.match(edge)) is not None:
            decided[edge.uuid] = ("mapped", name)
        else:
            residual.append(edge)
    return decided, residual


def decide_canonicalize(
    edges: Sequence[EdgeRow],
    decided: Mapping[EdgeUuid, tuple[Outcome, str | None]],
    nearest: Mapping[EdgeUuid, tuple[str, float]],
    threshold: float,
) -> CanonicalizePlan:
    """Combine the lexical pass with the fallback's nearest (type, similarity) per residual
    edge: at or above `threshold` it is promoted (never abstaining: K-RT-013/014), otherwise
    the edge is residual and reads UNCLASSIFIED (K-RT-016)."""
    outcomes: dict[EdgeUuid, Outcome] = {}
    writes: list[Assignment] = []
    for edge in edges:
        if edge.uuid in decided:
            outcome, target = decided[edge.uuid]
        else:
            best = nearest.get(edge.uuid)
            if best is not None and best[1] >= threshold:
                outcome, target = "promoted", best[0]
            else:
                outcome, target = "residual", UNCLASSIFIED
        outcomes[edge.uuid] = outcome
        if target is not None and target != edge.relation_type:
            reason = {"mapped": "lexical", "promoted": "embedding_fallback"}.get(outcome, outcome)
            writes.append(Assignment(edge.uuid, target, reason))
    return CanonicalizePlan(outcomes, tuple(writes))


def pct(part: int, total: int) -> float:
    return 0.0 if total == 0 else round(100.0 * part / total, 2)


def pseudo_type(fact: str) -> str:
    """K-RT-023, P-128, A-21: the fact's first 4 words, uppercased, non-alphanumerics
    removed, joined with `_`; an empty fact gives UNCLASSIFIED."""
    words = [re.sub(r"[^A-Za-z0-9]", "", word).upper() for word in fact.split()]
    words = [word for word in words if word][:PSEUDO_WORDS]
    return "_".join(words) or UNCLASSIFIED


def decide_backfill(edges: Sequence[EdgeRow]) -> tuple[Assignment, ...]:
    """Untyped edges get a pseudo-type; typed ones are never touched (K-RT-024/025)."""
    return tuple(
        Assignment(edge.uuid, pseudo_type(edge.fact), "fact_prefix")
        for edge in edges
        if is_untyped(edge.relation_type)
    )


def scope_error(scope: str) -> str | None:
    if scope in SCOPES:
        return None
    return f"unknown scope '{scope}'; valid values: {', '.join(SCOPES)}"


def edge_in_scope(edge: EdgeRow, scope: Scope, declared: frozenset[str]) -> bool:
    """K-RT-037..039: untyped; untyped or not a declared type; every edge."""
    if scope == "all":
        return True
    if is_untyped(edge.relation_type):
        return True
    return scope == "off_ontology" and edge.relation_type not in declared


def entity_type(labels: Sequence[str]) -> str | None:
    """An entity's type: its first label other than the generic `Entity` (None: untyped)."""
    return next((label for label in labels if label != "Entity"), None)


def entity_in_scope(entity: EntityRow, scope: Scope, declared: frozenset[str]) -> bool:
    current = entity_type(entity.labels)
    if scope == "all" or current is None:
        return True
    return scope == "off_ontology" and current not in declared


def retyped_labels(labels: Sequence[str], new_type: str) -> tuple[str, ...]:
    """The labels with the entity's type replaced by `new_type` (other labels kept)."""
    current = entity_type(labels)
    rest = [label for label in labels if label not in (current, "Entity", new_type)]
    return (new_type, *rest)


def breakdown(types: Sequence[str]) -> dict[str, int]:
    """Edges (or entities) per assigned type, UNCLASSIFIED its own key (K-RT-045)."""
    return dict(sorted(Counter(types).items()))
