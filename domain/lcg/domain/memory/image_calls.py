"""lambo_derive_image's arguments checked in the seed's order (ADR 0095): the command the
application admits, or the refusal naming the field and the rule.

This server serves the tool through client vectors alone (no offline image embedder ships,
ADR 0093): a `vector` is held to the session's embedding contract and scaled to unit length
(`lcg.domain.memory.client_vectors`); an `image` is checked by every rule of its shape
(`lcg.domain.memory.images`) and then refused as a configuration error naming what is
missing. No refusal repeats the caption's image, the base64, the bytes or a vector value.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from lcg.domain.ids import GroupId
from lcg.domain.memory import arguments, client_vectors, images, limits, text
from lcg.domain.memory.calls import DeriveImage
from lcg.domain.memory.client_vectors import Contract
from lcg.domain.memory.text import MemoryArgumentError


@dataclass(frozen=True, slots=True)
class DeriveImageArgs:
    """lambo_derive_image's arguments as sent (`image` and `vector` unchecked objects)."""

    agent_id: str
    caption: str
    concept_type: str
    image_id: str | None = None
    image: object | None = None
    vector: object | None = None
    event_time: str | None = None
    parent_of: tuple[tuple[str, str], ...] = ()
    scope: str | None = None


def vector_id(values: tuple[float, ...]) -> str:
    """The id of an image sent as a vector without image_id: the first 16 hex characters of
    the SHA-256 of its unit-length values as little-endian doubles (M-IMG-020), so the same
    vector maps to the same concept."""
    packed = struct.pack(f"<{len(values)}d", *values)
    return hashlib.sha256(packed).hexdigest()[: images.DEFAULT_ID_CHARS]


def image_not_embeddable() -> MemoryArgumentError:
    """An image on a server whose embedder embeds text only (M-IMG-006, M-REC-277)."""
    return MemoryArgumentError(
        "configuration error: image needs an embedder that embeds images; this server's "
        'embedder embeds text only (embedding_modalities ["text"]) and no offline image '
        "embedder ships with it. Send the image's vector as vector {values, contract} "
        "instead, computed under the session's embedding_contract (lambo_stats); nothing "
        "was written",
        field="image",
        rule="configuration",
    )


def check_derive_image(
    args: DeriveImageArgs,
    session: GroupId,
    clock: Callable[[], datetime],
    contract: Contract,
    *,
    accept_client_vectors: bool,
) -> DeriveImage:
    """Every rule of lambo_derive_image, in the order the checklist lists the arguments
    (M-IMG-010..033): the caller, caption, concept_type, image_id, exactly one of image and
    vector, the caption's size (it depends on the id), event_time, parent_of. The command
    has no receipt yet; its `now` is read once every rule holds."""
    arguments.check_caller(session, args.agent_id, args.scope)
    text.check_text("caption", args.caption)
    if not args.caption.strip():
        raise MemoryArgumentError(
            "caption must say what the image is (blank text counts as none)",
            field="caption",
            rule="required",
        )
    text.check_no_image_suffix("caption", args.caption)
    concept_type = images.check_image_concept_type("concept_type", args.concept_type)
    image_id = None if args.image_id is None else images.check_image_id("image_id", args.image_id)
    if (args.image is None) == (args.vector is None):
        raise MemoryArgumentError(
            "image, vector: send exactly one of image and vector",
            field="image" if args.image is not None else "vector",
            rule="exactly one",
        )
    if args.image is not None:
        images.check_image("image", args.image)  # its shape and limits first (M-IMG-022..026)
        raise image_not_embeddable()
    if not accept_client_vectors:
        raise client_vectors.not_configured("vector")
    vector = client_vectors.check_client_vector("vector", args.vector, contract).values
    image_id = image_id or vector_id(vector)
    images.check_caption("caption", args.caption, image_id)
    event_time = None if args.event_time is None else text.parse_event_time(args.event_time)
    pairs = args.parent_of
    if len(pairs) > limits.MAX_PARENT_OF_PAIRS:
        raise MemoryArgumentError(
            f"parent_of: at most {limits.MAX_PARENT_OF_PAIRS} pairs ({len(pairs)} given)",
            field="parent_of",
            rule="per-call limit",
        )
    for j, (parent, child) in enumerate(pairs):
        text.check_text(f"parent_of[{j}].parent", parent)
        text.check_text(f"parent_of[{j}].child", child)
    content = images.image_content(args.caption, image_id)
    # only the parent_of ends are framed, with the caption and its suffix (M-IMG-033)
    text.check_embedding_text_limit([content], list(pairs), frame_concepts=False)
    return DeriveImage(
        session,
        args.agent_id,
        args.caption,
        concept_type,
        image_id,
        vector,
        (contract.kind, contract.model, contract.dim),
        pairs,
        event_time,
        receipt="",
        now=clock(),
    )
