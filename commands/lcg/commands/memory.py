"""Memory writes (seed 001), the accepting half (ADR 0026, ADR 0059): a derive or an action as
a durable intent.

`accept_derive` / `accept_action` run in the writer's batch: load (the session as the memory
projection holds it), decide (`lcg.domain.memory.intents`: every reference resolved and fixed
to a node id, cycles the graph already shows refused), append the one `MemoryWriteAccepted`.
Its commit is the acknowledgement, so an acked write is never lost.
`lcg.commands.memory_apply` applies it later.
"""

from __future__ import annotations

from collections.abc import Sequence

from lcg.commands.writer import WriteContext
from lcg.domain.memory import layers
from lcg.domain.memory.calls import Derive, DeriveImage, RecordAction
from lcg.domain.memory.identity import is_node_uuid
from lcg.domain.memory.intents import decide_action, decide_derive, decide_image
from lcg.projections.memory.state import SessionLookup


def accept_derive(ctx: WriteContext, call: Derive) -> None:
    """Load, decide and append the intent of a lambo_derive (refusals write nothing)."""
    ctx.append(call.session, [decide_derive(call, SessionLookup(ctx.conn, call.session))])


def accept_action(ctx: WriteContext, call: RecordAction) -> None:
    """Load, decide and append the intent of a lambo_record_action."""
    ctx.append(call.session, [decide_action(call, SessionLookup(ctx.conn, call.session))])


def accept_image(ctx: WriteContext, call: DeriveImage) -> None:
    """Load, decide and append the intent of a lambo_derive_image (ADR 0095)."""
    ctx.append(call.session, [decide_image(call, SessionLookup(ctx.conn, call.session))])


# -- layered sessions (ADR 0080) -------------------------------------------------------------


def accept_scoped_derive(
    ctx: WriteContext, call: Derive, others: Sequence[str], caller: str | None = None
) -> None:
    """accept_derive on a layered session: a reference naming a concept only in another
    session the call reads (`others`) is refused first, as cross-session (M-LAY-008..010).
    `caller`: the session written through, when the write goes to one of its layers."""
    target = SessionLookup(ctx.conn, call.session)
    readable = [(other, SessionLookup(ctx.conn, other)) for other in others]
    for i, concept in enumerate(call.concepts):
        for j, ref in enumerate(concept.depends_on):
            layers.refuse_cross_session(f"concepts[{i}].depends_on[{j}]", ref, target, readable)
        for j, ref in enumerate(concept.against):
            where = f"concepts[{i}].against[{j}]"
            layers.refuse_cross_session(where, ref, target, readable, against=True)
    ctx.append(call.session, [decide_derive(call, target)])


def accept_scoped_action(
    ctx: WriteContext, call: RecordAction, others: Sequence[str], caller: str | None = None
) -> None:
    """accept_action on a layered session: a hyphenated id naming a concept only in another
    session the call reads is refused as cross-session (M-ACT-028), and so, on a write into a
    layer, is depends_on text naming a concept of the caller's session and none of the
    layer's (M-LAY-011); an `against` as accept_scoped_derive's."""
    target = SessionLookup(ctx.conn, call.session)
    readable = [(other, SessionLookup(ctx.conn, other)) for other in others]
    own = None if caller is None else (caller, SessionLookup(ctx.conn, caller))
    for name, entries in (
        ("produces", call.produces),
        ("modifies", call.modifies),
        ("depends_on", call.depends_on),
    ):
        for j, ref in enumerate(entries):
            if is_node_uuid(ref.strip()):
                layers.refuse_cross_session(f"{name}[{j}]", ref, target, readable)
            if name == "depends_on":
                layers.refuse_caller_text(f"{name}[{j}]", ref, target, own)
    for j, ref in enumerate(call.against):
        layers.refuse_cross_session(f"against[{j}]", ref, target, readable, against=True)
    ctx.append(call.session, [decide_action(call, target)])
