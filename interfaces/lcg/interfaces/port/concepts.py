"""Memory concepts in an import (lcg-jsonl's `concept` and `concept_edge` lines, ADR 0089).

A concept is written through lambo_derive, as an agent writes one, under the agent id it was
written by; its edges through the tool that makes each kind (depends_on and against on
lambo_derive, parent_of pairs on lambo_derive, produces and modifies on lambo_record_action),
naming their ends by the node ids the session gave them. A write is applied by the session's
intent processor after its ack, so each one is waited for (lambo_stats with its receipt)
before the next, which may cite it.

Identity is the concept's type and content: one the session already holds is not written
again, nor an edge it holds between the same two concepts. A concept's canonization status is
not written: the session's canonization cycles decide it from the citations again.

An image concept (a line with `image`, ADR 0095) is written through lambo_derive_image with
the file's vector `{values, contract}`, and its parent_of edges through it again; the
importing server must accept client vectors and hold the file's embedding contract, which is
asked before the import's mark (`check_images`): otherwise nothing is written. Its identity
is its canonical key, as the apply's: one the session holds as an image is not written
again, and one a text concept of the session holds is a bad line (image id taken).

Memory: the file's concept ids, types and contents, and its edges by source, are kept while
the import runs (like the entity names of ADR 0083); the file itself is streamed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.memory import client_vectors, images, text
from lcg.domain.memory.identity import canonical_key, matches_by_key
from lcg.interfaces.cli_caller import Caller
from lcg.interfaces.port.records import Bad, Concept, ConceptEdge, ImageLine, Record
from lcg.interfaces.port.snapshot import Snapshot

EDGE_KINDS = ("depends_on", "contradicts", "parent_of", "produces", "modifies")
CITES = ("depends_on", "contradicts")  # what lambo_derive writes with a concept
CONCEPT_TYPES = tuple(kind.value for kind in text.ConceptType)
WAIT_MS = 30_000  # a write's wait for its outcome (lambo_stats's wait_ms, at most 34000)
Advance = Callable[[], None]
Key = tuple[str, str]  # (concept_type, content)


class ConceptWriteFailed(DomainError):
    """A concept write the session refused or dropped: the import stops there (what it wrote
    before stays, after the import's mark)."""


class ImagesRefused(DomainError):
    """The file's image concepts cannot be written by this server (client vectors off, or
    another embedding contract): refused before the import's mark, nothing written."""


@dataclass
class Held:
    """The session's concepts by (type, content), and its concept edges by node ids."""

    nodes: dict[Key, str] = field(default_factory=dict)
    edges: set[tuple[str, str, str]] = field(default_factory=set)
    images: dict[str, str] = field(default_factory=dict)  # canonical key -> image concept
    texts: set[str] = field(default_factory=set)  # canonical keys of the text concepts

    @classmethod
    def of(cls, snapshot: Snapshot) -> Held:
        held = cls()
        for concept in snapshot.concepts():
            held.nodes.setdefault(
                (concept.concept_type or "", concept.content.strip()), concept.uuid
            )
        image_nodes = snapshot.images()
        for uuid, key in snapshot.concept_keys():
            if uuid in image_nodes:
                held.images.setdefault(key, uuid)
            else:
                held.texts.add(key)
        for edge in snapshot.concept_edges():
            held.edges.add((edge.type, edge.source, edge.target))
        return held


@dataclass
class Concepts:
    """The file's concepts (by their id in it, in file order) and their edges by source."""

    held: Held
    keys: dict[str, tuple[int, Key, str]] = field(default_factory=dict)  # id -> (order, key, where)
    written: set[Key] = field(default_factory=set)  # planned to be created
    edges_planned: set[tuple[str, str, str]] = field(default_factory=set)
    images: dict[str, tuple[str, ImageLine]] = field(default_factory=dict)  # id -> where, image
    images_written: set[str] = field(default_factory=set)  # canonical keys planned

    def collect(self, record: Concept) -> Bad | None:
        """Pass 1: a concept's id, once."""
        first = self.keys.get(record.key)
        if first is not None:
            return Bad(record.where, f"duplicate concept id {record.key!r}: first at {first[2]}")
        key = (record.concept_type, record.content.strip())
        self.keys[record.key] = (len(self.keys), key, record.where)
        if record.image is not None:
            self.images[record.key] = (record.where, record.image)
        return None

    def check(self, record: Concept | ConceptEdge) -> str | None:
        """Pass 2: lcg's limits on a concept, and an edge's kind and ends."""
        if isinstance(record, Concept):
            return self._check_concept(record)
        if record.kind not in EDGE_KINDS:
            return f"concept edge type {record.kind!r}: expected one of {', '.join(EDGE_KINDS)}"
        for end in (record.source, record.target):
            if end not in self.keys:
                return f"concept edge to a missing concept {end!r}: no concept line has that uuid"
        if record.source in self.images and record.kind != "parent_of":
            return (
                f"an image concept's {record.kind} edge cannot be written: lambo_derive_image"
                " writes only parent_of"
            )
        source_order, (source_type, _), _ = self.keys[record.source]
        later = self.keys[record.target][0] > source_order
        # an observation is never matched again: its citations can only come with it
        if source_type == text.ConceptType.OBSERVATION and record.kind in CITES and later:
            return (
                f"an observation's {record.kind} edge to a later concept cannot be written"
                " (an observation is never matched again once written)"
            )
        return None

    def _check_concept(self, record: Concept) -> str | None:
        problem = _limits(record)
        image = record.image
        # a text concept holding the image's key fails the write, as the apply would (M-IMG-060)
        if (
            problem is None
            and image is not None
            and canonical_key(record.content) in self.held.texts
        ):
            return (
                f"image id taken: image_id {image.image_id} with this caption "
                "names a text concept of the session already; nothing was written"
            )
        return problem

    def _compare_image(self, record: Concept) -> str:
        """An image concept is known by its canonical key among the session's images."""
        image_key = canonical_key(record.content)
        if image_key in self.held.images or image_key in self.images_written:
            return "unchanged"
        self.images_written.add(image_key)
        return "created"

    def compare(self, record: Concept | ConceptEdge) -> str:
        """ "created" or "unchanged"."""
        if isinstance(record, Concept):
            if record.image is not None:
                return self._compare_image(record)
            key = self.keys[record.key][1]
            if key in self.held.nodes or key in self.written:
                return "unchanged"
            self.written.add(key)
            return "created"
        source = self.held.nodes.get(self.keys[record.source][1])
        target = self.held.nodes.get(self.keys[record.target][1])
        if (
            source is not None
            and target is not None
            and (record.kind, source, target) in (self.held.edges)
        ):
            return "unchanged"
        planned = (record.kind, record.source, record.target)
        if planned in self.edges_planned:
            return "unchanged"
        self.edges_planned.add(planned)
        return "created"


def _limits(record: Concept) -> str | None:
    try:
        text.check_size("content", record.content)
        if not record.content.strip():
            return "content must be a non-empty string"
        text.check_agent_id(record.agent_id)
        if record.image is not None:
            return _image_limits(record.concept_type, record.image)
        if text.has_image_suffix(record.content):
            return (
                "content ends with an image suffix [image:<id>]: an image concept's line needs"
                ' its "image" field {image_id, caption, vector} (lcg export writes it)'
            )
    except (InvalidParams, text.MemoryArgumentError) as error:
        return str(error)
    if record.concept_type not in CONCEPT_TYPES:
        return f"concept_type must be one of {', '.join(CONCEPT_TYPES)}"
    return None


def _image_limits(concept_type: str, image: ImageLine) -> str | None:
    """lambo_derive_image's rules on the line's image (its vector against the contract the
    line names; the session's contract is asked before writing, `check_images`)."""
    images.check_image_concept_type("concept_type", concept_type)
    images.check_image_id("image.image_id", image.image_id)
    images.check_caption("image.caption", image.caption, image.image_id)
    contract = _contract(image.vector.get("contract"))
    if contract is None:
        return '"image.vector.contract" must be an object {kind, model, dim}'
    client_vectors.check_client_vector("image.vector", image.vector, contract)
    return None


def _contract(raw: object) -> client_vectors.Contract | None:
    if not isinstance(raw, dict) or set(raw) != {"kind", "model", "dim"}:
        return None
    kind, model, dim = raw["kind"], raw["model"], raw["dim"]
    if not isinstance(kind, str) or not (model is None or isinstance(model, str)):
        return None
    if not isinstance(dim, int) or isinstance(dim, bool):
        return None
    return client_vectors.Contract(kind, model, dim)


def check_images(concepts: Concepts, caller: Caller, skip: set[str]) -> None:
    """Before the import's mark: the image concepts the plan creates need a server that
    accepts client vectors and the file's embedding contract; otherwise ImagesRefused naming
    the first such line, and nothing is written."""
    wanted = [
        (where, image)
        for where, image in concepts.images.values()
        if where not in skip
        and canonical_key(f"{image.caption} [image:{image.image_id}]") in concepts.images_written
    ]
    if not wanted:
        return
    where, _ = wanted[0]
    if not _accepts_client_vectors(caller):
        raise ImagesRefused(
            f"{where}: an image concept is written through lambo_derive_image with the file's "
            f"vector, which this server accepts only with {client_vectors.CLIENT_VECTORS_SETTING}"
            " (lcg.toml; no embedder here embeds images, so the vector cannot be computed "
            "again); set it where the importing workspace's server reads it, or import a file "
            "without image concepts; nothing was written",
            field="image.vector",
            rule="configuration",
        )
    stats = caller.call("lambo_stats", {"agent_id": "lcg-import"})["structuredContent"]
    own = stats["embedding_contract"]
    session = client_vectors.Contract(own["kind"], own.get("model"), int(own["dim"]))
    for where, image in wanted:
        try:
            client_vectors.check_client_vector("image.vector", image.vector, session)
        except text.MemoryArgumentError as error:
            raise ImagesRefused(
                f"{where}: {error}; nothing was written", field="image.vector", rule="contract"
            ) from None


def _accepts_client_vectors(caller: Caller) -> bool:
    """In this process, the workspace's setting; through a service, its health_check's
    `client_vectors` (ADR 0095)."""
    app = getattr(caller, "app", None)
    if app is not None:
        return bool(app.reads.settings.tuning.accept_client_vectors)
    return caller.call("health_check", {}).get("client_vectors") is True


class Writer:
    """Pass 3 for concepts: each one the session lacks through lambo_derive, with its edges to
    concepts already there; then every edge still missing, through its own tool."""

    def __init__(self, concepts: Concepts, caller: Caller, session: str, advance: Advance) -> None:
        self.concepts = concepts
        self.caller = caller
        self.session = session
        self.advance = advance
        self.ids: dict[str, str] = {}  # the file's concept id -> the session's node id
        self.agents: dict[str, str] = {}  # the file's concept id -> its agent id
        self.edges = set(concepts.held.edges)

    def write(self, records: Callable[[], Iterator[Record]], skip: set[str]) -> None:
        pending: list[ConceptEdge] = []
        by_source: dict[str, list[ConceptEdge]] = {}
        for record in records():
            if isinstance(record, ConceptEdge) and record.where not in skip:
                by_source.setdefault(record.source, []).append(record)
        for record in records():
            if isinstance(record, Concept) and record.where not in skip:
                self._concept(record, by_source.get(record.key, []))
        for edges in by_source.values():
            pending.extend(edges)
        for edge in pending:
            self._edge(edge)

    def _concept(self, record: Concept, edges: list[ConceptEdge]) -> None:
        """A concept the session lacks, with its edges to concepts already there: an action
        (a concept that produces or modifies) through lambo_record_action, as it was made;
        any other through lambo_derive."""
        key = self.concepts.keys[record.key][1]
        self.agents[record.key] = record.agent_id
        if record.image is not None:
            self._image(record, record.image)
            return
        found = self.concepts.held.nodes.get(key)
        if found is not None:
            self.ids[record.key] = found
            return
        action = any(edge.kind in ("produces", "modifies") for edge in edges)
        now = [e for e in edges if e.target in self.ids and (action or e.kind in CITES)]
        refs: dict[str, list[str]] = {}
        for edge in now:
            name = "against" if edge.kind == "contradicts" else edge.kind
            refs.setdefault(name, []).append(self._ref(edge))
        if action:
            params: dict[str, Any] = {"action": record.content, **refs}
            receipt = self._call("lambo_record_action", record.agent_id, params, record.where)
            node = str(receipt.get("action_node") or _node(receipt))
        else:
            concept = {"content": record.content, "concept_type": record.concept_type, **refs}
            receipt = self._call(
                "lambo_derive", record.agent_id, {"concepts": [concept]}, record.where
            )
            node = _node(receipt)
        self.ids[record.key] = node
        self.concepts.held.nodes[key] = node
        self.advance()
        for edge in now:
            if (edge.kind, node, self.ids[edge.target]) not in self.edges:
                self.edges.add((edge.kind, node, self.ids[edge.target]))
                self.advance()

    def _image(self, record: Concept, image: ImageLine) -> None:
        """An image concept the session lacks, through lambo_derive_image (its edges are all
        written later: parent_of is the only kind it has as a source)."""
        image_key = canonical_key(record.content)
        found = self.concepts.held.images.get(image_key)
        if found is None:
            receipt = self._call(
                "lambo_derive_image", record.agent_id, self._image_params(record.key), record.where
            )
            found = _node(receipt)
            self.concepts.held.images[image_key] = found
            self.advance()
        self.ids[record.key] = found

    def _image_params(self, key: str) -> dict[str, Any]:
        _, image = self.concepts.images[key]
        concept_type = self.concepts.keys[key][1][0]
        return {
            "caption": image.caption,
            "concept_type": concept_type,
            "image_id": image.image_id,
            "vector": image.vector,
        }

    def _ref(self, edge: ConceptEdge) -> str:
        """How a write names an edge's target: its content when the session finds it by key
        (as an agent names it, so the target is reinforced as it was), else its node id."""
        concept_type, content = self.concepts.keys[edge.target][1]
        if edge.target in self.concepts.images:  # an image is named by its node id
            return self.ids[edge.target]
        if edge.kind in ("produces", "modifies") and matches_by_key(concept_type):
            return content
        return self.ids[edge.target]

    def _edge(self, edge: ConceptEdge) -> None:
        source, target = self.ids[edge.source], self.ids[edge.target]
        if (edge.kind, source, target) in self.edges:
            return
        agent = self.agents[edge.source]
        (kind, content), (_, target_content) = (
            self.concepts.keys[edge.source][1],
            self.concepts.keys[edge.target][1],
        )
        if edge.kind in ("produces", "modifies"):
            params: dict[str, Any] = {"action": content, edge.kind: [self._ref(edge)]}
            self._call("lambo_record_action", agent, params, edge.where)
        elif edge.kind == "parent_of" and edge.source in self.concepts.images:
            pair = {"parent": content, "child": target_content}
            params = {**self._image_params(edge.source), "parent_of": [pair]}
            self._call("lambo_derive_image", agent, params, edge.where)
        elif edge.kind == "parent_of":
            concept = {"content": content, "concept_type": kind}
            pair = {"parent": content, "child": target_content}
            self._call(
                "lambo_derive", agent, {"concepts": [concept], "parent_of": [pair]}, edge.where
            )
        else:
            cite = "depends_on" if edge.kind == "depends_on" else "against"
            cited: dict[str, Any] = {"content": content, "concept_type": kind, cite: [target]}
            self._call("lambo_derive", agent, {"concepts": [cited]}, edge.where)
        self.edges.add((edge.kind, source, target))
        self.advance()

    def _call(self, tool: str, agent: str, params: dict[str, Any], where: str) -> dict[str, Any]:
        """The write, waited for: its receipt once settled (a refusal stops the import)."""
        ack = self.caller.call(tool, {"agent_id": agent, "scope": self.session, **params})
        content = ack["structuredContent"]
        if content.get("receipt_state") == "dropped":
            raise ConceptWriteFailed(f"{where}: {tool} was dropped: {ack['text']}")
        settled = self.caller.call(
            "lambo_stats", {"agent_id": agent, "receipt": content["receipt"], "wait_ms": WAIT_MS}
        )
        receipt: dict[str, Any] = settled["structuredContent"]["receipt"]
        if not str(receipt.get("state", "")).startswith("applied"):
            raise ConceptWriteFailed(
                f"{where}: {tool} ended {receipt.get('state')}: {receipt.get('detail')}"
            )
        return receipt


def _node(receipt: dict[str, Any]) -> str:
    """The one concept a single-concept lambo_derive created or matched."""
    nodes = [*receipt.get("created", []), *receipt.get("matched", [])]
    return str(nodes[0])
