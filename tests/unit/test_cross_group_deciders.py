"""The cross-group deciders (ADR 0041): binding, the add decision, the rebind's gate and its
collapses (the merge's policy), the purge's unbinding. Given state, when a command, then
events and counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from lcg.domain import curation
from lcg.domain.commands import (
    AddCrossGroupEdge,
    CrossGroupEndpoint,
    NameEndpoint,
    RebindPointers,
    UuidEndpoint,
)
from lcg.domain.cross_group import (
    BindingState,
    EndpointLookup,
    PointedEdge,
    Pointer,
    RebindResult,
    bind,
    decide_add_cross_group_edge,
    decide_rebind,
    decide_unbind_purged,
)
from lcg.domain.deciders import EntityState
from lcg.domain.errors import Conflict, NotFound
from lcg.domain.events import PointersRebound
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId

NOW = datetime(2026, 1, 1, tzinfo=UTC)
PEOPLE = GroupId("people")
HUB = GroupId("hub")


def pointer(
    name: str, state: BindingState = "unbound", uuid: str | None = None, at: int | None = None
) -> Pointer:
    return Pointer(
        source_group_id=PEOPLE,
        endpoint_name=name,
        resolved_uuid=uuid,
        bound_at_seq=at,
        binding_state=state,
    )


def edge(
    uuid: str,
    src: Pointer | None = None,
    dst: Pointer | None = None,
    source: str | None = "paper",
    target: str | None = None,
    group: GroupId = HUB,
) -> PointedEdge:
    return PointedEdge(
        EdgeUuid(uuid),
        group,
        "CITES",
        None if source is None else EntityUuid(source),
        None if target is None else EntityUuid(target),
        src,
        dst,
    )


def no_edge(group: str, source: str, predicate: str, target: str) -> EdgeUuid | None:
    return None


def rebind(
    edges: Sequence[PointedEdge],
    matches: dict[str, list[str]],
    applied: int,
    active: Callable[[str, str, str, str], EdgeUuid | None] = no_edge,
) -> tuple[list[tuple[GroupId, PointersRebound]], RebindResult]:
    return decide_rebind(RebindPointers(PEOPLE, NOW), edges, matches, applied, active)


def test_bind_is_bound_unbound_or_ambiguous_by_match_count() -> None:
    assert bind("g", "Ada", ["a"], 7) == {
        "source_group_id": "g",
        "endpoint_name": "Ada",
        "resolved_uuid": "a",
        "bound_at_seq": 7,
        "binding_state": "bound",
    }
    assert bind("g", "Ada", [], 7)["binding_state"] == "unbound"
    ambiguous = bind("g", "Ada", ["a", "b"], 7)
    assert (ambiguous["binding_state"], ambiguous["resolved_uuid"], ambiguous["bound_at_seq"]) == (
        "ambiguous",
        None,
        None,
    )


def command(source: CrossGroupEndpoint, target: CrossGroupEndpoint) -> AddCrossGroupEdge:
    return AddCrossGroupEdge(HUB, "CITES", source, target, "fact", None, None, EdgeUuid("e"), NOW)


def no_active_edge(source: str, predicate: str, target: str) -> EdgeUuid | None:
    return None


def test_add_records_the_binding_and_the_ends_bound_now() -> None:
    paper = EntityState(EntityUuid("paper"), "Paper", HUB)
    bound = bind(PEOPLE, "ada", ["ada-1"], 3)
    event, result = decide_add_cross_group_edge(
        command(UuidEndpoint(EntityUuid("paper")), NameEndpoint(PEOPLE, "ada")),
        EndpointLookup(entity=paper),
        EndpointLookup(pointer=bound),
        no_active_edge,
    )
    assert (event.source_uuid, event.target_uuid, event.src, event.dst) == (
        "paper",
        "ada-1",
        None,
        dict(bound),
    )
    assert result["cross_group_pointers"] == {"src": None, "dst": bound}


def test_add_refuses_a_uuid_endpoint_outside_the_edges_group() -> None:
    stranger = EntityState(EntityUuid("ada"), "Ada", PEOPLE)
    with pytest.raises(Conflict) as error:
        decide_add_cross_group_edge(
            command(UuidEndpoint(EntityUuid("ada")), UuidEndpoint(EntityUuid("ada"))),
            EndpointLookup(entity=stranger),
            EndpointLookup(entity=stranger),
            no_active_edge,
        )
    assert error.value.field == "source.uuid"
    assert error.value.rule == "a uuid endpoint must be an entity of group_id"
    with pytest.raises(NotFound):
        decide_add_cross_group_edge(
            command(UuidEndpoint(EntityUuid("x")), UuidEndpoint(EntityUuid("x"))),
            EndpointLookup(),
            EndpointLookup(),
            no_active_edge,
        )


def test_k_xg_024_025_add_refuses_ends_bound_now_that_a_rebind_would_invalidate() -> None:
    """The rebind's rule (curation.collapsed) on the add path: refused, not written."""
    paper = EntityState(EntityUuid("paper"), "Paper", HUB)
    to_paper = command(UuidEndpoint(EntityUuid("paper")), NameEndpoint(HUB, "paper"))
    with pytest.raises(Conflict, match="self-loop") as loop:
        decide_add_cross_group_edge(
            to_paper,
            EndpointLookup(entity=paper),
            EndpointLookup(pointer=bind(HUB, "paper", ["paper"], 3)),
            no_active_edge,
        )
    assert loop.value.field == "target"
    to_ada = command(UuidEndpoint(EntityUuid("paper")), NameEndpoint(PEOPLE, "ada"))
    older = {("paper", "CITES", "ada-1"): EdgeUuid("older")}
    with pytest.raises(Conflict, match="duplicate") as duplicate:
        decide_add_cross_group_edge(
            to_ada,
            EndpointLookup(entity=paper),
            EndpointLookup(pointer=bind(PEOPLE, "ada", ["ada-1"], 3)),
            lambda s, p, t: older.get((s, p, t)),
        )
    assert (duplicate.value.field, "older" in str(duplicate.value)) == ("target", True)
    assert duplicate.value.rule == (
        "must not repeat an active edge of group_id (same source, name and target)"
    )
    unbound = bind(PEOPLE, "ada", [], 3)  # an end not bound yet is the rebind's to judge
    event, _ = decide_add_cross_group_edge(
        to_ada, EndpointLookup(entity=paper), EndpointLookup(pointer=unbound), no_active_edge
    )
    assert event.target_uuid is None


def test_rebind_gate_skips_bound_pointers_at_or_past_the_applied_seq() -> None:
    edges = [
        edge("e1", dst=pointer("Ada", "bound", "ada", 5)),
        edge("e2", dst=pointer("Bob", "bound", "bob", 4)),
    ]
    events, counts = rebind(edges, {"bob": ["bob"]}, applied=5)
    assert (counts["staleness_skipped"], counts["checked"], counts["bound"]) == (1, 1, 1)
    [(group, event)] = events
    assert group == HUB
    assert event.bindings == [
        {
            "edge_uuid": "e2",
            "side": "dst",
            **pointer("Bob", "bound", "bob", 5),
        }
    ]


def test_rebind_always_re_resolves_broken_pointers_and_appends_nothing_unchanged() -> None:
    edges = [edge("e1", dst=pointer("Ada")), edge("e2", dst=pointer("Twin", "ambiguous"))]
    events, counts = rebind(edges, {"twin": ["t1", "t2"]}, applied=1)
    assert (counts["checked"], counts["unbound"], counts["ambiguous"]) == (2, 1, 1)
    assert events == []


def test_rebind_self_loop_and_duplicate_are_the_merge_policy() -> None:
    loop = edge("loop", src=pointer("Ada"), dst=pointer("ADA"), source=None)
    dup = edge("dup", dst=pointer("Bob"))

    def active(group: str, source: str, predicate: str, target: str) -> EdgeUuid | None:
        return EdgeUuid("older") if (source, target) == ("paper", "bob") else None

    events, counts = rebind([loop, dup], {"ada": ["ada"], "bob": ["bob"]}, 2, active)
    assert (counts["invalidated_self_loop"], counts["invalidated_duplicate"]) == (2, 1)
    assert (counts["checked"], counts["bound"]) == (3, 0)
    [(_, event)] = events
    assert (event.self_loops, event.duplicates, event.duplicate_of) == (
        ("loop",),
        ("dup",),
        ("older",),
    )
    # the same rule decide_merge applies
    kept = {("paper", "CITES", "bob"): EdgeUuid("older")}
    assert curation.collapsed(("ada", "CITES", "ada"), kept) == curation.Collapse("self_loop")
    assert curation.collapsed(("paper", "CITES", "bob"), kept) == curation.Collapse(
        "duplicate", EdgeUuid("older")
    )


def test_two_edges_binding_to_one_key_keep_the_older() -> None:
    first, second = edge("e1", dst=pointer("Ada")), edge("e2", dst=pointer("ada"))
    events, counts = rebind([first, second], {"ada": ["ada"]}, 3)
    assert (counts["bound"], counts["invalidated_duplicate"]) == (1, 1)
    [(_, event)] = events
    assert (event.duplicates, event.duplicate_of) == (("e2",), ("e1",))


def test_an_edge_of_the_source_group_records_the_seq_its_event_lands_at() -> None:
    own = edge("e1", dst=pointer("Ada"), group=PEOPLE)
    [(group, event)], _ = rebind([own], {"ada": ["ada"]}, 9)
    assert group == PEOPLE
    assert event.bindings[0]["bound_at_seq"] == 10


def test_purge_unbinds_every_pointer_naming_the_group_that_is_not_unbound() -> None:
    edges = [
        edge("e1", dst=pointer("Ada", "bound", "ada", 3)),
        edge("e2", dst=pointer("Bob")),
        edge("e3", src=pointer("Twin", "ambiguous"), group=GroupId("other")),
    ]
    events, impacts = decide_unbind_purged(PEOPLE, edges, NOW)
    assert impacts == {"hub": 1, "other": 1}
    assert [g for g, _ in events] == ["hub", "other"]
    assert events[0][1].bindings[0]["binding_state"] == "unbound"
    assert [e.bindings[0]["side"] for _, e in events] == ["dst", "src"]
