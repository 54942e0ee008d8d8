"""Issue 10, "Search must find meaning with its defaults": the find tools' relevance floor
(ADR 0024) on the real model, over the labelled queries of fixtures/ (find-labels.json).

Before the floor, a query nothing answers ("zebra") returned every entity: the vector legs
always return their k nearest. The labels also hold the queries that have answers, so these
tests check both sides: nothing comes back for the first, the relevant hit stays in the top 3
for the second. The few queries the floor gets wrong are listed here with the reason, as
measured by bench/bench_find.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lcg.fixtures import corpus
from lcg.fixtures.labels import LabelledQuery, LabelSet, edge_label, find_labels
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.minilm import MiniLmEmbedder
from tests.conftest import Call, make_call, make_workspace

pytestmark = pytest.mark.minilm

# Queries whose relevant answer is not in the top 3 by default (every other labelled answer
# is), and why. The first of each were in the top 3 without the floor.
ENTITY_MISSES = {
    "credentials exposed to extensions": "a paraphrase at cosine 0.20: as low as noise",
    "software development kit for add-ons": "Plugin SDK's name at cosine 0.36, summary 0.28",
}
EDGE_MISSES = {
    "who looks after the dog when we travel?": "coverage 0.37 (LOOKS_AFTER), fact cosine 0.23",
    "S3-compatible object storage": "not before either: no shared word, fact cosine 0.13",
    "where are build artifacts stored?": "not before either: the maintainer's edges rank first",
    "who is Iris's mother?": "not before either: the CHILD_OF fact says nothing of a mother",
}
# Queries nothing answers that still return hits: each shares a word, and a meaning, with
# the corpus (a build *cache*, an *agent*), at cosines of 0.37-0.47.
KEPT_NEAR_MISSES = {"pirate treasure cache", "agent 007 spy movies"}


@dataclass(frozen=True, slots=True)
class Labelled:
    call: Call
    names: dict[str, str]  # entity uuid -> name
    sets: tuple[LabelSet, ...]

    def find(
        self, query: str, group_ids: list[str] | None, **params: Any
    ) -> tuple[list[str], list[str]]:
        """Entity names and relationship labels the two tools return, best first."""
        nodes = self.call("knowledge_find_entities", query=query, group_ids=group_ids, **params)
        edges = self.call(
            "knowledge_find_relationships", query=query, group_ids=group_ids, **params
        )
        return [self.names[n["uuid"]] for n in nodes["nodes"]], [
            edge_label(
                self.names[e["source_node_uuid"]], e["name"], self.names[e["target_node_uuid"]]
            )
            for e in edges["edges"]
        ]

    def queries(self) -> Iterator[tuple[LabelSet, LabelledQuery]]:
        for label_set in self.sets:
            for labelled in label_set.queries:
                yield label_set, labelled


@pytest.fixture(scope="module")
def labelled(
    tmp_path_factory: pytest.TempPathFactory, minilm: MiniLmEmbedder
) -> Iterator[Labelled]:
    """Every label set's corpora in one workspace embedding with MiniLM."""
    settings = Settings(workspace=tmp_path_factory.mktemp("find-floor"))
    with make_workspace(settings, minilm) as ws:
        call = make_call(App(ws))
        sets = find_labels()
        names: dict[str, str] = {}
        for label_set in sets:
            for name in label_set.corpora:
                written = corpus.write_corpus(call, corpus.knowledge(name))
                names.update({uuid: entity for entity, uuid in written.entities.items()})
        yield Labelled(call, names, sets)


def test_issue_10_zebra_finds_no_entity_and_no_relationship(labelled: Labelled) -> None:
    for groups in (None, ["kestrel"]):
        assert labelled.call("knowledge_find_entities", query="zebra", group_ids=groups) == {
            "nodes": [],
            "count": 0,
        }
        assert labelled.call("knowledge_find_relationships", query="zebra", group_ids=groups) == {
            "edges": [],
            "count": 0,
        }


def test_issue_10_relevance_floor_false_returns_the_nearest_candidates_as_before(
    labelled: Labelled,
) -> None:
    entities, edges = labelled.find("zebra", ["kestrel"], relevance_floor=False)
    assert len(entities) == len(edges) == 10  # num_results: 15 entities, 16 relationships


def test_issue_10_p_110_p_111_queries_nothing_answers_find_nothing(labelled: Labelled) -> None:
    found = {}
    for label_set, query in labelled.queries():
        if query.answerable or query.query in KEPT_NEAR_MISSES:
            continue
        entities, edges = labelled.find(query.query, list(label_set.group_ids))
        if entities or edges:
            found[query.query] = (entities, edges)
    assert found == {}


def test_issue_10_the_near_misses_that_still_find_something_are_those_listed(
    labelled: Labelled,
) -> None:
    kept = {
        query.query
        for label_set, query in labelled.queries()
        if not query.answerable and any(labelled.find(query.query, list(label_set.group_ids)))
    }
    assert kept == KEPT_NEAR_MISSES


def test_issue_10_p_110_k_sem_004_relevant_entities_stay_in_the_top_3(labelled: Labelled) -> None:
    """Queries sharing words with their answer, and paraphrases sharing none (K-SEM-004)."""
    lost = {}
    for label_set, query in labelled.queries():
        if not query.answerable:
            continue
        entities, _ = labelled.find(query.query, list(label_set.group_ids))
        if not set(entities[:3]) & set(query.entities):
            lost[query.query] = entities[:3]
    assert lost.keys() == ENTITY_MISSES.keys(), lost


def test_issue_10_p_111_relevant_relationships_stay_in_the_top_3(labelled: Labelled) -> None:
    lost = {}
    for label_set, query in labelled.queries():
        if not query.edges:
            continue
        _, edges = labelled.find(query.query, list(label_set.group_ids))
        if not set(edges[:3]) & set(query.edges):
            lost[query.query] = edges[:3]
    assert lost.keys() == EDGE_MISSES.keys(), lost


def test_issue_10_the_demo_question_still_finds_ada_first(labelled: Labelled) -> None:
    """`lcg demo` prints the first hit of this question (interfaces/demo.py)."""
    entities, _ = labelled.find("who wrote the first program for a machine?", ["demo"])
    assert entities[0] == "Ada Lovelace"
