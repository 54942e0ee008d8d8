"""basic-memory: a folder of Markdown notes, read and written.

A note is front matter (`title`, `type`, `permalink`, `tags`, ...), a body, observations
`- [category] text #tag (context)` and relations `- relation_type [[Target]]`. Each note
becomes an episode (its whole text; source_description its path in the folder) and an entity
named by its title (labels: its `type`; summary: its observations, one per line; attributes:
the observations as {category, text} and the front matter). Each relation, and each link in
prose (type `links_to`), read as basic-memory reads them (lcg.interfaces.port.wiki_links),
becomes an edge from the note's entity to the entity titled Target. Every file is read from
inside the folder given: a symbolic link, or a path that leaves the folder, is refused by
name.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from lcg.domain.errors import InvalidParams
from lcg.interfaces.markdown_chunks import front_matter
from lcg.interfaces.port.records import Bad, Entity, Episode, PortError, Record, Relation
from lcg.interfaces.port.snapshot import Snapshot
from lcg.interfaces.port.wiki_links import links

OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\]\n]+)\]\s+(.*\S)\s*$")
EMPTY_OBSERVATION = re.compile(r"^\s*[-*]\s+\[([^\]\n]*)\]\s*$")
NOTE_SUFFIXES = (".md", ".markdown")


@dataclass(frozen=True, slots=True)
class NoteFile:
    path: Path
    relative: str


def notes(paths: Sequence[Path]) -> list[NoteFile | Bad]:
    """The notes under the given folders (or single .md files), each checked to be a regular
    file inside its folder; a symbolic link or a path with `..` is a Bad named by path."""
    found: list[NoteFile | Bad] = []
    for given in paths:
        if ".." in given.parts:
            raise PortError(f"{given}: a path with '..' is refused; name the folder itself")
        if given.is_symlink():
            raise PortError(f"{given}: a symbolic link is refused; name the folder itself")
        if given.is_file():
            found.append(NoteFile(given, given.name))
            continue
        if not given.is_dir():
            raise PortError(f"{given}: is not a folder of notes")
        root = given.resolve()
        for folder, dirs, files in os.walk(given, followlinks=False):
            here = Path(folder)
            for name in sorted(dirs):
                if (here / name).is_symlink():
                    found.append(
                        Bad(
                            str(here / name),
                            "a symbolic link: refused (outside the folder it may be), not followed",
                        )
                    )
            dirs[:] = sorted(d for d in dirs if not (here / d).is_symlink() and d[0] != ".")
            for name in sorted(files):
                path = here / name
                if path.suffix.lower() not in NOTE_SUFFIXES:
                    continue
                if path.is_symlink() or not path.resolve().is_relative_to(root):
                    found.append(
                        Bad(
                            str(path),
                            "a symbolic link: refused (outside the folder it may be), not read",
                        )
                    )
                    continue
                found.append(NoteFile(path, path.relative_to(given).as_posix()))
    return found


def read(files: Sequence[NoteFile | Bad]) -> Iterator[Record]:
    relations: list[Relation] = []
    for note in files:
        if isinstance(note, Bad):
            yield note
            continue
        try:
            text = note.path.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            line = note.path.read_bytes()[: error.start].count(b"\n") + 1
            yield Bad(f"{note.path}:{line}", f"is not UTF-8 text ({error.reason})")
            continue
        except OSError as error:
            yield Bad(str(note.path), f"cannot be read ({error.strerror})")
            continue
        records = list(_note(note, text.replace("\r\n", "\n")))
        for record in records:
            if isinstance(record, Relation):
                relations.append(record)  # after every note's entity: links point forward
            else:
                yield record
    yield from relations


def _note(note: NoteFile, text: str) -> Iterator[Record]:
    where = f"{note.path}:1"
    try:
        meta, body = front_matter(text, str(note.path))
    except InvalidParams as error:
        yield Bad(where, str(error))
        return
    meta = {k: _jsonable(v) for k, v in meta.items()}
    offset = text[: len(text) - len(body)].count("\n")
    title = str(meta.get("title") or _heading(body) or note.path.stem).strip()
    observations: list[dict[str, str]] = []
    for number, line in enumerate(body.split("\n"), start=offset + 1):
        at = f"{note.path}:{number}"
        if EMPTY_OBSERVATION.match(line):
            yield Bad(at, "an observation with no text after its [category]")
        elif match := OBSERVATION.match(line):
            observations.append({"category": match[1].strip(), "text": match[2]})
    for link in links(body):
        at = f"{note.path}:{offset + 1 + link.line}"
        yield Relation(source=title, target=link.target, predicate=link.predicate, where=at)
    kind = str(meta.get("type") or "note")
    yield Entity(
        name=title,
        labels=(kind,),
        summary="\n".join(f"[{o['category']}] {o['text']}" for o in observations),
        attributes={"observations": observations, "front_matter": meta},
        where=where,
    )
    date = meta.get("date") or meta.get("created")
    yield Episode(
        name=title,
        body=text,
        where=str(note.path),  # the whole file; its entity is `file:1`
        source_description=note.relative,
        reference_time=str(date) if isinstance(date, str) and date else None,
    )


def _heading(body: str) -> str | None:
    for line in body.split("\n"):
        if line.startswith("# "):
            return line[2:].strip()
    return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


SAFE = re.compile(r"[^A-Za-z0-9 _.-]+")


def file_name(title: str, taken: set[str]) -> str:
    """A note's file name from its title: letters, digits, space, `_ . -` only, never
    starting with a dot (so never `..`), unique in the folder."""
    stem = SAFE.sub("-", title).strip(" .-")[:120] or "note"
    name, n = f"{stem}.md", 1
    while name.lower() in taken:
        n += 1
        name = f"{stem}-{n}.md"
    taken.add(name.lower())
    return name


def write(snapshot: Snapshot, folder: Path) -> dict[str, int]:
    """One note per entity: front matter, observations, relations; returns the notes."""
    names: dict[str, str] = {e.uuid: e.name for e in snapshot.entities()}
    outgoing: dict[str, list[tuple[str, str]]] = {}
    for edge in snapshot.edges():
        outgoing.setdefault(edge.source_uuid, []).append((edge.predicate, names[edge.target_uuid]))
    taken: set[str] = set()
    count = 0
    for entity in snapshot.entities():
        meta = entity.attributes.get("front_matter")
        front = dict(meta) if isinstance(meta, dict) else {}
        front["title"] = entity.name
        front.setdefault("type", entity.labels[0] if entity.labels else "note")
        lines = [
            "---",
            yaml.safe_dump(front, sort_keys=False, allow_unicode=True).rstrip(),
            "---",
            "",
            f"# {entity.name}",
            "",
            "## Observations",
        ]
        for category, text in _observations(entity.summary, entity.attributes):
            lines.append(f"- [{category}] {text}")
        lines += ["", "## Relations"]
        lines += [
            f"- {predicate} [[{target}]]" for predicate, target in outgoing.get(entity.uuid, [])
        ]
        path = folder / file_name(entity.name, taken)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        count += 1
    return {"notes": count}


def _observations(summary: str, attributes: dict[str, Any]) -> list[tuple[str, str]]:
    kept = attributes.get("observations")
    if isinstance(kept, list) and all(
        isinstance(o, dict) and {"category", "text"} <= o.keys() for o in kept
    ):
        return [(str(o["category"]), str(o["text"])) for o in kept]
    if isinstance(kept, list) and all(isinstance(o, str) for o in kept):
        return [("note", o) for o in kept if o.strip()]
    return [("note", line) for line in summary.split("\n") if line.strip()]
