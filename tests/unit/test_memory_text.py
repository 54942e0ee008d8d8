"""Argument rules of the Lambo memory tools (checklist M-ARG 2.1-2.3, M-ERR, M-DER, M-ACT)."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcg.domain.errors import DomainError
from lcg.domain.memory.limits import MAX_EMBEDDING_TEXT_BYTES, MAX_SOLO_CONCEPT_EMBEDDING_BYTES
from lcg.domain.memory.text import (
    ALLOWED_INVISIBLE,
    IMAGE_CONCEPT_TYPES,
    ConceptType,
    MemoryArgumentError,
    about_time,
    call_text,
    check_agent_id,
    check_concept_type,
    check_embedding_text_limit,
    check_no_image_suffix,
    check_no_timestamp_arguments,
    check_text,
    drop_invisible_characters,
    embedding_text,
    has_image_suffix,
    is_timestamp_argument,
    parse_event_time,
    refused_character_class,
)

INVISIBLE_SENTENCE = (
    "concept.content contains a disallowed invisible formatting character (U+202E); bidi "
    "overrides, zero-width characters, blank fillers, the BOM and tag characters are refused "
    "because they are invisible in review but not to the model (zero-width joiner and "
    "non-joiner are allowed, and are stripped from canonical keys)"
)

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), written out independently
# of the module's tables: each is either accepted as needed by real writing, or refused.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
ACCEPTED_INVISIBLE = {0x034F, 0x180B, 0x180C, 0x180D, 0x180F, 0x200C, 0x200D}
ACCEPTED_INVISIBLE |= set(range(0xFE00, 0xFE10)) | set(range(0xE0100, 0xE01F0))
# Format characters (Cf) that render visibly or only lay out visible signs: accepted.
VISIBLE_FORMAT = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x0890, 0x0891}
VISIBLE_FORMAT |= {0x08E2, 0x110BD, 0x110CD} | set(range(0x13430, 0x13460))

REFUSED_EXAMPLES = [
    "\u0000",
    "\u001b",
    "\u000d",
    "\u007f",
    "\u0085",
    "\u202e",
    "\u2066",
    "\u200e",
    "\u200b",
    "\u2060",
    "\u2063",
    "\u180e",
    "\u00ad",
    "\u3164",
    "\u115f",
    "\u1160",
    "\uffa0",
    "\ufeff",
    "\U000e0001",
    "\U000e0041",
    "\U000e007f",
]


def refusal(field: str, value: str) -> MemoryArgumentError:
    with pytest.raises(MemoryArgumentError) as refused:
        check_text(field, value)
    return refused.value


# --- 2.1 argument surface ---------------------------------------------------------------------


def test_m_arg_003_created_at_is_refused_by_name() -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_no_timestamp_arguments(["agent_id", "query", "created_at"])
    assert refused.value.field == "created_at"
    assert refused.value.rule == "timestamp argument"
    assert refused.value.message.startswith("created_at is refused: Lambo stamps flush time")


@pytest.mark.parametrize(
    "name",
    ["updated_at", "flush_timestamp", "createdAt", "client-time", "timestamp", "ts", "date"],
)
def test_m_arg_004_any_timestamp_argument_other_than_event_time_is_refused_by_name(
    name: str,
) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_no_timestamp_arguments([name])
    assert refused.value.message.startswith(f"{name} is refused")


def test_m_arg_004_the_tools_own_arguments_are_not_timestamps() -> None:
    names = [
        "agent_id", "query", "top_k", "max_tokens", "traversal_depth", "image", "query_vector",
        "scope", "concepts", "event_time", "parent_of", "repo_scope", "caption", "concept_type",
        "image_id", "vector", "action", "against", "produces", "modifies", "depends_on",
        "node_id", "ttl_seconds", "release", "focus", "depth", "offset", "receipt", "wait_ms",
    ]  # fmt: skip
    check_no_timestamp_arguments(names)
    assert [name for name in names if is_timestamp_argument(name)] == ["event_time"]


def test_m_arg_005_event_time_is_refused_by_name_where_the_tool_does_not_take_it() -> None:
    check_no_timestamp_arguments(["event_time"])
    with pytest.raises(MemoryArgumentError, match=r"^event_time is refused"):
        check_no_timestamp_arguments(["event_time"], event_time_accepted=False)


def test_a_name_that_is_not_an_identifier_is_left_to_the_unknown_argument_refusal() -> None:
    check_no_timestamp_arguments(["\u202ecreated_at", "created at"])


def test_m_arg_006_event_time_parses_rfc3339_to_utc() -> None:
    assert parse_event_time("2024-06-12T14:30:00Z") == datetime(2024, 6, 12, 14, 30, tzinfo=UTC)
    assert parse_event_time("2024-06-12T16:30:00.25+02:00") == datetime(
        2024, 6, 12, 14, 30, 0, 250_000, tzinfo=UTC
    )
    assert parse_event_time("2024-06-12t14:30:00z").tzinfo is UTC
    assert parse_event_time("2024-06-12 09:30:00-05:00") == datetime(
        2024, 6, 12, 14, 30, tzinfo=UTC
    )


def test_m_arg_006_a_fraction_past_microseconds_is_cut_and_a_leap_second_is_the_next() -> None:
    assert parse_event_time("2024-06-12T14:30:00.123456789Z").microsecond == 123_456
    assert parse_event_time("2016-12-31T23:59:60Z") == datetime(2017, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        "2024-06-12T14:30:00",  # no timezone
        "2024-06-12",
        "yesterday",
        "2024-02-30T00:00:00Z",
        "2024-06-12T24:00:00Z",
        "2024-06-12T14:30:00+24:00",
        "0001-01-01T00:00:00+01:00",  # before year 1 in UTC
        "2024-06-12T14:30:00Z ",
        "２０２４-06-12T14:30:00Z",  # fullwidth digits
        "",
    ],
)
def test_m_err_012_a_malformed_event_time_is_the_parameter_error_naming_event_time(
    value: str,
) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        parse_event_time(value)
    assert refused.value.field == "event_time"
    # One of four fixed sentences: the value itself is never repeated.
    prefix = "event_time must be an RFC3339 timestamp with a timezone, such as 2024-06-12T14:30:00Z"
    assert refused.value.message in {
        f"{prefix} (the value is not in that format)",
        f"{prefix} (the timezone is missing: end it with Z or an offset like +02:00)",
        f"{prefix} (the timezone offset is out of range)",
        f"{prefix} (a date or time field is out of range)",
    }


def test_m_arg_006_a_missing_timezone_is_said_so() -> None:
    with pytest.raises(MemoryArgumentError, match="timezone is missing"):
        parse_event_time("2024-06-12T14:30:00")


def test_m_arg_007_without_event_time_the_about_time_is_the_write_time() -> None:
    written = datetime(2026, 8, 10, 10, 28, tzinfo=UTC)
    assert about_time(None, written) == written


def test_m_arg_008_a_future_event_time_counts_as_the_write_time() -> None:
    written = datetime(2026, 8, 10, 10, 28, tzinfo=UTC)
    assert about_time(written + timedelta(days=1), written) == written
    past = parse_event_time("2024-06-12T14:30:00Z")
    assert about_time(past, written) == past


def test_about_time_needs_aware_datetimes() -> None:
    with pytest.raises(ValueError, match=r"^about_time needs timezone-aware datetimes$"):
        about_time(None, datetime(2026, 8, 10))


# --- 2.2 text validation ----------------------------------------------------------------------


def test_m_arg_020_a_string_of_16384_bytes_is_accepted() -> None:
    check_text("query", "x" * 16_384)
    check_text("query", "é" * 8_192)  # two bytes each
    check_text("query", "😀" * 4_096)  # four bytes each


def test_m_arg_020_the_cap_counts_utf8_bytes_not_characters() -> None:
    error = refusal("query", "é" * 8_193)
    assert error.rule == "size cap"


def test_m_arg_021_m_err_014_a_string_over_the_cap_names_field_cap_and_size() -> None:
    error = refusal("concepts[2].content", "x" * 16_385)
    assert error.field == "concepts[2].content"
    assert error.message == (
        "concepts[2].content is too long: the cap is 16,384 bytes (16 KB) "
        "and 16,385 bytes were given"
    )


def test_m_arg_022_023_tab_and_newline_are_accepted() -> None:
    check_text("action", "line one\n\tindented line two\n")


@pytest.mark.parametrize("character", ["\u0000", "\u001b", "\u000d", "\u007f", "\u0085", "\u000b"])
def test_m_arg_024_every_other_control_character_is_refused(character: str) -> None:
    error = refusal("query", f"red{character}[31m text")
    assert error.rule == "control character"
    assert error.message == (
        f"query contains a disallowed control character (U+{ord(character):04X}); "
        "tab and newline are the only control characters accepted"
    )


@pytest.mark.parametrize(
    "character",
    [*(chr(c) for c in range(0x202A, 0x202F)), *(chr(c) for c in range(0x2066, 0x206A))],
)
def test_m_arg_025_bidi_overrides_embeddings_and_isolates_are_refused(character: str) -> None:
    error = refusal("query", f"a{character}b")
    assert error.rule == "invisible formatting character: bidi control"


@pytest.mark.parametrize("character", ["\u200b", "\u2060", "\u2061", "\u2064", "\u180e"])
def test_m_arg_026_the_zero_width_family_is_refused(character: str) -> None:
    assert refusal("query", f"a{character}b").rule == (
        "invisible formatting character: zero-width character"
    )


@pytest.mark.parametrize("character", ["\u3164", "\u115f", "\u1160", "\uffa0"])
def test_m_arg_027_blank_fillers_are_refused(character: str) -> None:
    assert refusal("query", character).rule == "invisible formatting character: blank filler"


def test_m_arg_027_braille_pattern_blank_is_a_braille_cell_not_a_filler() -> None:
    check_text("query", "\u2800")


def test_m_arg_028_the_byte_order_mark_is_refused() -> None:
    assert refusal("query", "\ufeffhello").rule == "invisible formatting character: byte order mark"


@pytest.mark.parametrize("value", [0xE0000, 0xE0001, 0xE0020, 0xE0041, 0xE007F])
def test_m_arg_029_tag_characters_are_refused(value: int) -> None:
    assert refusal("query", f"flag{chr(value)}").rule == (
        "invisible formatting character: tag character"
    )


def test_m_arg_030_031_zero_width_joiner_and_non_joiner_are_accepted() -> None:
    check_text("concepts[0].content", "a\u200db\u200cc")


@pytest.mark.parametrize("character", ["\ufe0f", "\ufe00", "\U000e0100", "\U000e01ef", "\u180b"])
def test_m_arg_032_variation_selectors_are_accepted(character: str) -> None:
    check_text("concepts[0].content", f"x{character}")


def test_m_arg_033_the_combining_grapheme_joiner_is_accepted() -> None:
    check_text("concepts[0].content", "a\u034fb")


@pytest.mark.parametrize(
    "text",
    [
        "می\u200cخواهم",  # Persian with a zero-width non-joiner
        "क्\u200dष",  # Devanagari with a zero-width joiner
        "👨\u200d👩\u200d👧",  # an emoji ZWJ sequence
        "❤\ufe0f",  # an emoji presentation selector
        "ᠠ\u180b",  # Mongolian with a free variation selector
        "نص عربي ١٢٣ \u0600",  # Arabic with a visible number sign
    ],
)
def test_m_arg_034_039_real_writing_passes_unchanged(text: str) -> None:
    before = str(text)
    check_text("concepts[0].content", text)
    assert text == before


@pytest.mark.parametrize("character", REFUSED_EXAMPLES)
def test_m_arg_035_m_err_015_the_refusal_names_field_codepoint_and_class(character: str) -> None:
    error = refusal("query", f"ab{character}cd")
    assert error.field == "query"
    assert error.message.startswith("query contains a disallowed ")
    assert f"(U+{ord(character):04X})" in error.message
    klass = "control character" if unicodedata.category(character) == "Cc" else "invisible"
    assert klass in error.message


@pytest.mark.parametrize("character", REFUSED_EXAMPLES)
def test_m_arg_036_the_refusal_never_echoes_the_raw_character(character: str) -> None:
    error = refusal("concepts[0].content", f"zq{character}qz")
    assert character not in error.message
    assert character not in str(error)
    assert "zq" not in error.message


@pytest.mark.slow  # a property test of seconds: `pytest -m "not slow"` skips it
@given(
    before=st.text(max_size=40),
    character=st.sampled_from(REFUSED_EXAMPLES),
    after=st.text(max_size=40),
)
def test_m_arg_036_no_refusal_message_ever_contains_a_refused_character(
    before: str, character: str, after: str
) -> None:
    value = before + character + after
    for check in (partial(check_text, "query", value), partial(check_agent_id, value)):
        with pytest.raises(MemoryArgumentError) as refused:
            check()
        message = refused.value.message
        assert all(refused_character_class(c) is None for c in message)


def test_m_arg_037_invisible_character_refusal_text() -> None:
    error = refusal("concept.content", "user schema\u202e")
    assert error.message == INVISIBLE_SENTENCE


def test_m_arg_037_the_sentence_is_the_same_for_every_concept_index() -> None:
    error = refusal("concepts[7].content", "user\u2066 schema")
    assert error.message == INVISIBLE_SENTENCE.replace("U+202E", "U+2066")
    assert error.field == "concepts[7].content"


def test_m_arg_037_other_fields_get_the_same_sentence_under_their_own_name() -> None:
    error = refusal("parent_of[0].child", "\u200b")
    expected = INVISIBLE_SENTENCE.replace("concept.content", "parent_of[0].child", 1)
    assert error.message == expected.replace("U+202E", "U+200B")
    assert error.message.count("U+200B") == 1


def test_every_default_ignorable_codepoint_is_either_accepted_or_refused_as_invisible() -> None:
    for start, end in DEFAULT_IGNORABLE:
        for value in range(start, end + 1):
            kind = refused_character_class(chr(value))
            if value in ACCEPTED_INVISIBLE:
                assert kind is None, hex(value)
            else:
                assert kind is not None, hex(value)
                assert kind[0] == "invisible formatting character", hex(value)


def test_every_format_character_is_accepted_invisible_refused_or_visible() -> None:
    for value in range(0x110000):
        if unicodedata.category(chr(value)) != "Cf":
            continue
        accepted = any(start <= value <= end for start, end in ALLOWED_INVISIBLE)
        refused = refused_character_class(chr(value)) is not None
        assert accepted or refused or value in VISIBLE_FORMAT, hex(value)


def test_invisible_characters_accepted_or_refused_are_dropped_for_key_rules() -> None:
    assert drop_invisible_characters("a\u200db\u200cc\ufe0f\u034f\u202ed\u200b") == "abcd"
    assert drop_invisible_characters("tab\tand\nnewline") == "tab\tand\nnewline"


def test_oq_12_u2028_and_u2029_are_accepted_in_ordinary_strings() -> None:
    check_text("query", "one\u2028two\u2029three")


def test_a_lone_surrogate_is_refused_by_codepoint() -> None:
    error = refusal("query", "a\ud800b")
    assert error.rule == "lone surrogate"
    assert "(U+D800)" in error.message


def test_a_memory_argument_error_is_a_domain_error_with_field_and_rule() -> None:
    error = refusal("query", "\u0000")
    assert isinstance(error, DomainError)
    assert (error.field, error.rule) == ("query", "control character")
    assert str(error) == error.message


# --- 2.3 agent_id -----------------------------------------------------------------------------


def test_m_arg_052_any_single_line_visible_id_is_accepted() -> None:
    for agent_id in ("claude-opus-5-5", "gpt-5.6", "codex-agent", "agent a", "エージェント"):
        check_agent_id(agent_id)


@given(st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), min_size=1, max_size=256))
def test_m_arg_052_every_short_visible_one_line_id_is_accepted(agent_id: str) -> None:
    if agent_id.strip() and not any(refused_character_class(c) for c in agent_id):
        check_agent_id(agent_id)


def test_m_arg_053_m_err_018_an_id_over_256_characters_gives_cap_and_length() -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_agent_id("a" * 257)
    assert refused.value.message == (
        "agent_id is too long: the cap is 256 characters and 257 were given"
    )
    assert refused.value.field == "agent_id"
    assert refused.value.rule == "length cap"


def test_m_arg_054_an_id_of_exactly_256_characters_is_accepted() -> None:
    """256 characters pass and the 257th is refused, counted in characters, not bytes (OQ-11:
    256 two-byte characters are 512 bytes)."""
    for character in ("a", "é"):
        check_agent_id(character * 256)  # raises if refused
        with pytest.raises(MemoryArgumentError) as refused:
            check_agent_id(character * 257)
        assert refused.value.message == (
            "agent_id is too long: the cap is 256 characters and 257 were given"
        )


@pytest.mark.parametrize(
    ("character", "name"),
    [
        ("\n", "newline"),  # M-ARG-055
        ("\t", "tab"),  # M-ARG-056
        ("\r", "carriage return"),  # M-ARG-057
        ("\u0000", "control character"),  # M-ARG-057
        ("\u001b", "control character"),  # M-ARG-057
        ("\u0085", "control character"),  # M-ARG-057
        ("\u2028", "line separator"),  # M-ARG-058
        ("\u2029", "paragraph separator"),  # M-ARG-058
    ],
)
def test_m_arg_055_to_059_m_err_017_an_id_must_be_one_line(character: str, name: str) -> None:
    """Also M-ARG-056: a tab (which other strings accept: test_m_arg_022_023), M-ARG-057:
    any other control character, M-ARG-058: U+2028 and U+2029 are refused in `agent_id`."""
    with pytest.raises(MemoryArgumentError) as refused:
        check_agent_id(f"agent{character}injected line")
    assert refused.value.rule == "one line"
    assert refused.value.message == (
        "agent_id must be one line with no tabs, control or line-separator characters; "
        f"found U+{ord(character):04X} ({name})"
    )
    assert character not in refused.value.message


@pytest.mark.parametrize("character", ["\u202e", "\u200b", "\ufeff", "\u3164", "\U000e0041"])
def test_m_arg_060_an_id_is_also_subject_to_the_invisible_character_refusal(
    character: str,
) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_agent_id(f"agent{character}")
    assert refused.value.message.startswith(
        f"agent_id contains a disallowed invisible formatting character (U+{ord(character):04X})"
    )


def test_an_id_with_a_zero_width_joiner_is_accepted() -> None:
    check_agent_id("agent\u200dx")


@pytest.mark.parametrize("agent_id", ["", " ", "   ", "\u200d", "\u00a0"])
def test_a_blank_id_is_refused(agent_id: str) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_agent_id(agent_id)
    assert refused.value.rule == "required"


# --- concept_type -----------------------------------------------------------------------------


def test_m_der_006_concept_types_are_lower_case_on_the_wire() -> None:
    assert [kind.value for kind in ConceptType] == [
        "entity",
        "logic",
        "constraint",
        "resource",
        "observation",
    ]
    assert check_concept_type("logic") is ConceptType.LOGIC


def test_m_der_007_m_err_012_a_capitalised_concept_type_is_refused_with_serdes_sentence() -> None:
    """Also OQ-14: the text is the document's, without backticks around the variants."""
    with pytest.raises(MemoryArgumentError) as refused:
        check_concept_type("Entity", field="concepts[0].concept_type")
    assert refused.value.message == (
        "unknown variant Entity, expected one of entity, logic, constraint, resource, observation"
    )
    assert refused.value.field == "concepts[0].concept_type"


def test_m_der_008_concept_types_render_capitalised() -> None:
    assert [kind.display for kind in ConceptType] == [
        "Entity",
        "Logic",
        "Constraint",
        "Resource",
        "Observation",
    ]


def test_an_image_concept_cannot_be_an_observation() -> None:
    assert check_concept_type("resource", accepted=IMAGE_CONCEPT_TYPES) is ConceptType.RESOURCE
    with pytest.raises(MemoryArgumentError) as refused:
        check_concept_type("observation", accepted=IMAGE_CONCEPT_TYPES)
    assert refused.value.message == (
        "unknown variant observation, expected one of entity, logic, constraint, resource"
    )


def test_an_unknown_variant_never_echoes_a_refused_character_or_a_long_value() -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_concept_type("entity\u202e")
    assert "U+202E" in refused.value.message
    assert "\u202e" not in refused.value.message
    with pytest.raises(MemoryArgumentError) as long_refused:
        check_concept_type("x" * 1000)
    assert len(long_refused.value.message) < 200


# --- image suffix -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[image:r17]",
        "red silk saree [IMAGE:R17]",  # M-DER-010: case is folded
        "[image:abc]s",  # M-DER-010: the word is stemmed
        "[Image:Abc]ing",
        "[image:a\u200dbc]",  # invisible characters are dropped
        "[image:0123456789abcdef]",
        "see\n[image:abc]\tthere",
    ],
)
def test_m_der_009_010_an_image_suffix_in_any_case_or_spelling_is_found(text: str) -> None:
    assert has_image_suffix(text)


@pytest.mark.parametrize(
    "text",
    [
        "see [image: diagram]",  # M-DER-011: a mention
        "[image:r17]s",  # M-DER-012: a word with a digit is not stemmed
        "[image:abc]s.",  # a word with . is not stemmed
        "[image:abc]/s",  # a word with / is not stemmed
        "[image:]",
        "[image:ABC_1]",
        "caption[image:abc]",
        "[image:" + "a" * 65 + "]",
        "image:abc",
    ],
)
def test_m_der_011_012_text_that_only_mentions_an_image_suffix_is_ordinary(text: str) -> None:
    assert not has_image_suffix(text)


def test_m_der_009_m_act_004_the_refusal_names_the_field_and_not_the_text() -> None:
    for field in ("concepts[0].content", "action"):
        with pytest.raises(MemoryArgumentError) as refused:
            check_no_image_suffix(field, "the saree [IMAGE:R17]")
        assert refused.value.field == field
        assert refused.value.rule == "image suffix"
        assert refused.value.message.startswith(f"{field} contains an image suffix")
        assert "R17" not in refused.value.message
    check_no_image_suffix("action", "see [image: diagram]")


# --- the embedding-text limit -----------------------------------------------------------------


def test_m_der_140_141_oq_51_the_framed_text_is_item_dash_then_the_call_text() -> None:
    text = call_text(["user schema", "auth middleware"])
    assert text == "user schema; auth middleware"
    assert embedding_text("user schema", text) == "user schema — user schema; auth middleware"


def test_m_der_144_m_lim_026_a_concept_sent_alone_may_be_8189_bytes() -> None:
    check_embedding_text_limit(["x" * 8_189])
    framed = embedding_text("x" * 8_189, call_text(["x" * 8_189]))
    assert len(framed.encode()) == 16_383
    with pytest.raises(MemoryArgumentError) as refused:
        check_embedding_text_limit(["x" * 8_190])
    assert refused.value.field == "concepts[0]"
    assert len(embedding_text("x" * 8_190, "x" * 8_190).encode()) == 16_385


def test_m_der_144_the_8189_boundary_is_the_largest_that_frames_within_the_limit() -> None:
    def fits(size: int) -> bool:
        item = "x" * size
        return len(embedding_text(item, call_text([item])).encode()) <= MAX_EMBEDDING_TEXT_BYTES

    assert fits(MAX_SOLO_CONCEPT_EMBEDDING_BYTES)
    assert not fits(MAX_SOLO_CONCEPT_EMBEDDING_BYTES + 1)


def test_m_der_144_the_limit_counts_bytes() -> None:
    check_embedding_text_limit(["é" * 4_094 + "x"])  # 8,189 bytes
    with pytest.raises(MemoryArgumentError):
        check_embedding_text_limit(["é" * 4_095])  # 8,190 bytes


def test_m_der_145_in_a_larger_call_the_per_concept_limit_is_lower() -> None:
    """Also M-DER-142: a framed text of 16,384 bytes fits; 16,385 bytes do not."""
    with pytest.raises(MemoryArgumentError) as refused:
        check_embedding_text_limit(["x" * 8_000, "y" * 378])  # 8,000 + 5 + 8,380 = 16,385
    assert refused.value.field == "concepts[0]"
    check_embedding_text_limit(["x" * 8_000, "y" * 377])


def test_m_der_143_147_the_call_text_alone_is_refused_as_the_whole_call() -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_embedding_text_limit(["x" * 8_000, "y" * 8_000, "z" * 383])
    assert refused.value.message.startswith("the whole call is too long to embed")
    assert "16,387 bytes" in refused.value.message


def test_m_der_147_the_refusal_names_the_part_that_is_too_long() -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_embedding_text_limit(["x" * 100, "y" * 8_200], [("a", "b")])
    assert refused.value.message == (
        "concepts[1] is too long to embed: framed with the call's text it is 16,507 bytes, over "
        "the 16,384-byte embedding-text limit; shorten the text or split the call"
    )
    assert refused.value.rule == "embedding-text limit"


def test_m_der_147_148_every_parent_of_end_is_checked() -> None:
    contents = ["x" * 8_000]
    check_embedding_text_limit(contents, [("short", "x" * 8_000)])
    with pytest.raises(MemoryArgumentError) as parent:
        check_embedding_text_limit(contents, [("ok", "ok"), ("p" * 8_380, "c")])
    assert parent.value.field == "parent_of[1].parent"
    assert parent.value.message.startswith("parent_of[1].parent is too long to embed")
    with pytest.raises(MemoryArgumentError) as child:
        check_embedding_text_limit(contents, [("p", "c" * 8_380)])
    assert child.value.field == "parent_of[0].child"


def test_derive_image_frames_only_its_parent_of_ends() -> None:
    caption = "c" * 16_000 + " [image:r17]"
    check_embedding_text_limit([caption], [("a", "b")], frame_concepts=False)
    with pytest.raises(MemoryArgumentError) as refused:
        check_embedding_text_limit([caption], [("a" * 400, "b")], frame_concepts=False)
    assert refused.value.field == "parent_of[0].parent"


# --- the ends of every span (issue 34) --------------------------------------------------------

_CONTROL = "control character"
_SURROGATE = "lone surrogate"


def _invisible(subclass: str) -> str:
    return f"invisible formatting character: {subclass}"


# The first and last character of every refused span, written out rather than read from the
# module's tables, so that a span moved by one is caught.
SPAN_ENDS = [
    *((c, _CONTROL) for c in (0x00, 0x08, 0x0B, 0x1F, 0x7F, 0x9F)),
    (0xD800, _SURROGATE),
    (0xDFFF, _SURROGATE),
    (0x00AD, _invisible("zero-width character")),
    (0x061C, _invisible("bidi control")),
    (0x115F, _invisible("blank filler")),
    (0x1160, _invisible("blank filler")),
    (0x17B4, _invisible("other default-ignorable character")),
    (0x17B5, _invisible("other default-ignorable character")),
    (0x180E, _invisible("zero-width character")),
    (0x200B, _invisible("zero-width character")),
    (0x200E, _invisible("bidi control")),
    (0x200F, _invisible("bidi control")),
    (0x202A, _invisible("bidi control")),
    (0x202E, _invisible("bidi control")),
    (0x2060, _invisible("zero-width character")),
    (0x2064, _invisible("zero-width character")),
    (0x2065, _invisible("other default-ignorable character")),
    (0x2066, _invisible("bidi control")),
    (0x2069, _invisible("bidi control")),
    (0x206A, _invisible("other default-ignorable character")),
    (0x206F, _invisible("other default-ignorable character")),
    (0x3164, _invisible("blank filler")),
    (0xFEFF, _invisible("byte order mark")),
    (0xFFA0, _invisible("blank filler")),
    (0xFFF0, _invisible("other default-ignorable character")),
    (0xFFFB, _invisible("other default-ignorable character")),
    (0x1BCA0, _invisible("other default-ignorable character")),
    (0x1BCA3, _invisible("other default-ignorable character")),
    (0x1D173, _invisible("other default-ignorable character")),
    (0x1D17A, _invisible("other default-ignorable character")),
    (0xE0000, _invisible("tag character")),
    (0xE007F, _invisible("tag character")),
    (0xE0080, _invisible("other default-ignorable character")),
    (0xE00FF, _invisible("other default-ignorable character")),
    (0xE01F0, _invisible("other default-ignorable character")),
    (0xE0FFF, _invisible("other default-ignorable character")),
]

# The character just before and just after each span (where it is not another span's end):
# ordinary text, or an allowed invisible character.
SPAN_NEIGHBOURS = [
    *(0x09, 0x0A, 0x20, 0x7E, 0xA0, 0xAC, 0xAE, 0x61B, 0x61D, 0x115E, 0x1161, 0x17B3, 0x17B6),
    *(0x180D, 0x180F, 0x200A, 0x200C, 0x200D, 0x2029, 0x202F, 0x205F, 0x2070, 0x3163, 0x3165),
    *(0xD7FF, 0xE000, 0xFEFE, 0xFF00, 0xFF9F, 0xFFA1, 0xFFEF, 0xFFFC, 0x1BC9F, 0x1BCA4),
    *(0x1D172, 0x1D17B, 0xDFFFF, 0xE0100, 0xE01EF, 0xE1000),
]


@pytest.mark.parametrize(
    ("value", "rule"), SPAN_ENDS, ids=lambda v: f"{v:04X}" if isinstance(v, int) else ""
)
def test_both_ends_of_every_refused_span_are_refused_by_their_class(value: int, rule: str) -> None:
    character = chr(value)
    assert refusal("query", f"a{character}b").rule == rule
    klass, subclass = refused_character_class(character) or ("", "")
    assert (klass if klass == subclass else f"{klass}: {subclass}") == rule


@pytest.mark.parametrize("value", SPAN_NEIGHBOURS, ids=lambda v: f"{v:04X}")
def test_the_character_next_to_a_refused_span_is_accepted(value: int) -> None:
    character = chr(value)
    check_text("query", f"a{character}b")
    assert refused_character_class(character) is None


def test_u_e000_is_private_use_not_a_surrogate() -> None:
    check_text("query", "\ue000")
    assert refused_character_class("\ue000") is None
    assert refused_character_class("\udfff") == (_SURROGATE, _SURROGATE)


@pytest.mark.parametrize("value", [0x1F, 0x7F, 0x80, 0x9F])
def test_the_ends_of_the_control_spans_are_refused_in_a_one_line_field(value: int) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        check_agent_id(f"agent{chr(value)}x")
    assert refused.value.rule == "one line"
    assert refused.value.message.endswith(f"found U+{value:04X} (control character)")


@pytest.mark.parametrize("value", [0x20, 0x7E, 0xA0, 0x2027, 0x202F])
def test_the_character_next_to_a_one_line_refusal_is_accepted_in_an_id(value: int) -> None:
    check_agent_id(f"agent{chr(value)}x")


@pytest.mark.parametrize(
    ("offset", "utc"),
    [
        ("+23:59", datetime(2024, 6, 11, 14, 31, tzinfo=UTC)),
        ("-23:59", datetime(2024, 6, 13, 14, 29, tzinfo=UTC)),
    ],
)
def test_an_event_time_offset_of_23_59_either_way_is_in_range(offset: str, utc: datetime) -> None:
    assert parse_event_time(f"2024-06-12T14:30:00{offset}") == utc


@pytest.mark.parametrize("offset", ["+24:00", "-24:00", "+00:60", "+99:00"])
def test_an_event_time_offset_past_23_59_is_out_of_range(offset: str) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        parse_event_time(f"2024-06-12T14:30:00{offset}")
    assert refused.value.message == (
        "event_time must be an RFC3339 timestamp with a timezone, such as 2024-06-12T14:30:00Z"
        " (the timezone offset is out of range)"
    )


def test_an_unknown_variant_of_40_characters_is_echoed_whole_and_a_longer_one_cut_at_40() -> None:
    with pytest.raises(MemoryArgumentError) as whole:
        check_concept_type("x" * 40)
    assert whole.value.message.startswith(f"unknown variant {'x' * 40}, expected one of ")
    assert (whole.value.field, whole.value.rule) == ("concept_type", "enum")
    with pytest.raises(MemoryArgumentError) as cut:
        check_concept_type("y" * 41)
    assert cut.value.message.startswith(f"unknown variant {'y' * 40}…, expected one of ")


@pytest.mark.parametrize("value", [0x034F, 0x180B, 0x180D, 0x180F, 0x200C, 0x200D, 0xFE00, 0xFE0F])
def test_both_ends_of_every_allowed_invisible_span_are_dropped_for_key_rules(value: int) -> None:
    check_text("concepts[0].content", f"a{chr(value)}b")
    assert drop_invisible_characters(f"a{chr(value)}b") == "ab"


@pytest.mark.parametrize("value", [0x034E, 0x0350, 0x180A, 0x1810, 0xFDFF, 0xFE10])
def test_the_visible_character_next_to_an_allowed_invisible_span_is_kept(value: int) -> None:
    assert drop_invisible_characters(f"a{chr(value)}b") == f"a{chr(value)}b"


@pytest.mark.parametrize("name", ["datetime", "start_datetime", "eventDatetime"])
def test_m_arg_004_a_datetime_argument_is_a_timestamp(name: str) -> None:
    assert is_timestamp_argument(name)
