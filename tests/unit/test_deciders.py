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
    ProcessChunk,
    PurgeGroup,
)
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.events import (
    ChunkExtracted,
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    GroupPurged,
    RelationshipCreated,
    RelationshipRevised,
    SummaryEmbedded,
)
from lcg.domain.extraction import (
    DroppedEdge,
    ExtractedEdge,
    ExtractedEntity,
    Extraction,
    Resolved,
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


def test_asserting_a_merged_entity_by_uuid_names_its_canonical() -> None:
    merged = deciders.EntityState(EntityUuid("ada"), "Ada", G, merged_into=EntityUuid("bob"))
    with pytest.raises(Conflict) as refused:
        deciders.decide_assert_entity(
            assert_entity(entity_uuid="ada"), deciders.EntityLookup(merged, None)
        )
    assert refused.value.message == (
        "entity_uuid: entity ada was merged into bob; assert that entity instead"
    )
    assert (refused.value.field, refused.value.rule) == (
        "entity_uuid",
        "must not name a merged entity",
    )


def test_an_entity_uuid_naming_nothing_is_not_found_and_never_minted() -> None:
    with pytest.raises(NotFound) as refused:
        deciders.decide_assert_entity(
            assert_entity(entity_uuid="ghost"), deciders.EntityLookup(None, None)
        )
    assert refused.value.message == (
        "entity_uuid: no entity ghost in group 'g' (a uuid is looked up, never minted)"
    )
    assert (refused.value.field, refused.value.rule) == (
        "entity_uuid",
        "must name an existing entity of group_id",
    )


def test_a_created_relationship_says_created_and_a_revised_one_does_not() -> None:
    created = deciders.decide_assert_relationship(
        relationship(), deciders.RelationshipLookup(ADA, BOB, None)
    )
    assert (created.edge_uuid, created.created) == ("edge", True)
    revised = deciders.decide_assert_relationship(
        relationship("new fact"), deciders.RelationshipLookup(ADA, BOB, EdgeUuid("old"))
    )
    assert (revised.edge_uuid, revised.created) == ("old", False)


EPISODE = AddEpisode(
    G, "chunk 1", "Ada met Bob and Cy.", "text", "notes", NOW, EpisodeUuid("ep"), NOW, "c1", "f.md"
)
KNEW = ExtractedEdge("Ada", "Bob", "KNEW", "Ada knew Bob", "KNOWS", NOW)
KNEW_AGAIN = ExtractedEdge("ada", "bob", "KNEW", "Ada knew Bob well")
MET = ExtractedEdge("Ada", "Cy", "MET", "Ada met Cy")
LOST = DroppedEdge("Ada", "Dee", None, "Ada met Dee", "target")


def _chunk(stored: dict[tuple[str, str, str], str]) -> tuple[deciders.ChunkDecision, list[str]]:
    """Ada is stored (under two name keys); Bob and Cy are new; Ada-KNEW-Bob is stated twice,
    Ada-MET-Cy is already stored when `stored` says so, and one edge was dropped."""
    ids = iter(f"id-{n}" for n in range(1, 10))
    extraction = Extraction(
        (
            ExtractedEntity("Ada"),
            ExtractedEntity(" Bob ", ("Person",), "a sailor"),
            ExtractedEntity("Cy"),
        ),
        (KNEW, KNEW_AGAIN, MET, ExtractedEdge("Ada", "Dee", "MET", "Ada met Dee")),
    )
    command = ProcessChunk(EPISODE, extraction, "llama", "qwen", lambda: next(ids))
    resolved = Resolved(
        existing={"ada": "ada", "ada lovelace": "ada"},
        new=(ExtractedEntity(" Bob ", ("Person",), "a sailor"), ExtractedEntity("Cy")),
        edges=(("ada", "bob", KNEW), ("ada", "bob", KNEW_AGAIN), ("ada", "cy", MET)),
        dropped=(LOST,),
    )
    asked: list[str] = []

    def active_edge(source: str, predicate: str, target: str) -> EdgeUuid | None:
        asked.append(f"{source} {predicate} {target}")
        found = stored.get((source, predicate, target))
        return None if found is None else EdgeUuid(found)

    return deciders.decide_process_chunk(command, resolved, active_edge), asked


def test_k_ing_a_chunk_adds_its_episode_new_entities_new_edges_and_its_mentions() -> None:
    decision, asked = _chunk({})
    episode = EpisodeAdded(
        NOW, EpisodeUuid("ep"), "chunk 1", "Ada met Bob and Cy.", "text", "notes", NOW, "c1", "f.md"
    )
    bob, cy = EntityUuid("id-1"), EntityUuid("id-2")
    ada = EntityUuid("ada")
    assert decision.events == (
        episode,
        EntityCreated(NOW, bob, "Bob", ("Person",), "a sailor", "{}"),
        EntityCreated(NOW, cy, "Cy", (), "", "{}"),
        RelationshipCreated(
            NOW, EdgeUuid("id-3"), ada, bob, "KNEW", "Ada knew Bob", "KNOWS", "{}", NOW
        ),
        RelationshipCreated(NOW, EdgeUuid("id-4"), ada, cy, "MET", "Ada met Cy", None, "{}", None),
        ChunkExtracted(
            NOW,
            EpisodeUuid("ep"),
            "llama",
            "qwen",
            (ada, bob, cy),
            (EdgeUuid("id-3"), EdgeUuid("id-4")),
        ),
    )
    assert asked == ["ada KNEW id-1", "ada KNEW id-1", "ada MET id-2"]
    assert (decision.nodes_extracted, decision.edges_extracted) == (3, 4)  # as extracted
    assert decision.dropped == (LOST,)


def test_k_ing_an_edge_already_stored_is_mentioned_not_repeated() -> None:
    decision, _ = _chunk({("ada", "MET", "id-2"): "stored"})
    created = [e for e in decision.events if isinstance(e, RelationshipCreated)]
    assert [e.edge_uuid for e in created] == ["id-3"]
    extracted = decision.events[-1]
    assert isinstance(extracted, ChunkExtracted)
    assert extracted.edges == ("id-3", "stored")


@pytest.mark.parametrize(
    ("lookup", "field", "name"),
    [
        (deciders.RelationshipLookup(None, BOB, None), "source_name", "Ada"),
        (deciders.RelationshipLookup(ADA, None, None), "target_name", "Bob"),
    ],
)
def test_k_ast_an_unresolved_endpoint_names_its_field_the_rule_and_the_cross_group_tool(
    lookup: deciders.RelationshipLookup, field: str, name: str
) -> None:
    with pytest.raises(NotFound) as refused:
        deciders.decide_assert_relationship(relationship(), lookup)
    assert refused.value.message == (
        f"{field}: no entity named {name!r} in group 'g'; endpoints resolve only inside the"
        " call's group_id; use knowledge_add_cross_group_edge to connect entities across"
        " groups (or assert the entity in this group first)"
    )
    assert (refused.value.field, refused.value.rule) == (field, "must name an entity of group_id")


def test_renaming_onto_another_entitys_name_says_merge_instead() -> None:
    with pytest.raises(Conflict) as refused:
        deciders.decide_assert_entity(
            assert_entity("Bob", entity_uuid="ada"), deciders.EntityLookup(ADA, BOB)
        )
    assert refused.value.message == (
        "name: 'Bob' already names entity bob in group 'g'; merge the two instead of renaming"
        " onto it"
    )
    assert (refused.value.field, refused.value.rule) == (
        "name",
        "must not rename onto another entity's name",
    )


def test_asserting_an_entity_by_uuid_under_its_own_name_revises_it() -> None:
    """The name lookup finds the entity itself: no clash with another entity."""
    decision = deciders.decide_assert_entity(
        assert_entity("Ada", entity_uuid="ada"), deciders.EntityLookup(ADA, ADA)
    )
    assert decision.events == (
        EntityRevised(NOW, EntityUuid("ada"), "Ada", ("Person",), "s", "{}"),
    )
    assert (decision.entity_uuid, decision.created) == ("ada", False)
