"""Deciding a memory write's intent (lcg.domain.memory.intents, ADR 0059) and checking its
arguments (lcg.domain.memory.arguments): given the session as a view held in memory, when the
call, then the one MemoryWriteAccepted with every reference fixed, or the seed 001 refusal."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.ids import GroupId
from lcg.domain.memory.arguments import ActionArgs, DeriveArgs, check_action, check_derive
from lcg.domain.memory.calls import ConceptIn, Derive, RecordAction
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.intents import decide_action, decide_derive
from lcg.domain.memory.records import ActionRequest, DeriveRequest
from lcg.domain.memory.references import (
    ACTION_CYCLE,
    HIERARCHY_CYCLE,
    CycleRefused,
    NodeView,
    ReferenceRefused,
    Resolved,
)

SESSION = GroupId("liminis")
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CACHE = "aaaaaaaa-0000-4000-8000-000000000001"
STORE = "cccccccc-0000-4000-8000-000000000004"
DEPLOY = "dddddddd-0000-4000-8000-000000000005"


@dataclass(frozen=True)
class Node:
    uuid: str
    node_kind: str
    content: str


@dataclass
class Graph:
    """The session as the decider's view: nodes and typed edges, read-only."""

    nodes: tuple[Node, ...]
    edges: tuple[tuple[str, str, str], ...] = ()  # (kind, source, target)
    reads: list[str] = field(default_factory=list)

    def node(self, uuid: str) -> NodeView | None:
        return next((n for n in self.nodes if n.uuid == uuid), None)

    def with_prefix(self, prefix: str) -> Sequence[NodeView]:
        return [n for n in self.nodes if n.uuid.startswith(prefix)]

    def with_content(self, content: str) -> Sequence[NodeView]:
        self.reads.append(content)
        return [n for n in self.nodes if n.content == content]

    def with_key(self, key: str) -> Sequence[NodeView]:
        return [n for n in self.nodes if canonical_key(n.content) == key]

    def targets(self, source: str, kinds: Sequence[str]) -> Sequence[str]:
        return [t for k, s, t in self.edges if s == source and k in kinds]

    def reaches(self, start: str, goal: str, kinds: Sequence[str]) -> bool:
        todo, seen = [start], set()
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo.extend(self.targets(here, kinds))
        return False


GRAPH = Graph(
    (
        Node(CACHE, "concept", "The cache is warm"),
        Node(STORE, "concept", "The store is durable"),
        Node(DEPLOY, "concept", "deployed v2"),
    ),
    (("depends_on", CACHE, STORE),),
)


def derive(*concepts: ConceptIn, parent_of: tuple[tuple[str, str], ...] = ()) -> Derive:
    return Derive(SESSION, "agent-a", concepts, parent_of, None, "lwr1.r", NOW)


def action(text: str, **targets: tuple[str, ...]) -> RecordAction:
    return RecordAction(
        SESSION,
        "agent-a",
        text,
        targets.get("produces", ()),
        targets.get("modifies", ()),
        targets.get("depends_on", ()),
        targets.get("against", ()),
        None,
        "lwr1.r",
        NOW,
    )


def test_a_derive_fixes_each_reference_to_the_node_it_names() -> None:
    event = decide_derive(
        derive(
            ConceptIn("reads are fast", "logic", ("The cache is warm",), ("cccccccc",)),
            parent_of=(("cache", "reads"),),
        ),
        GRAPH,
    )
    assert (event.receipt, event.agent_id, event.tool) == ("lwr1.r", "agent-a", "lambo_derive")
    assert event.occurred_at == NOW
    assert isinstance(event.request, DeriveRequest)
    (concept,) = event.request.concepts
    assert concept.depends_on == (Resolved("The cache is warm", CACHE, "content"),)
    assert concept.against == (Resolved("cccccccc", STORE, "short_id"),)
    assert [(p.parent, p.child) for p in event.request.parent_of] == [("cache", "reads")]


def test_a_citation_closing_a_dependency_loop_is_refused() -> None:
    """The store's concept is re-derived citing the cache, which already depends on it."""
    with pytest.raises(ReferenceRefused) as caught:
        decide_derive(
            derive(ConceptIn("The store is durable", "logic", (CACHE,))),
            GRAPH,
        )
    assert caught.value.field == "concepts[0].depends_on[0]"
    assert "would close a dependency loop" in caught.value.message


def test_the_first_failing_reference_is_the_one_refused() -> None:
    """The view is read as the checks go: a later reference is not resolved before an
    earlier one fails."""
    graph = Graph(GRAPH.nodes, GRAPH.edges)
    with pytest.raises(ReferenceRefused) as caught:
        decide_derive(
            derive(ConceptIn("x holds", "logic", ("nothing like it", "The store is durable"))),
            graph,
        )
    assert caught.value.field == "concepts[0].depends_on[0]"
    assert "The store is durable" not in graph.reads


def test_pairs_of_one_call_that_loop_are_refused() -> None:
    with pytest.raises(CycleRefused) as caught:
        decide_derive(
            derive(ConceptIn("a", "entity"), parent_of=(("p", "q"), ("q", "p"))),
            GRAPH,
        )
    assert caught.value.message == HIERARCHY_CYCLE


def test_an_action_fixes_its_targets_and_keeps_new_text_to_create() -> None:
    event = decide_action(
        action("merged PR #52", produces=("release notes",), depends_on=(STORE,)),
        GRAPH,
    )
    assert event.tool == "lambo_record_action"
    assert event.request == ActionRequest(
        "merged PR #52",
        (Resolved("release notes", None, "text"),),
        (),
        (Resolved(STORE, STORE, "id"),),
        (),
    )


def test_an_action_producing_itself_is_refused() -> None:
    with pytest.raises(CycleRefused) as caught:
        decide_action(action("deployed v2", produces=("deployed v2",)), GRAPH)
    assert caught.value.message == ACTION_CYCLE


def test_the_argument_rules_read_the_clock_once_and_only_when_they_hold() -> None:
    readings: list[datetime] = []

    def clock() -> datetime:
        readings.append(NOW)
        return NOW

    with pytest.raises(DomainError):
        check_derive(DeriveArgs("agent-a", (ConceptIn("x", "nonsense"),)), SESSION, clock)
    with pytest.raises(DomainError):
        check_action(ActionArgs("agent-a", "x", repo_scope="a b"), SESSION, clock)
    assert readings == []
    call = check_derive(DeriveArgs("agent-a", (ConceptIn("x", "logic"),)), SESSION, clock)
    assert call.concepts == (ConceptIn("x", "logic"),)
    assert (call.now, call.receipt, call.session) == (NOW, "", SESSION)
    assert len(readings) == 1


def test_a_scope_other_than_the_session_is_refused_by_field() -> None:
    with pytest.raises(DomainError) as caught:
        check_action(ActionArgs("agent-a", "x", scope="elsewhere"), SESSION, lambda: NOW)
    assert caught.value.field == "scope"
    assert caught.value.message == "scope must name this session or one of its layers: liminis"
