"""Applying a lambo_derive_image (ADR 0095): the image concept and its parent_of links.

The image concept's identity is its content, the caption plus `[image:<image_id>]`, matched by
canonical key: the same caption and id again is the same concept (M-IMG-055), another id
another concept (M-IMG-056). It is never merged by similarity and never searched for one
(M-IMG-057); its vector is the one the intent carries, stored in its outcome node, so the
vector index takes it from the log and no replay embeds the caption. A text concept already
holding that key (a parent_of end or an action target named it first) fails the write with
`image id taken` on the receipt (M-IMG-060, M-ERR-025).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lcg.domain.errors import DomainError
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.intents import END_TYPE, reaches
from lcg.domain.memory.records import ImageRequest, OutcomeNode
from lcg.domain.memory.references import HIERARCHY_CYCLE, CycleRefused
from lcg.domain.memory.text import embedding_text
from lcg.projections.memory import state
from lcg.projections.memory.state import SessionLookup

if TYPE_CHECKING:
    from lcg.commands.memory_apply import Outcome, Prepared


class ImageIdTaken(DomainError):
    """A text concept holds the image's content: the image cannot have it (M-IMG-060)."""


def texts_to_embed(request: ImageRequest) -> dict[str, str]:
    """The parent_of ends the write may create, each framed with the caption and its suffix;
    the image's own text is never embedded (M-IMG-033)."""
    content = request.content
    ends = [end for pair in request.parent_of for end in (pair.parent, pair.child)]
    return {end: embedding_text(end, content) for end in ends}


def image_id_taken(image_id: str) -> ImageIdTaken:
    return ImageIdTaken(
        f"image id taken: image_id {image_id} with this caption names a text concept "
        "already (created when a text write named it before the image was derived); "
        "choose another image id; nothing was written",
        field="image_id",
        rule="image id taken",
    )


def apply_image(out: Outcome, request: ImageRequest, prepared: Prepared, interaction: str) -> None:
    """The image concept (matched by key, or created with its vector), its derives edge, then
    parent_of, whose ends are matched, merged or created as lambo_derive's are."""
    conn, session = out.ctx.conn, out.session
    content = request.content
    key = canonical_key(content)
    found = state.concepts_with_key(conn, session, key)
    if found:
        images = state.images_among(conn, session, [node.uuid for node in found])
        mine = [node.uuid for node in found if node.uuid in images]
        if not mine:
            raise image_id_taken(request.image_id)
        uuid = mine[0]
        out.reinforce(uuid)
        out.matched.append(uuid)
    else:
        uuid = out.new_id()
        out.nodes.append(
            OutcomeNode(uuid, "concept", content, request.concept_type, key, None, request.vector)
        )
        out.embedded += 1
        out.created.append(uuid)
    out.by_key[key] = uuid  # a parent_of end naming the image is this concept
    out.edge("derives", interaction, uuid)
    lookup = SessionLookup(conn, session)
    extra: dict[str, set[str]] = {}
    for pair in request.parent_of:
        parent = out.node(pair.parent, END_TYPE, prepared, set())
        child = out.node(pair.child, END_TYPE, prepared, set())
        if parent == child or reaches(lookup, extra, child, parent, ("parent_of",)):
            raise CycleRefused(HIERARCHY_CYCLE, field="parent_of", rule="must stay acyclic")
        extra.setdefault(parent, set()).add(child)
        out.edge("parent_of", parent, child)
