"""What every model-backed extractor asks and how its answer is read (issue 14, ADR 0033).

One prompt and one JSON schema for every adapter (an OpenAI-compatible endpoint, the MCP
client's own model through sampling): the model answers
`{"entities": [{"name", "type", "summary"}], "facts": [{"source", "target", "predicate",
"fact", "relation_type", "valid_at"}]}`, which `parse_extraction` checks field by field and
turns into an Extraction. A malformed answer is refused whole, naming what was wrong: nothing
is written from it.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final

from lcg.domain import rules
from lcg.domain.errors import DomainError, ExtractorFailed
from lcg.domain.extraction import ExtractedEdge, ExtractedEntity, Extraction

MAX_ENTITIES: Final = 200
MAX_FACTS: Final = 400

SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["entities", "facts"],
    "properties": {
        "entities": {
            "type": "array",
            "maxItems": MAX_ENTITIES,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "type", "summary"],
                "properties": {
                    "name": {"type": "string"},
                    "type": {"type": "string"},
                    "summary": {"type": "string"},
                },
            },
        },
        "facts": {
            "type": "array",
            "maxItems": MAX_FACTS,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["source", "target", "predicate", "fact"],
                "properties": {
                    "source": {"type": "string"},
                    "target": {"type": "string"},
                    "predicate": {"type": "string"},
                    "fact": {"type": "string"},
                    "relation_type": {"type": ["string", "null"]},
                    "valid_at": {"type": ["string", "null"]},
                },
            },
        },
    },
}

SYSTEM_PROMPT: Final = (
    "You extract a knowledge graph from text. List the named entities the text mentions "
    "(people, organisations, places, products, projects, events, documents, concepts with a "
    "proper name), each with a short type (Person, Organization, Location, ...) and a one-"
    "sentence summary of what the text says about it. List the facts the text states between "
    "two of those entities: source and target are entity names exactly as listed, predicate "
    "is an UPPER_SNAKE_CASE verb phrase (WORKS_AT, ACQUIRED), fact is the statement in one "
    "sentence, valid_at is the RFC 3339 time the fact became true when the text says so "
    "(else null), relation_type is null. Do not invent anything the text does not say. "
    "Answer with one JSON object only, matching the schema."
)


def user_prompt(text: str, reference_time: datetime) -> str:
    return (
        f"Reference time (when the text was written): {reference_time.isoformat()}\n"
        f"JSON schema of the answer: {json.dumps(SCHEMA, separators=(',', ':'))}\n\n"
        f"Text:\n{text}"
    )


class Unusable(Exception):
    """What is wrong with a model's answer."""


LIMITS: Final = {
    "name": rules.MAX_NAME,
    "type": rules.MAX_LABEL,
    "summary": rules.MAX_SUMMARY,
    "source": rules.MAX_NAME,
    "target": rules.MAX_NAME,
    "predicate": rules.MAX_PREDICATE,
    "fact": rules.MAX_FACT,
    "relation_type": rules.MAX_RELATION_TYPE,
}


def _text(item: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = item.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise Unusable(f"{where}.{key} must be a string (got {type(value).__name__})")
    if len(value) > LIMITS[key]:
        raise Unusable(f"{where}.{key} is longer than {LIMITS[key]} characters")
    return value.strip()


def _objects(answer: dict[str, Any], key: str, most: int) -> list[dict[str, Any]]:
    items = answer.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise Unusable(f"{key} must be an array of objects")
    if len(items) > most:
        raise Unusable(f"{key} has {len(items)} items, more than {most}")
    return items


def parse_extraction(raw: str, extractor: str) -> Extraction:
    """The model's answer as an Extraction; ExtractorFailed naming what was wrong. Entities or
    facts with an empty name are skipped (a model's slip, not worth refusing the chunk for)."""
    try:
        return _parsed(raw)
    except (Unusable, ValueError, DomainError) as error:  # a JSONDecodeError is a ValueError
        raise ExtractorFailed(
            extractor, f"its answer is not a usable extraction: {error}"
        ) from None


def _parsed(raw: str) -> Extraction:
    answer = json.loads(_unfenced(raw))
    if not isinstance(answer, dict):
        raise Unusable("the answer must be a JSON object")
    entities = []
    for index, item in enumerate(_objects(answer, "entities", MAX_ENTITIES)):
        where = f"entities[{index}]"
        name = _text(item, "name", where)
        if name:
            kind = _text(item, "type", where, required=False)
            summary = _text(item, "summary", where, required=False)
            entities.append(ExtractedEntity(name, (kind,) if kind else (), summary))
    edges = []
    for index, item in enumerate(_objects(answer, "facts", MAX_FACTS)):
        where = f"facts[{index}]"
        source, target = _text(item, "source", where), _text(item, "target", where)
        predicate = _text(item, "predicate", where)
        if source and target and predicate:
            edges.append(
                ExtractedEdge(
                    source,
                    target,
                    predicate,
                    _text(item, "fact", where),
                    _text(item, "relation_type", where, required=False) or None,
                    _valid_at(item.get("valid_at"), where),
                )
            )
    return Extraction(tuple(entities), tuple(edges))


def _valid_at(value: object, where: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise Unusable(f"{where}.valid_at must be an RFC 3339 string or null")
    return rules.timestamp(value, f"{where}.valid_at")


def _unfenced(raw: str) -> str:
    """The JSON inside a Markdown code fence, which small models add despite being asked not
    to; anything else unchanged."""
    text = raw.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return text
