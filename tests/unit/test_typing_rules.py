"""The ontology's rules and the pure typing deciders (P-018, A-03, A-21, K-RT-013/016/023,
K-RT-037..039; ADR 0042)."""

from __future__ import annotations

import pytest

from lcg.domain import ontology, typing_rules
from lcg.domain.errors import ExtractorFailed
from lcg.domain.ids import EdgeUuid, EntityUuid
from lcg.domain.ontology import OntologyInvalid, RelationType
from lcg.domain.typing_rules import EdgeRow, EntityRow
from lcg.projections.extraction.classify import parse_verdict, schema

GOOD = {
    "entity_types": [{"name": "Person", "description": "A human.", "aliases": ["human"]}],
    "relation_types": [
        {
            "name": "WORKS_FOR",
            "description": "Employment.",
            "aliases": ["employed by"],
            "keywords": ["employ"],
        }
    ],
}


def test_p_018_a_valid_file_parses_with_names_descriptions_aliases_keywords() -> None:
    parsed = ontology.parse(GOOD, ".lcg/ontology.yaml")
    assert parsed.relation_types == (
        RelationType("WORKS_FOR", "Employment.", ("employed by",), ("employ",)),
    )
    assert parsed.entity_names == frozenset({"Person"})
    assert ontology.parse(None, "f").relation_types == ()  # an empty file declares nothing


def test_ontology_show_prints_the_parsed_file_with_its_source() -> None:
    shown = ontology.as_data(ontology.parse(GOOD, ".lcg/ontology.yaml"))
    assert shown == {"source": ".lcg/ontology.yaml", **GOOD}


@pytest.mark.parametrize(
    ("data", "entry", "rule"),
    [
        ([], "(top level)", "must be a mapping"),
        ({"relation_type": []}, "(top level)", "unknown key(s) relation_type"),
        ({"relation_types": {"name": "X"}}, "relation_types", "must be a list"),
        ({"relation_types": ["X"]}, "relation_types[0]", "must be a mapping"),
        (
            {"relation_types": [{"name": "X", "description": "d", "alias": ["y"]}]},
            "relation_types[0] (X)",
            "unknown key(s) alias; allowed: aliases, description, keywords, name",
        ),
        ({"relation_types": [{"name": "X"}]}, "relation_types[0] (X)", "description must be"),
        (
            {"relation_types": [{"name": "works for", "description": "d"}]},
            "relation_types[0] (works for)",
            "must start with a letter and hold only letters, digits and _",
        ),
        (
            {"relation_types": [{"name": "UNCLASSIFIED", "description": "d"}]},
            "relation_types[0] (UNCLASSIFIED)",
            "reserved",
        ),
        (
            {"entity_types": [{"name": "Person"}, {"name": "person"}]},
            "entity_types[1] (person)",
            "name repeats entity_types[0] (Person)",
        ),
        (
            {"entity_types": [{"name": "P", "keywords": ["k"]}]},
            "entity_types[0] (P)",
            "unknown key(s) keywords",
        ),
        (
            {"relation_types": [{"name": "X", "description": "d", "aliases": "y"}]},
            "relation_types[0] (X)",
            "aliases must be a list",
        ),
    ],
)
def test_p_018_problems_name_the_file_the_entry_and_the_rule(
    data: object, entry: str, rule: str
) -> None:
    with pytest.raises(OntologyInvalid) as invalid:
        ontology.parse(data, ".lcg/ontology.yaml")
    (problem, *_) = invalid.value.problems
    assert (problem.file, problem.entry) == (".lcg/ontology.yaml", entry)
    assert rule in problem.rule
    assert invalid.value.message.startswith(f"ontology: .lcg/ontology.yaml: {entry}: ")


def test_p_018_every_problem_is_listed() -> None:
    data = {"relation_types": [{"name": "1X"}, {"name": "Y", "description": 3}]}
    with pytest.raises(OntologyInvalid) as invalid:
        ontology.parse(data, "f.yaml")
    assert len(invalid.value.problems) == 3
    assert "(and 2 more)" in invalid.value.message


@pytest.mark.parametrize(
    ("name", "noise"),
    [
        ("PERSON -> ORGANIZATION", True),
        ("PERSON → ORG", True),
        ("PERSON->PLACE", True),
        ("WORKS_FOR", False),
        ("person -> org", False),
        ("A -> b", False),
    ],
)
def test_a_03_arrow_named_edges_are_noise(name: str, noise: bool) -> None:
    assert typing_rules.is_noise(EdgeRow(EdgeUuid("e"), name, "f", None)) is noise


@pytest.mark.parametrize(
    ("fact", "pseudo"),
    [
        ("The specification document defines the format.", "THE_SPECIFICATION_DOCUMENT_DEFINES"),
        ("Ada's notes -- on it", "ADAS_NOTES_ON_IT"),
        ("one", "ONE"),
        ("", "UNCLASSIFIED"),
        ("!!! ...", "UNCLASSIFIED"),
    ],
)
def test_k_rt_023_a_21_p_128_pseudo_types_are_the_facts_first_four_words(
    fact: str, pseudo: str
) -> None:
    assert typing_rules.pseudo_type(fact) == pseudo


def _edge(uuid: str, relation_type: str | None) -> EdgeRow:
    return EdgeRow(EdgeUuid(uuid), "P", "f", relation_type)


def test_k_rt_013_016_the_fallback_promotes_at_the_threshold_and_leaves_the_rest() -> None:
    edges = [_edge("at", None), _edge("below", None), _edge("none", "UNCLASSIFIED")]
    nearest = {EdgeUuid("at"): ("HOLDS", 0.5), EdgeUuid("below"): ("HOLDS", 0.499999)}
    plan = typing_rules.decide_canonicalize(edges, {}, nearest, 0.5)
    assert [(a.edge_uuid, a.relation_type) for a in plan.writes] == [
        ("at", "HOLDS"),
        ("below", "UNCLASSIFIED"),
    ]  # `none` is already UNCLASSIFIED: skipped (K-RT-018)
    assert (plan.count("promoted"), plan.count("residual")) == (1, 2)


def test_k_rt_037_to_039_scopes_select_untyped_off_ontology_or_all() -> None:
    declared = frozenset({"HOLDS"})
    edges = [_edge("a", None), _edge("b", " "), _edge("c", "HOLDS"), _edge("d", "UNCLASSIFIED")]
    chosen = {
        scope: [e.uuid for e in edges if typing_rules.edge_in_scope(e, scope, declared)]
        for scope in typing_rules.SCOPES
    }
    assert chosen == {
        "untyped": ["a", "b"],
        "off_ontology": ["a", "b", "d"],
        "all": ["a", "b", "c", "d"],
    }
    assert typing_rules.scope_error("typed") == (
        "unknown scope 'typed'; valid values: untyped, off_ontology, all"
    )


def test_k_et_004_entity_types_are_the_first_label_other_than_entity() -> None:
    entity = EntityRow(EntityUuid("x"), "Ada", "", ("Entity",))
    assert typing_rules.entity_type(entity.labels) is None
    assert typing_rules.entity_in_scope(entity, "untyped", frozenset())
    assert typing_rules.retyped_labels(("Entity",), "Person") == ("Person",)
    assert typing_rules.retyped_labels(("Org", "Founder"), "Person") == ("Person", "Founder")


def test_k_rt_035_a_verdict_off_the_menu_is_an_abstention_never_a_near_match() -> None:
    menu = [("HOLDS", "d"), ("WORKS_FOR", "d")]
    assert parse_verdict('{"type": "HOLDS"}', menu) == "HOLDS"
    assert parse_verdict('{"type": "UNCLASSIFIED"}', menu) is None
    assert parse_verdict('{"type": "holds"}', menu) is None
    assert parse_verdict('```json\n{"type": "WORKS_FOR"}\n```', menu) == "WORKS_FOR"
    assert parse_verdict('{"type": "Scientist"}', []) == "Scientist"  # open-ended
    assert parse_verdict('{"type": "not a name!"}', []) is None
    assert schema(menu)["properties"]["type"]["enum"] == ["HOLDS", "WORKS_FOR", "UNCLASSIFIED"]
    with pytest.raises(ExtractorFailed, match="no JSON verdict"):
        parse_verdict("HOLDS, I think", menu)


def test_an_unclassified_relation_type_is_no_term_and_the_predicate_still_types_the_edge() -> None:
    index = typing_rules.LexicalIndex(ontology.parse(GOOD, ".lcg/ontology.yaml"))
    edge = EdgeRow(EdgeUuid("e"), "works for", "Ada works for Acme", ontology.UNCLASSIFIED)
    assert index.match(edge) == "WORKS_FOR"
    assert index.match(EdgeRow(EdgeUuid("e"), "likes", "f", ontology.UNCLASSIFIED)) is None


def test_shares_are_percentages_to_two_decimals() -> None:
    assert [typing_rules.pct(1, 3), typing_rules.pct(2, 2), typing_rules.pct(0, 0)] == [
        33.33,
        100.0,
        0.0,
    ]


def test_an_extractor_failure_names_the_extractor_field_and_its_rule() -> None:
    failed = ExtractorFailed("classifier", "answered nothing")
    assert str(failed) == "extractor: classifier failed: answered nothing; nothing was written"
    assert (failed.field, failed.rule) == ("extractor", "must answer an extraction")
