"""Pure deciders: given state, when a command, then events or a domain error (no I/O)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lcg.domain import deciders, rules
from lcg.domain.commands import (
    AddEpisode,
    AssertEntity,
    AssertRelationship,
    BackfillSummaries,
    DeleteEpisode,
    PurgeGroup,
)
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.events import (
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    RelationshipCreated,
    RelationshipRevised,
    SummaryEmbedded,
)
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid, GroupId

NOW = datetime(2026, 1, 1, tzinfo=UTC)
G = GroupId("g")
ADA = deciders.EntityState(EntityUuid("ada"), "Ada", G)
BOB = deciders.EntityState(EntityUuid("bob"), "Bob", G)


def assert_entity(name: str = "Ada", entity_uuid: str | None = None) -> AssertEntity:
    return AssertEntity(
        G,
        name,
        None if entity_uuid is None else EntityUuid(entity_uuid),
        ("Person",),
        "s",
        "{}",
        EntityUuid("new"),
        NOW,
    )


def test_new_name_creates_an_entity_under_the_new_uuid() -> None:
    decision = deciders.decide_assert_entity(
        assert_entity(" Ada "), deciders.EntityLookup(None, None)
    )
    assert decision.events == (
        EntityCreated(NOW, EntityUuid("new"), "Ada", ("Person",), "s", "{}"),
    )
    assert (decision.entity_uuid, decision.created) == ("new", True)


def test_known_name_revises_the_existing_entity() -> None:
    decision = deciders.decide_assert_entity(assert_entity(), deciders.EntityLookup(None, ADA))
    assert decision.events == (
        EntityRevised(NOW, EntityUuid("ada"), "Ada", ("Person",), "s", "{}"),
    )
    assert decision.created is False


def test_entity_uuid_of_another_group_is_not_found() -> None:
    elsewhere = deciders.EntityState(EntityUuid("ada"), "Ada", GroupId("other"))
    with pytest.raises(NotFound):
        deciders.decide_assert_entity(
            assert_entity(entity_uuid="ada"), deciders.EntityLookup(elsewhere, None)
        )


def test_rename_onto_another_entity_is_a_conflict() -> None:
    with pytest.raises(Conflict):
        deciders.decide_assert_entity(
            assert_entity("Bob", entity_uuid="ada"), deciders.EntityLookup(ADA, BOB)
        )


def relationship(fact: str | None = None) -> AssertRelationship:
    return AssertRelationship(
        G, "Ada", "Bob", "KNEW", fact, None, "{}", None, EdgeUuid("edge"), NOW
    )


def test_relationship_between_known_entities_is_created_with_derived_fact() -> None:
    decision = deciders.decide_assert_relationship(
        relationship(), deciders.RelationshipLookup(ADA, BOB, None)
    )
    assert decision.events == (
        RelationshipCreated(
            NOW,
            EdgeUuid("edge"),
            EntityUuid("ada"),
            EntityUuid("bob"),
            "KNEW",
            "Ada KNEW Bob",
            None,
            "{}",
            None,
        ),
    )


def test_active_edge_is_revised_not_duplicated() -> None:
    decision = deciders.decide_assert_relationship(
        relationship("new fact"), deciders.RelationshipLookup(ADA, BOB, EdgeUuid("old"))
    )
    assert decision.events == (
        RelationshipRevised(NOW, EdgeUuid("old"), "new fact", None, "{}", None),
    )
    assert decision.edge_uuid == "old"


def test_unresolved_endpoint_names_the_cross_group_tool() -> None:
    with pytest.raises(NotFound, match="knowledge_add_cross_group_edge"):
        deciders.decide_assert_relationship(
            relationship(), deciders.RelationshipLookup(ADA, None, None)
        )


def test_json_episode_must_parse() -> None:
    bad = AddEpisode(G, "e", "{not json", "json", "", NOW, EpisodeUuid("p"), NOW)
    with pytest.raises(InvalidParams) as error:
        deciders.decide_add_episode(bad)
    assert error.value.field == "episode_body"
    good = AddEpisode(G, "e", '{"a": 1}', "json", "", NOW, EpisodeUuid("p"), NOW)
    assert isinstance(deciders.decide_add_episode(good)[0], EpisodeAdded)


def test_purging_an_empty_group_decides_nothing() -> None:
    assert deciders.decide_purge_group(PurgeGroup(G, NOW), 0) == ()
    assert deciders.decide_purge_group(PurgeGroup(G, NOW), 3) == (GroupPurged(NOW),)


def test_p_120_deleting_an_unknown_episode_decides_nothing() -> None:
    command = DeleteEpisode(EpisodeUuid("gone"), NOW)
    assert deciders.decide_delete_episode(command, None) is None


def test_an_episode_is_deleted_in_its_own_group() -> None:
    command = DeleteEpisode(EpisodeUuid("e1"), NOW)
    decision = deciders.decide_delete_episode(command, GroupId("home"))
    assert decision == (GroupId("home"), (EpisodeDeleted(NOW, EpisodeUuid("e1")),))


def test_p_130_backfill_embeds_only_summaries_that_are_not_blank() -> None:
    command = BackfillSummaries(G, NOW)
    summaries = [
        (EntityUuid("a"), "a sailor"),
        (EntityUuid("b"), "   "),
        (EntityUuid("c"), ""),
        (EntityUuid("d"), "wrote programs"),
    ]
    assert deciders.decide_backfill_summaries(command, summaries) == (
        SummaryEmbedded(NOW, EntityUuid("a"), "a sailor"),
        SummaryEmbedded(NOW, EntityUuid("d"), "wrote programs"),
    )


def test_k_ast_026_a_missing_or_blank_fact_defaults_to_source_predicate_target() -> None:
    for fact in (None, "", "   "):
        command = AssertRelationship(
            G, "Ada", "Bob", "knows", fact, None, "{}", None, EdgeUuid("e"), NOW
        )
        assert command.stored_fact == "Ada knows Bob"
        decision = deciders.decide_assert_relationship(
            command, deciders.RelationshipLookup(ADA, BOB, None)
        )
        created = decision.events[0]
        assert isinstance(created, RelationshipCreated)
        assert created.fact == "Ada knows Bob"


def test_issue_10_deep_attributes_are_refused_naming_the_field_not_a_recursion_error() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(990):
        child: dict[str, object] = {}
        node["k"] = child
        node = child
    with pytest.raises(InvalidParams) as error:
        rules.attributes(deep)
    assert error.value.field == "attributes"
    assert "at most 32 deep" in str(error.value)
    ok: dict[str, object] = {"a": [{"b": [1, 2]}]}
    assert rules.attributes(ok) == '{"a":[{"b":[1,2]}]}'


def test_adr_0021_an_identical_re_assertion_decides_nothing() -> None:
    same = deciders.EntityState(EntityUuid("ada"), "Ada", G, ("Person",), "s", "{}")
    decision = deciders.decide_assert_entity(assert_entity(), deciders.EntityLookup(None, same))
    assert (decision.events, decision.entity_uuid, decision.created) == ((), "ada", False)
    changed = deciders.EntityState(EntityUuid("ada"), "Ada", G, ("Person",), "old", "{}")
    decision = deciders.decide_assert_entity(assert_entity(), deciders.EntityLookup(None, changed))
    assert isinstance(decision.events[0], EntityRevised)


def test_adr_0021_an_identical_edge_re_assertion_decides_nothing() -> None:
    state = deciders.EdgeState("Ada KNEW Bob", None, "{}", None)
    lookup = deciders.RelationshipLookup(ADA, BOB, EdgeUuid("old"), state)
    decision = deciders.decide_assert_relationship(relationship(), lookup)
    assert (decision.events, decision.edge_uuid, decision.created) == ((), "old", False)
    decision = deciders.decide_assert_relationship(relationship("another fact"), lookup)
    assert isinstance(decision.events[0], RelationshipRevised)
