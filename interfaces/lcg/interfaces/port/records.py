"""What every format reads into and writes from: entities, relations, episodes, concepts.

A reader yields these one at a time (a file is streamed, never held whole), each with `where`,
the file and line it came from, so a problem found later still names its line. A line that
cannot be read becomes a `Bad` record: the import decides whether it stops everything
(the default) or is skipped and listed (`--skip-bad`).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Format = Literal["mcp-memory", "basic-memory", "neo4j", "lcg-jsonl"]
FORMATS: tuple[Format, ...] = ("mcp-memory", "basic-memory", "neo4j", "lcg-jsonl")


@dataclass(frozen=True, slots=True)
class Entity:
    name: str
    labels: tuple[str, ...]
    summary: str
    attributes: dict[str, Any]
    where: str


@dataclass(frozen=True, slots=True)
class Relation:
    source: str  # entity names, resolved in the group
    target: str
    predicate: str
    where: str
    fact: str | None = None
    relation_type: str | None = None
    valid_at: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Episode:
    name: str
    body: str
    where: str
    source: str = "text"
    source_description: str = ""
    reference_time: str | None = None


@dataclass(frozen=True, slots=True)
class ImageLine:
    """An image concept's `image` field (lcg-jsonl, ADR 0095): what lambo_derive_image needs
    to re-create it. `vector` is `{values, contract}` as sent, checked by the import."""

    image_id: str
    caption: str
    vector: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Concept:
    """A memory concept (lcg-jsonl): `key` is its id in the file, which its edges name; an
    image concept has `image`, and its content is the caption plus [image:<image_id>]."""

    key: str
    content: str
    concept_type: str
    agent_id: str
    where: str
    image: ImageLine | None = None


@dataclass(frozen=True, slots=True)
class ConceptEdge:
    """A memory edge between two concepts of the file, by their ids in it."""

    kind: str  # depends_on, contradicts, parent_of, produces, modifies
    source: str
    target: str
    where: str


@dataclass(frozen=True, slots=True)
class Bad:
    """A line (or file) that cannot be imported, and why."""

    where: str
    message: str


Record = Entity | Relation | Episode | Concept | ConceptEdge | Bad


class PortError(Exception):
    """The input as a whole cannot be read (a missing file, a path outside the folder)."""


def json_lines(path: Path) -> Iterator[tuple[str, Any]]:
    """Each non-blank line of a JSON-lines file parsed, with its `file:line`; a line that is
    not JSON, or not UTF-8, yields (where, Bad). Streamed line by line (bounded memory)."""
    for where, line in text_lines(path):
        if isinstance(line, Bad):
            yield where, line
        elif line.strip():
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as error:
                yield where, Bad(where, f"is not JSON: {error.msg} (column {error.colno})")


def text_lines(path: Path) -> Generator[tuple[str, str | Bad], None, None]:
    """Each line of a text file decoded as UTF-8 (a leading BOM skipped), with its
    `file:line`; a line that is not UTF-8 is a Bad naming the byte, and the file's other
    lines still come (so --skip-bad can go on)."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise PortError(f"{path}: cannot be read ({error.strerror})") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            where = f"{path}:{number}"
            line = raw[3:] if number == 1 and raw.startswith(b"\xef\xbb\xbf") else raw
            try:
                yield where, line.decode("utf-8")
            except UnicodeDecodeError as error:
                yield (
                    where,
                    Bad(
                        where,
                        f"is not UTF-8 text (byte 0x{line[error.start]:02x} at column "
                        f"{error.start + 1}); convert the file to UTF-8",
                    ),
                )


def text_field(item: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    """A string field of a JSON object; a missing or non-string one raises BadField."""
    value = item.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise BadField(where, f'"{key}" must be a non-empty string')
    return value


class BadField(Exception):
    """A field of a line breaks a rule; becomes a Bad record."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where = where
        self.message = message
