"""Hybrid search on the real model: each leg, deletions, K-GID, K-AST search items."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.app import App
from lcg.interfaces.tools.search import search_context
from lcg.interfaces.workspace import Workspace
from lcg.projections.graph import reader
from lcg.queries import search
from tests.conftest import Call

# Every test here is about ranking by meaning or by words on the real model.
pytestmark = pytest.mark.minilm


@pytest.fixture
def memories(call: Call) -> dict[str, str]:
    """Three episodes and two entities in group g, one entity in group h."""
    ids = {}
    for name, body in (
        ("dog", "My dog Rex chased the postman down the street this morning."),
        ("report", "The quarterly revenue report is due Friday; ticket zxqv77 tracks it."),
        ("trip", "We are flying to Lisbon in June and staying near the old town."),
    ):
        ids[name] = call("knowledge_add_episode", name=name, episode_body=body, group_id="g")[
            "episode_uuid"
        ]
    ids["ada"] = call(
        "knowledge_assert_entity",
        name="Ada Lovelace",
        group_id="g",
        summary="English mathematician who wrote the first computer program",
        attributes={"secret": "quokka"},
    )["entity_uuid"]
    ids["engine"] = call(
        "knowledge_assert_entity",
        name="Analytical Engine",
        group_id="g",
        summary="Babbage's design for a mechanical computer",
    )["entity_uuid"]
    ids["other"] = call(
        "knowledge_assert_entity",
        name="Ada Lovelace",
        group_id="h",
        summary="namesake in another group",
    )["entity_uuid"]
    call(
        "knowledge_assert_relationship",
        source_name="Ada Lovelace",
        predicate="WROTE_NOTES_ON",
        target_name="Analytical Engine",
        group_id="g",
        fact="Ada published extensive notes about the Engine in 1843",
        attributes={"secret": "wombat"},
    )
    return ids


def passages(call: Call, query: str, **params: object) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = call(
        "knowledge_search_passages", query=query, min_score=0.0, **params
    )["passages"]
    return result


def test_vector_leg_finds_a_paraphrase_sharing_no_words(
    call: Call, memories: dict[str, str]
) -> None:
    [top, *_] = passages(call, "puppy pursued a mail carrier")
    assert top["episode_uuid"] == memories["dog"]
    assert "text" not in top["ranks"]  # no word in common: only the vector leg found it
    assert top["ranks"]["passage_vector"] == 1


def test_bm25_leg_finds_an_exact_rare_token(call: Call, memories: dict[str, str]) -> None:
    [top, *_] = passages(call, "zxqv77")
    assert top["episode_uuid"] == memories["report"]
    assert top["ranks"]["text"] == 1


def test_p_112_passage_rows_and_bounds(call: Call, memories: dict[str, str]) -> None:
    result = call("knowledge_search_passages", query="Lisbon holiday", num_results=500)
    assert result["count"] == len(result["passages"]) >= 1
    row = result["passages"][0]
    assert row["episode_uuid"] == memories["trip"]
    assert row["name"] == "trip"
    assert row["source"] == "text"
    assert "Lisbon" in row["content"]
    assert 0.0 <= row["score"] <= 1.0
    with pytest.raises(InvalidParams) as error:
        call("knowledge_search_passages", query="   ")
    assert error.value.field == "query"


def test_min_score_filters_weak_matches(call: Call, memories: dict[str, str]) -> None:
    everything = passages(call, "Lisbon")
    strict = call("knowledge_search_passages", query="Lisbon", min_score=1.0)["passages"]
    assert len(strict) < len(everything)
    assert [p["episode_uuid"] for p in strict] == [memories["trip"]]


def test_k_ast_013_014_name_and_summary_find_the_entity(
    call: Call, memories: dict[str, str]
) -> None:
    by_summary_word = call("knowledge_find_entities", query="mathematician", group_ids=["g"])
    assert by_summary_word["nodes"][0]["uuid"] == memories["ada"]
    assert by_summary_word["nodes"][0]["ranks"]["text"] == 1
    by_meaning = call(
        "knowledge_find_entities", query="woman who programmed the first computer", group_ids=["g"]
    )
    assert by_meaning["nodes"][0]["uuid"] == memories["ada"]
    assert "summary_vector" in by_meaning["nodes"][0]["ranks"]


def test_k_ast_015_037_attributes_are_not_searchable(call: Call, memories: dict[str, str]) -> None:
    entities = call("knowledge_find_entities", query="quokka")["nodes"]
    assert all("text" not in node["ranks"] for node in entities)
    edges = call("knowledge_find_relationships", query="wombat")["edges"]
    assert all("text" not in edge["ranks"] for edge in edges)


def test_k_ast_036_fact_is_found_by_words_and_by_meaning(
    call: Call, memories: dict[str, str]
) -> None:
    by_words = call("knowledge_find_relationships", query="published notes 1843")["edges"]
    assert by_words[0]["ranks"]["text"] == 1
    by_meaning = call("knowledge_find_relationships", query="she documented the machine")["edges"]
    assert by_meaning[0]["name"] == "WROTE_NOTES_ON"
    assert "fact_vector" in by_meaning[0]["ranks"]


# A query each tool's documents answer: the edge's fact ("Ada published extensive notes about
# the Engine in 1843") does not hold "Lovelace", so under the relevance floor (ADR 0024) the
# name alone no longer finds it.
@pytest.mark.parametrize(
    ("tool", "query"),
    [
        ("knowledge_find_entities", "Ada Lovelace"),
        ("knowledge_find_relationships", "Ada's notes about the Engine"),
    ],
)
def test_k_gid_002_003_011_012_find_tools_all_on_omit_nothing_on_empty(
    call: Call, memories: dict[str, str], tool: str, query: str
) -> None:
    """With the list tools' test (empty is all), K-GID-021: the split on [] is kept."""
    key = "nodes" if tool == "knowledge_find_entities" else "edges"
    assert call(tool, query=query)["count"] >= 1
    assert call(tool, query=query, group_ids=None)["count"] >= 1
    assert call(tool, query=query, group_ids=[]) == {key: [], "count": 0}


def test_k_gid_004_015_020_passages_treat_empty_as_all_and_filter_exactly(
    call: Call, memories: dict[str, str]
) -> None:
    call(
        "knowledge_add_episode",
        name="elsewhere",
        episode_body="Lisbon tram 28 is crowded.",
        group_id="h",
    )
    groups = {p["group_id"] for p in passages(call, "Lisbon", group_ids=[])}
    assert groups == {p["group_id"] for p in passages(call, "Lisbon")} == {"g", "h"}
    assert {p["group_id"] for p in passages(call, "Lisbon", group_ids=["h"])} == {"h"}


def test_k_gid_020_find_entities_restricts_to_listed_groups(
    call: Call, memories: dict[str, str]
) -> None:
    nodes = call("knowledge_find_entities", query="Ada Lovelace", group_ids=["h"])["nodes"]
    assert [n["uuid"] for n in nodes] == [memories["other"]]


def test_deleting_an_episode_removes_it_from_every_index(
    call: Call, workspace: Workspace, memories: dict[str, str]
) -> None:
    vectors_before = workspace.vectors.count()
    call("knowledge_delete_episode", episode_uuid=memories["dog"])
    assert all(p["episode_uuid"] != memories["dog"] for p in passages(call, "dog Rex postman"))
    conn = workspace.reader()
    assert (
        conn.execute(
            "SELECT COUNT(*) FROM text_docs WHERE owner_uuid=?", (memories["dog"],)
        ).fetchone()[0]
        == 0
    )
    assert workspace.vectors.count() == vectors_before - 1


def test_purging_a_group_removes_its_entities_from_every_index(
    call: Call, workspace: Workspace, memories: dict[str, str]
) -> None:
    call("knowledge_delete_by_group", group_ids=["g"], confirm=True)
    nodes = call("knowledge_find_entities", query="Ada Lovelace mathematician")["nodes"]
    assert [n["uuid"] for n in nodes] == [memories["other"]]
    assert passages(call, "Lisbon") == []
    assert workspace.vectors.count() == 2  # group h: the name and summary of its entity


def test_k_ast_017_revision_never_re_embeds_and_says_so(
    call: Call, workspace: Workspace, memories: dict[str, str]
) -> None:
    calls = workspace.embedder.calls
    result = call(
        "knowledge_assert_entity", name="Ada Lovelace", group_id="g", summary="poet's daughter"
    )
    assert result["embedding_stale"] == ["summary_embedding"]
    assert workspace.embedder.calls == calls  # the revision ran no model
    # The old summary's vector still answers; the new words are only in the text index.
    nodes = call(
        "knowledge_find_entities", query="woman who programmed the first computer", group_ids=["g"]
    )["nodes"]
    ada = next(n for n in nodes if n["uuid"] == memories["ada"])
    assert ada["ranks"]["summary_vector"] == 1
    assert "text" not in ada["ranks"]
    assert (
        call("knowledge_find_entities", query="poet daughter", group_ids=["g"])["nodes"][0][
            "ranks"
        ]["text"]
        == 1
    )


def test_a_chat_reply_is_found_by_its_neighbours_words(call: Call) -> None:
    """Contextual indexing: a message's passage also holds the messages next to it."""
    said = {}
    for name, body in (
        ("q", "Did you finally adopt the greyhound from the shelter?"),
        ("a", "Yes, last week!"),
        ("later", "Dinner tomorrow at eight?"),
    ):
        said[name] = call(
            "knowledge_add_episode", name=name, episode_body=body, source="message", group_id="chat"
        )["episode_uuid"]
    call(
        "knowledge_add_episode",
        name="doc",
        episode_body="Unrelated greyhound racing notes.",
        source="text",
        group_id="chat",
    )
    found = passages(call, "greyhound adopted", group_ids=["chat"])
    reply = next(p for p in found if p["name"] == "a")
    assert "text" in reply["ranks"]  # matched through the question next to it
    assert reply["content"] == "Yes, last week!"
    call("knowledge_delete_episode", episode_uuid=said["q"])
    after = passages(call, "greyhound adopted", group_ids=["chat"])
    assert all("text" not in p["ranks"] for p in after if p["name"] == "a")


def test_issue_14_passage_search_expands_through_the_entities_chunks_mention(
    call: Call, app: App
) -> None:
    """A passage found by its words leads, through an entity its chunk mentions, to the
    passage of another chunk mentioning it (ranked as a graph hop, at half the score, above
    min_score's floor); a chunk sharing no entity is not brought in, nor is anything with
    expansion off."""
    chunks = {
        "c1": "Ada Lovelace filed ticket zq881 with Charles Babbage in London.",
        "c2": "Charles Babbage designed the Difference Engine.",
        "c3": "The weather in Paris was mild all week.",
    }
    ids = {
        chunk_id: call(
            "knowledge_process_chunk",
            chunk_text=text,
            chunk_id=chunk_id,
            source_file="notes.md",
            group_id="p",
        )["episode_uuid"]
        for chunk_id, text in chunks.items()
    }
    found = call("knowledge_search_passages", query="zq881", group_ids=["p"])["passages"]
    by_episode = {p["episode_uuid"]: p for p in found}
    assert found[0]["episode_uuid"] == ids["c1"]
    assert found[0]["ranks"]["text"] == 1
    assert by_episode[ids["c2"]]["ranks"] == {"graph": 1}
    assert by_episode[ids["c2"]]["score"] == pytest.approx(found[0]["score"] / 2, abs=1e-6)
    assert ids["c3"] not in by_episode
    flat = search.search_passages(
        replace(search_context(app), expand_depth=0), "zq881", ["p"], 10, 0.5
    )
    assert [p["episode_uuid"] for p in flat["passages"]] == [ids["c1"]]


def test_issue_14_an_entity_many_chunks_mention_links_none_of_them(
    call: Call, workspace: Workspace
) -> None:
    """A hub (here a name 31 chunks mention, more than the hop's 30) says nothing about which
    of its chunks is related: the hop goes through rarer entities only."""
    text = "Ada Lovelace filed ticket zq881 with Charles Babbage."
    first = call("knowledge_process_chunk", chunk_text=text, chunk_id="c0",
                 source_file="notes.md", group_id="p")  # fmt: skip
    for number in range(1, 31):
        call("knowledge_process_chunk", chunk_text=f"Charles Babbage wrote letter {number}.",
             chunk_id=f"c{number}", source_file="notes.md", group_id="p")  # fmt: skip
    found = call("knowledge_search_passages", query="zq881", group_ids=["p"])["passages"]
    assert [p["name"] for p in found] == ["c0"]
    # with a bound above the hub's 31 chunks, the same hop finds the other 30
    linked = reader.co_mentioned_episodes(workspace.reader(), [first["episode_uuid"]], ["p"], 31)
    assert len(linked) == 30
