"""lambo_recall's context block (M-REC 4.3-4.10): the seed's renderings, byte for byte, and the
budget rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from lcg.domain.memory.context import (
    ELLIPSIS,
    AlsoItem,
    HitView,
    RestsOn,
    budget_bytes,
    conflict_line,
    contradicted_line,
    contradicts_line,
    estimate_tokens,
    high_risk_line,
    label_line,
    layer_line,
    load_bearing_line,
    possibly_superseded_line,
    quote,
    render_block,
    render_context,
    rests_on_line,
    rests_on_lines,
    rests_on_more_line,
    superseded_line,
    traversal_line,
    truncation_marker,
)

STDIO = "ddbc8bc8-52ed-465b-9a2a-b0066bda51ad"
USER_SCHEMA_14 = "f0000000-0000-4000-8000-000000000014"
ACCOUNTS = "8c41d0e2-0000-4000-8000-000000000001"
USER_SCHEMA_8 = "3f9c2a10-0000-4000-8000-000000000008"
LIST_ALL = "4bf3835a-0000-4000-8000-000000000001"
GET_MEMO = "82c3dcb0-0000-4000-8000-000000000001"
REMOVED_IN = "e31def21-0000-4000-8000-000000000001"
PORT_8080 = "5e6f7a8b-0000-4000-8000-000000000001"
PORT_8081 = "1a2b3c4d-0000-4000-8000-000000000001"
RELEASE = "57fc442c-0000-4000-8000-000000000001"
RELEASE_GENERAL = "9f8e7d6c-0000-4000-8000-000000000001"
WORKTREE = "b86d4709-0000-4000-8000-000000000001"


def _hit(node_id: str, content: str = "a concept", **fields: object) -> HitView:
    defaults: dict[str, object] = {"concept_type": "Entity", "score": 0.5}
    defaults.update(fields)
    return HitView(node_id, content, **defaults)  # type: ignore[arg-type]


def _node(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


# --- 4.3 result shape -------------------------------------------------------------------------


def test_m_rec_044_the_stdio_wire_check_example_renders_byte_for_byte() -> None:
    hit = HitView(STDIO, "stdio wire check", "Entity", 0.8565231086776713)
    rendered = render_context([hit], 500)
    assert rendered.text == "stdio wire check [Entity] (score 0.86, id ddbc8bc8)"
    assert rendered.included == (STDIO,)
    assert rendered.truncated is None


def test_m_rec_045_the_label_shows_the_first_8_hex_characters_of_the_node_id() -> None:
    assert "id ddbc8bc8)" in label_line(_hit(STDIO.upper()))


def test_m_rec_050_scores_are_rounded_to_two_decimals_and_not_capped_at_one() -> None:
    assert "(score 1.95," in label_line(_hit(STDIO, score=1.949))
    assert "(score 0.00," in label_line(_hit(STDIO, score=0.0012))


def test_m_rec_046_047_048_a_canonical_hit_shows_canonical_its_blast_radius_and_the_flag_line() -> (
    None
):
    hit = _hit(USER_SCHEMA_14, "user schema", score=1.95, is_canonical=True, blast_radius=14)
    assert render_block(hit) == (
        "user schema [Entity, canonical] (score 1.95, id f0000000, blast radius 14)\n"
        "⚑ Load-bearing pillar — 14 nodes depend on this. Modify with caution."
    )


def test_m_rec_048_the_load_bearing_line_is_the_seeds_text_with_only_the_count_varying() -> None:
    assert load_bearing_line(8) == (
        "⚑ Load-bearing pillar — 8 nodes depend on this. Modify with caution."
    )


def test_oq_16_22_a_hit_that_is_not_canonical_shows_no_blast_radius_and_no_flag_line() -> None:
    hit = _hit(STDIO, "stdio wire check", score=0.8565, blast_radius=9)
    assert render_block(hit) == "stdio wire check [Entity] (score 0.86, id ddbc8bc8)"


def test_oq_22_a_canonical_hit_with_no_dependents_left_is_not_called_a_pillar() -> None:
    for radius in (0, None):
        hit = _hit(STDIO, "x", is_canonical=True, blast_radius=radius)
        assert render_block(hit) == "x [Entity, canonical] (score 0.50, id ddbc8bc8)"


def test_m_rec_049_blocks_are_separated_by_one_blank_line_with_no_trailing_newline() -> None:
    text = render_context([_hit(_node(1), "one"), _hit(_node(2), "two")], 500).text
    assert text == (
        "one [Entity] (score 0.50, id 00000001)\n\ntwo [Entity] (score 0.50, id 00000002)"
    )


def test_m_rsc_061_a_scoped_path_hit_names_its_repository_in_the_label() -> None:
    hit = _hit(_node(1), "README.md", concept_type="Resource", repo_scope="github.com/acme/widgets")
    assert label_line(hit) == (
        'README.md [Resource, repo "github.com/acme/widgets"] (score 0.50, id 00000001)'
    )


# --- 4.4 budget and truncation ----------------------------------------------------------------


def test_m_rec_062_oq_31_tokens_are_ceil_of_utf8_bytes_over_3_5() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abc") == 1
    assert estimate_tokens("abcd") == 2
    assert estimate_tokens("a" * 7) == 2
    assert estimate_tokens("—") == 1  # three bytes
    assert estimate_tokens("——") == 2  # six bytes


def test_m_rec_060_062_the_blank_line_between_blocks_counts_toward_the_budget() -> None:
    hits = [_hit(_node(1), "one"), _hit(_node(2), "two")]
    both = render_context(hits, 500).text
    first = render_block(hits[0])
    second = render_block(hits[1])
    assert estimate_tokens(first) + estimate_tokens(second) < estimate_tokens(both)
    assert render_context(hits, estimate_tokens(both)).text == both
    cut = render_context(hits, estimate_tokens(both) - 1)
    assert cut.text == first
    assert cut.included == (_node(1),)
    assert cut.truncated is None


def test_m_rec_060_062_the_blank_line_counts_at_every_length_modulo_the_3_5_bytes_a_token() -> None:
    # a 4-byte error (the blank line subtracted, not added) crosses a token boundary for some
    # lengths only: every remainder of 7 bytes is tried
    for pad in range(7):
        hits = [_hit(_node(1), "one" + "x" * pad), _hit(_node(2), "two")]
        both = render_context(hits, 500).text
        assert render_context(hits, estimate_tokens(both)).text == both
        assert render_context(hits, estimate_tokens(both) - 1).included == (_node(1),)


def test_m_rec_060_062_a_lone_block_fits_a_budget_of_exactly_its_tokens() -> None:
    # nothing precedes the first block: no separator is counted before it (a 1-byte error
    # crosses a token boundary at 2 of the 7 remainders)
    for pad in range(7):
        hit = _hit(_node(1), "one" + "x" * pad)
        rendered = render_context([hit], estimate_tokens(render_block(hit)))
        assert rendered.text == render_block(hit)
        assert rendered.truncated is None


def test_m_rec_062_the_byte_budget_is_floor_of_3_5_bytes_a_token_and_never_negative() -> None:
    assert [budget_bytes(tokens) for tokens in (0, 1, 2, 3, 22)] == [0, 3, 7, 10, 77]
    assert budget_bytes(-1) == 0


def test_m_rec_061_filling_stops_at_the_first_block_that_does_not_fit() -> None:
    hits = [
        _hit(_node(1), "short"),
        _hit(_node(2), "a much longer concept text that will not fit the budget " * 3),
        _hit(_node(3), "tiny"),
    ]
    budget = estimate_tokens(render_block(hits[0])) + 15
    assert estimate_tokens(render_context([hits[0], hits[2]], 500).text) <= budget
    rendered = render_context(hits, budget)
    assert rendered.text == render_block(hits[0])
    assert rendered.included == (_node(1),)


def _user_schema_8() -> HitView:
    tables = ", ".join(f"table_{number:03d}" for number in range(1, 424))
    content = (
        "user schema owns the account table, the session table and"
        f" — through foreign keys — {tables} and table_424"
    )
    return HitView(USER_SCHEMA_8, content, "Entity", 1.4412, is_canonical=True, blast_radius=8)


USER_SCHEMA_TRUNCATED = (
    "user schema owns the account table, the session table and… [Entity, canonical]"
    " (score 1.44, id 3f9c2a10, blast radius 8)\n"
    "⚑ Load-bearing pillar — 8 nodes depend on this. Modify with caution.\n"
    "[truncated: 1342 tokens left out; lambo_inspect 3f9c2a10 for the full concept]"
)


def test_m_rec_063_064_065_066_the_truncated_user_schema_example_renders_byte_for_byte() -> None:
    """The seed's example, from a concept and a budget chosen to give exactly it.

    The concept is "user schema owns the account table, the session table and" followed by
    " — through foreign keys — table_001, …, table_423 and table_424": 4,695 bytes after "and"
    (the em dashes are 3 bytes each). The expected context is 274 UTF-8 bytes, 79 tokens
    (ceil(274 / 3.5)); 79 tokens hold floor(79 × 3.5) = 276 bytes, 2 to spare. The cut keeps the
    longest text that fits: "…and" plus the space (1 byte); the em dash (3 bytes) does not fit,
    and the trailing space is dropped before the "…". Left out: the space and everything after
    it, 4,695 bytes, ceil(4,695 / 3.5) = 1,342 tokens, the marker's count.
    """
    hit = _user_schema_8()
    rendered = render_context([hit, _hit(_node(2), "x")], 79)
    assert rendered.text == USER_SCHEMA_TRUNCATED
    assert len(rendered.text.encode("utf-8")) == 274
    assert estimate_tokens(rendered.text) == 79
    assert rendered.truncated == USER_SCHEMA_8
    assert rendered.included == (USER_SCHEMA_8,)


def test_m_rec_063_the_cut_grows_by_characters_as_the_budget_grows() -> None:
    one_less = render_context([_user_schema_8()], 78).text
    assert one_less.startswith("user schema owns the account table, the session table an… [")
    one_more = render_context([_user_schema_8()], 80).text
    assert one_more.startswith("user schema owns the account table, the session table and — ")


def test_m_rec_063_the_cut_never_splits_a_character() -> None:
    """Characters of one to four UTF-8 bytes: at every budget the cut keeps whole characters
    from the start of the text (no replacement character, nothing skipped) and the block fits
    the budget counted in bytes, not characters."""
    hit = _hit(_node(1), "ééééé " * 400, is_canonical=True, blast_radius=6)
    for budget in range(23, 140):
        text = render_context([hit], budget).text
        assert "é…" in text or "é" not in text
    content = "aé€😀 " * 300
    mixed = _hit(_node(1), content, is_canonical=True, blast_radius=6)
    kept: list[str] = []
    for budget in range(23, 140):
        text = render_context([mixed], budget).text
        assert len(text.encode("utf-8")) <= budget_bytes(budget)
        shown, ellipsis, _ = text.partition(ELLIPSIS)
        assert ellipsis or not text
        assert content.startswith(shown)
        kept.append(shown)
    assert {shown[-1:] for shown in kept} >= {"a", "é", "€", "😀"}  # cut after each width


def test_m_rec_068_the_warning_lines_are_left_out_when_they_do_not_fit() -> None:
    hit = _hit(
        USER_SCHEMA_8,
        "user schema " * 200,
        is_canonical=True,
        blast_radius=8,
        warning_lines=("⚠ Possibly superseded by " + "x" * 200,),
    )
    text = render_context([hit], 50).text
    lines = text.split("\n")
    assert len(lines) == 2
    assert lines[0].endswith("… [Entity, canonical] (score 0.50, id 3f9c2a10, blast radius 8)")
    assert lines[1].startswith("[truncated: ")
    assert estimate_tokens(text) <= 50


def test_m_rec_069_only_the_text_and_the_marker_show_when_the_label_does_not_fit_either() -> None:
    """30 tokens hold 105 bytes. The label's suffix (35 bytes) and a 3-digit marker (77 bytes)
    do not fit with any text, so the block is the cut text, "…" (3 bytes), a newline and the
    marker: 24 bytes of text, "user schema user schema " with its trailing space dropped.
    Left out: 2,435 bytes of block less the 23 shown, ceil(2,412 / 3.5) = 690 tokens."""
    hit = _hit(USER_SCHEMA_8, "user schema " * 200)
    text = render_context([hit], 30).text
    assert text == (
        "user schema user schema…\n"
        "[truncated: 690 tokens left out; lambo_inspect 3f9c2a10 for the full concept]"
    )


def test_m_rec_066_the_count_includes_lines_left_out_of_the_block() -> None:
    hit = _hit(_node(1), "ab", warning_lines=("w" * 700,))
    text = render_context([hit], 40).text
    # the whole text fits, so it is not marked as cut; the 701 bytes of the line are left out
    assert text == (
        "ab [Entity] (score 0.50, id 00000001)\n"
        "[truncated: 201 tokens left out; lambo_inspect 00000001 for the full concept]"
    )


def test_m_rec_070_071_nothing_follows_a_truncated_block_and_only_it_is_marked() -> None:
    rendered = render_context([_user_schema_8(), _hit(_node(2), "x")], 200)
    assert rendered.truncated == USER_SCHEMA_8
    assert rendered.included == (USER_SCHEMA_8,)
    assert rendered.text.endswith("for the full concept]")
    assert "id 00000002" not in rendered.text


def test_m_rec_072_the_context_never_exceeds_the_budget() -> None:
    hits = [
        _user_schema_8(),
        _hit(_node(2), "ñ" * 40, warning_lines=("⚠ line",)),
        _hit(_node(3), "third"),
    ]
    for order in (hits, hits[1:], hits[2:]):
        for budget in range(1, 300):
            rendered = render_context(order, budget)
            assert estimate_tokens(rendered.text) <= budget
            assert (rendered.text == "") == (rendered.included == ())


def test_m_rec_073_a_budget_too_small_for_the_marker_gives_an_empty_context() -> None:
    marker = truncation_marker(1, USER_SCHEMA_8)
    assert estimate_tokens(marker) == 22
    hit = _hit(USER_SCHEMA_8, "user schema " * 200)
    assert render_context([hit], 22).text == ""
    assert render_context([hit], 22).included == ()
    assert render_context([hit], 22).truncated is None
    # a 3-digit count makes the marker 77 bytes; with "…", a newline and one character it
    # needs 82 bytes, more than 23 tokens (80 bytes) hold
    assert render_context([hit], 23).text == ""
    assert render_context([hit], 24).text == (
        "use…\n[truncated: 695 tokens left out; lambo_inspect 3f9c2a10 for the full concept]"
    )


def test_m_rec_074_oq_29_a_layer_hits_marker_names_the_layers_scope() -> None:
    hit = _hit(WORKTREE, "worktree " * 300, from_session="general")
    text = render_context([hit], 60).text
    assert text.endswith(
        "\n[truncated: 754 tokens left out; lambo_inspect b86d4709 (scope general)"
        " for the full concept]"
    )


def test_an_empty_hit_list_gives_an_empty_context() -> None:
    assert render_context([], 500).text == ""


# --- 4.5 dependency questions -----------------------------------------------------------------


def test_m_rec_082_a_traversal_answer_says_it_came_from_graph_traversal() -> None:
    header = traversal_line("user schema", USER_SCHEMA_8, 2)
    assert header == (
        'Answered by graph traversal: 2 concepts depend on "user schema" (id 3f9c2a10).'
    )
    assert traversal_line("db", USER_SCHEMA_8, 1).startswith(
        "Answered by graph traversal: 1 concept depends on"
    )
    hits = [_hit(_node(1), "one"), _hit(_node(2), "two")]
    rendered = render_context(hits, 500, header=header)
    assert rendered.text == (
        header
        + "\n\none [Entity] (score 0.50, id 00000001)\n\ntwo [Entity] (score 0.50, id 00000002)"
    )
    assert rendered.included == (_node(1), _node(2))


def test_m_rec_082_the_traversal_line_counts_toward_the_budget_and_a_cut_block_follows_it() -> None:
    header = traversal_line("user schema", USER_SCHEMA_8, 1)
    rendered = render_context([_hit(_node(1), "dependent " * 300)], 60, header=header)
    assert rendered.text.startswith(header + "\n\ndependent")
    assert rendered.truncated == _node(1)
    assert estimate_tokens(rendered.text) <= 60
    assert render_context([_hit(_node(1), "one")], 10, header=header).text == ""


# --- 4.6 contradictions -----------------------------------------------------------------------


def test_m_rec_111_112_057_the_contradiction_pair_renders_byte_for_byte() -> None:
    at = datetime(2026, 8, 10, 10, 28, tzinfo=UTC)
    contradicted = HitView(
        USER_SCHEMA_14,
        "user schema",
        "Entity",
        1.95,
        is_canonical=True,
        blast_radius=14,
        warning_lines=(
            contradicted_line(at, "agent-c", "accounts replaced the users table", ACCOUNTS),
        ),
    )
    companion = HitView(
        ACCOUNTS,
        "accounts replaced the users table",
        "Observation",
        0.36,
        warning_lines=(contradicts_line("user schema", USER_SCHEMA_14),),
    )
    assert render_context([contradicted, companion], 500).text == (
        "user schema [Entity, canonical] (score 1.95, id f0000000, blast radius 14)\n"
        "⚑ Load-bearing pillar — 14 nodes depend on this. Modify with caution.\n"
        '⚠ Contradicted at 2026-08-10T10:28:00Z by agent-c: "accounts replaced the users table"'
        " (id 8c41d0e2)\n"
        "\n"
        "accounts replaced the users table [Observation] (score 0.36, id 8c41d0e2)\n"
        '⚠ Contradicts "user schema" (id f0000000)'
    )


def test_m_rec_111_the_time_is_rfc3339_utc_to_the_second_whatever_the_zone() -> None:
    east = timezone(timedelta(hours=2))
    at = datetime(2026, 8, 10, 12, 28, 0, 999_000, tzinfo=east)
    assert contradicted_line(at, "agent-c", "x", ACCOUNTS).startswith(
        "⚠ Contradicted at 2026-08-10T10:28:00Z by agent-c: "
    )
    with pytest.raises(ValueError, match="timezone-aware"):
        contradicted_line(datetime(2026, 8, 10), "agent-c", "x", ACCOUNTS)


def test_m_rec_136_the_contradicted_line_quotes_the_first_80_characters() -> None:
    """Also M-LIM-047."""
    long = "a" * 79 + "bc" + "d" * 50
    line = contradicted_line(datetime(2026, 1, 1, tzinfo=UTC), "agent-c", long, ACCOUNTS)
    assert f'"{"a" * 79}b…" (id 8c41d0e2)' in line
    assert quote("x" * 80) == "x" * 80


def test_oq_25_a_quote_shows_line_breaks_and_tabs_as_spaces() -> None:
    assert quote("one\ntwo\tthree") == "one two three"


def test_m_rec_130_oq_27_a_removed_contradicting_concept_is_named_by_id() -> None:
    line = contradicted_line(datetime(2026, 8, 10, 10, 28, tzinfo=UTC), "agent-c", None, ACCOUNTS)
    assert line == (
        "⚠ Contradicted at 2026-08-10T10:28:00Z by agent-c: a removed concept (id 8c41d0e2)"
    )


def test_m_rec_150_255_a_layer_line_starts_with_the_layers_name() -> None:
    assert layer_line("general", "⚠ x") == "[general] ⚠ x"


# --- 4.7 rests on a contradicted concept ------------------------------------------------------


def test_m_rec_160_the_rests_on_example_renders_byte_for_byte() -> None:
    rest = RestsOn(
        GET_MEMO,
        "GET /api/v1/memo (list all)",
        REMOVED_IN,
        "list-all removed in v0.22; the replacement pages at 10",
    )
    hit = HitView(
        LIST_ALL, "list-all returns every memo", "Logic", 1.38, warning_lines=(rests_on_line(rest),)
    )
    assert render_block(hit) == (
        "list-all returns every memo [Logic] (score 1.38, id 4bf3835a)\n"
        '⚠ Rests on a contradicted concept: "GET /api/v1/memo (list all)" (id 82c3dcb0),'
        ' contradicted by "list-all removed in v0.22; the replacement pages at 10" (id e31def21)'
    )


def test_m_rec_166_167_rests_on_lines_follow_the_cited_ids_at_most_three_then_a_count() -> None:
    """Also M-LIM-042. Also OQ-26: one more is the singular `1 more contradicted concept`,
    and the line ends there (the document's `; lambo_inspect ...` is its explanation)."""
    rests = [RestsOn(_node(n), f"cited {n}", _node(100 + n), f"by {n}") for n in (5, 1, 4, 2, 3)]
    lines = rests_on_lines(rests)
    assert [line.split('"')[1] for line in lines[:3]] == ["cited 1", "cited 2", "cited 3"]
    assert lines[3] == "⚠ Rests on 2 more contradicted concepts"
    assert len(lines) == 4
    assert rests_on_lines(rests[:3])[-1].startswith("⚠ Rests on a contradicted concept: ")
    assert rests_on_more_line(1) == "⚠ Rests on 1 more contradicted concept"


# --- 4.8 duplicate hits -----------------------------------------------------------------------


def test_m_rec_184_the_duplicate_hit_label_renders_byte_for_byte() -> None:
    hit = HitView(
        LIST_ALL,
        "dogfood store carries no durable embedding for 92 of 100 concepts",
        "Entity",
        1.38,
        also=(AlsoItem(GET_MEMO),),
    )
    assert render_block(hit) == (
        "dogfood store carries no durable embedding for 92 of 100 concepts [Entity]"
        " (score 1.38, id 4bf3835a, also 82c3dcb0)"
    )


def test_m_rec_195_the_label_names_three_ids_then_how_many_more() -> None:
    hit = _hit(LIST_ALL, "x", also=tuple(AlsoItem(_node(n)) for n in range(1, 6)))
    assert label_line(hit).endswith(
        "(score 0.50, id 4bf3835a, also 00000001, 00000002, 00000003, +2 more)"
    )


def test_m_rec_197_the_also_items_count_toward_the_budget() -> None:
    plain = _hit(LIST_ALL, "x")
    also = _hit(LIST_ALL, "x", also=(AlsoItem(GET_MEMO),))
    budget = estimate_tokens(render_block(plain))
    assert render_context([plain], budget).truncated is None
    assert estimate_tokens(render_block(also)) > budget


# --- 4.9 and 4.10 supersession ----------------------------------------------------------------


def test_m_rec_211_the_possibly_superseded_example_renders_byte_for_byte() -> None:
    hit = HitView(
        PORT_8080,
        "the embedder listens on port 8080",
        "Logic",
        0.91,
        warning_lines=(possibly_superseded_line("the embedder listens on port 8081", PORT_8081),),
    )
    assert render_block(hit) == (
        "the embedder listens on port 8080 [Logic] (score 0.91, id 5e6f7a8b)\n"
        '⚠ Possibly superseded by "the embedder listens on port 8081" (id 1a2b3c4d), not declared'
    )


def test_m_rec_230_the_superseded_line_renders_byte_for_byte() -> None:
    at = datetime(2026, 9, 30, 12, 0, tzinfo=UTC)
    assert superseded_line(at, "flushes give up after three attempts", ACCOUNTS) == (
        '⤓ Superseded at 2026-09-30T12:00:00Z by "flushes give up after three attempts"'
        " (id 8c41d0e2)"
    )


def test_m_rec_233_the_superseded_line_names_a_removed_concept_by_id_only() -> None:
    at = datetime(2026, 9, 30, 12, 0, tzinfo=UTC)
    assert superseded_line(at, None, ACCOUNTS) == (
        "⤓ Superseded at 2026-09-30T12:00:00Z by a removed concept (id 8c41d0e2)"
    )


def test_m_rec_232_the_superseded_line_counts_toward_the_budget() -> None:
    line = superseded_line(datetime(2026, 9, 30, 12, 0, tzinfo=UTC), "y", ACCOUNTS)
    first = _hit(_node(1), "x")
    plain = _hit(_node(2), "y")
    budget = estimate_tokens(render_context([first, plain], 500).text)
    assert render_context([first, plain], budget).included == (_node(1), _node(2))
    with_line = _hit(_node(2), "y", warning_lines=(line,))
    assert render_context([first, with_line], budget).included == (_node(1),)


# --- 4.11 layers ------------------------------------------------------------------------------


def test_m_rec_241_242_the_layered_example_renders_byte_for_byte() -> None:
    own = HitView(
        RELEASE,
        "release notes are drafted before the tag",
        "Logic",
        0.71,
        also=(AlsoItem(RELEASE_GENERAL, "general"),),
    )
    layer = HitView(
        WORKTREE,
        "worktree branches are always rebased onto origin main first",
        "Logic",
        0.42,
        from_session="general",
    )
    assert render_context([own, layer], 500).text == (
        "release notes are drafted before the tag [Logic] (score 0.71, id 57fc442c,"
        " also 9f8e7d6c in general)\n"
        "\n"
        "worktree branches are always rebased onto origin main first [Logic]"
        " (score 0.42, id b86d4709, from general)"
    )


def test_oq_28_a_layer_hits_also_ids_come_after_its_session() -> None:
    hit = _hit(WORKTREE, "x", from_session="general", also=(AlsoItem(RELEASE_GENERAL),))
    assert label_line(hit).endswith("(score 0.50, id b86d4709, from general, also 9f8e7d6c)")


# --- conflict and high-risk markers (canonization.md §7) --------------------------------------


def test_m_rec_053_the_conflict_line_names_the_writer_without_its_agent_prefix() -> None:
    assert conflict_line("agent-b", 11) == "Agent B wrote to it 11 seconds ago"
    assert conflict_line("alice", 5) == "Agent Alice wrote to it 5 seconds ago"


def test_m_rec_053_the_high_risk_line_names_status_and_blast_radius() -> None:
    assert high_risk_line("user schema", "Canonical", 8) == (
        "High-risk modification: high-value node user schema (Canonical, blast radius 8)"
        " modified within 30s"
    )
    assert high_risk_line("user schema", "Venerable") == (
        "High-risk modification: high-value node user schema (Venerable) modified within 30s"
    )


def test_the_warning_lines_follow_the_flag_line_in_the_order_given() -> None:
    hit = _hit(
        USER_SCHEMA_8,
        "user schema",
        is_canonical=True,
        blast_radius=8,
        warning_lines=(conflict_line("agent-b", 3), high_risk_line("user schema", "Canonical", 8)),
    )
    assert render_block(hit).split("\n")[1:] == [
        load_bearing_line(8),
        "Agent B wrote to it 3 seconds ago",
        "High-risk modification: high-value node user schema (Canonical, blast radius 8)"
        " modified within 30s",
    ]


def test_oq_22_a_canonical_hit_with_one_dependent_is_a_pillar_of_radius_1() -> None:
    hit = _hit(STDIO, "x", is_canonical=True, blast_radius=1)
    assert render_block(hit) == (
        "x [Entity, canonical] (score 0.50, id ddbc8bc8, blast radius 1)\n"
        "⚑ Load-bearing pillar — 1 nodes depend on this. Modify with caution."
    )
