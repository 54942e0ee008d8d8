"""Deciding a memory write's intent (seed 001, ADR 0026, ADR 0059): the pure half of accepting
a lambo_derive or a lambo_record_action.

`decide_derive` / `decide_action` take the checked call and the session as the projection
holds it (`SessionGraph`: the references' lookup plus the edges the cycle checks follow) and
return the one `MemoryWriteAccepted` to append, or raise the refusal. Every reference is
resolved and fixed to a node id, and cycles the graph already shows are refused. No clock, no
id, no write: the handler (`lcg.commands.memory`) loads the view, calls this, and appends.
The session is read through the view as the checks go, so the first refusal of a call is the
one the seed orders first (a later reference is never resolved before an earlier one fails).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from lcg.domain.events import MemoryWriteAccepted
from lcg.domain.memory.calls import DERIVE, RECORD_ACTION, Derive, RecordAction
from lcg.domain.memory.identity import canonical_key, matches_by_key
from lcg.domain.memory.records import ActionRequest, DerivedConcept, DeriveRequest, ParentOf
from lcg.domain.memory.references import (
    ACTION_CYCLE,
    HIERARCHY_CYCLE,
    CycleRefused,
    Lookup,
    ReferenceRefused,
    Resolved,
    by_text,
    resolve,
)

CAUSAL = ("produces", "modifies", "depends_on")  # edges an action's cycle check follows
END_TYPE = "entity"  # the type of a parent_of end a derive creates (ADR 0026)
TARGET_TYPE = "resource"  # the type of an action's target it creates (ADR 0026)


class SessionGraph(Lookup, Protocol):
    """The session's nodes and edges as the projection holds them now."""

    def targets(self, source: str, kinds: Sequence[str]) -> Sequence[str]:
        """The nodes `source` has an edge of one of `kinds` to."""
        ...

    def reaches(self, start: str, goal: str, kinds: Sequence[str]) -> bool:
        """Whether a path of stored `kinds` edges leads from `start` to `goal`."""
        ...


def reaches(
    graph: SessionGraph,
    extra: Mapping[str, set[str]],
    start: str,
    goal: str,
    kinds: Sequence[str],
) -> bool:
    """Whether `goal` is reachable from `start` over stored edges of `kinds` plus `extra` (a
    `key:` token is an end not stored yet: only `extra` leaves it)."""
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
            todo.extend(graph.targets(here, kinds))
    return False


def _existing(lookup: Lookup, content: str, concept_type: str) -> list[str]:
    """The node a concept of this content and type would be matched to by key (if any)."""
    if not matches_by_key(concept_type):
        return []
    return [n.uuid for n in by_text(content.strip(), lookup)]


def decide_derive(call: Derive, graph: SessionGraph) -> MemoryWriteAccepted:
    """The intent of a lambo_derive, references fixed to node ids; refusals write nothing."""
    concepts: list[DerivedConcept] = []
    for i, concept in enumerate(call.concepts):
        itself = set(_existing(graph, concept.content, concept.concept_type))
        cited: list[Resolved] = []
        for j, ref in enumerate(concept.depends_on):
            where = f"concepts[{i}].depends_on[{j}]"
            found = resolve(where, ref, graph, create=False)
            if found.node in itself:
                raise ReferenceRefused(where, ref, "names the concept itself")
            if any(graph.reaches(found.node or "", me, ("depends_on",)) for me in itself):
                raise ReferenceRefused(where, ref, "would close a dependency loop")
            cited.append(found)
        contradicted: list[Resolved] = []
        for j, ref in enumerate(concept.against):
            where = f"concepts[{i}].against[{j}]"
            found = resolve(where, ref, graph, create=False)
            if found.node in itself:
                raise ReferenceRefused(where, ref, "names the concept itself")
            if found.node in {c.node for c in cited}:
                raise ReferenceRefused(
                    where, ref, "is both cited and contradicted by one concept of the call"
                )
            contradicted.append(found)
        concepts.append(
            DerivedConcept(concept.content, concept.concept_type, tuple(cited), tuple(contradicted))
        )
    pairs = tuple(ParentOf(p, c) for p, c in call.parent_of)
    _refuse_hierarchy_cycle(graph, call.parent_of)
    request = DeriveRequest(tuple(concepts), pairs)
    return MemoryWriteAccepted(
        call.now, call.receipt, call.agent_id, DERIVE, request, call.event_time
    )


def _token(lookup: Lookup, text: str) -> str:
    """A parent_of end's identity: its node when it exists, else its canonical key."""
    found = by_text(text.strip(), lookup)
    return found[0].uuid if len(found) == 1 else "key:" + (canonical_key(text) or text.strip())


def _refuse_hierarchy_cycle(graph: SessionGraph, pairs: Sequence[tuple[str, str]]) -> None:
    """M-DER-074/075: a pair whose child is already an ancestor of its parent, or pairs of the
    call that loop, refuse the call."""
    edges: dict[str, set[str]] = {}
    for parent, child in pairs:
        edges.setdefault(_token(graph, parent), set()).add(_token(graph, child))
    for parent, children in edges.items():
        for child in children:
            if reaches(graph, edges, child, parent, ("parent_of",)):
                raise CycleRefused(HIERARCHY_CYCLE, field="parent_of", rule="must stay acyclic")


def decide_action(call: RecordAction, graph: SessionGraph) -> MemoryWriteAccepted:
    """The intent of a lambo_record_action; refusals write nothing."""
    itself = set(_existing(graph, call.action, TARGET_TYPE))
    entries: dict[str, tuple[Resolved, ...]] = {}
    for name, values in (
        ("produces", call.produces),
        ("modifies", call.modifies),
        ("depends_on", call.depends_on),
    ):
        resolved = tuple(
            resolve(f"{name}[{j}]", ref, graph, create=True) for j, ref in enumerate(values)
        )
        entries[name] = resolved
        for r in resolved:
            target = r.node or ("key:" + (canonical_key(r.ref) or r.ref.strip()))
            closes = target in itself or any(
                reaches(graph, {}, target, me, CAUSAL) for me in itself
            )
            if closes:
                raise CycleRefused(ACTION_CYCLE, field=name, rule="must stay acyclic")
    cited = {r.node for r in entries["depends_on"] if r.node}
    against: list[Resolved] = []
    for j, ref in enumerate(call.against):
        where = f"against[{j}]"
        found = resolve(where, ref, graph, create=False)
        if found.node in itself:
            raise ReferenceRefused(where, ref, "names the action itself")
        if found.node in cited:
            raise ReferenceRefused(
                where, ref, "is both cited and contradicted by one concept of the call"
            )
        against.append(found)
    request = ActionRequest(
        call.action,
        entries["produces"],
        entries["modifies"],
        entries["depends_on"],
        tuple(against),
    )
    return MemoryWriteAccepted(
        call.now, call.receipt, call.agent_id, RECORD_ACTION, request, call.event_time
    )
