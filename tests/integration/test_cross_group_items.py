"""Cross-group pointers: who runs the rebind and what `bound_at_seq` records (A-06, A-26;
ADR 0041). The helpers are test_cross_group's."""

from __future__ import annotations

from tests.conftest import Call
from tests.integration.test_cross_group import add_edge, entity, foreign, pointers, rebind


def dst(call: Call, edge_uuid: str) -> dict[str, object]:
    """The edge's target pointer (the edge is bound: reads show it)."""
    rows = call("knowledge_get_edges_by_uuids", uuids=[edge_uuid])["edges"]
    pointer: dict[str, object] = rows[0]["cross_group_pointers"]["dst"]
    return pointer


def test_a_06_no_write_or_replay_of_the_source_group_rebinds_by_itself(call: Call) -> None:
    """The caller runs knowledge_rebind_pointers after the source group changed: neither a
    write to it nor a replay of it binds a waiting pointer."""
    paper = entity(call, "Paper", "hub")
    add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    entity(call, "Ada", "people")  # the name now resolves...
    assert pointers(call) == {"bound": 0, "unbound": 1, "ambiguous": 0}  # ...but nothing bound
    call("knowledge_rebuild_from_wal", group_id="people", force_clear=True)
    call("knowledge_rebuild_from_wal", group_id="hub", force_clear=True)
    assert pointers(call) == {"bound": 0, "unbound": 1, "ambiguous": 0}
    assert rebind(call)["bound"] == 1
    assert pointers(call) == {"bound": 1, "unbound": 0, "ambiguous": 0}


def test_a_26_bound_at_seq_is_the_source_groups_applied_seq_when_it_binds(call: Call) -> None:
    paper = entity(call, "Paper", "hub")
    added = add_edge(call, {"uuid": paper}, foreign("people", "Ada"))
    assert added["cross_group_pointers"]["dst"]["bound_at_seq"] is None  # unbound: null
    entity(call, "Ada", "people")
    entity(call, "Babbage", "people")
    applied = call("knowledge_status")["wal_groups"]["people"]["applied_seq"]
    assert applied == 2
    rebind(call)
    assert dst(call, added["uuid"])["bound_at_seq"] == applied
    assert rebind(call)["staleness_skipped"] == 1  # nothing moved: not bound again
    assert dst(call, added["uuid"])["bound_at_seq"] == applied
    entity(call, "Cy", "people")  # the source group moves on: the next rebind binds again
    assert rebind(call)["bound"] == 1
    assert dst(call, added["uuid"])["bound_at_seq"] == applied + 1
