"""Curation deciders: which entities a merge folds together, and what becomes of their edges.

The merge policy is written once, here (K-XG-026: the self-loop and duplicate handling a
pointer rebind will reuse). Everything the handler loads arrives as values; nothing is read,
timed or minted in this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, TypedDict

from lcg.domain.commands import MergeEntities
from lcg.domain.deciders import EntityState
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.events import DomainEvent, EntitiesMerged, EntityRevised
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId


@dataclass(frozen=True, slots=True)
class EdgeEnds:
    """An active edge as a merge sees it: its group, endpoints and predicate."""

    uuid: EdgeUuid
    group_id: GroupId
    source: EntityUuid
    target: EntityUuid
    predicate: str


@dataclass(frozen=True, slots=True)
class MergeLookup:
    """What the handler read for a merge command: the canonical as named, each alias uuid's
    entity (None: unknown), each alias name's entities of the group (live ones and the
    tombstones carrying that name), and, for merge_all_by_name, the live entities sharing
    the canonical's name."""

    canonical: EntityState | None
    by_uuid: tuple[tuple[EntityUuid, EntityState | None], ...]
    by_name: tuple[tuple[str, tuple[EntityState, ...]], ...]
    same_name: tuple[EntityState, ...] = ()


class SkippedAlias(TypedDict):
    uuid: str
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class MergeTargets:
    """The canonical and the aliases a merge folds into it, in the order given."""

    canonical: EntityState
    aliases: tuple[EntityState, ...]
    skipped: tuple[SkippedAlias, ...]


def _canonical_field(command: MergeEntities) -> str:
    return "canonical_uuid" if command.canonical_uuid is not None else "canonical_name"


def resolve_merge(command: MergeEntities, lookup: MergeLookup) -> MergeTargets:
    """Check the named entities against the group (P-124); refusals name the field and rule.

    An alias already merged into this canonical is skipped (a merge re-run is a no-op)."""
    where = f"group {command.group_id!r}"
    named = command.canonical_uuid or command.canonical_name
    canonical = lookup.canonical
    field_name = _canonical_field(command)
    if canonical is None or canonical.group_id != command.group_id:
        raise NotFound(
            f"{field_name}: no entity {named!r} in {where}",
            field=field_name,
            rule="must name an entity of group_id",
        )
    if canonical.merged_into is not None:
        raise Conflict(
            f"{field_name}: entity {canonical.uuid} was itself merged into "
            f"{canonical.merged_into}; merge into that entity instead",
            field=field_name,
            rule="must not name a merged entity",
        )
    aliases: dict[EntityUuid, EntityState] = {}
    skipped: dict[EntityUuid, SkippedAlias] = {}

    def take(entity: EntityState, at: str) -> None:
        if entity.merged_into == canonical.uuid:
            reason = f"already merged into {canonical.uuid}"
            skipped.setdefault(
                entity.uuid, SkippedAlias(uuid=entity.uuid, name=entity.name, reason=reason)
            )
        elif entity.merged_into is not None:
            raise Conflict(
                f"{at}: entity {entity.uuid} was already merged into {entity.merged_into}",
                field=at,
                rule="must not name an entity merged into another one",
            )
        else:
            aliases.setdefault(entity.uuid, entity)

    for index, (uuid, entity) in enumerate(lookup.by_uuid):
        at = f"alias_uuids[{index}]"
        if uuid == canonical.uuid:
            raise InvalidParams(at, "must not name the canonical entity", uuid)
        if entity is None or entity.group_id != command.group_id:
            raise NotFound(
                f"{at}: no entity {uuid} in {where}",
                field=at,
                rule="must name an entity of group_id",
            )
        take(entity, at)
    for index, (name, found) in enumerate(lookup.by_name):
        at = f"alias_names[{index}]"
        others = [e for e in found if e.uuid != canonical.uuid and e.group_id == command.group_id]
        live = [e for e in others if e.merged_into is None]
        if not others:
            if found:
                raise InvalidParams(at, "must not name the canonical entity", name)
            raise NotFound(
                f"{at}: no entity named {name!r} in {where}",
                field=at,
                rule="must name an entity of group_id",
            )
        # Without merge_all_by_name a name stands for its oldest live entity, as elsewhere.
        for entity in (live if command.merge_all_by_name else live[:1]) or others[:1]:
            take(entity, at)
    for entity in lookup.same_name:
        if entity.uuid != canonical.uuid and entity.group_id == command.group_id:
            take(entity, "merge_all_by_name")
    return MergeTargets(canonical, tuple(aliases.values()), tuple(skipped.values()))


class AliasPlan(TypedDict):
    """One alias of a merge plan (P-124): its in-group active edges, how many of them collapse
    (self-loops and duplicates) and the other groups' edges left pointing at it."""

    uuid: str
    name: str
    active_edges: int
    duplicate_edges: int
    foreign_edges_skipped: int


class MergePlan(TypedDict):
    aliases: list[AliasPlan]
    total_edges_rewritten: int
    total_edges_collapsed: int
    total_foreign_edges_skipped: int


@dataclass(frozen=True, slots=True)
class MergeDecision:
    """The merge's events and its plan; the events are empty when nothing is to merge."""

    events: tuple[DomainEvent, ...]
    plan: MergePlan
    rewritten: tuple[EdgeUuid, ...] = ()
    collapsed: tuple[EdgeUuid, ...] = ()
    foreign: tuple[EdgeUuid, ...] = ()
    merged: tuple[EntityUuid, ...] = field(default=())


EdgeKey = tuple[str, str, str]  # (source, predicate, target) of a directed edge


@dataclass(frozen=True, slots=True)
class Collapse:
    """An edge that must be invalidated: a self-loop, or a duplicate of the `kept` edge."""

    kind: Literal["self_loop", "duplicate"]
    kept: EdgeUuid | None = None


def collapsed(key: EdgeKey, kept: Mapping[EdgeKey, EdgeUuid]) -> Collapse | None:
    """What becomes of an edge whose ends would now be `key`: a self-loop when both ends are
    one entity, a duplicate of the kept edge when an active directed edge already has this
    key, None when the edge stands. The one policy of merges and of pointer rebinds
    (K-XG-026)."""
    if key[0] == key[2]:
        return Collapse("self_loop")
    other = kept.get(key)
    return None if other is None else Collapse("duplicate", other)


def decide_merge(
    command: MergeEntities, targets: MergeTargets, edges: Sequence[EdgeEnds]
) -> MergeDecision:
    """Rewrite the aliases' edges to the canonical (P-124).

    `edges` are the active edges touching the canonical or an alias, in any group, oldest
    first. An edge of another group is never rewritten (foreign). An in-group edge whose ends
    both become the canonical is a self-loop, and one that would repeat an active directed
    edge (same source, predicate, target) is a duplicate: both are invalidated, and a
    duplicate's kept edge is the older one (the canonical's own edges come first)."""
    canonical = targets.canonical.uuid
    order = {alias.uuid: index for index, alias in enumerate(targets.aliases)}

    def mapped(uuid: EntityUuid) -> EntityUuid:
        return canonical if uuid in order else uuid

    kept: dict[EdgeKey, EdgeUuid] = {
        (e.source, e.predicate, e.target): e.uuid
        for e in reversed(edges)  # the oldest wins a key
        if e.group_id == command.group_id and e.source not in order and e.target not in order
    }
    per_alias = [[0, 0, 0] for _ in targets.aliases]  # active, collapsed, foreign
    rewritten: list[EdgeUuid] = []
    self_loops: list[EdgeUuid] = []
    duplicates: list[EdgeUuid] = []
    duplicate_of: list[EdgeUuid] = []
    foreign: list[EdgeUuid] = []
    for edge in edges:
        owners = [order[u] for u in (edge.source, edge.target) if u in order]
        if not owners:
            continue
        counts = per_alias[min(owners)]
        if edge.group_id != command.group_id:
            counts[2] += 1
            foreign.append(edge.uuid)
            continue
        counts[0] += 1
        key = (mapped(edge.source), edge.predicate, mapped(edge.target))
        collapse = collapsed(key, kept)
        if collapse is not None and collapse.kept is None:
            counts[1] += 1
            self_loops.append(edge.uuid)
        elif collapse is not None and collapse.kept is not None:
            counts[1] += 1
            duplicates.append(edge.uuid)
            duplicate_of.append(collapse.kept)
        else:
            kept[key] = edge.uuid
            rewritten.append(edge.uuid)
    plan = MergePlan(
        aliases=[
            AliasPlan(
                uuid=alias.uuid,
                name=alias.name,
                active_edges=active,
                duplicate_edges=collapsed,
                foreign_edges_skipped=skipped,
            )
            for alias, (active, collapsed, skipped) in zip(targets.aliases, per_alias, strict=True)
        ],
        total_edges_rewritten=len(rewritten),
        total_edges_collapsed=len(self_loops) + len(duplicates),
        total_foreign_edges_skipped=len(foreign),
    )
    if not targets.aliases:
        return MergeDecision((), plan)
    event = EntitiesMerged(
        command.now,
        canonical,
        tuple(alias.uuid for alias in targets.aliases),
        tuple(rewritten),
        tuple(self_loops),
        tuple(duplicates),
        tuple(duplicate_of),
        tuple(foreign),
    )
    return MergeDecision(
        (event,),
        plan,
        tuple(rewritten),
        (*self_loops, *duplicates),
        tuple(foreign),
        tuple(alias.uuid for alias in targets.aliases),
    )


def decide_revision(
    now: datetime,
    entity: EntityState,
    *,
    name: str | None = None,
    labels: tuple[str, ...] | None = None,
    summary: str | None = None,
    clash: EntityState | None = None,
) -> tuple[DomainEvent, ...]:
    """A correction's rename, retype or new summary of one entity: the other fields are kept;
    no event when nothing changes (ADR 0021). `clash` is the live entity already carrying the
    new name, if any."""
    if clash is not None and clash.uuid != entity.uuid:
        raise Conflict(
            f"name: {name!r} already names entity {clash.uuid}; merge the two instead",
            field="name",
            rule="must not rename onto another entity's name",
        )
    current = (entity.name, entity.labels or ("Entity",), entity.summary or "")
    wanted = (
        entity.name if name is None else name,
        current[1] if labels is None else labels,
        current[2] if summary is None else summary,
    )
    if wanted == current:
        return ()
    return (
        EntityRevised(now, entity.uuid, wanted[0], wanted[1], wanted[2], entity.attributes or "{}"),
    )
