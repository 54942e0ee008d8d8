"""An import: check every record, plan against the group's state, then write (ADR 0083).

Three streaming passes over the input: (1) every line read, entity names collected, bad lines
and duplicate names found; (2) each record checked against lcg's limits and relations against
the entities of the file and of the group, and compared with what the group already holds:
the plan (what `--dry-run` prints); (3) the writes, after a mark, each through an ordinary
write tool (knowledge_assert_entity, knowledge_assert_relationship, knowledge_add_episode),
here or through the service holding the workspace. A record whose content the group already
holds (its content key) is not written: a second import of the same file appends nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lcg.domain import rules
from lcg.domain.errors import InvalidParams
from lcg.interfaces.cli_caller import Caller
from lcg.interfaces.port.concepts import Concepts, Held
from lcg.interfaces.port.concepts import Writer as ConceptWriter
from lcg.interfaces.port.records import Bad, Concept, ConceptEdge, Entity, Episode, Record, Relation
from lcg.interfaces.port.snapshot import Snapshot

Records = Callable[[], Iterator[Record]]
Advance = Callable[[], None]
KINDS = ("entities", "relations", "episodes", "concepts", "concept_edges")


@dataclass
class Existing:
    """What the group holds, by content key: entity name -> content; edge key -> content."""

    entities: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], tuple[Any, ...]] = field(default_factory=dict)
    episodes: set[tuple[str, str]] = field(default_factory=set)
    concepts: Held = field(default_factory=Held)

    @classmethod
    def of(cls, snapshot: Snapshot) -> Existing:
        state = cls()
        names: dict[str, str] = {}
        for entity in snapshot.entities():
            key = rules.name_key(entity.name)
            names[entity.uuid] = key
            state.entities[key] = (entity.labels, entity.summary, entity.attributes)
        for edge in snapshot.edges():
            key3 = (names[edge.source_uuid], edge.predicate, names[edge.target_uuid])
            valid_at = None if edge.valid_at is None else rules.timestamp(edge.valid_at, "valid_at")
            state.edges[key3] = (edge.fact, edge.relation_type, valid_at, edge.attributes)
        for episode in snapshot.episodes():
            state.episodes.add((episode.name, _digest(episode.content)))
        state.concepts = Held.of(snapshot)
        return state


@dataclass
class Plan:
    """What an import would do: per kind, created / updated / unchanged; and the bad lines."""

    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {k: {"created": 0, "updated": 0, "unchanged": 0} for k in KINDS}
    )
    bad: list[Bad] = field(default_factory=list)
    concepts: Concepts = field(default_factory=lambda: Concepts(Held()))

    @property
    def writes(self) -> int:
        return sum(c["created"] + c["updated"] for c in self.counts.values())


def check(records: Records, existing: Existing) -> tuple[Plan, set[str]]:
    """Passes 1 and 2: the plan, and the `where` of every record to skip (bad ones)."""
    plan = Plan(concepts=Concepts(existing.concepts))
    names: dict[str, str] = {}  # name key -> where first seen
    skip: set[str] = set()
    for record in records():
        if isinstance(record, Bad):
            plan.bad.append(record)
        elif isinstance(record, Concept | Entity):
            duplicate = _first_sight(record, names, plan.concepts)
            if duplicate is not None:
                plan.bad.append(duplicate)
    skip.update(b.where for b in plan.bad)
    edges: dict[tuple[str, str, str], tuple[str, tuple[Any, ...]]] = {}
    episodes: set[tuple[str, str]] = set()
    for record in records():
        if isinstance(record, Bad) or record.where in skip:
            continue
        if isinstance(record, Concept | ConceptEdge):
            _check_concept(record, plan, skip)
            continue
        problem = _limits(record)
        repeated = isinstance(record, Relation) and _edge_key(record) in edges
        if problem is None and isinstance(record, Relation):
            problem = _ends(record, names, existing, edges)
        if problem is not None:
            plan.bad.append(Bad(record.where, problem))
            skip.add(record.where)
            continue
        if repeated:  # the same relation again: written once, by its first line
            plan.counts["relations"]["unchanged"] += 1
            continue
        kind, state = _compare(record, existing, episodes)
        plan.counts[kind][state] += 1
    return plan, skip


def _first_sight(record: Concept | Entity, names: dict[str, str], concepts: Concepts) -> Bad | None:
    """Pass 1: an entity's name or a concept's id, once."""
    if isinstance(record, Concept):
        return concepts.collect(record)
    key = rules.name_key(record.name)
    if key in names:
        message = f"duplicate entity name {record.name!r}: first at {names[key]}"
        return Bad(record.where, message)
    names[key] = record.where
    return None


def _check_concept(record: Concept | ConceptEdge, plan: Plan, skip: set[str]) -> None:
    problem = plan.concepts.check(record)
    if problem is not None:
        plan.bad.append(Bad(record.where, problem))
        skip.add(record.where)
        return
    kind = "concepts" if isinstance(record, Concept) else "concept_edges"
    plan.counts[kind][plan.concepts.compare(record)] += 1


def _ends(
    record: Relation,
    names: dict[str, str],
    existing: Existing,
    seen: dict[tuple[str, str, str], tuple[str, tuple[Any, ...]]],
) -> str | None:
    for end in (record.source, record.target):
        key = rules.name_key(end)
        if key not in names and key not in existing.entities:
            return f"relation to a missing entity {end!r}: neither in the input nor in the group"
    key3 = _edge_key(record)
    content = _edge_content(record)
    first = seen.get(key3)
    if first is not None and first[1] != content:
        return (
            f"duplicate relation {record.source!r} {record.predicate!r} {record.target!r} "
            f"with other content: first at {first[0]}"
        )
    seen.setdefault(key3, (record.where, content))
    return None


def _compare(record: Record, existing: Existing, episodes: set[tuple[str, str]]) -> tuple[str, str]:
    if isinstance(record, Entity):
        held = existing.entities.get(rules.name_key(record.name))
        if held is None:
            return "entities", "created"
        return "entities", "unchanged" if held == _entity_content(record) else "updated"
    if isinstance(record, Relation):
        held_edge = existing.edges.get(_edge_key(record))
        if held_edge is None:
            return "relations", "created"
        return "relations", "unchanged" if held_edge == _edge_content(record) else "updated"
    assert isinstance(record, Episode)
    key = (record.name, _digest(record.body))
    if key in existing.episodes or key in episodes:
        return "episodes", "unchanged"
    episodes.add(key)
    return "episodes", "created"


def _entity_content(record: Entity) -> tuple[Any, ...]:
    return (
        rules.labels(list(record.labels) or None),
        record.summary,
        json.loads(rules.attributes(record.attributes)),
    )


def _edge_key(record: Relation) -> tuple[str, str, str]:
    return (rules.name_key(record.source), record.predicate, rules.name_key(record.target))


def _edge_content(record: Relation) -> tuple[Any, ...]:
    valid_at = None if record.valid_at is None else rules.timestamp(record.valid_at, "valid_at")
    return (
        rules.edge_fact(record.fact, record.source, record.predicate, record.target),
        record.relation_type or None,
        valid_at,
        json.loads(rules.attributes(record.attributes)),
    )


def _limits(record: Record) -> str | None:
    """lcg's limits on a record, in the rule's words, before anything is written."""
    try:
        if isinstance(record, Entity):
            rules.text(record.name, "name", max_len=rules.MAX_NAME, required=True)
            if len(record.labels) > rules.MAX_LABELS:
                return f"labels: at most {rules.MAX_LABELS}"
            for label in record.labels:
                rules.text(label, "labels", max_len=rules.MAX_LABEL, required=True)
            rules.text(record.summary, "summary", max_len=rules.MAX_SUMMARY)
            rules.attributes(record.attributes)
        elif isinstance(record, Relation):
            rules.text(record.predicate, "predicate", max_len=rules.MAX_PREDICATE, required=True)
            rules.text(record.fact or "", "fact", max_len=rules.MAX_FACT)
            rules.text(record.relation_type or "", "relation_type", max_len=rules.MAX_RELATION_TYPE)
            if record.valid_at is not None:
                rules.timestamp(record.valid_at, "valid_at")
            rules.attributes(record.attributes)
        elif isinstance(record, Episode):
            rules.text(record.name, "name", max_len=rules.MAX_EPISODE_NAME, required=True)
            rules.text(record.body, "episode_body", max_len=rules.MAX_EPISODE_BODY, required=True)
            rules.text(
                record.source_description,
                "source_description",
                max_len=rules.MAX_SOURCE_DESCRIPTION,
            )
            if record.source not in rules.EPISODE_SOURCES:
                return f"source must be one of {', '.join(rules.EPISODE_SOURCES)}"
            if record.reference_time is not None:
                rules.timestamp(record.reference_time, "reference_time")
    except InvalidParams as error:
        return str(error)
    return None


def write(
    records: Records,
    skip: set[str],
    existing: Existing,
    caller: Caller,
    group_id: str,
    advance: Advance,
    concepts: Concepts | None = None,
) -> None:
    """Pass 3: each record the plan says changes, through its write tool, in input order;
    then the concepts (`concepts`: the plan's, when it writes any)."""
    episodes: set[tuple[str, str]] = set()
    for record in records():
        if isinstance(record, Bad | Concept | ConceptEdge) or record.where in skip:
            continue
        _, state = _compare(record, existing, episodes)
        if state == "unchanged":
            continue
        if isinstance(record, Entity):
            caller.call(
                "knowledge_assert_entity",
                {
                    "name": record.name,
                    "labels": list(record.labels) or None,
                    "summary": record.summary,
                    "attributes": record.attributes,
                    "group_id": group_id,
                },
            )
            existing.entities[rules.name_key(record.name)] = _entity_content(record)
        elif isinstance(record, Relation):
            caller.call(
                "knowledge_assert_relationship",
                {
                    "source_name": record.source,
                    "target_name": record.target,
                    "predicate": record.predicate,
                    "fact": record.fact,
                    "relation_type": record.relation_type,
                    "valid_at": record.valid_at,
                    "attributes": record.attributes,
                    "group_id": group_id,
                },
            )
            existing.edges[_edge_key(record)] = _edge_content(record)
        else:
            caller.call(
                "knowledge_add_episode",
                {
                    "name": record.name,
                    "episode_body": record.body,
                    "source": record.source,
                    "source_description": record.source_description,
                    "reference_time": record.reference_time,
                    "group_id": group_id,
                },
            )
        advance()
    if concepts is not None:
        ConceptWriter(concepts, caller, group_id, advance).write(records, skip)


def mark_name(now: dt.datetime, paths: Iterable[str]) -> str:
    """`import-20261205T211500Z-1a2b3c`: when, and a hash of the input's paths and the
    moment (two imports in one second get two names)."""
    key = _digest("\n".join([*paths, now.isoformat()]))
    return f"import-{now.strftime('%Y%m%dT%H%M%SZ')}-{key[:6]}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
