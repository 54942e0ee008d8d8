"""What an extractor turns a chunk of text into, and how process_chunk resolves it (issue 14).

An extraction is entities (a name, labels, a summary) and edges between entity names (a
predicate, the fact, an optional relation type, an optional valid_at). `resolve` decides,
against the entities the group already holds, which extracted entities are new, which edges
can be written and which are dropped (K-ING-002..013): an edge endpoint must name an entity of
this extraction or one already in the group, else the edge is dropped and reported, never
stored. A name resolves to the group's entity of the same name key, else (when the caller found
one before the write: `SimilarName`) to the entity whose name embeds closest, at or above the
workspace's `[extraction] name_similarity`, carrying the same numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from lcg.domain import rules


@dataclass(frozen=True, slots=True)
class ExtractedEntity:
    name: str
    labels: tuple[str, ...] = ()
    summary: str = ""


@dataclass(frozen=True, slots=True)
class ExtractedEdge:
    source_name: str
    target_name: str
    predicate: str
    fact: str
    relation_type: str | None = None
    valid_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """One chunk's extraction, in extraction order; `model` names the model that answered
    when the adapter learns it per call (the MCP client's, through sampling)."""

    entities: tuple[ExtractedEntity, ...] = ()
    edges: tuple[ExtractedEdge, ...] = ()
    model: str | None = None


Endpoint = Literal["source", "target", "both"]


@dataclass(frozen=True, slots=True)
class DroppedEdge:
    """`dropped_edges[]` of the result (K-ING-010): never stored anywhere else."""

    source_name: str
    target_name: str
    relation_type: str | None
    fact: str
    unresolved_endpoint: Endpoint


@dataclass(frozen=True, slots=True)
class SimilarName:
    """A group entity whose name embeds close to an extracted name (found before the write, by
    the caller; the batch uses it only if no entity has the name itself and it still exists)."""

    entity_uuid: str
    entity_name: str
    score: float


@dataclass(frozen=True, slots=True)
class Resolved:
    """Where each extracted name lands: `existing` maps a name key to a stored entity's uuid,
    `new` lists the extracted entities to create (first mention of each key wins), `edges`
    are (source key, target key, edge) to write, `dropped` the rest, in extraction order."""

    existing: dict[str, str] = field(default_factory=dict)
    new: tuple[ExtractedEntity, ...] = ()
    edges: tuple[tuple[str, str, ExtractedEdge], ...] = ()
    dropped: tuple[DroppedEdge, ...] = ()


_NUMBER = re.compile(r"\d+")


def same_numbers(a: str, b: str) -> bool:
    """Two names may be one entity by embedding only if they carry the same numbers: "Room
    101" and "Room 102" embed at 0.91 with the bundled MiniLM, and are two rooms."""
    return _NUMBER.findall(a) == _NUMBER.findall(b)


def prefix_alias(name: str, others: Iterable[str]) -> str | None:
    """The one name of `others` whose first words are all of `name`'s ("Kestrel" ->
    "Kestrel Scheduler"), case folded; None when no name or more than one does ("Ada" with
    "Ada Byrne" and "Ada Lovelace")."""
    short = name.casefold().split()
    longer = {
        other.casefold(): other
        for other in others
        if len(other.split()) > len(short) and other.casefold().split()[: len(short)] == short
    }
    return next(iter(longer.values())) if short and len(longer) == 1 else None


def extracted_names(extraction: Extraction) -> list[str]:
    """Every distinct name (by name key) an extraction mentions, entities first, in order."""
    names: dict[str, str] = {}
    for name in (
        *(e.name for e in extraction.entities),
        *(n for edge in extraction.edges for n in (edge.source_name, edge.target_name)),
    ):
        key = rules.name_key(name)
        if key:
            names.setdefault(key, name)
    return list(names.values())


def resolve(extraction: Extraction, stored: Callable[[str], str | None]) -> Resolved:
    """Resolve entities within the group (`stored(name)` gives the uuid of the group's entity
    that name resolves to, by name or else by embedding, or None), then every edge's endpoints
    among this batch and the group."""
    existing: dict[str, str] = {}
    new: dict[str, ExtractedEntity] = {}
    for entity in extraction.entities:
        key = rules.name_key(entity.name)
        if not key or key in existing or key in new:
            continue
        uuid = stored(entity.name)
        if uuid is None:
            new[key] = entity
        else:
            existing[key] = uuid
    known = set(existing) | set(new)
    edges: list[tuple[str, str, ExtractedEdge]] = []
    dropped: list[DroppedEdge] = []
    for edge in extraction.edges:
        ends = []
        for name in (edge.source_name, edge.target_name):
            key = rules.name_key(name)
            if key and key not in known:
                uuid = stored(name)
                if uuid is not None:
                    existing[key] = uuid
                    known.add(key)
            ends.append(bool(key) and key in known)
        if all(ends):
            edges.append((rules.name_key(edge.source_name), rules.name_key(edge.target_name), edge))
            continue
        missing: Endpoint = "both" if not any(ends) else "source" if not ends[0] else "target"
        dropped.append(
            DroppedEdge(edge.source_name, edge.target_name, edge.relation_type, edge.fact, missing)
        )
    return Resolved(existing, tuple(new.values()), tuple(edges), tuple(dropped))


def oversized_warning(chunk_text: str, threshold: int) -> dict[str, object] | None:
    """P-106's `warning` object when the chunk is longer than `threshold` characters (code
    points, strictly longer: K-ING-014..018, K-ING-021), else None."""
    count = len(chunk_text)
    if count <= threshold:
        return None
    return {
        "type": "chunk_text_oversized",
        "chunk_text_chars": count,
        "recommended_max_chars": threshold,
        "message": f"chunk_text is {count} characters, which exceeds the recommended maximum "
        f"of {threshold} characters; extraction quality drops on long chunks: split it into "
        "smaller chunks (it was processed whole, nothing was cut)",
    }


def dropped_payload(dropped: Sequence[DroppedEdge]) -> list[dict[str, object]]:
    return [
        {
            "source_name": d.source_name,
            "target_name": d.target_name,
            "relation_type": d.relation_type,
            "fact": d.fact,
            "unresolved_endpoint": d.unresolved_endpoint,
        }
        for d in dropped
    ]


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def split_text(paragraph: str, max_chars: int) -> list[str]:
    """A paragraph in pieces of at most `max_chars` characters, cut after a sentence's end
    (`.`, `!` or `?` and a space) and, within a sentence longer than that, at the last space
    before the limit (or at the limit, in a word that long); a short paragraph is one piece."""
    if len(paragraph) <= max_chars:
        return [paragraph]
    sentences: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(paragraph):
        sentences.append(paragraph[start : end.start() + len(end.group().rstrip())])
        start = end.end()
    sentences.append(paragraph[start:])
    pieces: list[str] = []
    for sentence in sentences:
        rest = sentence.strip()
        while len(rest) > max_chars:
            cut = rest.rfind(" ", 0, max_chars + 1)
            cut = cut if cut > 0 else max_chars
            pieces.append(rest[:cut].strip())
            rest = rest[cut:].strip()
        if rest and pieces and len(pieces[-1]) + 1 + len(rest) <= max_chars:
            pieces[-1] = f"{pieces[-1]} {rest}"
        elif rest:
            pieces.append(rest)
    return pieces


def chunks(text: str, max_chars: int) -> list[str]:
    """`lcg ingest`'s chunks of plain text: whole paragraphs (blank-line separated) gathered
    up to `max_chars`; a paragraph longer than that is split at sentence ends (`split_text`),
    since process_chunk warns on a long chunk and never cuts it (the caller splits, P-106)."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for paragraph in (p.strip() for p in text.replace("\r\n", "\n").split("\n\n")):
        for piece in split_text(paragraph, max_chars) if paragraph else ():
            if current and size + 2 + len(piece) > max_chars:
                out.append("\n\n".join(current))
                current, size = [], 0
            current.append(piece)
            size += len(piece) + (2 if size else 0)
    if current:
        out.append("\n\n".join(current))
    return out
