"""The ontology: the entity and relation types a group declares, checked from parsed YAML.

A file (`.lcg/ontology.yaml`, or `.lcg/ontology/<group>.yaml` for one group: P-018) holds
`entity_types` (name, description, aliases) and `relation_types` (name, description,
aliases, keywords). `parse` takes the data YAML gave and either returns an Ontology or raises
OntologyInvalid listing every problem, each naming the file, the entry and the rule. Reading
the file is the interfaces' job; nothing here does I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from lcg.domain.errors import DomainError

UNCLASSIFIED: Final = "UNCLASSIFIED"  # the sentinel an abstention writes (K-RT-016, K-RT-034)
MAX_TYPES: Final = 1_000  # per kind: a menu an LLM prompt can carry
MAX_NAME: Final = 128
MAX_DESCRIPTION: Final = 2_000
MAX_TERMS: Final = 100  # aliases or keywords of one entry
TYPE_NAME_PATTERN: Final = r"^[A-Za-z][A-Za-z0-9_]*$"
TYPE_NAME_RULE: Final = "must start with a letter and hold only letters, digits and _"
_TYPE_NAME = re.compile(TYPE_NAME_PATTERN)
TOP_KEYS: Final = frozenset({"entity_types", "relation_types"})
ENTITY_KEYS: Final = frozenset({"name", "description", "aliases"})
RELATION_KEYS: Final = frozenset({"name", "description", "aliases", "keywords"})


@dataclass(frozen=True, slots=True)
class EntityType:
    name: str
    description: str = ""
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RelationType:
    name: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Ontology:
    """A resolved ontology; `source` names the file it came from ("" for none)."""

    entity_types: tuple[EntityType, ...] = ()
    relation_types: tuple[RelationType, ...] = ()
    source: str = ""

    @property
    def relation_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.relation_types)

    @property
    def entity_names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.entity_types)


EMPTY: Final = Ontology()


@dataclass(frozen=True, slots=True)
class Problem:
    """One broken rule: where (file, entry such as `relation_types[2] (HOLDS)`) and what."""

    file: str
    entry: str
    rule: str

    def __str__(self) -> str:
        return f"{self.file}: {self.entry}: {self.rule}"


class OntologyInvalid(DomainError):
    """The ontology file breaks rules; every problem is listed, none of the file is used."""

    def __init__(self, problems: tuple[Problem, ...]) -> None:
        first = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(
            f"ontology: {first}{more}", field="ontology", rule="must be a valid ontology file"
        )
        self.problems = problems


@dataclass
class _Checker:
    file: str
    problems: list[Problem] = field(default_factory=list)

    def fail(self, entry: str, rule: str) -> None:
        self.problems.append(Problem(self.file, entry, rule))

    def text(self, entry: str, key: str, value: object, limit: int, *, required: bool) -> str:
        if value is None and not required:
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            self.fail(entry, f"{key} must be a {'non-empty ' if required else ''}string")
            return ""
        if len(value) > limit:
            self.fail(entry, f"{key} must be at most {limit} characters")
        return value.strip()

    def terms(self, entry: str, key: str, value: object) -> tuple[str, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or len(value) > MAX_TERMS:
            self.fail(entry, f"{key} must be a list of at most {MAX_TERMS} strings")
            return ()
        good = tuple(v.strip() for v in value if isinstance(v, str) and v.strip())
        if len(good) != len(value):
            self.fail(entry, f"{key} must hold only non-empty strings")
        if any(len(v) > MAX_NAME for v in good):
            self.fail(entry, f"{key} entries must be at most {MAX_NAME} characters")
        return tuple(dict.fromkeys(good))

    def entries(self, kind: str, value: object, keys: frozenset[str]) -> list[dict[str, object]]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(kind, "must be a list of entries")
            return []
        if len(value) > MAX_TYPES:
            self.fail(kind, f"must hold at most {MAX_TYPES} entries")
        kept: list[dict[str, object]] = []
        for index, item in enumerate(value):
            entry = f"{kind}[{index}]"
            if not isinstance(item, dict):
                self.fail(entry, "must be a mapping with name and description")
                continue
            name = item.get("name")
            where = f"{entry} ({name})" if isinstance(name, str) else entry
            unknown = sorted(str(k) for k in item if k not in keys)
            if unknown:
                allowed = ", ".join(sorted(keys))
                self.fail(where, f"unknown key(s) {', '.join(unknown)}; allowed: {allowed}")
            kept.append({"_entry": where, **{str(k): v for k, v in item.items()}})
        return kept

    def name(self, entry: str, value: object, seen: dict[str, str]) -> str:
        name = self.text(entry, "name", value, MAX_NAME, required=True)
        if name and not _TYPE_NAME.match(name):
            self.fail(entry, f"name {TYPE_NAME_RULE}")
        if name == UNCLASSIFIED:
            self.fail(entry, f"name {UNCLASSIFIED} is reserved for abstentions")
        if name and name.casefold() in seen:
            self.fail(entry, f"name repeats {seen[name.casefold()]}")
        seen.setdefault(name.casefold(), entry)
        return name


def parse(data: object, file: str) -> Ontology:
    """The ontology the parsed YAML `data` declares; `None` (an empty file) declares none.
    Raises OntologyInvalid naming every problem."""
    check = _Checker(file)
    if data is None:
        return Ontology(source=file)
    if not isinstance(data, dict):
        check.fail("(top level)", "must be a mapping with entity_types and relation_types")
        raise OntologyInvalid(tuple(check.problems))
    unknown = sorted(str(k) for k in data if k not in TOP_KEYS)
    if unknown:
        check.fail(
            "(top level)",
            f"unknown key(s) {', '.join(unknown)}; allowed: entity_types, relation_types",
        )
    entity_types = _entity_types(check, data.get("entity_types"))
    relation_types = _relation_types(check, data.get("relation_types"))
    if check.problems:
        raise OntologyInvalid(tuple(check.problems))
    return Ontology(entity_types, relation_types, file)


def _entity_types(check: _Checker, value: object) -> tuple[EntityType, ...]:
    seen: dict[str, str] = {}
    types: list[EntityType] = []
    for item in check.entries("entity_types", value, ENTITY_KEYS):
        entry = str(item["_entry"])
        name = check.name(entry, item.get("name"), seen)
        description = check.text(
            entry, "description", item.get("description"), MAX_DESCRIPTION, required=False
        )
        types.append(
            EntityType(name, description, check.terms(entry, "aliases", item.get("aliases")))
        )
    return tuple(types)


def _relation_types(check: _Checker, value: object) -> tuple[RelationType, ...]:
    seen: dict[str, str] = {}
    types: list[RelationType] = []
    for item in check.entries("relation_types", value, RELATION_KEYS):
        entry = str(item["_entry"])
        name = check.name(entry, item.get("name"), seen)
        description = check.text(
            entry, "description", item.get("description"), MAX_DESCRIPTION, required=True
        )
        types.append(
            RelationType(
                name,
                description,
                check.terms(entry, "aliases", item.get("aliases")),
                check.terms(entry, "keywords", item.get("keywords")),
            )
        )
    return tuple(types)


def as_data(ontology: Ontology) -> dict[str, object]:
    """The ontology as plain data (what `lcg ontology show` prints)."""
    return {
        "source": ontology.source,
        "entity_types": [
            {"name": t.name, "description": t.description, "aliases": list(t.aliases)}
            for t in ontology.entity_types
        ],
        "relation_types": [
            {
                "name": t.name,
                "description": t.description,
                "aliases": list(t.aliases),
                "keywords": list(t.keywords),
            }
            for t in ontology.relation_types
        ],
    }
