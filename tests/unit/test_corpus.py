"""The corpus loader: the shipped corpora parse, hold their references, and bad files are
refused naming the field and the rule (fixtures/README.md)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from lcg.fixtures import corpus, labels
from lcg.fixtures.corpus import CorpusError

ROOT = Path(__file__).resolve().parents[2]


def raw(name: str) -> Any:
    return json.loads((ROOT / "fixtures" / "lcg" / "fixtures" / "data" / name).read_text())


def test_the_project_corpus_is_a_small_real_project() -> None:
    project = corpus.knowledge(corpus.PROJECT)
    assert project.group_id == "kestrel"
    assert 10 <= len(project.episodes) <= 20
    assert len(project.entities) == 15
    assert len(project.relationships) == 16
    assert {e.source for e in project.episodes} == {"text", "message", "json"}
    assert project.entity("Kestrel Scheduler").labels == ("Component",)


def test_the_demo_corpus_is_what_lcg_demo_asserts() -> None:
    demo = corpus.knowledge(corpus.DEMO)
    assert [(e.name, e.labels) for e in demo.entities] == [
        ("Ada Lovelace", ("Person",)),
        ("Analytical Engine", ("Machine",)),
        ("Charles Babbage", ("Person",)),
    ]
    assert [(r.source, r.predicate, r.target, r.fact) for r in demo.relationships] == [
        ("Ada Lovelace", "WROTE_NOTES_ON", "Analytical Engine", None),
        ("Charles Babbage", "DESIGNED", "Analytical Engine", None),
    ]
    assert [e.name for e in demo.episodes] == ["note-1"]


def test_the_memory_transcript_has_three_agents_and_derivations_resting_on_earlier_ones() -> None:
    session = corpus.transcript(corpus.MEMORY)
    assert set(session.agents) == {"planner", "coder", "reviewer"}
    assert [t.turn for t in session.turns] == list(range(1, 25))
    assert {t.agent for t in session.turns} == set(session.agents)
    derived = session.derived()
    assert derived["issue-closed"].rests_on == ("cause", "nightly-green")
    seen: set[str] = set()
    for turn in session.turns:
        for concept in turn.derives:
            assert set(concept.rests_on) <= seen
        seen.update(c.key for c in turn.derives)
    assert sum(t.action is not None for t in session.turns) >= 8


def test_the_shipped_files_are_the_ones_the_package_reads() -> None:
    assert corpus.parse_knowledge(raw(corpus.PROJECT)) == corpus.knowledge(corpus.PROJECT)
    assert corpus.parse_transcript(raw(corpus.MEMORY)) == corpus.transcript(corpus.MEMORY)


def test_a_relationship_to_an_unknown_entity_is_refused_naming_the_field() -> None:
    data = raw(corpus.PROJECT)
    data["relationships"][3]["target"] = "Nobody"
    with pytest.raises(CorpusError, match=r"relationships\[3\]\.target: must name an entity"):
        corpus.parse_knowledge(data)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("entities", 0, "name"), "", r"entities\[0\]\.name: must be a non-empty string"),
        (("entities", 1, "name"), "Kestrel", r"corpus\.entities: names must be unique"),
        (("episodes", 2, "source"), "email", r"episodes\[2\]\.source: must be one of"),
        (("entities", 0, "labels"), "Project", r"entities\[0\]\.labels: must be a list"),
    ],
)
def test_a_knowledge_corpus_that_breaks_its_schema_is_refused(
    path: tuple[str, int, str], value: object, message: str
) -> None:
    data = raw(corpus.PROJECT)
    data[path[0]][path[1]][path[2]] = value
    with pytest.raises(CorpusError, match=message):
        corpus.parse_knowledge(data)


def test_a_transcript_citing_a_later_concept_or_an_unknown_agent_is_refused() -> None:
    original = raw(corpus.MEMORY)
    early = copy.deepcopy(original)
    early["turns"][0]["derives"][0]["rests_on"] = ["cause"]  # derived in turn 5
    with pytest.raises(CorpusError, match=r"turns\[0\]\.derives\[0\]\.rests_on: must name keys"):
        corpus.parse_transcript(early)
    stranger = copy.deepcopy(original)
    stranger["turns"][4]["agent"] = "intruder"
    with pytest.raises(CorpusError, match=r"turns\[4\]\.agent: must be one of"):
        corpus.parse_transcript(stranger)
    skipped = copy.deepcopy(original)
    del skipped["turns"][1]
    with pytest.raises(CorpusError, match=r"turns\[1\]\.turn: must be 2"):
        corpus.parse_transcript(skipped)


def test_the_held_out_household_corpus_is_another_domain_of_the_same_size() -> None:
    home = corpus.knowledge(corpus.HOUSEHOLD)
    assert home.group_id == "home"
    assert (len(home.entities), len(home.relationships)) == (16, 14)
    assert home.entity("Biscuit").labels == ("Pet",)


def test_the_find_labels_hold_about_half_answerable_queries_naming_their_corpora() -> None:
    calibration, held_out = labels.find_labels()
    assert (calibration.name, held_out.name) == ("calibration", "held-out")
    assert calibration.corpora == (corpus.PROJECT, corpus.DEMO)
    assert held_out.corpora == (corpus.HOUSEHOLD,)
    for label_set in (calibration, held_out):
        answerable = sum(q.answerable for q in label_set.queries)
        assert len(label_set.queries) >= 35
        assert 0.4 <= answerable / len(label_set.queries) <= 0.65
        assert {q.kind for q in label_set.queries} == set(labels.KINDS)
    zebra = next(q for q in calibration.queries if q.query == "zebra")
    assert (zebra.entities, zebra.edges) == ((), ())


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("entities", ["Nobody"], r"queries\[0\]\.entities: must name entities"),
        ("edges", ["Kestrel USES Nobody"], r"queries\[0\]\.edges: must name relationships"),
        ("kind", "vague", r"queries\[0\]\.kind: must be one of"),
        ("entities", [], r"queries\[0\]\.entities: empty exactly for an off-topic"),
    ],
)
def test_a_label_naming_what_its_corpora_lack_is_refused(
    field: str, value: object, message: str
) -> None:
    data = raw(labels.FIND_LABELS)["sets"][0]
    data["queries"][0][field] = value
    with pytest.raises(CorpusError, match=message):
        labels.parse_label_set(data, "sets[0]")
