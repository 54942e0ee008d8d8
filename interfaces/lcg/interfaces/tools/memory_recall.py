"""lambo_recall (seed 001): the context block an agent reads before a task, and its hits.

The adapter of `lcg.queries.memory_recall` (ADR 0060): the arguments checked, one query, its
result in the seed's wire shape (`text` plus `structuredContent`, the caller's settled receipts
piggybacked). The concepts returned are counted as accessed, off the read path (ADR 0027).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from lcg.domain.errors import InvalidParams
from lcg.domain.memory import limits, text
from lcg.domain.memory.text import MemoryArgumentError
from lcg.interfaces.app import App
from lcg.interfaces.tools.memory import (
    AgentId,
    MemoryParams,
    MemoryResult,
    Scope,
    answer,
    capped,
    ranged,
    service_of,
)
from lcg.queries.memory_recall import RecalledHit, RecallRequest, recall_memory


class RecallParams(MemoryParams):
    agent_id: AgentId
    query: str | None = Field(
        None,
        json_schema_extra=capped(limits.MAX_STRING_BYTES),
        description="What the task is about, in words (required unless image or query_vector).",
    )
    top_k: int = Field(
        limits.TOP_K_DEFAULT,
        json_schema_extra=ranged(limits.TOP_K),
        description="How many hits (1..100).",
    )
    max_tokens: int = Field(
        limits.MAX_TOKENS_DEFAULT,
        json_schema_extra=ranged(limits.MAX_TOKENS),
        description="The context block's budget, in tokens of 3.5 bytes (1..100000).",
    )
    traversal_depth: int = Field(
        limits.TRAVERSAL_DEPTH_DEFAULT,
        json_schema_extra=ranged(limits.TRAVERSAL_DEPTH),
        description="Graph expansion hops from the strongest hits (0..5).",
    )
    image: dict[str, Any] | None = Field(
        None,
        description="{mime, data}: recall by an image. Needs an embedder that embeds images; "
        "this server's embeds text only, so it is refused as a configuration error.",
        json_schema_extra={"type": "object", "maxProperties": 2},
    )
    query_vector: dict[str, Any] | None = Field(
        None,
        description="{values, contract}: recall by a vector you computed. Needs client vectors, "
        "which this server does not accept, so it is refused as a configuration error.",
        json_schema_extra={"type": "object", "maxProperties": 2},
    )
    scope: Scope | None = None


def lambo_recall(app: App, params: RecallParams) -> MemoryResult:
    """Recall relevant memory for a query: the Lambo context block (hits in rank order with
    markers for canonical facts, blast radius, contradictions) as text, the hits as structured
    content. Call it before acting on a task; "what depends on X" is answered by graph
    traversal."""
    service = service_of(app, params.agent_id, params.scope)
    _refuse_unconfigured(params)
    query = params.query or ""
    if not query.strip():
        raise InvalidParams("query", "is required (blank text counts as none)")
    text.check_text("query", query)
    request = RecallRequest(
        service.session,
        params.agent_id,
        query,
        params.top_k,
        params.max_tokens,
        params.traversal_depth,
    )
    recalled = recall_memory(app.reads, service.jobs, request)
    result = answer(
        service,
        params.agent_id,
        recalled.context,
        {
            "context": recalled.context,
            "hits": [hit_payload(hit) for hit in recalled.hits],
            "warnings": list(recalled.warnings),
        },
    )
    service.note_access([hit.node_id for hit in recalled.hits])
    return result


def _refuse_unconfigured(params: RecallParams) -> None:
    if params.image is not None:
        raise MemoryArgumentError(
            "configuration error: recall by image needs an embedder that embeds images; this "
            "server's embedder embeds text only. Recall by words instead",
            field="image",
            rule="configuration",
        )
    if params.query_vector is not None:
        raise MemoryArgumentError(
            "configuration error: recall by a client vector needs client vectors accepted "
            "(the reference's [embedder] accept_client_vectors = true), which this server does "
            "not offer. Recall by words instead",
            field="query_vector",
            rule="configuration",
        )


def hit_payload(hit: RecalledHit) -> dict[str, Any]:
    """A hit of `structuredContent.hits`, its keys in the seed's order (no annotations:
    M-REC-143; the portal's /api/recall adds them)."""
    shown: dict[str, Any] = {
        "node_id": hit.node_id,
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
    if hit.possibly_superseded_by is not None:
        shown["possibly_superseded_by"] = hit.possibly_superseded_by
    if hit.truncated_in_context:
        shown["truncated_in_context"] = True
    return shown
