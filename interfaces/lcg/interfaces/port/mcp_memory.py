"""The official MCP memory server's JSONL (`@modelcontextprotocol/server-memory`).

One JSON object per line: `{"type":"entity","name","entityType","observations":[...]}` and
`{"type":"relation","from","to","relationType"}`. An entity becomes an lcg entity named
`name`, labelled `entityType`, its observations kept in order in `attributes.observations`
and, one per line, as its summary (what search reads). A relation becomes an edge whose
predicate is `relationType` (its fact the default 'FROM TYPE TO'). Writing goes the other
way; what the format cannot carry (labels after the first, other attributes, facts, validity
times, episodes, concepts) is left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from lcg.interfaces.port.records import (
    Bad,
    BadField,
    Entity,
    Record,
    Relation,
    json_lines,
    text_field,
)
from lcg.interfaces.port.snapshot import Snapshot

OBSERVATIONS = "observations"


def read(paths: Sequence[Path]) -> Iterator[Record]:
    for path in paths:
        for where, item in json_lines(path):
            if isinstance(item, Bad):
                yield item
                continue
            try:
                yield _record(item, where)
            except BadField as bad:
                yield Bad(bad.where, bad.message)


def _record(item: Any, where: str) -> Record:
    if not isinstance(item, dict):
        raise BadField(where, "must be a JSON object")
    kind = item.get("type")
    if kind == "entity":
        observations = item.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            raise BadField(where, '"observations" must be a list of strings')
        entity_type = item.get("entityType") or ""
        if not isinstance(entity_type, str):
            raise BadField(where, '"entityType" must be a string')
        return Entity(
            name=text_field(item, "name", where),
            labels=(entity_type,) if entity_type.strip() else (),
            summary="\n".join(observations),
            attributes={OBSERVATIONS: observations},
            where=where,
        )
    if kind == "relation":
        return Relation(
            source=text_field(item, "from", where),
            target=text_field(item, "to", where),
            predicate=text_field(item, "relationType", where),
            where=where,
        )
    raise BadField(where, f'unknown "type" {kind!r}: expected "entity" or "relation"')


def observations_of(summary: str, attributes: dict[str, Any]) -> list[str]:
    """An entity's observations: those it was imported with, else its summary as one."""
    kept = attributes.get(OBSERVATIONS)
    if isinstance(kept, list) and all(isinstance(o, str) for o in kept):
        return list(kept)
    return [summary] if summary else []


def write(snapshot: Snapshot, out: IO[bytes]) -> int:
    """Write the snapshot's entities then relations, as the server writes them; returns lines."""
    names: dict[str, str] = {}
    lines = 0
    for entity in snapshot.entities():
        names[entity.uuid] = entity.name
        line = {
            "type": "entity",
            "name": entity.name,
            "entityType": entity.labels[0] if entity.labels else "",
            "observations": observations_of(entity.summary, entity.attributes),
        }
        out.write(orjson.dumps(line) + b"\n")
        lines += 1
    for edge in snapshot.edges():
        line = {
            "type": "relation",
            "from": names[edge.source_uuid],
            "to": names[edge.target_uuid],
            "relationType": edge.predicate,
        }
        out.write(orjson.dumps(line) + b"\n")
        lines += 1
    return lines
