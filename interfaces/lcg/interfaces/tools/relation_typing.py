"""Relation and entity typing against the workspace's ontology (docs/ontology.md).

Seed 000 §Relation typing, P-126..P-129, ADR 0042: canonicalize, backfill (deprecated),
reprocess relation types, reprocess entity types."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from lcg.commands import typing_runs
from lcg.commands.typing_runs import Failure, Run
from lcg.domain import typing_rules
from lcg.domain.errors import DomainError
from lcg.domain.ids import DEFAULT_GROUP, GroupId
from lcg.domain.ontology import Ontology
from lcg.interfaces import ontology_file
from lcg.interfaces.app import App
from lcg.interfaces.params import GroupIdField, Params
from lcg.projections.extraction.classify import Classifier

DEFAULT_THRESHOLD = 0.7  # K-RT-010
RequiredGroup = Annotated[
    GroupIdField,
    Field(description="Required: the one group (never database-wide or the default)."),
]
ScopeField = Annotated[
    str,
    Field(
        max_length=64,
        description="untyped (relation_type empty), off_ontology (untyped or not a declared"
        " type) or all.",
    ),
]


class CanonicalizeParams(Params):
    group_id: RequiredGroup
    dry_run: bool = Field(False, description="Count what would change; write nothing.")
    embedding_threshold: float = Field(
        DEFAULT_THRESHOLD,
        ge=-1.0,
        le=1.0,
        description="The fallback's cosine similarity floor: a residual edge's fact takes the"
        " nearest type description at or above it.",
    )


class BackfillParams(Params):
    group_id: RequiredGroup
    dry_run: bool = Field(False, description="Count the untyped edges; write nothing.")


class ReprocessParams(Params):
    group_id: GroupIdField = DEFAULT_GROUP
    scope: ScopeField = "untyped"
    dry_run: bool = Field(False, description="Return the plan and breakdown; write nothing.")


def _run(app: App, group_id: str) -> Run:
    return Run(GroupId(group_id), app.now(), app.progress)


def _ontology(app: App, group_id: str) -> Ontology:
    return ontology_file.resolve(app.reads.settings.state_dir, group_id).ontology


def _classifier(app: App) -> Classifier:
    classifier = app.writes.classifier
    if classifier is None:
        raise DomainError(
            "extraction.extractor: reclassification needs an LLM extractor; set [extraction]"
            ' extractor = "openai" (LCG_EXTRACTION_EXTRACTOR=openai) with its base_url and'
            ' model, or "sampling" to ask the MCP client\'s own model. The configured'
            " extractor cannot classify, and nothing fakes a classification",
            field="extraction.extractor",
            rule="must name an LLM extractor (openai or sampling)",
        )
    return classifier


def canonicalize_relations(app: App, q: CanonicalizeParams) -> typing_runs.CanonicalizeResult:
    """Map each edge's predicate / relation_type in group_id (required) onto the ontology's
    relation types: a lexical pass over names, aliases and keywords (never the fact), then a
    fallback assigning the type whose description is nearest the fact, at or above
    embedding_threshold (0.7). Arrow-named noise keeps an existing type; the rest read
    UNCLASSIFIED. Edges already at their target are not written."""
    ontology = _ontology(app, q.group_id)
    if not ontology.relation_types:
        raise DomainError(
            f"ontology: group {q.group_id!r} resolves no relation types (declare them in"
            " .lcg/ontology.yaml or .lcg/ontology/<group_id>.yaml); nothing was written",
            field="ontology",
            rule="must declare at least one relation type",
        )
    return typing_runs.canonicalize(
        app.writes.writer,
        _run(app, q.group_id),
        ontology,
        app.writes.embed_texts,
        threshold=q.embedding_threshold,
        dry_run=q.dry_run,
    )


def backfill_relation_types(app: App, q: BackfillParams) -> typing_runs.BackfillResult:
    """DEPRECATED: prefer knowledge_reprocess_relation_types with scope "untyped". Does not
    classify: mints an uppercased fact-prefix pseudo-type (the fact's first 4 words, e.g.
    THE_SPECIFICATION_DOCUMENT_DEFINES) for each edge of group_id (required) with no
    relation_type; typed edges are never touched."""
    return typing_runs.backfill(app.writes.writer, _run(app, q.group_id), dry_run=q.dry_run)


def _scope(scope: str) -> typing_rules.Scope | Failure:
    error = typing_rules.scope_error(scope)
    if error is not None:
        return Failure(success=False, error=error)
    return next(s for s in typing_rules.SCOPES if s == scope)


def reprocess_relation_types(
    app: App, q: ReprocessParams
) -> typing_runs.ReprocessRelationsResult | Failure:
    """Send each in-scope edge's fact (never its predicate) and the ontology's relation types
    (name + description) to the configured extraction LLM, which picks one or abstains (an
    abstention writes UNCLASSIFIED). scope: untyped (default), off_ontology or all. An edge
    already at its verdict is not written. dry_run returns the plan; with no declared
    relation types: {success: false, error}."""
    scope = _scope(q.scope)
    if isinstance(scope, dict):
        return scope
    ontology = _ontology(app, q.group_id)
    if not ontology.relation_types:
        return Failure(
            success=False,
            error=f"the ontology of group {q.group_id!r} declares no relation types; there is"
            " no open-ended fallback (declare relation_types in .lcg/ontology.yaml)",
            group_id=q.group_id,
        )
    return typing_runs.reprocess_relations(
        app.writes.writer,
        _run(app, q.group_id),
        ontology,
        _classifier(app),
        scope=scope,
        dry_run=q.dry_run,
    )


def reprocess_entity_types(
    app: App, q: ReprocessParams
) -> typing_runs.ReprocessEntitiesResult | Failure:
    """Classify each in-scope entity of group_id (name and summary) with the configured
    extraction LLM against the ontology's entity types; scope untyped (default) also works
    with no ontology (open-ended). An entity the model cannot classify is left unchanged.
    dry_run returns the plan; off_ontology or all with no declared entity types:
    {success: false, error}."""
    scope = _scope(q.scope)
    if isinstance(scope, dict):
        return scope
    ontology = _ontology(app, q.group_id)
    if scope != "untyped" and not ontology.entity_types:
        return Failure(
            success=False,
            error=f"scope {scope!r} needs declared entity types; the ontology of group"
            f" {q.group_id!r} declares none",
            group_id=q.group_id,
        )
    return typing_runs.reprocess_entities(
        app.writes.writer,
        _run(app, q.group_id),
        ontology,
        _classifier(app),
        scope=scope,
        dry_run=q.dry_run,
    )
