"""Cross-group pointers (seed 000, issue 15): binding a foreign endpoint by name, the edge a
knowledge_add_cross_group_edge creates, and what a knowledge_rebind_pointers changes.

A pointer names an entity of another group by (source_group_id, endpoint_name); its binding
is the resolution cache: bound to the one live entity of that name, unbound (none) or
ambiguous (several: no winner is guessed). Bindings are decided here and recorded in the
events, so a replay never resolves a name again (ADR 0041).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypedDict

from lcg.domain import rules
from lcg.domain.commands import AddCrossGroupEdge, NameEndpoint, RebindPointers, UuidEndpoint
from lcg.domain.curation import collapsed
from lcg.domain.deciders import EntityState
from lcg.domain.errors import Conflict, NotFound
from lcg.domain.events import CrossGroupEdgeAdded, PointersRebound
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId

BindingState = Literal["bound", "unbound", "ambiguous"]
Side = Literal["src", "dst"]
BINDING_STATES: tuple[BindingState, ...] = ("bound", "unbound", "ambiguous")


class Pointer(TypedDict):
    """`cross_group_pointers.{src,dst}` (P-131): the assertion and its resolution cache."""

    source_group_id: str
    endpoint_name: str
    resolved_uuid: str | None
    bound_at_seq: int | None
    binding_state: BindingState


class CrossGroupPointers(TypedDict):
    src: Pointer | None
    dst: Pointer | None


def bind(
    source_group_id: str, endpoint_name: str, matches: Sequence[str], applied_seq: int
) -> Pointer:
    """The pointer's binding given the live entities of `source_group_id` its name matches
    now (K-XG-009..011); `bound_at_seq` is the source group's applied seq (A-26)."""
    state: BindingState = (
        "bound" if len(matches) == 1 else "unbound" if not matches else "ambiguous"
    )
    bound = state == "bound"
    return Pointer(
        source_group_id=source_group_id,
        endpoint_name=endpoint_name,
        resolved_uuid=matches[0] if bound else None,
        bound_at_seq=applied_seq if bound else None,
        binding_state=state,
    )


@dataclass(frozen=True, slots=True)
class EndpointLookup:
    """What the handler found for one endpoint: the entity a uuid endpoint names (None:
    unknown), or a name endpoint's binding."""

    entity: EntityState | None = None
    pointer: Pointer | None = None


class CrossGroupEdgeResult(TypedDict):
    """knowledge_add_cross_group_edge's answer (P-131)."""

    uuid: str
    name: str
    group_id: str
    source_node_uuid: str | None
    target_node_uuid: str | None
    fact: str
    cross_group_pointers: CrossGroupPointers


def _uuid_end(
    command: AddCrossGroupEdge, at: str, endpoint: UuidEndpoint, found: EntityState | None
) -> EntityUuid:
    """A bare-uuid endpoint must be a live entity of the edge's own group (K-XG-003/004)."""
    field = f"{at}.uuid"
    if found is None:
        raise NotFound(
            f"{field}: no entity {endpoint.uuid}", field=field, rule="must name an entity"
        )
    if found.group_id != command.group_id:
        raise Conflict(
            f"{field}: entity {endpoint.uuid} belongs to group {found.group_id!r}, not the "
            f"edge's group {command.group_id!r}; name a foreign endpoint as "
            '{"source_group_id": ..., "endpoint_name": ...} so the edge keeps its pointer',
            field=field,
            rule="a uuid endpoint must be an entity of group_id",
        )
    if found.merged_into is not None:
        raise Conflict(
            f"{field}: entity {endpoint.uuid} was merged into {found.merged_into}",
            field=field,
            rule="must not name a merged entity",
        )
    return found.uuid


def _refuse_collapsed(
    command: AddCrossGroupEdge,
    source: EntityUuid,
    target: EntityUuid,
    active_edge: Callable[[str, str, str], EdgeUuid | None],
) -> None:
    """K-XG-024..026 on the add path: an edge whose ends are bound now is held to the rule a
    rebind (and a merge) applies, `curation.collapsed`: a self-loop or a duplicate of an
    active edge of the group is not written. Refused rather than written invalidated, so the
    caller learns why and nothing is appended."""
    key = (source, command.predicate, target)
    other = None if source == target else active_edge(*key)
    collapse = collapsed(key, {} if other is None else {key: other})
    if collapse is None:
        return
    ends = f"{source} -[{command.predicate}]-> {target}"
    if collapse.kept is None:
        raise Conflict(
            f"target: resolves to {target}, the entity the source resolves to; a self-loop "
            "is not written (knowledge_rebind_pointers and knowledge_merge_entities invalidate "
            "one); nothing was written",
            field="target",
            rule="must not bind to the source's entity (a self-loop)",
        )
    raise Conflict(
        f"target: the active edge {collapse.kept} of group {command.group_id!r} already is "
        f"{ends}; a duplicate is not written (knowledge_rebind_pointers and "
        "knowledge_merge_entities invalidate one and keep the older); nothing was written",
        field="target",
        rule="must not repeat an active edge of group_id (same source, name and target)",
    )


def decide_add_cross_group_edge(
    command: AddCrossGroupEdge,
    source: EndpointLookup,
    target: EndpointLookup,
    active_edge: Callable[[str, str, str], EdgeUuid | None],
) -> tuple[CrossGroupEdgeAdded, CrossGroupEdgeResult]:
    """The edge and its pointers; a refused uuid endpoint, or ends bound now that would make
    a self-loop or a duplicate of `active_edge(source, predicate, target)` (an active edge of
    the edge's group), raise before anything is written."""
    ends: list[EntityUuid | None] = []
    pointers: list[Pointer | None] = []
    for at, endpoint, found in (
        ("source", command.source, source),
        ("target", command.target, target),
    ):
        if isinstance(endpoint, UuidEndpoint):
            ends.append(_uuid_end(command, at, endpoint, found.entity))
            pointers.append(None)
        else:
            if found.pointer is None:  # the handler binds every name endpoint
                raise AssertionError(f"{at}: no binding was looked up")
            resolved = found.pointer["resolved_uuid"]
            ends.append(None if resolved is None else EntityUuid(resolved))
            pointers.append(found.pointer)
    if ends[0] is not None and ends[1] is not None:
        _refuse_collapsed(command, ends[0], ends[1], active_edge)
    event = CrossGroupEdgeAdded(
        command.now,
        command.new_uuid,
        ends[0],
        ends[1],
        command.predicate,
        command.fact,
        command.relation_type,
        command.valid_at,
        dict(pointers[0]) if pointers[0] is not None else None,
        dict(pointers[1]) if pointers[1] is not None else None,
    )
    result = CrossGroupEdgeResult(
        uuid=command.new_uuid,
        name=command.predicate,
        group_id=command.group_id,
        source_node_uuid=ends[0],
        target_node_uuid=ends[1],
        fact=command.fact,
        cross_group_pointers=CrossGroupPointers(src=pointers[0], dst=pointers[1]),
    )
    return event, result


def name_endpoints(command: AddCrossGroupEdge) -> list[NameEndpoint]:
    """The endpoints the handler must bind, in order (source, then target)."""
    return [e for e in (command.source, command.target) if isinstance(e, NameEndpoint)]


@dataclass(frozen=True, slots=True)
class PointedEdge:
    """An active edge carrying at least one pointer to the group being rebound, as stored."""

    uuid: EdgeUuid
    group_id: GroupId
    predicate: str
    source_uuid: EntityUuid | None
    target_uuid: EntityUuid | None
    src: Pointer | None
    dst: Pointer | None


class RebindResult(TypedDict):
    """knowledge_rebind_pointers' answer: exactly these seven integers (K-XG-027)."""

    checked: int
    bound: int
    unbound: int
    ambiguous: int
    invalidated_self_loop: int
    invalidated_duplicate: int
    staleness_skipped: int


@dataclass
class _GroupChanges:
    bindings: list[dict[str, object]] = field(default_factory=list)
    self_loops: list[EdgeUuid] = field(default_factory=list)
    duplicates: list[EdgeUuid] = field(default_factory=list)
    duplicate_of: list[EdgeUuid] = field(default_factory=list)


@dataclass
class _Sides:
    """One edge's pointers to the group being rebound, re-resolved: the new bindings of those
    past the gate (`checked`), the ends they give the edge, the changed ones as event rows,
    and how many the gate skipped."""

    checked: list[Pointer] = field(default_factory=list)
    ends: tuple[EntityUuid | None, EntityUuid | None] = (None, None)
    bindings: list[dict[str, object]] = field(default_factory=list)
    skipped: int = 0


def _resolve_sides(
    edge: PointedEdge, group: str, matches: Mapping[str, Sequence[str]], applied_seq: int
) -> _Sides:
    result = _Sides(ends=(edge.source_uuid, edge.target_uuid))
    ends = list(result.ends)
    for index, side, pointer in ((0, "src", edge.src), (1, "dst", edge.dst)):
        if pointer is None or pointer["source_group_id"] != group:
            continue
        if gated(pointer, applied_seq):
            result.skipped += 1
            continue
        name = pointer["endpoint_name"]
        # an edge of the source group itself: its event lands one seq past `applied_seq`
        at = applied_seq + 1 if edge.group_id == group else applied_seq
        new = bind(group, name, matches.get(rules.name_key(name), ()), at)
        result.checked.append(new)
        resolved = new["resolved_uuid"]
        ends[index] = None if resolved is None else EntityUuid(resolved)
        if new != pointer:
            result.bindings.append({"edge_uuid": edge.uuid, "side": side, **new})
    result.ends = (ends[0], ends[1])
    return result


def gated(pointer: Pointer, applied_seq: int) -> bool:
    """The staleness gate (K-XG-018/021/022): only a bound pointer bound at or past the
    source group's applied seq is skipped; a broken one is always re-resolved."""
    bound_at = pointer["bound_at_seq"]
    return pointer["binding_state"] == "bound" and bound_at is not None and bound_at >= applied_seq


def decide_rebind(
    command: RebindPointers,
    edges: Sequence[PointedEdge],
    matches: Mapping[str, Sequence[str]],
    applied_seq: int,
    active_edge: Callable[[str, str, str, str], EdgeUuid | None],
) -> tuple[list[tuple[GroupId, PointersRebound]], RebindResult]:
    """Re-resolve every pointer of `edges` naming `command.source_group_id` (oldest edge
    first); `matches` maps an endpoint name key to the live entities it matches in the
    source group, `applied_seq` is that group's applied seq, `active_edge(group, source,
    predicate, target)` the group's active edge with those ends. One event per edge group
    that changed; a binding that would make a self-loop or a duplicate invalidates the edge
    instead (the merge's policy, K-XG-024..026)."""
    group = command.source_group_id
    counts = RebindResult(
        checked=0,
        bound=0,
        unbound=0,
        ambiguous=0,
        invalidated_self_loop=0,
        invalidated_duplicate=0,
        staleness_skipped=0,
    )
    changes: dict[GroupId, _GroupChanges] = {}
    claimed: dict[tuple[str, str, str, str], EdgeUuid] = {}  # keys this rebind made visible
    for edge in edges:
        sides = _resolve_sides(edge, group, matches, applied_seq)
        counts["staleness_skipped"] += sides.skipped
        if not sides.checked:
            continue
        counts["checked"] += len(sides.checked)
        if sides.bindings:
            changes.setdefault(edge.group_id, _GroupChanges()).bindings.extend(sides.bindings)
        collapse = None
        source, target = sides.ends
        if sides.ends != (edge.source_uuid, edge.target_uuid) and source and target:
            key = (source, edge.predicate, target)
            other = claimed.get((edge.group_id, *key)) or active_edge(edge.group_id, *key)
            collapse = collapsed(key, {key: other} if other and other != edge.uuid else {})
            if collapse is None:
                claimed[(edge.group_id, *key)] = edge.uuid
        if collapse is None:
            for pointer in sides.checked:
                counts[pointer["binding_state"]] += 1
            continue
        change = changes.setdefault(edge.group_id, _GroupChanges())
        if collapse.kept is None:
            counts["invalidated_self_loop"] += len(sides.checked)
            change.self_loops.append(edge.uuid)
        else:
            counts["invalidated_duplicate"] += len(sides.checked)
            change.duplicates.append(edge.uuid)
            change.duplicate_of.append(collapse.kept)
    events = [
        (
            edge_group,
            PointersRebound(
                command.now,
                group,
                change.bindings,
                tuple(change.self_loops),
                tuple(change.duplicates),
                tuple(change.duplicate_of),
            ),
        )
        for edge_group, change in sorted(changes.items())
    ]
    return events, counts


def decide_unbind_purged(
    source_group_id: GroupId, edges: Sequence[PointedEdge], now: datetime
) -> tuple[list[tuple[GroupId, PointersRebound]], dict[GroupId, int]]:
    """The purge of `source_group_id` left its pointers nothing to bind to: every pointer of
    `edges` naming it that is not unbound yet becomes unbound, in its edge's group (P-122: a
    foreign group's edge is never deleted, it is left unbound). Also the count per edge group
    (`unbound_impacts`)."""
    changes: dict[GroupId, list[dict[str, object]]] = {}
    for edge in edges:
        sides: tuple[tuple[Side, Pointer | None], ...] = (("src", edge.src), ("dst", edge.dst))
        for side, pointer in sides:
            if pointer is None or pointer["source_group_id"] != source_group_id:
                continue
            if pointer["binding_state"] == "unbound":
                continue
            unbound = bind(source_group_id, pointer["endpoint_name"], (), 0)
            changes.setdefault(edge.group_id, []).append(
                {"edge_uuid": edge.uuid, "side": side, **unbound}
            )
    events = [
        (group, PointersRebound(now, source_group_id, bindings, (), (), ()))
        for group, bindings in sorted(changes.items())
    ]
    return events, {group: len(bindings) for group, bindings in sorted(changes.items())}
