"""The merge policy (domain.curation): given the entities and edges, then the event or a refusal.

Checklist: P-124, K-XG-026 (the one self-loop / duplicate policy)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lcg.domain.commands import MergeEntities
from lcg.domain.curation import (
    EdgeEnds,
    MergeLookup,
    MergeTargets,
    decide_merge,
    decide_revision,
    resolve_merge,
)
from lcg.domain.deciders import EntityState
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.events import EntitiesMerged, EntityRevised
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


def named(
    uuid: str, name: str, group: GroupId = G, merged_into: EntityUuid | None = None
) -> EntityState:
    return EntityState(EntityUuid(uuid), name, group, merged_into=merged_into)


def by_name(name: str, *found: EntityState) -> MergeLookup:
    return MergeLookup(state(ADA), (), ((name, found),))


def test_p_124_an_unknown_canonical_is_refused_naming_the_field_it_came_from() -> None:
    with pytest.raises(NotFound) as by_uuid:
        resolve_merge(command(), MergeLookup(None, (), ()))
    assert (by_uuid.value.field, by_uuid.value.rule) == (
        "canonical_uuid",
        "must name an entity of group_id",
    )
    assert by_uuid.value.message == "canonical_uuid: no entity 'ada' in group 'g'"
    with pytest.raises(NotFound) as by_name_:
        resolve_merge(
            command(canonical_uuid=None, canonical_name="Ada"),
            MergeLookup(state(ADA, GroupId("other")), (), ()),
        )
    assert by_name_.value.field == "canonical_name"
    assert by_name_.value.message == "canonical_name: no entity 'Ada' in group 'g'"


def test_p_124_a_merged_canonical_is_refused_pointing_at_its_own_canonical() -> None:
    with pytest.raises(Conflict) as refused:
        resolve_merge(command(), MergeLookup(state(ADA, merged_into=ENGINE), (), ()))
    assert (refused.value.field, refused.value.rule) == (
        "canonical_uuid",
        "must not name a merged entity",
    )
    assert refused.value.message == (
        "canonical_uuid: entity ada was itself merged into engine; merge into that entity instead"
    )


def test_p_124_an_alias_uuid_merged_elsewhere_is_refused_with_field_and_rule() -> None:
    with pytest.raises(Conflict) as refused:
        resolve_merge(
            command(), MergeLookup(state(ADA), ((ALIAS, state(ALIAS, merged_into=ENGINE)),), ())
        )
    assert (refused.value.field, refused.value.rule) == (
        "alias_uuids[0]",
        "must not name an entity merged into another one",
    )
    assert refused.value.message == "alias_uuids[0]: entity alias was already merged into engine"


def test_p_124_an_alias_name_stands_for_its_oldest_live_entity() -> None:
    tomb = named("tomb", "Bob", merged_into=ADA)
    first, second = named("bob1", "Bob"), named("bob2", "Bob")
    targets = resolve_merge(command(alias_uuids=()), by_name("Bob", tomb, first, second))
    assert targets.aliases == (first,)
    assert targets.skipped == ()


def test_p_124_merge_all_by_name_takes_every_live_entity_of_the_name() -> None:
    tomb = named("tomb", "Bob", merged_into=ADA)
    first, second = named("bob1", "Bob"), named("bob2", "Bob")
    targets = resolve_merge(
        command(alias_uuids=(), merge_all_by_name=True), by_name("Bob", tomb, first, second)
    )
    assert targets.aliases == (first, second)


def test_p_124_an_alias_name_of_tombstones_alone_is_skipped_once() -> None:
    tombs = (named("tomb1", "Bob", merged_into=ADA), named("tomb2", "Bob", merged_into=ADA))
    targets = resolve_merge(command(alias_uuids=()), by_name("Bob", *tombs))
    assert targets.aliases == ()
    assert targets.skipped == (
        {"uuid": "tomb1", "name": "Bob", "reason": "already merged into ada"},
    )


def test_p_124_an_alias_name_skips_the_canonical_and_other_groups() -> None:
    bob = named("bob", "Ada")
    found = (state(ADA), named("far", "Ada", GroupId("other")), bob)
    targets = resolve_merge(command(alias_uuids=()), by_name("Ada", *found))
    assert targets.aliases == (bob,)


def test_p_124_an_alias_name_of_the_canonical_alone_is_refused_as_the_canonical() -> None:
    with pytest.raises(InvalidParams) as refused:
        resolve_merge(command(alias_uuids=()), by_name("ada", state(ADA)))
    assert (refused.value.field, refused.value.rule) == (
        "alias_names[0]",
        "must not name the canonical entity",
    )
    assert refused.value.message == "alias_names[0]: must not name the canonical entity (ada)"


def test_p_124_an_unknown_alias_name_is_refused_as_not_found() -> None:
    with pytest.raises(NotFound) as refused:
        resolve_merge(command(alias_uuids=()), by_name("Zed"))
    assert (refused.value.field, refused.value.rule) == (
        "alias_names[0]",
        "must name an entity of group_id",
    )
    assert refused.value.message == "alias_names[0]: no entity named 'Zed' in group 'g'"


def test_p_124_merge_all_by_name_skips_the_canonical_and_other_groups() -> None:
    twin = named("twin", "ada")
    same = (state(ADA), named("far", "ada", GroupId("other")), twin)
    targets = resolve_merge(
        command(alias_uuids=(), merge_all_by_name=True), MergeLookup(state(ADA), (), (), same)
    )
    assert targets.aliases == (twin,)


def test_p_124_merge_all_by_name_refuses_a_twin_merged_elsewhere_naming_the_flag() -> None:
    same = (named("twin", "ada", merged_into=ENGINE),)
    with pytest.raises(Conflict) as refused:
        resolve_merge(
            command(alias_uuids=(), merge_all_by_name=True), MergeLookup(state(ADA), (), (), same)
        )
    assert refused.value.field == "merge_all_by_name"


def revisable(labels: tuple[str, ...] | None = None, summary: str | None = None) -> EntityState:
    return EntityState(ADA, "Ada", G, labels=labels, summary=summary, attributes='{"a": 1}')


def test_a_rename_keeps_labels_summary_and_attributes() -> None:
    entity = revisable(("Person",), "wrote notes")
    assert decide_revision(NOW, entity, name="Ada L") == (
        EntityRevised(NOW, ADA, "Ada L", ("Person",), "wrote notes", '{"a": 1}'),
    )


def test_a_new_summary_of_an_unlabelled_entity_gives_it_the_entity_label() -> None:
    entity = EntityState(ADA, "Ada", G)
    assert decide_revision(NOW, entity, summary="wrote notes") == (
        EntityRevised(NOW, ADA, "Ada", ("Entity",), "wrote notes", "{}"),
    )


def test_a_retype_keeps_the_name_and_an_absent_summary_is_empty() -> None:
    assert decide_revision(NOW, revisable(), labels=("Person",)) == (
        EntityRevised(NOW, ADA, "Ada", ("Person",), "", '{"a": 1}'),
    )


def test_a_revision_that_changes_nothing_decides_no_event() -> None:
    entity = revisable(("Entity",), "")
    assert decide_revision(NOW, entity) == ()
    assert decide_revision(NOW, entity, name="Ada", labels=("Entity",), summary="") == ()
    assert decide_revision(NOW, EntityState(ADA, "Ada", G)) == ()


def test_renaming_onto_the_entitys_own_name_is_no_clash() -> None:
    entity = revisable(("Person",), "s")
    assert decide_revision(NOW, entity, name="Ada", clash=entity) == ()


def test_renaming_onto_another_entitys_name_is_refused_with_field_and_rule() -> None:
    with pytest.raises(Conflict) as refused:
        decide_revision(NOW, revisable(), name="Engine", clash=state(ENGINE))
    assert (refused.value.field, refused.value.rule) == (
        "name",
        "must not rename onto another entity's name",
    )
    assert refused.value.message == (
        "name: 'Engine' already names entity engine; merge the two instead"
    )
