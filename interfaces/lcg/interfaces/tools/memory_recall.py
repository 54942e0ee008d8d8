"""lambo_recall (seed 001): the context block an agent reads before a task, and its hits.

The adapter of `lcg.queries.memory_recall` (ADR 0060): the arguments checked, one query, its
result in the seed's wire shape (`text` plus `structuredContent`, the caller's settled receipts
piggybacked). The concepts returned are counted as accessed, off the read path (ADR 0027).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import Field

from lcg.domain.errors import InvalidParams
from lcg.domain.memory import client_vectors, images, layers, limits, text
from lcg.domain.memory.text import MemoryArgumentError
from lcg.interfaces.app import App
from lcg.interfaces.ledger_lines import RECALL_DETAIL, fusion_of, recall_detail
from lcg.interfaces.tools.memory import (
    AgentId,
    MemoryParams,
    MemoryResult,
    answer,
    capped,
    ranged,
    scoped,
)
from lcg.queries.memory_layers import LayerRead, recall_layered
from lcg.queries.memory_recall import RecalledHit, RecallRequest, recall_memory

BY_VECTOR_ONE_SESSION = (
    "recall: by vector reads this session only; its layers ({layers}) were not searched"
)


class RecallParams(MemoryParams):
    agent_id: AgentId
    query: str | None = Field(
        None,
        json_schema_extra=capped(limits.MAX_STRING_BYTES),
        description="What the task is about, in words (required unless image or query_vector).",
    )
    top_k: int | None = Field(
        None,
        json_schema_extra=ranged(limits.TOP_K),
        description="How many hits (1..100); default 5 (the server's [recall] top_k).",
    )
    max_tokens: int | None = Field(
        None,
        json_schema_extra=ranged(limits.MAX_TOKENS),
        description="The context block's budget, in tokens of 3.5 bytes (1..100000); "
        "default 500 (the server's [recall] max_tokens).",
    )
    traversal_depth: int | None = Field(
        None,
        json_schema_extra=ranged(limits.TRAVERSAL_DEPTH),
        description="Graph expansion hops from the strongest hits (0..5); default 2 (the "
        "server's [recall] traversal_depth).",
    )
    image: dict[str, Any] | None = Field(
        None,
        description="{mime, data}: recall by an image. Needs an embedder that embeds images; "
        "this server's embeds text only, so it is refused as a configuration error.",
        json_schema_extra={"type": "object", "maxProperties": 2},
    )
    query_vector: dict[str, Any] | None = Field(
        None,
        description="{values, contract}: recall by a vector you computed, contract being "
        "{kind, model, dim} exactly as lambo_stats's embedding_contract, at most 4096 finite "
        "values, not all zero. Accepted only when the operator enabled client vectors "
        "([embedder] accept_client_vectors = true); otherwise a configuration error.",
        json_schema_extra={"type": "object", "maxProperties": 2},
    )
    scope: str | None = Field(
        None,
        json_schema_extra=capped(limits.MAX_STRING_BYTES),
        description="Read one session alone: this session, or one of its layers. Omitted, a "
        "layered session reads itself and its layers together. Any other value is refused, "
        "listing this session's own scopes.",
    )


def lambo_recall(app: App, params: RecallParams) -> MemoryResult:
    """Recall relevant memory for a query: the Lambo context block (hits in rank order with
    markers for canonical facts, blast radius, contradictions) as text, the hits as structured
    content. Call it before acting on a task; "what depends on X" is answered by graph
    traversal."""
    addressed, service = scoped(app, params.agent_id, params.scope)
    by_vector = _by_vector(app, params)
    query = params.query or ""
    if by_vector is None and not query.strip():
        raise InvalidParams("query", "is required (blank text counts as none)")
    text.check_text("query", query)
    top_k, max_tokens, traversal_depth = app.reads.settings.tuning.recall_defaults
    request = RecallRequest(
        service.session,
        params.agent_id,
        query,
        top_k if params.top_k is None else params.top_k,
        max_tokens if params.max_tokens is None else params.max_tokens,
        traversal_depth if params.traversal_depth is None else params.traversal_depth,
        by_vector,
    )
    warnings: list[str] = []
    if app.layers and params.scope is None and by_vector is not None:  # one session (M-REC-260)
        warnings.append(BY_VECTOR_ONE_SESSION.format(layers=", ".join(app.layers)))
    if app.layers and params.scope is None and by_vector is None:  # merged (ADR 0080)
        stack = [_layer(app, layer) for layer in app.layers]
        recalled = recall_layered(app.reads, service.jobs, request, stack)
    else:
        recalled = recall_memory(app.reads, service.jobs, request)
        if app.layers:  # every hit of a layered endpoint names its session (M-REC-249)
            hits = tuple(replace(hit, session=service.session) for hit in recalled.hits)
            recalled = replace(recalled, hits=hits)
        if service is not addressed:
            warnings.append(layers.SCOPED_READ_WARNING.format(layer=service.session))
    result = answer(
        addressed,
        params.agent_id,
        recalled.context,
        {
            "context": recalled.context,
            "hits": [hit_payload(hit) for hit in recalled.hits],
            "warnings": [*recalled.warnings, *warnings],
        },
    )
    accessed: dict[str, list[str]] = {}
    for hit in recalled.hits:
        accessed.setdefault(hit.session or service.session, []).append(hit.node_id)
    for session, nodes in accessed.items():  # each session counts its own concepts
        (service if session == service.session else app.memory_of(session)).note_access(nodes)
    detail = RECALL_DETAIL.get()
    if detail is not None:  # a serve with --ledger: the recall line's hits
        lines = [_ledger_hit(hit, hit.session or service.session) for hit in recalled.hits]
        detail.update(recall_detail(service.session, lines))
    return result


def _layer(app: App, layer: str) -> LayerRead:
    """A layer as a merged recall reads it; one the process cannot serve now is noted
    unavailable (a warning, not a failure: M-REC-252)."""
    try:
        service = app.memory_of(layer)
    except Exception as error:  # noqa: BLE001 (any reason: the recall answers without it)
        return LayerRead(layer, None, str(error) or type(error).__name__)
    return LayerRead(layer, service.jobs)


def _ledger_hit(hit: RecalledHit, session: str) -> dict[str, Any]:
    """A hit on the --ledger recall line: its session, fusion (a leg found it) and
    annotations, with the keys structuredContent carries beside them."""
    line: dict[str, Any] = {"node_id": hit.node_id, "session": session, "score": hit.score}
    fusion = fusion_of(hit.ranks, hit.fused)
    if fusion:
        line["fusion"] = fusion
    line["annotations"] = [dict(note) for note in hit.annotations]
    if hit.companion_of:
        line["companion_of"] = list(hit.companion_of)
    if hit.skipped_redundant:
        line["skipped_redundant"] = [
            {"node_id": item.node_id, "signal": item.signal} for item in hit.skipped_redundant
        ]
    if hit.also_skipped_redundant:
        line["also_skipped_redundant"] = also_skipped(hit)
    if hit.possibly_superseded_by is not None:
        line["possibly_superseded_by"] = hit.possibly_superseded_by
    return line


def _by_vector(app: App, params: RecallParams) -> tuple[float, ...] | None:
    """The checked, unit-length vector a recall searches by, or None for a recall by words.
    An image is refused as a configuration error (this server's embedder embeds text only),
    a client vector unless the operator accepts them (M-REC-277/278); a refusal never repeats
    what was sent (M-REC-283)."""
    if params.image is not None and params.query_vector is not None:
        raise MemoryArgumentError(
            "image, query_vector: send at most one of image and query_vector",
            field="image",
            rule="at most one",
        )
    if params.image is not None:
        images.check_image("image", params.image)  # its shape and limits first (M-REC-010)
        raise MemoryArgumentError(
            "configuration error: recall by image needs an embedder that embeds images; this "
            'server\'s embedder embeds text only (embedding_modalities ["text"]). Recall by '
            "words, or by a query_vector where client vectors are accepted",
            field="image",
            rule="configuration",
        )
    if params.query_vector is None:
        return None
    if not app.reads.settings.tuning.accept_client_vectors:
        raise client_vectors.not_configured("query_vector")
    own = app.reads.embedder.contract
    session = client_vectors.Contract(own.kind, own.model, own.dim)
    return client_vectors.check_client_vector("query_vector", params.query_vector, session).values


def hit_payload(hit: RecalledHit) -> dict[str, Any]:
    """A hit of `structuredContent.hits`, its keys in the seed's order (no annotations:
    M-REC-143; the portal's /api/recall adds them)."""
    shown: dict[str, Any] = {
        "node_id": hit.node_id,
        **({} if hit.session is None else {"session": hit.session}),
        "content": hit.content,
        "concept_type": hit.concept_type,
        "score": hit.score,
        "is_canonical": hit.is_canonical,
        "blast_radius": hit.blast_radius,
    }
    if hit.ranks is not None:
        shown["ranks"] = hit.ranks
    if hit.companion_of:
        shown["companion_of"] = list(hit.companion_of)
    if hit.skipped_redundant:
        shown["skipped_redundant"] = [
            {"node_id": item.node_id, "signal": item.signal} for item in hit.skipped_redundant
        ]
    if hit.also_skipped_redundant:  # what a layer's merged copy skipped (M-REC-204)
        shown["also_skipped_redundant"] = also_skipped(hit)
    if hit.possibly_superseded_by is not None:
        shown["possibly_superseded_by"] = hit.possibly_superseded_by
    if hit.truncated_in_context:
        shown["truncated_in_context"] = True
    if hit.repo_scope is not None:
        shown["repo_scope"] = hit.repo_scope  # a scoped path's repository (M-RSC-060)
    return shown


def also_skipped(hit: RecalledHit) -> list[dict[str, Any]]:
    """`also_skipped_redundant`: each repeat a layer skipped for its copy merged into `hit`,
    with the session its id resolves in (M-REC-204)."""
    return [
        {"session": session, "node_id": item.node_id, "signal": item.signal}
        for session, item in hit.also_skipped_redundant
    ]
