"""lambo_derive_image (seed 001): one image stored as a concept, by a vector the client
computed under the session's embedding contract (ADR 0095).

Listed only where the server can serve it: with `[embedder] accept_client_vectors = true`
(M-IMG-001; `lcg.interfaces.scopes.Visibility`). This server ships no image embedder (ADR
0093), so an `image` is checked by every rule of its shape and then refused as a
configuration error; a `vector` is held to the session's contract, scaled to unit length and
stored with the concept. The write is acknowledged before it applies, with a receipt, exactly
as lambo_derive's.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from lcg.domain.memory import limits
from lcg.domain.memory.client_vectors import Contract
from lcg.domain.memory.image_calls import DeriveImageArgs
from lcg.interfaces.app import App
from lcg.interfaces.tools.memory import (
    AgentId,
    EventTime,
    MemoryParams,
    MemoryResult,
    MemoryText,
    PairParams,
    Scope,
    result,
)

IMAGE_CONCEPT_TYPES = ["entity", "logic", "constraint", "resource"]


class DeriveImageParams(MemoryParams):
    agent_id: AgentId
    caption: MemoryText = Field(
        description="What the image is, in words; no [image:<id>] of its own. The stored "
        "content, the caption plus [image:<image_id>], fits in 16,384 bytes."
    )
    concept_type: str = Field(
        json_schema_extra={"enum": list[Any](IMAGE_CONCEPT_TYPES)},
        description="entity, logic, constraint or resource (an image cannot be an observation).",
    )
    image_id: str | None = Field(
        None,
        json_schema_extra={"maxLength": limits.MAX_IMAGE_ID_CHARS},
        description="Your id for the image, 1 to 64 lowercase letters and digits "
        "(^[a-z0-9]{1,64}$); omitted, "
        "the first 16 hex characters of a digest of the normalized vector.",
    )
    vector: dict[str, Any] | None = Field(
        None,
        description="{values, contract}: the image's vector, contract being {kind, model, "
        "dim} exactly as lambo_stats's embedding_contract, at most 4096 finite values, not "
        "all zero (scaled to unit length). One of image and vector.",
        json_schema_extra={"type": "object", "maxProperties": 2},
    )
    image: dict[str, Any] | None = Field(
        None,
        description="{mime, data}: the image itself (image/png, image/jpeg or image/webp, "
        "standard padded base64, at most 2 MiB and 4096 pixels a side). This server's "
        "embedder embeds text only, so a valid image is refused as a configuration error; "
        "send its vector instead.",
        json_schema_extra={"type": "object", "maxProperties": 2},
    )
    event_time: EventTime | None = None
    parent_of: list[PairParams] | None = Field(
        None,
        max_length=limits.MAX_PARENT_OF_PAIRS,
        description="Hierarchy links {parent, child}, as for lambo_derive; name the image "
        "concept as caption [image:<image_id>].",
    )
    scope: Scope | None = None


def lambo_derive_image(app: App, params: DeriveImageParams) -> MemoryResult:
    """Store one image as a concept: a caption and the image's vector, computed by you under
    this session's embedding_contract (lambo_stats). Its content is the caption plus
    [image:<image_id>]. Returns before the write is applied, with a receipt, exactly as
    lambo_derive does. Listed only where the operator accepts client vectors."""
    args = DeriveImageArgs(
        params.agent_id,
        params.caption,
        params.concept_type,
        params.image_id,
        params.image,
        params.vector,
        params.event_time,
        tuple((p.parent, p.child) for p in params.parent_of or ()),
        params.scope,
    )
    own = app.reads.embedder.contract
    contract = Contract(own.kind, own.model, own.dim)
    accept = app.reads.settings.tuning.accept_client_vectors
    return result(app.memory_writes.derive_image(args, app.layers, contract, accept))
