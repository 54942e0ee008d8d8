"""The corrections file (knowledge-corrections.yaml, P-125): its format, read into typed
corrections, and every problem found on the way, naming the correction and the field.

The file is parsed by the interface (YAML); this module checks the plain data it gives:

    corrections:
      - id: merge-countess          # required, unique: letters, digits, _ . -
        action: merge               # merge | rename | retype | set_summary | delete_edge
        group_id: liminis           # optional, default liminis
        canonical: Ada Lovelace     # an entity: its name in group_id, or {uuid: ...}
        aliases: [Countess of Lovelace, {uuid: ...}]
      - {id: engine-name, action: rename, entity: Engine, name: Analytical Engine}
      - {id: ada-person, action: retype, entity: Ada Lovelace, labels: [Person]}
      - {id: ada-summary, action: set_summary, entity: Ada Lovelace, summary: Mathematician.}
      - {id: drop-knew, action: delete_edge, edge: {source: Ada, predicate: KNEW, target: Bob}}
      - {id: drop-one, action: delete_edge, edge: {uuid: ...}}

docs/corrections.md is the user's description; ADR 0034 the reasons.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, TypedDict, get_args

from lcg.domain import rules
from lcg.domain.ids import DEFAULT_GROUP, GroupId

FILE_NAME: Final = "knowledge-corrections.yaml"
MAX_FILE_BYTES: Final = 4 * 1024 * 1024  # the socket frame's size: a file, not a dump
MAX_CORRECTIONS: Final = 10_000
MAX_ID: Final = 200
ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
ID_RULE: Final = "must be 1-200 letters, digits, _ . or -, starting with a letter or digit"

Action = Literal["merge", "rename", "retype", "set_summary", "delete_edge"]
ACTIONS: tuple[Action, ...] = get_args(Action)
_ARGUMENTS: dict[str, frozenset[str]] = {
    "merge": frozenset({"canonical", "aliases"}),
    "rename": frozenset({"entity", "name"}),
    "retype": frozenset({"entity", "labels"}),
    "set_summary": frozenset({"entity", "summary"}),
    "delete_edge": frozenset({"edge"}),
}
_COMMON = frozenset({"id", "action", "group_id", "note"})


class Issue(TypedDict):
    """A problem of one correction (None: of the file), the field it is in, and what is wrong."""

    correction: str | None
    field: str
    message: str


@dataclass(frozen=True, slots=True)
class EntityRef:
    """An entity as a correction names it: by uuid, or by name inside its group."""

    uuid: str | None = None
    name: str | None = None

    def __str__(self) -> str:
        return f"uuid {self.uuid}" if self.uuid is not None else repr(self.name)


@dataclass(frozen=True, slots=True)
class EdgeRef:
    """An edge by uuid, or the active edge (source, predicate, target) of the group."""

    uuid: str | None = None
    source: EntityRef | None = None
    predicate: str | None = None
    target: EntityRef | None = None


@dataclass(frozen=True, slots=True)
class Correction:
    """One entry of the file, checked: the fields its action uses are set."""

    id: str
    action: Action
    group_id: GroupId
    entity: EntityRef | None = None
    aliases: tuple[EntityRef, ...] = ()
    name: str | None = None
    labels: tuple[str, ...] = ()
    summary: str | None = None
    edge: EdgeRef | None = None


@dataclass
class Parsed:
    """The file's corrections that are well formed, how many entries it has, its issues."""

    corrections: list[Correction] = field(default_factory=list)
    total: int = 0
    issues: list[Issue] = field(default_factory=list)


class _Bad(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def parse(data: object) -> Parsed:
    """Check the file's data (what YAML gave) and read it into corrections."""
    parsed = Parsed()
    if data is None:
        return parsed  # an empty file: nothing to correct
    if not isinstance(data, Mapping) or "corrections" not in data:
        parsed.issues.append(
            Issue(
                correction=None,
                field="corrections",
                message="the file must be a mapping with a `corrections` list",
            )
        )
        return parsed
    extra = sorted(str(key) for key in data if key not in ("corrections", "version"))
    if extra:
        parsed.issues.append(
            Issue(
                correction=None,
                field=extra[0],
                message="is not a key of the file (it takes: corrections, version)",
            )
        )
    if data.get("version", 1) != 1:
        parsed.issues.append(
            Issue(correction=None, field="version", message="must be 1 (the only format)")
        )
    entries = data["corrections"]
    if entries is None:
        return parsed
    if not isinstance(entries, list):
        parsed.issues.append(Issue(correction=None, field="corrections", message="must be a list"))
        return parsed
    if len(entries) > MAX_CORRECTIONS:
        parsed.issues.append(
            Issue(
                correction=None,
                field="corrections",
                message=f"must hold at most {MAX_CORRECTIONS} corrections",
            )
        )
        return parsed
    parsed.total = len(entries)
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        label = f"corrections[{index}]"
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
            label = entry["id"]
        try:
            correction = _correction(entry)
        except _Bad as bad:
            parsed.issues.append(Issue(correction=label, field=bad.field, message=bad.message))
            continue
        if correction.id in seen:
            parsed.issues.append(
                Issue(correction=label, field="id", message="must be unique in the file")
            )
            continue
        seen.add(correction.id)
        parsed.corrections.append(correction)
    return parsed


def _correction(entry: object) -> Correction:
    if not isinstance(entry, Mapping):
        raise _Bad("corrections", "each correction must be a mapping")
    ident = _text(entry, "id", MAX_ID)
    if not ID_PATTERN.match(ident):
        raise _Bad("id", ID_RULE)
    action = entry.get("action")
    if action not in ACTIONS:
        raise _Bad("action", f"must be one of {', '.join(ACTIONS)} (got {action!r})")
    allowed = _COMMON | _ARGUMENTS[action]
    for key in entry:
        if key not in allowed:
            raise _Bad(
                str(key), f"is not an argument of {action} (it takes: {', '.join(sorted(allowed))})"
            )
    group = entry.get("group_id", DEFAULT_GROUP)
    if not isinstance(group, str) or not _is_group(group):
        raise _Bad("group_id", rules.GROUP_ID_RULE)
    base = Correction(id=ident, action=action, group_id=GroupId(group))
    if action == "merge":
        aliases = entry.get("aliases")
        if not isinstance(aliases, list) or not aliases:
            raise _Bad("aliases", "must be a non-empty list of entities (names or {uuid: ...})")
        refs = tuple(_entity(value, f"aliases[{i}]") for i, value in enumerate(aliases))
        return replace(base, entity=_entity(entry.get("canonical"), "canonical"), aliases=refs)
    if action == "delete_edge":
        return replace(base, edge=_edge(entry.get("edge")))
    entity = _entity(entry.get("entity"), "entity")
    if action == "rename":
        return replace(base, entity=entity, name=_text(entry, "name", rules.MAX_NAME).strip())
    if action == "retype":
        return replace(base, entity=entity, labels=_labels(entry.get("labels")))
    summary = entry.get("summary")
    if not isinstance(summary, str) or len(summary) > rules.MAX_SUMMARY:
        raise _Bad("summary", f"must be text of at most {rules.MAX_SUMMARY} characters")
    return replace(base, entity=entity, summary=summary)


_GROUP = re.compile(rules.GROUP_ID_PATTERN)


def _is_group(value: str) -> bool:
    return 0 < len(value) <= rules.MAX_GROUP_ID and _GROUP.match(value) is not None


def _labels(labels: object) -> tuple[str, ...]:
    if (
        not isinstance(labels, list)
        or not labels
        or len(labels) > rules.MAX_LABELS
        or not all(isinstance(v, str) and v.strip() and len(v) <= rules.MAX_LABEL for v in labels)
    ):
        raise _Bad(
            "labels",
            f"must be a list of 1-{rules.MAX_LABELS} labels, each 1-{rules.MAX_LABEL}"
            " characters, not blank",
        )
    return rules.labels(labels)


def _text(entry: Mapping[str, Any], key: str, max_len: int) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _Bad(key, rules.NOT_BLANK_RULE)
    if len(value) > max_len:
        raise _Bad(key, f"must be at most {max_len} characters")
    return value


def _entity(value: object, at: str) -> EntityRef:
    if isinstance(value, str) and value.strip() and len(value) <= rules.MAX_NAME:
        return EntityRef(name=value)
    if isinstance(value, Mapping) and set(value) == {"uuid"}:
        uuid = value["uuid"]
        if isinstance(uuid, str) and uuid.strip() and len(uuid) <= rules.MAX_UUID:
            return EntityRef(uuid=uuid)
    raise _Bad(at, "must name an entity: its name (text) or {uuid: ...}")


def _edge(value: object) -> EdgeRef:
    if isinstance(value, Mapping) and set(value) == {"uuid"}:
        uuid = value["uuid"]
        if isinstance(uuid, str) and uuid.strip() and len(uuid) <= rules.MAX_UUID:
            return EdgeRef(uuid=uuid)
    if isinstance(value, Mapping) and set(value) == {"source", "predicate", "target"}:
        predicate = value["predicate"]
        if isinstance(predicate, str) and predicate.strip():
            return EdgeRef(
                source=_entity(value["source"], "edge.source"),
                predicate=predicate,
                target=_entity(value["target"], "edge.target"),
            )
    raise _Bad("edge", "must be {uuid: ...} or {source: ..., predicate: ..., target: ...}")
