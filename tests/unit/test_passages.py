"""An episode's body split into passages (the units embedded and searched, P-112): at most
`max_len` characters each, cut at sentence ends when it can, at a space past half a passage
when a sentence is longer, and hard at `max_len` when no such space exists."""

from __future__ import annotations

from lcg.domain.passages import MAX_PASSAGE, split


def test_a_body_that_fits_is_one_passage_stripped_and_an_empty_body_none() -> None:
    assert MAX_PASSAGE == 1_000
    assert split("  one short body.\n") == ["one short body."]
    assert split("x" * 1_000) == ["x" * 1_000]
    assert split("") == []
    assert split(" \n\t ") == []


def test_sentences_fill_a_passage_up_to_exactly_max_len() -> None:
    # "aaaa. bbbb." is 11 characters: it fits 11, not 10
    assert split("aaaa. bbbb.", max_len=11) == ["aaaa. bbbb."]
    assert split("aaaa. bbbb.", max_len=10) == ["aaaa.", "bbbb."]
    assert split("aa. bb. cc! dd? ee\nff", max_len=8) == ["aa. bb.", "cc! dd?", "ee\nff"]


def test_a_body_over_the_default_passage_is_split_at_sentence_ends() -> None:
    sentence = "s" * 599 + "."
    assert split(f"{sentence} {sentence}") == [sentence, sentence]


def test_a_long_sentence_is_cut_at_its_last_space_past_half_a_passage() -> None:
    words = "abc defgh ijk lmnopqrstu"  # spaces at 3, 9, 13
    assert split(words, max_len=20) == ["abc defgh ijk", "lmnopqrstu"]
    # the last space before 20 is at 9 for this one: not past half (10), so a hard cut
    assert split("abc defgh ijklmnopqrstuvwxyz", max_len=20) == [
        "abc defgh ijklmnopqr",
        "stuvwxyz",
    ]
    # a space at exactly half a passage is not past it either
    assert split("abcdefghij klmnopqrstuvwxyz", max_len=20) == [
        "abcdefghij klmnopqrs",
        "tuvwxyz",
    ]
    assert split("abcdefghijk lmnopqrstuvwxyz", max_len=20) == ["abcdefghijk", "lmnopqrstuvwxyz"]


def test_a_long_sentence_closes_the_passage_before_it_and_its_tail_starts_the_next() -> None:
    body = "Short one. " + "word " * 9 + "end."
    assert split(body, max_len=20) == [
        "Short one.",
        "word word word word",
        "word word word word",
        "word end.",
    ]
    assert all(len(p) <= 20 for p in split("x" * 95 + ". y", max_len=20))
    assert split("x" * 45, max_len=20) == ["x" * 20, "x" * 20, "x" * 5]


def test_a_body_of_exactly_max_len_is_kept_verbatim_line_breaks_and_all() -> None:
    assert split("one.\n\ntwo.", max_len=10) == ["one.\n\ntwo."]
    # one character more and it is split into sentences joined by one space
    assert split("one.\n\ntwo.!", max_len=10) == ["one. two.!"]


def test_a_passage_joined_to_exactly_max_len_is_closed_only_when_the_next_would_pass_it() -> None:
    assert split("aaaa. bbbb. cc", max_len=11) == ["aaaa. bbbb.", "cc"]
    assert split("aaaa. bbbbb. cc", max_len=11) == ["aaaa.", "bbbbb. cc"]


def test_a_sentence_of_exactly_max_len_is_not_cut() -> None:
    assert split("First. abcdefghijk lmnopqrs", max_len=20) == ["First.", "abcdefghijk lmnopqrs"]
