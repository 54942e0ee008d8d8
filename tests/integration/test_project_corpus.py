"""The Kestrel project corpus (fixtures/) written through the knowledge tools and searched.

Most tests find things by words, on the hashing embedder; the last one is about meaning and
runs on MiniLM."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.fixtures import corpus
from lcg.fixtures.corpus import KnowledgeCorpus, Written
from tests.conftest import Call

GROUP = "kestrel"


@pytest.fixture
def project() -> KnowledgeCorpus:
    return corpus.knowledge(corpus.PROJECT)


@pytest.fixture
def written(call: Call, project: KnowledgeCorpus) -> Written:
    return corpus.write_corpus(call, project)


def names(rows: list[dict[str, Any]]) -> list[str]:
    return [str(row["name"]) for row in rows]


def test_every_entity_relationship_and_episode_lands_in_the_corpus_group(
    call: Call, project: KnowledgeCorpus, written: Written
) -> None:
    status = call("knowledge_status")
    assert (status["entity_count"], status["relationship_count"], status["episode_count"]) == (
        len(project.entities),
        len(project.relationships),
        len(project.episodes),
    )
    assert written.group_id == GROUP
    assert status["wal_groups"][GROUP]["max_seq"] == (
        len(project.entities) + len(project.relationships) + len(project.episodes)
    )
    nodes = call("knowledge_get_nodes_by_group", group_ids=[GROUP])["nodes"]
    assert {n["uuid"] for n in nodes} == set(written.entities.values())


def test_find_entities_ranks_the_scheduler_first_for_a_question_about_the_job_queue(
    call: Call, written: Written
) -> None:
    [best, *_] = call(
        "knowledge_find_entities",
        query="where does the scheduler keep its job queue?",
        group_ids=[GROUP],
    )["nodes"]
    assert best["uuid"] == written.entities["Kestrel Scheduler"]
    assert best["ranks"]["text"] == 1


def test_search_passages_finds_the_fix_of_issue_412_by_its_words(
    call: Call, written: Written
) -> None:
    found = call(
        "knowledge_search_passages",
        query="multipart upload id retries",
        group_ids=[GROUP],
        min_score=0.0,
    )["passages"]
    assert found[0]["episode_uuid"] == written.episodes["issue-412-fix"]
    assert "chat-412-answer" in names(found[:5])


def test_find_relationships_finds_the_decision_to_leave_redis(call: Call, written: Written) -> None:
    [best, *_] = call(
        "knowledge_find_relationships", query="queue moved from Redis", group_ids=[GROUP]
    )["edges"]
    assert best["name"] == "DECIDES_FOR"
    assert best["ranks"]["text"] == 1


def test_neighbours_of_the_uploader_are_its_maintainer_its_storage_and_its_issue(
    call: Call, written: Written
) -> None:
    result = call(
        "knowledge_get_entity_neighbors", entity_uuid=written.entities["Artifact Uploader"]
    )
    around = {n["name"] for n in result["nodes"]}
    assert {"Tomasz Nowak", "MinIO", "Issue 412"} <= around


def test_a_replay_of_the_corpus_group_gives_back_the_same_graph(
    call: Call, written: Written
) -> None:
    before = call("knowledge_get_edges_by_group", group_ids=[GROUP])
    call("knowledge_rebuild_from_wal", group_id=GROUP, force_clear=True)
    assert call("knowledge_get_edges_by_group", group_ids=[GROUP]) == before


@pytest.mark.minilm
def test_a_paraphrase_sharing_no_words_finds_the_sandbox_audit(
    call: Call, written: Written
) -> None:
    [top, *_] = call(
        "knowledge_search_passages",
        query="credentials exposed to extensions",
        group_ids=[GROUP],
        min_score=0.0,
    )["passages"]
    assert top["episode_uuid"] == written.episodes["sandbox-audit"]
    assert "text" not in top["ranks"]
