"""The typed values the memory and canonization events carry (ADR 0059), and their wire form.

Each record is a frozen dataclass with `to_wire()` (the JSON object the event's payload holds,
keys in the order the log has always written them) and `from_wire()` (the record back from
it). The event codec (`lcg.domain.events`) calls them for a field typed with a record or a
tuple of records, so an existing WAL decodes and re-encodes to the same bytes
(tests/unit/test_memory_event_wire.py pins them). A key the log writes only sometimes (an
action's `action_node`, a candidate's `merged`) is written exactly when it was before: absent,
not null, when the value is the default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Self

from lcg.domain.memory.references import Resolved

Wire = dict[str, Any]


class Record:
    """A value an event carries as one JSON object. By default its fields are plain JSON
    values written in field order; a record holding records, or keys written only sometimes,
    says how itself."""

    __slots__ = ()

    def to_wire(self) -> Wire:
        return {name: getattr(self, name) for name in _names(type(self))}

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        return cls(*(data[name] for name in _names(cls)))


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    """A record class's field names, in order (read once per class)."""
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def _refs(data: list[dict[str, str | None]]) -> tuple[Resolved, ...]:
    return tuple(Resolved.from_json(d) for d in data)


# -- MemoryWriteAccepted.request ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DerivedConcept(Record):
    """One concept of a derive's intent, its references fixed (`Resolved`)."""

    content: str
    concept_type: str
    depends_on: tuple[Resolved, ...]
    against: tuple[Resolved, ...]

    def to_wire(self) -> Wire:
        return {
            "content": self.content,
            "concept_type": self.concept_type,
            "depends_on": [r.to_json() for r in self.depends_on],
            "against": [r.to_json() for r in self.against],
        }

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        return cls(
            data["content"], data["concept_type"], _refs(data["depends_on"]), _refs(data["against"])
        )


@dataclass(frozen=True, slots=True)
class ParentOf(Record):
    """A hierarchy link of a derive, its ends as sent (matched or created on apply)."""

    parent: str
    child: str


@dataclass(frozen=True, slots=True)
class MemoryRequest(Record):
    """An intent's call as validated: a `DeriveRequest` or an `ActionRequest` (the event's
    `tool` says which; the keys do too, which is how `from_wire` tells them apart)."""

    def scope(self) -> str | None:
        """The repository the call's paths belong to (ADR 0082), None when unscoped."""
        return None

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        if cls is MemoryRequest:
            kind: type[MemoryRequest]
            if "concepts" in data:
                kind = DeriveRequest
            elif "image_id" in data:
                kind = ImageRequest
            else:
                kind = ActionRequest
            return kind.from_wire(data)  # type: ignore[return-value]
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class DeriveRequest(MemoryRequest):
    concepts: tuple[DerivedConcept, ...]
    parent_of: tuple[ParentOf, ...]
    repo_scope: str | None = None  # written only when set (ADR 0082)

    def scope(self) -> str | None:
        return self.repo_scope

    def to_wire(self) -> Wire:
        wire: Wire = {
            "concepts": [c.to_wire() for c in self.concepts],
            "parent_of": [p.to_wire() for p in self.parent_of],
        }
        if self.repo_scope is not None:
            wire["repo_scope"] = self.repo_scope
        return wire

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        return cls(
            tuple(DerivedConcept.from_wire(c) for c in data["concepts"]),
            tuple(ParentOf.from_wire(p) for p in data["parent_of"]),
            data.get("repo_scope"),
        )


@dataclass(frozen=True, slots=True)
class ActionRequest(MemoryRequest):
    action: str
    produces: tuple[Resolved, ...]
    modifies: tuple[Resolved, ...]
    depends_on: tuple[Resolved, ...]
    against: tuple[Resolved, ...]
    repo_scope: str | None = None  # written only when set (ADR 0082)

    def scope(self) -> str | None:
        return self.repo_scope

    def to_wire(self) -> Wire:
        wire: Wire = {
            "action": self.action,
            "produces": [r.to_json() for r in self.produces],
            "modifies": [r.to_json() for r in self.modifies],
            "depends_on": [r.to_json() for r in self.depends_on],
            "against": [r.to_json() for r in self.against],
        }
        if self.repo_scope is not None:
            wire["repo_scope"] = self.repo_scope
        return wire

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        return cls(
            data["action"],
            _refs(data["produces"]),
            _refs(data["modifies"]),
            _refs(data["depends_on"]),
            _refs(data["against"]),
            data.get("repo_scope"),
        )


@dataclass(frozen=True, slots=True)
class ImageRequest(MemoryRequest):
    """A lambo_derive_image as validated (ADR 0095): the caption, the image id, the concept's
    unit-length vector and where it came from (`source`: "client", the contract it is in),
    and parent_of. The vector is the event's, so a replay or a rebuilt vector index uses it
    and never embeds the caption; the image bytes are never here."""

    caption: str
    concept_type: str
    image_id: str
    vector: tuple[float, ...]
    source: str  # "client": a client vector (the only source this server has)
    contract: tuple[str, str | None, int]  # (kind, model, dim) the vector is in
    parent_of: tuple[ParentOf, ...]

    @property
    def content(self) -> str:
        """The concept's content: the caption plus its image suffix (M-IMG-050)."""
        return f"{self.caption} [image:{self.image_id}]"

    def to_wire(self) -> Wire:
        kind, model, dim = self.contract
        return {
            "caption": self.caption,
            "concept_type": self.concept_type,
            "image_id": self.image_id,
            "vector": list(self.vector),
            "source": {"kind": self.source, "contract": {"kind": kind, "model": model, "dim": dim}},
            "parent_of": [p.to_wire() for p in self.parent_of],
        }

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        contract = data["source"]["contract"]
        return cls(
            data["caption"],
            data["concept_type"],
            data["image_id"],
            tuple(float(value) for value in data["vector"]),
            data["source"]["kind"],
            (contract["kind"], contract["model"], int(contract["dim"])),
            tuple(ParentOf.from_wire(p) for p in data["parent_of"]),
        )


# -- MemoryWriteApplied.outcome -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutcomeNode(Record):
    """A node an apply created: the interaction (type, key and embedding text null) or a
    concept (`embedding_text`: the framed text its vector is of; null if not embedded)."""

    uuid: str
    node_kind: str  # interaction | concept
    content: str
    concept_type: str | None
    canonical_key: str | None
    embedding_text: str | None
    # an image concept's unit-length vector (ADR 0095): stored, never computed from text;
    # written only when set, so every other node's bytes are as before
    vector: tuple[float, ...] | None = None

    def to_wire(self) -> Wire:
        wire: Wire = {
            "uuid": self.uuid,
            "node_kind": self.node_kind,
            "content": self.content,
            "concept_type": self.concept_type,
            "canonical_key": self.canonical_key,
            "embedding_text": self.embedding_text,
        }
        if self.vector is not None:
            wire["vector"] = list(self.vector)
        return wire

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        vector = data.get("vector")
        return cls(
            data["uuid"],
            data["node_kind"],
            data["content"],
            data["concept_type"],
            data["canonical_key"],
            data["embedding_text"],
            None if vector is None else tuple(float(value) for value in vector),
        )


@dataclass(frozen=True, slots=True)
class OutcomeEdge(Record):
    """An edge an apply added or reinforced (an existing edge keeps its uuid)."""

    uuid: str
    kind: str
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Supersession(Record):
    """A possibly superseded pair, not declared (#198): `newer` may replace `older`."""

    older: str
    newer: str


@dataclass(frozen=True, slots=True)
class Candidate(Record):
    """A replacement candidate (M-DER-100..116); `merged` and `newer` are written only when
    true."""

    id: str
    node_id: str
    excerpt: str
    cosine: float
    new_id: str
    merged: bool = False
    newer: bool = False

    def to_wire(self) -> Wire:
        wire: Wire = {
            "id": self.id,
            "node_id": self.node_id,
            "excerpt": self.excerpt,
            "cosine": self.cosine,
            "new_id": self.new_id,
        }
        if self.merged:
            wire["merged"] = True
        if self.newer:
            wire["newer"] = True
        return wire

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        return cls(
            data["id"],
            data["node_id"],
            data["excerpt"],
            data["cosine"],
            data["new_id"],
            bool(data.get("merged", False)),
            bool(data.get("newer", False)),
        )


@dataclass(frozen=True, slots=True)
class Candidates(Record):
    """A receipt's replacement candidates: as many as fit its bytes, and the true total."""

    candidates: tuple[Candidate, ...]
    total: int

    def to_wire(self) -> Wire:
        return {"candidates": [c.to_wire() for c in self.candidates], "total": self.total}

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        return cls(tuple(Candidate.from_wire(c) for c in data["candidates"]), data["total"])


@dataclass(frozen=True, slots=True)
class WriteOutcome(Record):
    """Every decision of one apply (ADR 0026), so that a replay never calls the model: the
    nodes created, those reinforced, the edges, the counts and the receipt's texts. The last
    four are written only when present: `action_node` (an action), `possibly_superseded`
    (pairs flagged), `replacement_candidates` with `candidate_lines` (candidates found)."""

    agent_id: str
    about_time: str  # RFC 3339, as accepted_at / event_time were stored
    interaction: str
    nodes: tuple[OutcomeNode, ...]
    reinforced_nodes: tuple[str, ...]
    edges: tuple[OutcomeEdge, ...]
    created: tuple[str, ...]
    matched: tuple[str, ...]
    created_count: int
    matched_count: int
    semantic_merged: int
    reinforced: int
    edges_count: int  # edges but the `precedes` one
    embedded: int
    summary: str
    action_node: str | None = None
    possibly_superseded: tuple[Supersession, ...] = ()
    replacement_candidates: Candidates | None = None
    candidate_lines: tuple[str, ...] = ()

    def to_wire(self) -> Wire:
        wire: Wire = {
            "agent_id": self.agent_id,
            "about_time": self.about_time,
            "interaction": self.interaction,
            "nodes": [n.to_wire() for n in self.nodes],
            "reinforced_nodes": list(self.reinforced_nodes),
            "edges": [e.to_wire() for e in self.edges],
            "created": list(self.created),
            "matched": list(self.matched),
            "created_count": self.created_count,
            "matched_count": self.matched_count,
            "semantic_merged": self.semantic_merged,
            "reinforced": self.reinforced,
            "edges_count": self.edges_count,
            "embedded": self.embedded,
            "summary": self.summary,
        }
        if self.action_node is not None:
            wire["action_node"] = self.action_node
        if self.possibly_superseded:
            wire["possibly_superseded"] = [s.to_wire() for s in self.possibly_superseded]
        if self.replacement_candidates is not None:
            wire["replacement_candidates"] = self.replacement_candidates.to_wire()
            wire["candidate_lines"] = list(self.candidate_lines)
        return wire

    @classmethod
    def from_wire(cls, data: Wire) -> Self:
        candidates = data.get("replacement_candidates")
        return cls(
            data["agent_id"],
            data["about_time"],
            data["interaction"],
            tuple(OutcomeNode.from_wire(n) for n in data["nodes"]),
            tuple(data["reinforced_nodes"]),
            tuple(OutcomeEdge.from_wire(e) for e in data["edges"]),
            tuple(data["created"]),
            tuple(data["matched"]),
            data["created_count"],
            data["matched_count"],
            data["semantic_merged"],
            data["reinforced"],
            data["edges_count"],
            data["embedded"],
            data["summary"],
            data.get("action_node"),
            tuple(Supersession.from_wire(s) for s in data.get("possibly_superseded", ())),
            None if candidates is None else Candidates.from_wire(candidates),
            tuple(data.get("candidate_lines", ())),
        )


# -- ConceptsCanonized, GcSwept -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CanonHop(Record):
    """One transition of a canonization cycle, in the order the cycle applies them; statuses
    and cause by their values, the demotion time in RFC 3339."""

    node_id: str
    from_status: str
    to_status: str
    blast_radius: int | None
    cause: str
    last_demotion_time: str | None
    superseded_by: str | None


@dataclass(frozen=True, slots=True)
class Collected(Record):
    """A concept a sweep collected, and why (`under_bar`, `orphan`, ...)."""

    node_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class SweepFigures(Record):
    """A sweep's lambo_stats figures (`gc.last_sweep` but its trigger, which the event
    carries beside them)."""

    collected: int
    deferred: int
    collection_cap: int
    cap_bound: bool
    resources_spared_by_dependents: int
    survivors_deferred: int
