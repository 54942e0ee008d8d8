"""Memory writes (seed 001), the accepting half (ADR 0026, ADR 0059): a derive or an action as
a durable intent.

`accept_derive` / `accept_action` run in the writer's batch: load (the session as the memory
projection holds it), decide (`lcg.domain.memory.intents`: every reference resolved and fixed
to a node id, cycles the graph already shows refused), append the one `MemoryWriteAccepted`.
Its commit is the acknowledgement, so an acked write is never lost.
`lcg.commands.memory_apply` applies it later.
"""

from __future__ import annotations

from lcg.commands.writer import WriteContext
from lcg.domain.memory.calls import Derive, RecordAction
from lcg.domain.memory.intents import decide_action, decide_derive
from lcg.projections.memory.state import SessionLookup


def accept_derive(ctx: WriteContext, call: Derive) -> None:
    """Load, decide and append the intent of a lambo_derive (refusals write nothing)."""
    ctx.append(call.session, [decide_derive(call, SessionLookup(ctx.conn, call.session))])


def accept_action(ctx: WriteContext, call: RecordAction) -> None:
    """Load, decide and append the intent of a lambo_record_action."""
    ctx.append(call.session, [decide_action(call, SessionLookup(ctx.conn, call.session))])
