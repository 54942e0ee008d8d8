"""Neo4j: the bulk-import CSV pair and APOC-style JSON lines, read and written.

CSV (`neo4j-admin database import`): a nodes file whose header has an `:ID` column and a
`:LABEL` column (labels joined by `;`), a relationships file with `:START_ID`, `:END_ID` and
`:TYPE`. A node's `name` column is its lcg name (else its `title`, else its id), `summary`
its summary, `attributes` (JSON) and every other column its attributes (the id's own column,
`personId:ID`, too, as Neo4j keeps it); a relationship's `:TYPE` is the predicate, `fact`,
`relation_type`, `valid_at` and `attributes` columns are read when present. Typed headers
(`age:int`) keep the name before the colon. JSON lines (`apoc.export.json.all`):
`{"type":"node","id","labels","properties"}` and
`{"type":"relationship","label","properties","start":{"id"},"end":{"id"}}`. Node files are
read before relationship files, whatever order they are given in.

Id spaces, as neo4j-admin has them: a node id is unique within its space, `:ID(Movie-ID)`
(no parentheses: the one global space), and `:START_ID(User-ID)` / `:END_ID(Movie-ID)` name
the space each end is looked up in; so users 1, 2, 3 and movies 1, 2, 3 are six nodes. An
APOC file's ids are that export's own: each JSON file is a space of its own. An id twice in
one space is a bad line. A node with neither `name` nor `title` is named by its id, with
its space when it has one (`User-ID:1`), so nodes of two spaces never share a name.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from contextlib import closing
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
    text_lines,
)
from lcg.interfaces.port.snapshot import Snapshot

NODE_FIELDS = ("name", "summary", "attributes")
EDGE_FIELDS = ("fact", "relation_type", "valid_at", "attributes", "uuid", "created_at")
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
APOC_SPACE = "\0apoc:"  # an APOC file's id space: its path after this (no CSV space has \0)


Space = tuple[str, str]  # (id space, id): "" the global space, a path an APOC file's own
Ids = dict[Space, tuple[str, str]]  # -> (name, where); bounded by the nodes, not the file


def read(paths: Sequence[Path]) -> Iterator[Record]:
    ids: Ids = {}
    json_files = [p for p in paths if p.suffix.lower() in JSON_SUFFIXES]
    csv_files = [p for p in paths if p not in json_files]
    kinds = {path: _csv_kind(path) for path in csv_files}
    for path in json_files:
        yield from _apoc(path, ids)
    for path in [p for p in csv_files if kinds[p] == "nodes"]:
        yield from _csv_nodes(path, ids)
    for path in [p for p in csv_files if kinds[p] != "nodes"]:
        if kinds[path] == "relationships":
            yield from _csv_relationships(path, ids)
        else:
            yield Bad(f"{path}:1", "header has neither :ID (nodes) nor :START_ID (relationships)")


def _csv_kind(path: Path) -> str:
    """nodes, relationships or unknown, by the file's header line."""
    with closing(text_lines(path)) as lines:
        first = next(lines, None)
    if first is None or isinstance(first[1], Bad):
        return "unknown"
    header = [h.split("(", maxsplit=1)[0] for h in next(csv.reader([first[1]]), [])]
    if any(h.endswith(":START_ID") for h in header):
        return "relationships"
    if any(h.endswith(":ID") for h in header):
        return "nodes"
    return "unknown"


def _csv_rows(path: Path) -> Iterator[tuple[str, dict[str, str] | Bad]]:
    """Rows keyed by header name (typed headers cut off), with `file:line`. An id column's
    space is the value of its key with `()` after it (`:ID()`: `Movie-ID`, or "" for the
    global space); a named id column (`movieId:ID`) is a property too."""
    header: list[str] | None = None
    spaces: dict[str, str] = {}
    named: dict[str, str] = {}
    pending: list[str] = []
    start = 0
    for where, line in text_lines(path):
        if isinstance(line, Bad):
            yield where, line
            pending = []
            continue
        if not pending:
            start = int(where.rsplit(":", 1)[1])
        pending.append(line)
        text = "".join(pending)
        if text.count('"') % 2:  # a quoted field goes on over the next line
            continue
        pending = []
        row_where = f"{path}:{start}"
        try:
            row = next(csv.reader(io.StringIO(text), strict=True), [])
        except csv.Error as error:
            yield row_where, Bad(row_where, f"is not a CSV row: {error}")
            continue
        if not row:
            continue
        if header is None:
            header = [_column(h) for h in row]
            for raw, key in zip(row, header, strict=True):
                if key in (":ID", ":START_ID", ":END_ID"):
                    spaces[f"{key}()"] = _space(raw)
                    if key == ":ID" and not raw.startswith(":"):
                        named[raw.split(":", 1)[0]] = key
            continue
        if len(row) != len(header):
            yield row_where, Bad(row_where, f"has {len(row)} fields; the header has {len(header)}")
            continue
        fields = dict(zip(header, row, strict=True))
        fields.update({name: fields[key] for name, key in named.items()})
        yield row_where, {**fields, **spaces}


def _space(header: str) -> str:
    """`movieId:ID(Movie-ID)` -> `Movie-ID`; no parentheses: "" (the global space)."""
    if "(" not in header:
        return ""
    return header.split("(", maxsplit=1)[1].rstrip().removesuffix(")")


def _column(header: str) -> str:
    name = header.split("(", maxsplit=1)[0]
    if name.startswith(":"):
        return name
    if name.endswith((":ID", ":LABEL", ":START_ID", ":END_ID", ":TYPE")):
        return name[name.rindex(":") :]
    return name.split(":")[0]


def _csv_nodes(path: Path, ids: Ids) -> Iterator[Record]:
    for where, row in _csv_rows(path):
        if isinstance(row, Bad):
            yield row
            continue
        node_id = row.get(":ID", "")
        if not node_id:
            yield Bad(where, "the :ID field is empty")
            continue
        properties = {k: v for k, v in row.items() if not k.startswith(":")}
        labels = tuple(x for x in row.get(":LABEL", "").split(";") if x.strip())
        try:
            yield _node((row.get(":ID()", ""), node_id), labels, properties, ids, where)
        except BadField as bad:
            yield Bad(bad.where, bad.message)


def _node(
    key: Space, labels: tuple[str, ...], props: dict[str, Any], ids: Ids, where: str
) -> Entity:
    """A node as an entity, its id noted in its space (twice in one space: a bad line)."""
    first = ids.get(key)
    if first is not None:
        raise BadField(where, f"duplicate node id {key[1]!r}{_in(key[0])}: first at {first[1]}")
    fallback = f"{key[0]}:{key[1]}" if _in(key[0]) else key[1]
    entity = _entity(fallback, labels, props, where)
    ids[key] = (entity.name, where)
    return entity


def _in(space: str) -> str:
    """How a message names a CSV id space ("" for the global one and an APOC file's)."""
    return f" in id space {space!r}" if space and not space.startswith(APOC_SPACE) else ""


def _csv_relationships(path: Path, ids: Ids) -> Iterator[Record]:
    for where, row in _csv_rows(path):
        if isinstance(row, Bad):
            yield row
            continue
        properties = {k: v for k, v in row.items() if not k.startswith(":")}
        try:
            yield _relation(
                (row.get(":START_ID()", ""), row.get(":START_ID", "")),
                (row.get(":END_ID()", ""), row.get(":END_ID", "")),
                row.get(":TYPE", ""),
                properties,
                ids,
                where,
            )
        except BadField as bad:
            yield Bad(bad.where, bad.message)


def _entity(node_id: str, labels: tuple[str, ...], props: dict[str, Any], where: str) -> Entity:
    name = props.get("name") or props.get("title") or node_id
    if not isinstance(name, str):
        raise BadField(where, "the name property must be a string")
    attributes = _attributes(props.get("attributes"), where)
    attributes.update(
        {k: v for k, v in props.items() if k not in (*NODE_FIELDS, "uuid", "created_at")}
    )
    summary = props.get("summary") or ""
    return Entity(
        name=name, labels=labels, summary=str(summary), attributes=attributes, where=where
    )


def _relation(
    start: Space, end: Space, kind: str, props: dict[str, Any], ids: Ids, where: str
) -> Relation:
    if not kind:
        raise BadField(where, "the relationship type (:TYPE / label) is empty")
    for space, node_id in (start, end):
        if (space, node_id) not in ids:
            raise BadField(where, f"relationship to a missing node id {node_id!r}{_in(space)}")
    attributes = _attributes(props.get("attributes"), where)
    attributes.update({k: v for k, v in props.items() if k not in EDGE_FIELDS})
    return Relation(
        source=ids[start][0],
        target=ids[end][0],
        predicate=kind,
        where=where,
        fact=_text(props.get("fact")),
        relation_type=_text(props.get("relation_type")),
        valid_at=_text(props.get("valid_at")),
        attributes=attributes,
    )


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _attributes(text: Any, where: str) -> dict[str, Any]:
    if text in (None, ""):
        return {}
    if isinstance(text, dict):
        return dict(text)
    try:
        value = json.loads(str(text))
    except json.JSONDecodeError:
        raise BadField(where, "the attributes property must be a JSON object") from None
    if not isinstance(value, dict):
        raise BadField(where, "the attributes property must be a JSON object")
    return value


def _apoc(path: Path, ids: Ids) -> Iterator[Record]:
    space = f"{APOC_SPACE}{path}"  # an export's ids are its own
    relationships: list[tuple[str, dict[str, Any]]] = []
    for where, item in json_lines(path):
        if isinstance(item, Bad):
            yield item
            continue
        try:
            entity = _apoc_node(item, where, ids, space)
        except BadField as bad:
            yield Bad(bad.where, bad.message)
            continue
        if entity is None:
            relationships.append((where, item))  # after every node of the file
        else:
            yield entity
    for where, item in relationships:
        start, end = item.get("start") or {}, item.get("end") or {}
        props = item.get("properties") or {}
        try:
            yield _relation(
                (space, str(start.get("id", ""))),
                (space, str(end.get("id", ""))),
                str(item.get("label") or ""),
                props,
                ids,
                where,
            )
        except BadField as bad:
            yield Bad(bad.where, bad.message)


def _apoc_node(item: Any, where: str, ids: Ids, space: str) -> Entity | None:
    """A node line as an entity (its id noted); None for a relationship line."""
    if not isinstance(item, dict):
        raise BadField(where, "must be a JSON object")
    kind = item.get("type")
    props = item.get("properties") or {}
    if not isinstance(props, dict):
        raise BadField(where, '"properties" must be an object')
    if kind == "relationship":
        return None
    if kind != "node":
        raise BadField(where, f'unknown "type" {kind!r}: expected "node" or "relationship"')
    labels = item.get("labels") or []
    if not isinstance(labels, list):
        raise BadField(where, '"labels" must be a list')
    return _node((space, str(item.get("id", ""))), tuple(map(str, labels)), props, ids, where)


def write_csv(snapshot: Snapshot, folder: Path) -> dict[str, int]:
    """nodes.csv and relationships.csv in `folder`; returns the rows of each."""
    counts = {"nodes": 0, "relationships": 0}
    with (folder / "nodes.csv").open("w", encoding="utf-8", newline="") as handle:
        nodes = csv.writer(handle)
        nodes.writerow(["uuid:ID", "name", "summary", "attributes", "created_at", ":LABEL"])
        for e in snapshot.entities():
            nodes.writerow(
                [
                    e.uuid,
                    e.name,
                    e.summary,
                    json.dumps(e.attributes),
                    e.created_at,
                    ";".join(e.labels),
                ]
            )
            counts["nodes"] += 1
    with (folder / "relationships.csv").open("w", encoding="utf-8", newline="") as handle:
        edges = csv.writer(handle)
        edges.writerow(
            [
                ":START_ID",
                ":END_ID",
                ":TYPE",
                "uuid",
                "fact",
                "relation_type",
                "valid_at",
                "attributes",
                "created_at",
            ]
        )
        for r in snapshot.edges():
            edges.writerow(
                [
                    r.source_uuid,
                    r.target_uuid,
                    r.predicate,
                    r.uuid,
                    r.fact,
                    r.relation_type or "",
                    r.valid_at or "",
                    json.dumps(r.attributes),
                    r.created_at,
                ]
            )
            counts["relationships"] += 1
    return counts


def write_apoc(snapshot: Snapshot, out: IO[bytes]) -> dict[str, int]:
    """APOC-style JSON lines: nodes, then relationships; returns how many of each."""
    counts = {"nodes": 0, "relationships": 0}
    labels: dict[str, list[str]] = {}
    for e in snapshot.entities():
        labels[e.uuid] = list(e.labels)
        properties = {
            "name": e.name,
            "summary": e.summary,
            "attributes": json.dumps(e.attributes),
            "created_at": e.created_at,
        }
        node = {"type": "node", "id": e.uuid, "labels": list(e.labels), "properties": properties}
        out.write(orjson.dumps(node) + b"\n")
        counts["nodes"] += 1
    for r in snapshot.edges():
        properties = {
            "fact": r.fact,
            "attributes": json.dumps(r.attributes),
            "created_at": r.created_at,
        }
        if r.relation_type:
            properties["relation_type"] = r.relation_type
        if r.valid_at:
            properties["valid_at"] = r.valid_at
        line = {
            "type": "relationship",
            "id": r.uuid,
            "label": r.predicate,
            "properties": properties,
            "start": {"id": r.source_uuid, "labels": labels[r.source_uuid]},
            "end": {"id": r.target_uuid, "labels": labels[r.target_uuid]},
        }
        out.write(orjson.dumps(line) + b"\n")
        counts["relationships"] += 1
    return counts
