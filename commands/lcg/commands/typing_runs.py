"""Relation and entity typing runs: canonicalize, backfill (deprecated), reprocess (ADR 0042).

Each run reads its group's edges (or entities) under the writer's lock, decides with the pure
rules of lcg.domain.typing_rules (the slow parts, the embedding fallback and the classifier,
run outside the writer), then appends the assignments page by page as RelationTypesAssigned /
EntityTypesAssigned events. A page only writes edges that still read as they did when the run
decided them (one changed meanwhile is left for the next run). A dry run appends nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import NotRequired, TypedDict

import numpy as np

from lcg.commands.writer import WriteContext, Writer
from lcg.domain import typing_rules as rules
from lcg.domain.events import DomainEvent, EntityTypesAssigned, RelationTypesAssigned
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId
from lcg.domain.ontology import UNCLASSIFIED, Ontology
from lcg.projections.embedding.port import Vectors, normalise
from lcg.projections.extraction.classify import Classifier, Report
from lcg.projections.graph import state
from lcg.projections.runner import Progress

PAGE = 500  # edges (or entities) decided and appended per write batch
CANONICALIZE = "knowledge_canonicalize_relations"
BACKFILL = "knowledge_backfill_relation_types"
REPROCESS_RELATIONS = "knowledge_reprocess_relation_types"
REPROCESS_ENTITIES = "knowledge_reprocess_entity_types"
Embed = Callable[[Sequence[str]], Vectors]


class CanonicalizeResult(TypedDict):
    """P-127."""

    group_id: str
    total_edges: int
    mapped_count: int
    noise_count: int
    residual_count: int
    embedding_fallback_promoted: int
    mapped_pct: float
    noise_pct: float
    residual_pct: float
    dry_run: bool


class BackfillResult(TypedDict):
    """P-128."""

    group_id: str
    total_edges: int
    backfilled: int
    dry_run: bool


class RelationPlanEntry(TypedDict):
    edge_id: str
    fact: str
    old_type: str | None
    new_type: str


class ReprocessRelationsResult(TypedDict, total=False):
    """P-129: a dry run's would_reclassify_count, plan, breakdown; an apply's success,
    reclassified_count, unchanged_count, group_id, breakdown."""

    success: bool
    would_reclassify_count: int
    plan: list[RelationPlanEntry]
    reclassified_count: int
    unchanged_count: int
    group_id: str
    breakdown: dict[str, int]


class EntityPlanEntry(TypedDict):
    entity_id: str
    entity_name: str
    old_type: str | None
    new_type: str


class ReprocessEntitiesResult(TypedDict, total=False):
    """P-126 (with the optional breakdown)."""

    success: bool
    would_reclassify_count: int
    plan: list[EntityPlanEntry]
    reclassified_count: int
    unchanged_count: int
    restamped_count: int
    group_id: str
    breakdown: dict[str, int]


class Failure(TypedDict):
    """P-004: a result-level failure."""

    success: bool
    error: str
    group_id: NotRequired[str]


class Steps:
    """A run's progress on one scale across its phases (classify, embed, write).

    An MCP client's progress counts the frames (P-008), so the n-th frame must say n done:
    each frame is one step (a verdict, or a page embedded or written), a phase's steps
    follow the earlier phases' instead of starting again at 1, and the total counts the
    steps of the phases begun so far, so it is never below what is done and the last frame
    reaches it (issue 24: reprocess said 5 of 4)."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0

    def phase(self, progress: Progress | None) -> Report:
        """The report(done, total) of the next phase, counted in its own steps."""
        base = self.done

        def report(done: int, total: int) -> None:
            if progress is None:
                return
            self.total = base + max(total, done)
            while self.done < base + done:  # a batch of verdicts: one frame per step
                self.done += 1
                progress(self.done, self.total)

        return report


@dataclass(frozen=True, slots=True)
class Run:
    """What every typing run carries: its group, clock reading and progress sink."""

    group_id: GroupId
    now: datetime
    progress: Progress | None = None
    steps: Steps = field(default_factory=Steps)

    def phase(self) -> Report:
        """Where the next phase of the run reports its steps (Steps)."""
        return self.steps.phase(self.progress)


def _read_edges(writer: Writer, group: GroupId) -> list[rules.EdgeRow]:
    with writer.exclusive():
        return state.typing_edges(writer.runner.conn, group)


def _write_page(
    ctx: WriteContext,
    run: Run,
    tool: str,
    page: Sequence[tuple[rules.EdgeRow, rules.Assignment]],
    detail: dict[str, object],
) -> list[rules.Assignment]:
    """Append one page's assignments, skipping edges changed since they were decided; the
    assignments written."""
    now = {
        edge.uuid: edge for edge in state.typing_edges_by_uuid(ctx.conn, [e.uuid for e, _ in page])
    }
    kept = [(edge, a) for edge, a in page if now.get(edge.uuid) == edge]
    if kept:
        event: DomainEvent = RelationTypesAssigned(
            occurred_at=run.now,
            tool=tool,
            edge_uuids=tuple(a.edge_uuid for _, a in kept),
            relation_types=tuple(a.relation_type for _, a in kept),
            reasons=tuple(a.reason for _, a in kept),
            run=detail,
        )
        ctx.append(run.group_id, [event])
    return [a for _, a in kept]


def _apply(
    writer: Writer,
    run: Run,
    tool: str,
    edges: Sequence[rules.EdgeRow],
    writes: Sequence[rules.Assignment],
    detail: dict[str, object],
) -> list[rules.Assignment]:
    by_uuid = {edge.uuid: edge for edge in edges}
    pairs = [(by_uuid[a.edge_uuid], a) for a in writes]
    written: list[rules.Assignment] = []
    report = run.phase()
    for number, start in enumerate(range(0, len(pairs), PAGE), 1):
        page = pairs[start : start + PAGE]
        written += writer.execute(
            partial(_write_page, run=run, tool=tool, page=page, detail=detail)
        )
        report(number, pages(pairs))
    return written


def pages(items: Sequence[object]) -> int:
    return -(-len(items) // PAGE)


def nearest_types(
    ontology: Ontology, residual: Sequence[rules.EdgeRow], embed: Embed, run: Run
) -> dict[EdgeUuid, tuple[str, float]]:
    """The embedding fallback (K-RT-012): each residual edge's fact against every relation
    type's description, cosine similarity of the normalised vectors; the nearest type."""
    if not residual:
        return {}
    names = [t.name for t in ontology.relation_types]
    types = normalise(np.asarray(embed([t.description or t.name for t in ontology.relation_types])))
    found: dict[EdgeUuid, tuple[str, float]] = {}
    with_fact = [edge for edge in residual if edge.fact.strip()]
    report = run.phase()
    for number, start in enumerate(range(0, len(with_fact), PAGE), 1):
        page = with_fact[start : start + PAGE]
        facts = normalise(np.asarray(embed([edge.fact for edge in page])))
        scores = facts @ types.T
        for edge, row in zip(page, scores, strict=True):
            best = int(np.argmax(row))
            # rounded so that equality with a threshold is exact (K-RT-013)
            found[edge.uuid] = (names[best], round(float(row[best]), 6))
        report(number, pages(with_fact))
    return found


def canonicalize(
    writer: Writer,
    run: Run,
    ontology: Ontology,
    embed: Embed,
    *,
    threshold: float,
    dry_run: bool,
) -> CanonicalizeResult:
    """Map the group's edges onto the ontology's relation types (P-127, K-RT-001..021)."""
    edges = _read_edges(writer, run.group_id)
    decided, residual = rules.lexical_pass(ontology, edges)
    nearest = nearest_types(ontology, residual, embed, run)
    plan = rules.decide_canonicalize(edges, decided, nearest, threshold)
    total = len(edges)
    mapped = plan.count("mapped") + plan.count("promoted")
    noise, residual_count = plan.count("noise"), plan.count("residual")
    result = CanonicalizeResult(
        group_id=run.group_id,
        total_edges=total,
        mapped_count=mapped,
        noise_count=noise,
        residual_count=residual_count,
        embedding_fallback_promoted=plan.count("promoted"),
        mapped_pct=rules.pct(mapped, total),
        noise_pct=rules.pct(noise, total),
        residual_pct=rules.pct(residual_count, total),
        dry_run=dry_run,
    )
    if not dry_run:
        summary = {k: v for k, v in result.items() if k.endswith("_count") or k == "total_edges"}
        detail: dict[str, object] = {
            "embedding_threshold": threshold,
            "ontology": ontology.source,
            "summary": summary,  # the run's counts as decided (the events follow in pages)
        }
        _apply(writer, run, CANONICALIZE, edges, plan.writes, detail)
    return result


def backfill(writer: Writer, run: Run, *, dry_run: bool) -> BackfillResult:
    """Mint fact-prefix pseudo-types for the group's untyped edges (P-128, K-RT-022..027)."""
    edges = _read_edges(writer, run.group_id)
    writes = rules.decide_backfill(edges)
    done = len(writes)
    if not dry_run:
        detail: dict[str, object] = {"deprecated": True, "summary": {"candidates": len(writes)}}
        done = len(_apply(writer, run, BACKFILL, edges, writes, detail))
    return BackfillResult(
        group_id=run.group_id, total_edges=len(edges), backfilled=done, dry_run=dry_run
    )


def reprocess_relations(
    writer: Writer,
    run: Run,
    ontology: Ontology,
    classifier: Classifier,
    *,
    scope: rules.Scope,
    dry_run: bool,
) -> ReprocessRelationsResult:
    """Classify each in-scope edge's fact against the declared relation types (P-129,
    K-RT-028..050); an abstention writes UNCLASSIFIED, a verdict equal to the current type
    writes nothing. Every verdict is asked before anything is written."""
    declared = ontology.relation_names
    menu = [(t.name, t.description) for t in ontology.relation_types]
    edges = [
        e for e in _read_edges(writer, run.group_id) if rules.edge_in_scope(e, scope, declared)
    ]
    # the fact, never the predicate
    answers = classifier.classify_all("relation", [e.fact for e in edges], menu, run.phase())
    verdicts = [
        (edge, verdict or UNCLASSIFIED) for edge, verdict in zip(edges, answers, strict=True)
    ]
    changes = [(e, t) for e, t in verdicts if t != e.relation_type]
    # the types of the edges that would be written, never of those left unchanged
    breakdown = rules.breakdown([t for _, t in changes])
    if dry_run:
        plan = [
            RelationPlanEntry(edge_id=e.uuid, fact=e.fact, old_type=e.relation_type, new_type=t)
            for e, t in changes
        ]
        return ReprocessRelationsResult(
            would_reclassify_count=len(plan), plan=plan, breakdown=breakdown
        )
    writes = [
        rules.Assignment(e.uuid, t, "abstained" if t == UNCLASSIFIED else "llm") for e, t in changes
    ]
    detail: dict[str, object] = {
        "scope": scope,
        "classifier": classifier.name,
        "model": classifier.model,
        "summary": {"candidates": len(edges), "breakdown": breakdown},
    }
    written = _apply(writer, run, REPROCESS_RELATIONS, edges, writes, detail)
    return ReprocessRelationsResult(
        success=True,
        reclassified_count=len(written),
        unchanged_count=len(edges) - len(written),
        group_id=run.group_id,
        breakdown=rules.breakdown([a.relation_type for a in written]),  # were written
    )


def _write_entities(
    ctx: WriteContext,
    run: Run,
    page: Sequence[tuple[rules.EntityRow, tuple[str, ...]]],
    detail: dict[str, object],
) -> list[rules.EntityRow]:
    """Append one page's new labels, skipping entities changed since they were classified;
    the entities written."""
    now = {e.uuid: e for e in state.typing_entities_by_uuid(ctx.conn, [e.uuid for e, _ in page])}
    kept = [(entity, labels) for entity, labels in page if now.get(entity.uuid) == entity]
    if kept:
        event = EntityTypesAssigned(
            occurred_at=run.now,
            tool=REPROCESS_ENTITIES,
            entity_uuids=tuple(EntityUuid(e.uuid) for e, _ in kept),
            labels=[list(labels) for _, labels in kept],
            run=detail,
        )
        ctx.append(run.group_id, [event])
    return [entity for entity, _ in kept]


def _restamp(entity: rules.EntityRow, new_type: str) -> bool:
    """The verdict names the current type in other letters (person for Person)."""
    return (rules.entity_type(entity.labels) or "").casefold() == new_type.casefold()


def reprocess_entities(
    writer: Writer,
    run: Run,
    ontology: Ontology,
    classifier: Classifier,
    *,
    scope: rules.Scope,
    dry_run: bool,
) -> ReprocessEntitiesResult:
    """Classify each in-scope entity (name and summary) against the declared entity types, or
    open-ended without any (scope untyped only: K-ET-002). An entity the model cannot classify
    is left as it is (K-ET-003). A verdict naming the current type in other letters (person
    for Person) restamps it with the declared spelling (`restamped_count`)."""
    declared = ontology.entity_names
    menu = [(t.name, t.description or t.name) for t in ontology.entity_types]
    with writer.exclusive():
        entities = state.typing_entities(writer.runner.conn, run.group_id)
    entities = [e for e in entities if rules.entity_in_scope(e, scope, declared)]
    texts = [f"{e.name}: {e.summary}" if e.summary else e.name for e in entities]
    answers = classifier.classify_all("entity", texts, menu, run.phase())
    verdicts = [  # an abstention leaves the entity as it is (K-ET-003)
        (entity, verdict) for entity, verdict in zip(entities, answers, strict=True) if verdict
    ]
    changes = [(e, t) for e, t in verdicts if t != rules.entity_type(e.labels)]
    breakdown = rules.breakdown([t for _, t in changes])  # what would be written
    if dry_run:
        plan = [
            EntityPlanEntry(
                entity_id=e.uuid,
                entity_name=e.name,
                old_type=rules.entity_type(e.labels),
                new_type=t,
            )
            for e, t in changes
        ]
        return ReprocessEntitiesResult(
            would_reclassify_count=len(plan), plan=plan, breakdown=breakdown
        )
    detail: dict[str, object] = {
        "scope": scope,
        "classifier": classifier.name,
        "model": classifier.model,
        "summary": {"candidates": len(entities), "breakdown": breakdown},
    }
    pairs = [(e, rules.retyped_labels(e.labels, t)) for e, t in changes]
    restamps = {e.uuid for e, t in changes if _restamp(e, t)}
    written: list[rules.EntityRow] = []
    report = run.phase()
    for number, start in enumerate(range(0, len(pairs), PAGE), 1):
        page = pairs[start : start + PAGE]
        written += writer.execute(partial(_write_entities, run=run, page=page, detail=detail))
        report(number, pages(pairs))
    restamped = sum(1 for entity in written if entity.uuid in restamps)
    new_type = {e.uuid: t for e, t in changes}
    return ReprocessEntitiesResult(
        success=True,
        reclassified_count=len(written) - restamped,
        unchanged_count=len(entities) - len(written),
        restamped_count=restamped,
        group_id=run.group_id,
        breakdown=rules.breakdown([new_type[e.uuid] for e in written]),  # were written
    )
