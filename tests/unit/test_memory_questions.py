"""Dependency questions: which concept a "what depends on X" query names (M-REC-080..098)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcg.domain.memory.questions import (
    MARKERS,
    MAX_BOUNDED_OCCURRENCES,
    MAX_QUERY_BYTES,
    Anchor,
    AnchorReason,
    NameCandidate,
    find_anchor,
    is_dependency_question,
    is_security_group,
    names_in,
    same_anchor,
)
from lcg.domain.memory.text import ConceptType

ENTITY = ConceptType.ENTITY
RESOURCE = ConceptType.RESOURCE
LOGIC = ConceptType.LOGIC


def name(
    text: str, dependents: int = 3, concept_type: ConceptType = ENTITY, node_id: str = ""
) -> NameCandidate:
    return NameCandidate(text, concept_type, dependents, node_id or f"id-{text}")


def anchored(query: str, *names: NameCandidate) -> str | None:
    """The text of the concept the query names, or None when it falls through."""
    anchor = find_anchor(query, names)
    return None if anchor is None else anchor.concept.text


DB = name("db")

# --- M-REC-080: the marker forms ----------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "what depends on db",
        "dependents of db",
        "blast radius of db",
        "is it safe to delete db",
        "what uses db",
        "What depends on db?",
        "which services depend on db",
        "show me the depends-on list of db",
    ],
)
def test_m_rec_080_each_marker_form_asks_a_dependency_question(query: str) -> None:
    assert is_dependency_question(query)
    assert anchored(query, DB) == "db"


@pytest.mark.parametrize(
    "query",
    ["db", "tell me about db", "is the db independent of the region", "somewhat uses db"],
)
def test_m_rec_080_a_query_without_a_marker_falls_through(query: str) -> None:
    assert not is_dependency_question(query)
    assert anchored(query, DB) is None


def test_m_rec_080_the_answer_names_the_anchor_and_where_the_query_named_it() -> None:
    anchor = find_anchor("what depends on DB?", [DB])
    assert anchor == Anchor((DB,), AnchorReason.NAMED, (16, 18))


# --- M-REC-083/084: whole words after NFC and case folding ---------------------------------------


def test_m_rec_083_a_name_matches_ignoring_case_after_nfc() -> None:
    decomposed = name("cafe\u0301 queue")
    assert anchored("what depends on the CAFÉ QUEUE", decomposed) == "cafe\u0301 queue"
    assert anchored(unicodedata.normalize("NFD", "what uses Café Queue"), decomposed) is not None


def test_m_rec_083_a_folding_that_lengthens_a_character_keeps_the_span_of_the_query() -> None:
    query = "what depends on the Straße now"
    anchor = find_anchor(query, [name("STRASSE")])
    assert anchor is not None
    assert anchor.span is not None
    assert query[slice(*anchor.span)] == "Straße"


def test_m_rec_083_the_whole_text_must_appear() -> None:
    assert anchored("what depends on user db", name("user db schema")) is None


@pytest.mark.parametrize(
    "query",
    [
        "what depends on db2",  # a digit
        "what depends on dbé",  # a letter
        "what depends on db\u0301",  # a combining mark
        "what depends on db_x",  # an underscore
        "what depends on δdb",  # a letter of another script
    ],
)
def test_m_rec_084_letters_digits_marks_and_underscores_are_word_characters(query: str) -> None:
    assert anchored(query, DB) is None


@pytest.mark.parametrize("query", ["what depends on db-admin", "what depends on prod-db"])
def test_m_rec_084_a_hyphen_between_word_characters_joins_an_identifier(query: str) -> None:
    assert anchored(query, DB) is None


@pytest.mark.parametrize(
    "query", ["what depends on db - the store", "what depends on -db", "what uses db-?"]
)
def test_m_rec_084_a_hyphen_not_between_word_characters_is_a_boundary(query: str) -> None:
    assert anchored(query, DB) == "db"


def test_m_rec_084_words_of_any_script_match_whole() -> None:
    database = name("数据库")
    assert anchored("what depends on 数据库?", database) == "数据库"
    assert anchored("what depends on 数据库表", database) is None


# --- M-REC-085..088: the seed's examples --------------------------------------------------------


@pytest.mark.parametrize("query", ["what depends on dbadmin", "what depends on user_db"])
def test_m_rec_085_db_does_not_name_dbadmin_or_user_db(query: str) -> None:
    assert anchored(query, DB) is None


def test_m_rec_086_sg_base_does_not_name_sg_base_vpc() -> None:
    assert anchored("what depends on SG-Base-VPC", name("SG-Base")) is None
    assert anchored("what depends on SG-Base", name("SG-Base")) == "SG-Base"


@pytest.mark.parametrize(
    "query", ["what depends on config/.env", "what uses .env", "blast radius of app.env-file/.env"]
)
def test_m_rec_087_a_punctuation_edge_needs_no_boundary(query: str) -> None:
    assert anchored(query, name(".env", concept_type=RESOURCE)) == ".env"


def test_m_rec_087_a_word_edge_still_needs_its_boundary() -> None:
    assert anchored("what depends on config/.envrc", name(".env")) is None


@pytest.mark.parametrize(
    "query",
    [
        "what depends on src/main.rs",
        "what depends on src/main.rs?",
        "what depends on (src/main.rs)",
        "what depends on ./src/main.rs",
    ],
)
def test_m_rec_088_src_main_rs_matches_between_boundaries(query: str) -> None:
    assert anchored(query, name("src/main.rs", concept_type=RESOURCE)) == "src/main.rs"


@pytest.mark.parametrize(
    "query",
    [
        "what depends on mysrc/main.rs",
        "what depends on lib_src/main.rs",
        "what depends on src/main.rsx",
        "what depends on src/main.rs-old",
    ],
)
def test_m_rec_088_src_main_rs_needs_boundaries_on_both_sides(query: str) -> None:
    assert anchored(query, name("src/main.rs", concept_type=RESOURCE)) is None


# --- M-REC-089/090: nested names ----------------------------------------------------------------


def test_m_rec_089_a_name_inside_a_longer_named_concept_is_skipped() -> None:
    names = (name("db", dependents=40), name("user db schema", dependents=2))
    assert anchored("what depends on user db schema", *names) == "user db schema"


def test_m_rec_089_a_name_also_written_on_its_own_is_not_skipped() -> None:
    names = (name("db"), name("user db schema"))
    assert anchored("what depends on db, not the user db schema", *names) == "db"


def test_m_rec_089_a_nested_name_stays_hidden_when_the_longer_one_has_no_dependents() -> None:
    names = (name("db", dependents=40), name("user db schema", dependents=0))
    assert anchored("what depends on user db schema", *names) is None


def test_m_rec_090_oq_50_a_clause_overlapping_the_marker_cannot_hide_its_subject() -> None:
    names = (name("safe to delete db", dependents=9), name("db"))
    assert anchored("is it safe to delete db", *names) == "db"


def test_m_rec_090_a_clause_overlapping_the_marker_does_not_anchor_itself() -> None:
    assert (
        anchored("what is the blast radius of the cache", name("blast radius of the cache")) is None
    )


# --- M-REC-091/092: nearest after a marker, then type, then length --------------------------------


def test_m_rec_091_the_name_starting_nearest_after_a_marker_wins() -> None:
    names = (name("prod", dependents=50), name("billing service", concept_type=LOGIC))
    assert anchored("what depends on billing service in prod", *names) == "billing service"


def test_m_rec_091_entity_or_resource_breaks_a_tie_in_distance() -> None:
    names = (name("queue", concept_type=LOGIC), name("db", concept_type=RESOURCE))
    assert anchored("what uses queue, and what uses db", *names) == "db"


def test_m_rec_091_oq_50_the_longer_name_breaks_a_tie_in_distance_and_type() -> None:
    names = (name("db"), name("cache"))
    assert anchored("what uses db, and what uses cache", *names) == "cache"


def test_m_rec_091_a_name_after_a_marker_beats_one_before_every_marker() -> None:
    names = (name("cache"), name("db"))
    assert anchored("cache aside, what depends on db", *names) == "db"


def test_m_rec_091_a_name_before_the_marker_anchors_when_nothing_follows_one() -> None:
    assert anchored("what does db's blast radius cover", name("db")) == "db"


def test_m_rec_091_the_order_of_the_names_does_not_matter() -> None:
    names = [name("db", node_id="b"), name("DB", node_id="a")]
    first = find_anchor("what uses db", names)
    assert first == find_anchor("what uses db", list(reversed(names)))
    assert first is not None
    assert [c.node_id for c in first.concepts] == ["a", "b"]


def test_m_rec_092_is_it_safe_to_delete_sg_base_vpc_in_vpc_enterprise_prod() -> None:
    names = (
        name("SG-Base", dependents=12, concept_type=RESOURCE),
        name("SG-Base-VPC", dependents=4, concept_type=RESOURCE),
        name("VPC", dependents=30),
        name("VPC-Enterprise-Prod", dependents=60),
        name("Prod", dependents=80),
    )
    query = "is it safe to delete SG-Base-VPC in VPC-Enterprise-Prod"
    anchor = find_anchor(query, names)
    assert anchor is not None
    assert anchor.concept.text == "SG-Base-VPC"
    assert anchor.span == (21, 32)


# --- M-REC-093/094: markers and function words ----------------------------------------------------


def test_m_rec_093_a_marker_phrase_does_not_anchor() -> None:
    names = (name("blast radius", dependents=9), name("depends on", dependents=9))
    assert anchored("what uses blast radius", *names) is None
    assert anchored("what is the blast radius of db", *names, DB) == "db"


@pytest.mark.parametrize("text", ["the", "of it", "It", "what", "on the"])
def test_m_rec_094_a_function_word_only_concept_does_not_anchor(text: str) -> None:
    assert anchored(f"what depends on {text} now", name(text)) is None


def test_m_rec_094_punctuation_alone_does_not_anchor() -> None:
    assert anchored("what depends on / ?", name("/")) is None


def test_m_rec_094_an_uppercase_acronym_anchors_when_written_uppercase() -> None:
    assert anchored("what depends on IT", name("IT")) == "IT"
    assert anchored("is it safe to delete IT", name("IT")) == "IT"


@pytest.mark.parametrize("query", ["what depends on it", "what depends on It"])
def test_m_rec_094_an_acronym_written_lowercase_does_not_anchor(query: str) -> None:
    assert anchored(query, name("IT")) is None


def test_m_rec_094_a_lowercase_concept_is_no_acronym() -> None:
    assert anchored("what depends on IT", name("it")) is None


def test_m_rec_094_a_function_word_inside_a_longer_name_still_anchors() -> None:
    assert anchored("what depends on the state of it", name("state of it")) == "state of it"


# --- M-REC-095/096: the fall-throughs -------------------------------------------------------------


def _padded(query: str, size: int, filler: str = "x") -> str:
    """`query` and a trailing run of `filler` up to exactly `size` UTF-8 bytes."""
    room = size - len(query.encode("utf-8")) - 1
    width = len(filler.encode("utf-8"))
    return f"{query} {filler * (room // width)}{'x' * (room % width)}"


def test_m_rec_095_a_query_of_16_kib_is_still_a_question() -> None:
    query = _padded("what depends on db", MAX_QUERY_BYTES)
    assert len(query.encode("utf-8")) == MAX_QUERY_BYTES
    assert anchored(query, DB) == "db"


@pytest.mark.parametrize("filler", ["x", "é", "数"])
def test_m_rec_095_a_query_over_16_kib_falls_through(filler: str) -> None:
    """Also M-LIM-046 (the query half). Also OQ-08: "over 16 KiB" is over the same 16,384
    UTF-8 bytes as the `query` cap, so a question at the cap is still one (the test above)."""
    query = _padded("what depends on db", MAX_QUERY_BYTES + 1, filler)
    assert len(query.encode("utf-8")) == MAX_QUERY_BYTES + 1
    assert anchored(query, DB) is None
    assert not is_dependency_question(query)


def test_m_rec_096_256_bounded_occurrences_still_anchor() -> None:
    query = "what depends on db" + " db" * (MAX_BOUNDED_OCCURRENCES - 1)
    assert anchored(query, DB) == "db"


def test_m_rec_096_oq_50_a_candidate_over_256_bounded_occurrences_falls_through() -> None:
    """Also M-LIM-046 (the occurrences half)."""
    query = "what depends on SG-Web; " + "db " * (MAX_BOUNDED_OCCURRENCES + 1)
    assert anchored(query, name("SG-Web"), DB) is None


def test_m_rec_096_overlapping_occurrences_each_count() -> None:
    # a name of non-word characters is bounded everywhere: a run of 258 dashes holds 257
    # occurrences of "--", one starting at every dash but the last
    query = "what depends on SG-Web; " + "-" * (MAX_BOUNDED_OCCURRENCES + 2)
    assert anchored(query, name("SG-Web"), name("--")) is None
    assert anchored(query[:-1], name("SG-Web"), name("--")) == "SG-Web"


def test_m_rec_096_occurrences_inside_longer_words_are_not_counted() -> None:
    query = "what depends on db " + "dbadmin user_db " * MAX_BOUNDED_OCCURRENCES
    assert anchored(query, DB) == "db"


# --- M-REC-097/098: security groups and everything else ---------------------------------------


SECURITY_GROUPS = (
    name("SG-Base", dependents=3, concept_type=RESOURCE),
    name("SG-Web", dependents=7, concept_type=RESOURCE),
    name("web tier security group", dependents=5),
    name("VPC-Enterprise-Prod", dependents=60),
)


def test_m_rec_097_security_group_picks_the_one_with_the_most_dependents() -> None:
    anchor = find_anchor("is it safe to delete the shared security group?", SECURITY_GROUPS)
    assert anchor == Anchor((SECURITY_GROUPS[1],), AnchorReason.SECURITY_GROUP, None)


def test_m_rec_097_a_named_concept_wins_over_the_security_group_rule() -> None:
    query = "is it safe to delete the security group SG-Base"
    assert anchored(query, *SECURITY_GROUPS) == "SG-Base"


def test_m_rec_097_only_a_question_that_says_security_group_picks_one() -> None:
    assert anchored("is it safe to delete the shared group", *SECURITY_GROUPS) is None
    assert anchored("is it safe to delete the security groups", *SECURITY_GROUPS) is None
    assert anchored("the shared security group", *SECURITY_GROUPS) is None


def test_m_rec_097_a_security_group_without_dependents_is_not_picked() -> None:
    names = (name("SG-Base", dependents=0), name("VPC", dependents=9))
    assert anchored("what depends on our security group", *names) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("SG-Base", True), ("sg-0a1b2c", True), ("web security group", True), ("SGX", False)],
)
def test_m_rec_097_oq_50_what_counts_as_a_security_group(text: str, expected: bool) -> None:
    assert is_security_group(name(text)) is expected


def test_m_rec_098_a_named_subject_without_dependents_falls_through() -> None:
    names = (name("billing service", dependents=0), name("prod", dependents=50))
    assert anchored("what depends on billing service in prod", *names) is None


def test_m_rec_098_a_question_that_names_nothing_falls_through() -> None:
    assert anchored("what depends on nothing-imaginary", DB, *SECURITY_GROUPS) is None


# --- M-REC-100, M-REC-103/104: what the caller builds on -----------------------------------


def test_m_rec_100_anchors_compare_ignoring_case_and_nfc() -> None:
    assert same_anchor("CAFÉ Queue", "cafe\u0301 queue")
    assert not same_anchor("SG-Base", "SG-Base-VPC")


def test_m_rec_103_a_name_held_by_several_concepts_returns_them_all() -> None:
    widgets = name("README.md", dependents=2, concept_type=RESOURCE, node_id="a1")
    gadgets = name("README.md", dependents=5, concept_type=RESOURCE, node_id="b2")
    unused = name("README.md", dependents=0, concept_type=RESOURCE, node_id="c3")
    query = "what depends on README.md in github.com/acme/widgets"
    anchor = find_anchor(query, [widgets, gadgets, unused])
    assert anchor is not None
    assert set(anchor.concepts) == {widgets, gadgets}
    assert anchor.span is not None
    assert query[anchor.span[1] :] == " in github.com/acme/widgets"


# --- properties -----------------------------------------------------------------------------------

WORDS = st.text(alphabet=st.characters(categories=("L", "Nd")), min_size=1, max_size=8)
EDGES = st.sampled_from([" ", ", ", ". ", "(", ")", "/", "; ", "'", "!"])


@given(WORDS, WORDS, WORDS)
def test_a_name_never_matches_inside_a_longer_word(word: str, before: str, after: str) -> None:
    assert not names_in(f"{before}{word}", word)
    assert not names_in(f"{word}{after}", word)
    assert not names_in(f"{before}-{word}", word)
    assert not names_in(f"{word}-{after}", word)


@given(WORDS, EDGES, EDGES)
def test_a_name_between_boundaries_always_matches(word: str, left: str, right: str) -> None:
    assert names_in(f"what uses{left}{word}{right}done", word)


@given(st.lists(st.sampled_from(["db", "user db schema", "SG-Base", "SG-Base-VPC", "IT"])))
def test_the_anchor_does_not_depend_on_the_order_of_the_names(texts: list[str]) -> None:
    names = [
        name(text, dependents=index % 3, node_id=f"n{index}") for index, text in enumerate(texts)
    ]
    query = "what depends on SG-Base-VPC and the user db schema for IT"
    assert find_anchor(query, names) == find_anchor(query, list(reversed(names)))


@given(st.sampled_from(MARKERS), WORDS)
def test_every_marker_asks_about_the_name_after_it(marker: str, word: str) -> None:
    subject = name(f"{word}_x")
    assert anchored(f"{marker} {subject.text}", subject) == subject.text
