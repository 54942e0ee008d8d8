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

Memory: the file's concept ids, types and contents, and its edges by source, are kept while
the import runs (like the entity names of ADR 0083); the file itself is streamed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.memory import text
from lcg.domain.memory.identity import matches_by_key
from lcg.interfaces.cli_caller import Caller
from lcg.interfaces.port.records import Bad, Concept, ConceptEdge, Record
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


@dataclass
class Held:
    """The session's concepts by (type, content), and its concept edges by node ids."""

    nodes: dict[Key, str] = field(default_factory=dict)
    edges: set[tuple[str, str, str]] = field(default_factory=set)

    @classmethod
    def of(cls, snapshot: Snapshot) -> Held:
        held = cls()
        for concept in snapshot.concepts():
            held.nodes.setdefault(
                (concept.concept_type or "", concept.content.strip()), concept.uuid
            )
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

    def collect(self, record: Concept) -> Bad | None:
        """Pass 1: a concept's id, once."""
        first = self.keys.get(record.key)
        if first is not None:
            return Bad(record.where, f"duplicate concept id {record.key!r}: first at {first[2]}")
        key = (record.concept_type, record.content.strip())
        self.keys[record.key] = (len(self.keys), key, record.where)
        return None

    def check(self, record: Concept | ConceptEdge) -> str | None:
        """Pass 2: lcg's limits on a concept, and an edge's kind and ends."""
        if isinstance(record, Concept):
            return _limits(record)
        if record.kind not in EDGE_KINDS:
            return f"concept edge type {record.kind!r}: expected one of {', '.join(EDGE_KINDS)}"
        for end in (record.source, record.target):
            if end not in self.keys:
                return f"concept edge to a missing concept {end!r}: no concept line has that uuid"
        source_order, (source_type, _), _ = self.keys[record.source]
        later = self.keys[record.target][0] > source_order
        # an observation is never matched again: its citations can only come with it
        if source_type == text.ConceptType.OBSERVATION and record.kind in CITES and later:
            return (
                f"an observation's {record.kind} edge to a later concept cannot be written"
                " (an observation is never matched again once written)"
            )
        return None

    def compare(self, record: Concept | ConceptEdge) -> str:
        """ "created" or "unchanged"."""
        if isinstance(record, Concept):
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
    except InvalidParams as error:
        return str(error)
    if record.concept_type not in CONCEPT_TYPES:
        return f"concept_type must be one of {', '.join(CONCEPT_TYPES)}"
    return None


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

    def _ref(self, edge: ConceptEdge) -> str:
        """How a write names an edge's target: its content when the session finds it by key
        (as an agent names it, so the target is reinforced as it was), else its node id."""
        concept_type, content = self.concepts.keys[edge.target][1]
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
            params = {"action": content, edge.kind: [self._ref(edge)]}
            self._call("lambo_record_action", agent, params, edge.where)
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
