"""The merge policy (domain.curation): given the entities and edges, then the event or a refusal.

Checklist: P-124, K-XG-026 (the one self-loop / duplicate policy)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lcg.domain.commands import MergeEntities
from lcg.domain.curation import EdgeEnds, MergeLookup, MergeTargets, decide_merge, resolve_merge
from lcg.domain.deciders import EntityState
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.events import EntitiesMerged
from lcg.domain.ids import EdgeUuid, EntityUuid, GroupId

NOW = datetime(2026, 1, 1, tzinfo=UTC)
G = GroupId("g")
ADA, ALIAS, ENGINE = EntityUuid("ada"), EntityUuid("alias"), EntityUuid("engine")


def state(
    uuid: EntityUuid, group: GroupId = G, merged_into: EntityUuid | None = None
) -> EntityState:
    return EntityState(uuid, str(uuid), group, merged_into=merged_into)


def command(**changes: object) -> MergeEntities:
    fields: dict[str, object] = {
        "group_id": G,
        "canonical_uuid": ADA,
        "canonical_name": None,
        "alias_uuids": (ALIAS,),
        "alias_names": (),
        "merge_all_by_name": False,
        "dry_run": False,
        "now": NOW,
    }
    fields.update(changes)
    return MergeEntities(**fields)  # type: ignore[arg-type]


def ends(
    uuid: str, source: EntityUuid, predicate: str, target: EntityUuid, group: GroupId = G
) -> EdgeEnds:
    return EdgeEnds(EdgeUuid(uuid), group, source, target, predicate)


def test_p_124_decide_merge_sorts_every_edge_into_one_list() -> None:
    targets = MergeTargets(state(ADA), (state(ALIAS),), ())
    edges = [
        ends("kept", ADA, "WROTE", ENGINE),
        ends("dup", ALIAS, "WROTE", ENGINE),
        ends("loop", ALIAS, "IS", ADA),
        ends("moved", ENGINE, "HELPED", ALIAS),
        ends("foreign", ENGINE, "SAW", ALIAS, GroupId("other")),
    ]
    decision = decide_merge(command(), targets, edges)
    assert decision.events == (
        EntitiesMerged(
            NOW,
            ADA,
            (ALIAS,),
            (EdgeUuid("moved"),),
            (EdgeUuid("loop"),),
            (EdgeUuid("dup"),),
            (EdgeUuid("kept"),),
            (EdgeUuid("foreign"),),
        ),
    )
    [alias] = decision.plan["aliases"]
    assert (alias["active_edges"], alias["duplicate_edges"], alias["foreign_edges_skipped"]) == (
        3,
        2,
        1,
    )


def test_p_124_nothing_to_merge_decides_no_event() -> None:
    decision = decide_merge(command(), MergeTargets(state(ADA), (), ()), [])
    assert decision.events == ()


def test_p_124_resolve_refuses_unknown_other_group_and_merged_entities() -> None:
    with pytest.raises(NotFound):
        resolve_merge(command(), MergeLookup(None, ((ALIAS, state(ALIAS)),), ()))
    with pytest.raises(NotFound) as refused:
        resolve_merge(
            command(), MergeLookup(state(ADA), ((ALIAS, state(ALIAS, GroupId("x"))),), ())
        )
    assert refused.value.field == "alias_uuids[0]"
    with pytest.raises(Conflict):
        resolve_merge(
            command(),
            MergeLookup(state(ADA), ((ALIAS, state(ALIAS, merged_into=ENGINE)),), ()),
        )
    with pytest.raises(InvalidParams):
        resolve_merge(
            command(alias_uuids=(ADA,)), MergeLookup(state(ADA), ((ADA, state(ADA)),), ())
        )


def test_p_124_an_alias_already_merged_into_the_canonical_is_skipped() -> None:
    targets = resolve_merge(
        command(), MergeLookup(state(ADA), ((ALIAS, state(ALIAS, merged_into=ADA)),), ())
    )
    assert targets.aliases == ()
    assert [s["uuid"] for s in targets.skipped] == [ALIAS]
