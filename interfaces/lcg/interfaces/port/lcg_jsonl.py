"""lcg-jsonl: lcg's own portable form of a group or session (docs/formats.md).

The first line is the header `{"format": "lcg-jsonl", "version": 1, "group_id", "as_of_seq",
"exported_at", "counts"}`; then one object per line, each with a `kind`: `entity`, `edge`
(its ends by entity name), `episode`, `concept` (with its type and canonization status) and
`concept_edge`. Import reads them all; a concept's canonization status is not written (the
session's canonization decides it again; lcg.interfaces.port.concepts). An image concept's
line has an optional `image` field, `{image_id, caption, vector: {values, contract}}` (its
unit vector and the embedding contract it is in; never image bytes, which lcg never holds):
a file without it is read as before. A file holding one is version 2 (otherwise 1), so an older
lcg refuses it at its header rather than midway through an import.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from lcg.interfaces.port.records import (
    Bad,
    BadField,
    Concept,
    ConceptEdge,
    Entity,
    Episode,
    ImageLine,
    Record,
    Relation,
    json_lines,
    text_field,
)
from lcg.interfaces.port.snapshot import Snapshot

FORMAT = "lcg-jsonl"
VERSION = 1
IMAGES_VERSION = 2  # a file holding image concepts: an lcg that cannot import them says so
VERSIONS = (VERSION, IMAGES_VERSION)
KINDS = ("entity", "edge", "episode", "concept", "concept_edge")


def read(paths: Sequence[Path]) -> Iterator[Record]:
    for path in paths:
        header_seen = False
        for where, item in json_lines(path):
            if isinstance(item, Bad):
                yield item
                continue
            try:
                if not header_seen:
                    _header(item, where)
                    header_seen = True
                    continue
                record = _record(item, where)
            except BadField as bad:
                yield Bad(bad.where, bad.message)
                continue
            yield record


def _header(item: Any, where: str) -> None:
    if not isinstance(item, dict) or item.get("format") != FORMAT:
        raise BadField(where, f'the first line must be the header {{"format": "{FORMAT}", ...}}')
    if item.get("version") not in VERSIONS:
        raise BadField(
            where,
            f"version {item.get('version')!r} is not one this lcg reads "
            f"({', '.join(map(str, VERSIONS))})",
        )


def _record(item: Any, where: str) -> Record:
    if not isinstance(item, dict):
        raise BadField(where, "must be a JSON object")
    kind = item.get("kind")
    if kind == "entity":
        labels = item.get("labels") or []
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            raise BadField(where, '"labels" must be a list of strings')
        return Entity(
            name=text_field(item, "name", where),
            labels=tuple(labels),
            summary=text_field(item, "summary", where, required=False),
            attributes=_object(item, where),
            where=where,
        )
    if kind == "edge":
        return Relation(
            source=text_field(item, "source", where),
            target=text_field(item, "target", where),
            predicate=text_field(item, "predicate", where),
            where=where,
            fact=_optional(item, "fact", where),
            relation_type=_optional(item, "relation_type", where),
            valid_at=_optional(item, "valid_at", where),
            attributes=_object(item, where),
        )
    if kind == "episode":
        return Episode(
            name=text_field(item, "name", where),
            body=text_field(item, "content", where),
            where=where,
            source=text_field(item, "source", where),
            source_description=text_field(item, "source_description", where, required=False),
            reference_time=_optional(item, "reference_time", where),
        )
    if kind == "concept":
        return Concept(
            key=text_field(item, "uuid", where),
            content=text_field(item, "content", where),
            concept_type=text_field(item, "concept_type", where),
            agent_id=text_field(item, "agent_id", where),
            where=where,
            image=_image(item, where),
        )
    if kind == "concept_edge":
        return ConceptEdge(
            kind=text_field(item, "type", where),
            source=text_field(item, "source", where),
            target=text_field(item, "target", where),
            where=where,
        )
    raise BadField(where, f'unknown "kind" {kind!r}: expected one of {", ".join(KINDS)}')


def _image(item: dict[str, Any], where: str) -> ImageLine | None:
    """A concept line's `image` field (absent or null: a text concept). Its content must be
    the caption plus [image:<image_id>], as lambo_derive_image stores it."""
    value = item.get("image")
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"image_id", "caption", "vector"}:
        raise BadField(where, '"image" must be an object {image_id, caption, vector}')
    vector = value["vector"]
    if not isinstance(vector, dict):
        raise BadField(where, '"image.vector" must be an object {values, contract}')
    image = ImageLine(
        image_id=text_field(value, "image_id", where),
        caption=text_field(value, "caption", where),
        vector=vector,
    )
    if item.get("content") != f"{image.caption} [image:{image.image_id}]":
        raise BadField(
            where, '"content" of an image concept must be its caption plus [image:<image_id>]'
        )
    return image


def _optional(item: dict[str, Any], key: str, where: str) -> str | None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise BadField(where, f'"{key}" must be a string or null')
    return value


def _object(item: dict[str, Any], where: str) -> dict[str, Any]:
    value = item.get("attributes") or {}
    if not isinstance(value, dict):
        raise BadField(where, '"attributes" must be a JSON object')
    return value


def write(snapshot: Snapshot, out: IO[bytes], now: dt.datetime) -> int:
    """The header, then entities, edges, episodes, concepts and concept edges; returns lines.
    A file holding image concepts is version 2, so an lcg that cannot import them refuses it
    at its header instead of failing at the image's write, midway."""
    images = snapshot.images()
    header = {
        "format": FORMAT,
        "version": IMAGES_VERSION if images else VERSION,
        "group_id": snapshot.group_id,
        "as_of_seq": snapshot.seq,
        "exported_at": now.isoformat(),
        "counts": snapshot.counts(),
    }
    out.write(orjson.dumps(header) + b"\n")
    names: dict[str, str] = {}
    written = 1
    for entity in snapshot.entities():
        names[entity.uuid] = entity.name
        _line(out, {"kind": "entity", **_fields(entity)})
        written += 1
    for edge in snapshot.edges():
        fields = _fields(edge)
        source, target = names[fields.pop("source_uuid")], names[fields.pop("target_uuid")]
        _line(out, {"kind": "edge", "source": source, "target": target, **fields})
        written += 1
    for episode in snapshot.episodes():
        _line(out, {"kind": "episode", **_fields(episode)})
        written += 1
    for concept in snapshot.concepts():
        fields = {"kind": "concept", **_fields(concept)}
        image = images.get(concept.uuid)
        if image is not None:  # what lambo_derive_image needs to re-create it (ADR 0095)
            vector = {"values": list(image.values), "contract": image.contract}
            fields["image"] = {
                "image_id": image.image_id,
                "caption": image.caption,
                "vector": vector,
            }
        _line(out, fields)
        written += 1
    for concept_edge in snapshot.concept_edges():
        _line(out, {"kind": "concept_edge", **_fields(concept_edge)})
        written += 1
    return written


def _fields(row: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dataclasses.asdict(row)
    return fields


def _line(out: IO[bytes], item: dict[str, Any]) -> None:
    out.write(orjson.dumps(item) + b"\n")
