"""Memory writes (seed 001), the accepting half (ADR 0026): a derive or an action as a durable
intent.

`accept_derive` / `accept_action` run in the writer's batch: every reference is resolved
against the session as it is now and fixed to a node id, cycles the graph already shows are
refused, and one `MemoryWriteAccepted` is appended. Its commit is the acknowledgement, so an
acked write is never lost. `lcg.commands.memory_apply` applies it later.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from lcg.commands.writer import WriteContext
from lcg.domain.events import MemoryWriteAccepted
from lcg.domain.ids import GroupId
from lcg.domain.memory.calls import DERIVE, RECORD_ACTION, Derive, RecordAction
from lcg.domain.memory.identity import (
    canonical_key,
    matches_by_key,
)
from lcg.domain.memory.references import (
    ACTION_CYCLE,
    HIERARCHY_CYCLE,
    CycleRefused,
    ReferenceRefused,
    Resolved,
    by_text,
    resolve,
)
from lcg.projections.memory import state
from lcg.projections.memory.state import SessionLookup

CAUSAL = ("produces", "modifies", "depends_on")  # edges an action's cycle check follows
END_TYPE = "entity"  # the type of a parent_of end a derive creates (ADR 0026)
TARGET_TYPE = "resource"  # the type of an action's target it creates (ADR 0026)


# -- accepting -------------------------------------------------------------------------------


def _existing(lookup: SessionLookup, content: str, concept_type: str) -> list[str]:
    """The node a concept of this content and type would be matched to by key (if any)."""
    if not matches_by_key(concept_type):
        return []
    return [n.uuid for n in by_text(content.strip(), lookup)]


def accept_derive(ctx: WriteContext, call: Derive) -> None:
    """Resolve, check and append the intent of a lambo_derive (refusals write nothing)."""
    lookup = SessionLookup(ctx.conn, call.session)
    concepts: list[dict[str, Any]] = []
    for i, concept in enumerate(call.concepts):
        itself = set(_existing(lookup, concept.content, concept.concept_type))
        cited: list[Resolved] = []
        for j, ref in enumerate(concept.depends_on):
            where = f"concepts[{i}].depends_on[{j}]"
            found = resolve(where, ref, lookup, create=False)
            if found.node in itself:
                raise ReferenceRefused(where, ref, "names the concept itself")
            if any(
                state.reaches(ctx.conn, call.session, found.node or "", me, ("depends_on",))
                for me in itself
            ):
                raise ReferenceRefused(where, ref, "would close a dependency loop")
            cited.append(found)
        contradicted: list[Resolved] = []
        for j, ref in enumerate(concept.against):
            where = f"concepts[{i}].against[{j}]"
            found = resolve(where, ref, lookup, create=False)
            if found.node in itself:
                raise ReferenceRefused(where, ref, "names the concept itself")
            if found.node in {c.node for c in cited}:
                raise ReferenceRefused(
                    where, ref, "is both cited and contradicted by one concept of the call"
                )
            contradicted.append(found)
        concepts.append(
            {
                "content": concept.content,
                "concept_type": concept.concept_type,
                "depends_on": [c.to_json() for c in cited],
                "against": [c.to_json() for c in contradicted],
            }
        )
    pairs = [{"parent": p, "child": c} for p, c in call.parent_of]
    _refuse_hierarchy_cycle(ctx.conn, call.session, lookup, call.parent_of)
    request = {"concepts": concepts, "parent_of": pairs}
    ctx.append(
        call.session,
        [
            MemoryWriteAccepted(
                call.now, call.receipt, call.agent_id, DERIVE, request, call.event_time
            )
        ],
    )


def _token(lookup: SessionLookup, text: str) -> str:
    """A parent_of end's identity: its node when it exists, else its canonical key."""
    found = by_text(text.strip(), lookup)
    return found[0].uuid if len(found) == 1 else "key:" + (canonical_key(text) or text.strip())


def _refuse_hierarchy_cycle(
    conn: sqlite3.Connection,
    session: GroupId,
    lookup: SessionLookup,
    pairs: Sequence[tuple[str, str]],
) -> None:
    """M-DER-074/075: a pair whose child is already an ancestor of its parent, or pairs of the
    call that loop, refuse the call."""
    edges: dict[str, set[str]] = {}
    for parent, child in pairs:
        edges.setdefault(_token(lookup, parent), set()).add(_token(lookup, child))
    for parent, children in edges.items():
        for child in children:
            if reaches(conn, session, edges, child, parent, ("parent_of",)):
                raise CycleRefused(HIERARCHY_CYCLE, field="parent_of", rule="must stay acyclic")


def reaches(
    conn: sqlite3.Connection,
    session: GroupId,
    extra: dict[str, set[str]],
    start: str,
    goal: str,
    kinds: Sequence[str],
) -> bool:
    """Whether `goal` is reachable from `start` over stored edges of `kinds` plus `extra`."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        here = todo.pop()
        if here == goal:
            return True
        if here in seen:
            continue
        seen.add(here)
        todo.extend(extra.get(here, ()))
        if not here.startswith("key:"):
            todo.extend(state.targets(conn, session, here, kinds))
    return False


def accept_action(ctx: WriteContext, call: RecordAction) -> None:
    """Resolve, check and append the intent of a lambo_record_action."""
    lookup = SessionLookup(ctx.conn, call.session)
    itself = set(_existing(lookup, call.action, TARGET_TYPE))
    entries: dict[str, list[dict[str, str | None]]] = {}
    fixed: list[Resolved] = []
    for name, values in (
        ("produces", call.produces),
        ("modifies", call.modifies),
        ("depends_on", call.depends_on),
    ):
        resolved = [
            resolve(f"{name}[{j}]", ref, lookup, create=True) for j, ref in enumerate(values)
        ]
        entries[name] = [r.to_json() for r in resolved]
        fixed.extend(resolved)
        for r in resolved:
            target = r.node or ("key:" + (canonical_key(r.ref) or r.ref.strip()))
            closes = target in itself or any(
                reaches(ctx.conn, call.session, {}, target, me, CAUSAL) for me in itself
            )
            if closes:
                raise CycleRefused(ACTION_CYCLE, field=name, rule="must stay acyclic")
    cited = {r.node for r in (Resolved.from_json(e) for e in entries["depends_on"]) if r.node}
    against: list[Resolved] = []
    for j, ref in enumerate(call.against):
        where = f"against[{j}]"
        found = resolve(where, ref, lookup, create=False)
        if found.node in itself:
            raise ReferenceRefused(where, ref, "names the action itself")
        if found.node in cited:
            raise ReferenceRefused(
                where, ref, "is both cited and contradicted by one concept of the call"
            )
        against.append(found)
    request = {
        "action": call.action,
        **entries,
        "against": [a.to_json() for a in against],
    }
    ctx.append(
        call.session,
        [
            MemoryWriteAccepted(
                call.now, call.receipt, call.agent_id, RECORD_ACTION, request, call.event_time
            )
        ],
    )
