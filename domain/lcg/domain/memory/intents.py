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
from lcg.domain.memory import scoped_refs
from lcg.domain.memory.calls import (
    DERIVE,
    DERIVE_IMAGE,
    RECORD_ACTION,
    Derive,
    DeriveImage,
    RecordAction,
)
from lcg.domain.memory.identity import canonical_key, matches_by_key
from lcg.domain.memory.records import (
    ActionRequest,
    DerivedConcept,
    DeriveRequest,
    ImageRequest,
    ParentOf,
)
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
from lcg.domain.memory.repo_paths import is_path, path_key

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


def _existing(
    lookup: Lookup, content: str, concept_type: str, scope: str | None = None
) -> list[str]:
    """The node a concept of this content and type would be matched to by key (if any)."""
    if not matches_by_key(concept_type):
        return []
    if scoped_path(scope, content, concept_type):
        assert scope is not None
        return [n.uuid for n in scoped_refs.scoped_nodes(lookup, scope, content)]
    return [n.uuid for n in by_text(content.strip(), lookup)]


def scoped_path(scope: str | None, content: str, concept_type: str) -> bool:
    """Whether a concept of the call is a repository-scoped path (ADR 0082): a path-like
    resource under repo_scope."""
    return scope is not None and concept_type == TARGET_TYPE and is_path(content)


def _cited(field: str, ref: str, graph: SessionGraph, scope: str | None) -> Resolved:
    """A citation or contradiction (never creates), under the call's scope if any."""
    if scope is None:
        return resolve(field, ref, graph, create=False)
    return scoped_refs.resolve_inferred(field, ref, graph, scope, create=False)


def _target(name: str, field: str, ref: str, graph: SessionGraph, scope: str | None) -> Resolved:
    """An action's produces, modifies or depends_on entry, under the call's scope if any."""
    if scope is None:
        return resolve(field, ref, graph, create=True)
    if name == "depends_on":
        return scoped_refs.resolve_inferred(field, ref, graph, scope, create=True)
    return scoped_refs.resolve_named(field, ref, graph, scope)


def decide_derive(call: Derive, graph: SessionGraph) -> MemoryWriteAccepted:
    """The intent of a lambo_derive, references fixed to node ids; refusals write nothing."""
    scope = call.repo_scope
    concepts: list[DerivedConcept] = []
    for i, concept in enumerate(call.concepts):
        itself = set(_existing(graph, concept.content, concept.concept_type, scope))
        cited: list[Resolved] = []
        for j, ref in enumerate(concept.depends_on):
            where = f"concepts[{i}].depends_on[{j}]"
            found = _cited(where, ref, graph, scope)
            if found.node in itself:
                raise ReferenceRefused(where, ref, "names the concept itself")
            if any(graph.reaches(found.node or "", me, ("depends_on",)) for me in itself):
                raise ReferenceRefused(where, ref, "would close a dependency loop")
            cited.append(found)
        contradicted: list[Resolved] = []
        for j, ref in enumerate(concept.against):
            where = f"concepts[{i}].against[{j}]"
            found = _cited(where, ref, graph, scope)
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
    paths = call_paths(call.repo_scope, [(c.content, c.concept_type) for c in call.concepts])
    if scope is not None:
        for j, (parent, child) in enumerate(call.parent_of):
            scoped_refs.check_end(f"parent_of[{j}].parent", graph, scope, parent, paths)
            scoped_refs.check_end(f"parent_of[{j}].child", graph, scope, child, paths)
    _refuse_hierarchy_cycle(graph, call.parent_of, scope, paths)
    request = DeriveRequest(tuple(concepts), pairs, scope)
    return MemoryWriteAccepted(
        call.now, call.receipt, call.agent_id, DERIVE, request, call.event_time
    )


def call_paths(scope: str | None, concepts: Sequence[tuple[str, str]]) -> list[str]:
    """The contents of a derive's concepts that are scoped paths."""
    return [content for content, kind in concepts if scoped_path(scope, content, kind)]


def end_tokens(
    lookup: Lookup, scope: str | None, parent: str, child: str, paths: Sequence[str]
) -> tuple[str, str]:
    """A parent_of pair's identities (node, else key), scoped ends by their scoped key."""
    if scope is None:
        return scoped_refs.token(lookup, None, parent, False), scoped_refs.token(
            lookup, None, child, False
        )
    up = scoped_refs.end_is_path(lookup, scope, parent, child, paths, parent=True)
    down = scoped_refs.end_is_path(lookup, scope, child, parent, paths, parent=False)
    return scoped_refs.token(lookup, scope, parent, up), scoped_refs.token(
        lookup, scope, child, down
    )


def _refuse_hierarchy_cycle(
    graph: SessionGraph,
    pairs: Sequence[tuple[str, str]],
    scope: str | None = None,
    paths: Sequence[str] = (),
) -> None:
    """M-DER-074/075: a pair whose child is already an ancestor of its parent, or pairs of the
    call that loop, refuse the call."""
    edges: dict[str, set[str]] = {}
    for parent, child in pairs:
        up, down = end_tokens(graph, scope, parent, child, paths)
        edges.setdefault(up, set()).add(down)
    for parent, children in edges.items():
        for child in children:
            if reaches(graph, edges, child, parent, ("parent_of",)):
                raise CycleRefused(HIERARCHY_CYCLE, field="parent_of", rule="must stay acyclic")


def decide_action(call: RecordAction, graph: SessionGraph) -> MemoryWriteAccepted:
    """The intent of a lambo_record_action; refusals write nothing."""
    scope = call.repo_scope
    itself = set(_existing(graph, call.action, TARGET_TYPE, scope))
    entries: dict[str, tuple[Resolved, ...]] = {}
    for name, values in (
        ("produces", call.produces),
        ("modifies", call.modifies),
        ("depends_on", call.depends_on),
    ):
        resolved = tuple(
            _target(name, f"{name}[{j}]", ref, graph, scope) for j, ref in enumerate(values)
        )
        entries[name] = resolved
        for r in resolved:
            target = r.node or (
                "key:" + path_key(scope, r.ref)
                if r.by == "path" and scope is not None
                else "key:" + (canonical_key(r.ref) or r.ref.strip())
            )
            closes = target in itself or any(
                reaches(graph, {}, target, me, CAUSAL) for me in itself
            )
            if closes:
                raise CycleRefused(ACTION_CYCLE, field=name, rule="must stay acyclic")
    cited = {r.node for r in entries["depends_on"] if r.node}
    against: list[Resolved] = []
    for j, ref in enumerate(call.against):
        where = f"against[{j}]"
        found = _cited(where, ref, graph, scope)
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
        scope,
    )
    return MemoryWriteAccepted(
        call.now, call.receipt, call.agent_id, RECORD_ACTION, request, call.event_time
    )


def decide_image(call: DeriveImage, graph: SessionGraph) -> MemoryWriteAccepted:
    """The intent of a lambo_derive_image (ADR 0095): the vector carried in the event, so a
    replay never computes it; its parent_of pairs refused if they would close a loop. Whether
    a text concept already holds the image's content is decided on apply (the receipt says
    image id taken, M-IMG-060)."""
    _refuse_hierarchy_cycle(graph, call.parent_of)
    request = ImageRequest(
        call.caption,
        call.concept_type,
        call.image_id,
        call.vector,
        "client",
        call.contract,
        tuple(ParentOf(p, c) for p, c in call.parent_of),
    )
    return MemoryWriteAccepted(
        call.now, call.receipt, call.agent_id, DERIVE_IMAGE, request, call.event_time
    )
