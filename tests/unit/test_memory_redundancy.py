"""The repeat rule and the selection of skip_redundant (#181, M-REC-181..199), pure."""

from __future__ import annotations

import pytest

from lcg.domain.memory.redundancy import (
    NUMBER_WORDS,
    OPPOSITES,
    Candidate,
    PairFacts,
    Skipped,
    checked_count,
    is_identifier,
    pair,
    repeat_signal,
    same_content,
    select,
    text_guard,
)


def _ids(count: int) -> list[str]:
    return [f"{index:08x}-0000-4000-8000-000000000000" for index in range(count)]


def test_m_rec_182_same_text_ignores_spacing_and_invisible_characters_but_keeps_case() -> None:
    assert same_content("lease TTL is 45s", "  lease\tTTL  is\n45s ")
    assert same_content("lease TTL is 45s", "lease\u200d TTL is 45s")
    assert same_content("caf\u00e9 opens at nine", "cafe\u0301 opens at nine")  # NFC
    assert not same_content("lease TTL is 45s", "Lease TTL is 45s")
    assert not same_content("lease TTL is 45s", "lease TTL is 45s.")


@pytest.mark.parametrize(
    ("first", "second", "why"),
    [
        # M-REC-187: identifiers, case counts
        ("set max_retries in the client", "set max_attempts in the client", "identifier"),
        ("the RetryPolicy holds the budget", "the BackoffPolicy holds the budget", "identifier"),
        ("the TTL is per lease", "the ttl is per lease", "identifier"),
        ("read config/app.toml first", "read config/base.toml first", "identifier"),
        ("build from commit 3f9c2a10", "build from commit 8c41d0e2", "identifier"),
        ("the parser is at v1.2.3", "the parser is at v1.2.4", "identifier"),
        # M-REC-188: numbers, as digits or words
        ("retries give up after 3 attempts", "retries give up after 5 attempts", "number"),
        ("retries give up after three attempts", "retries give up after five attempts", "number"),
        # M-REC-189: a negation
        ("the cache is warm", "the cache is not warm", "negation"),
        ("the cache is warm", "the cache isn't warm", "negation"),
        ("agents write to main", "agents never write to main", "negation"),
        # M-REC-190: a word against its opposite
        ("enable the flag for canaries", "disable the flag for canaries", "opposite"),
        ("the flag is true in staging", "the flag is false in staging", "opposite"),
        ("writes are allowed on the branch", "writes are denied on the branch", "opposite"),
        ("turn tracing on for the daemon", "turn tracing off for the daemon", "opposite"),
        # M-REC-191: the order of the shared words
        ("the api depends on the cache", "the cache depends on the api", "order"),
    ],
)
def test_m_rec_187_188_189_190_191_texts_that_are_never_a_repeat(
    first: str, second: str, why: str
) -> None:
    assert text_guard(first, second) == why
    assert text_guard(second, first) == why
    kept, later = Candidate("a", first), Candidate("b", second)
    facts = PairFacts(
        semantic=frozenset({pair("a", "b")}), cosines={pair("a", "b"): 1.0}, threshold=0.98
    )
    assert repeat_signal(kept, later, facts, similar_signals=True) is None


def test_m_rec_187_identifiers_recognised() -> None:
    for word in (
        "max_retries",
        "RetryPolicy",
        "TTL",
        "config/app.toml",
        ".env",
        "v1.2",
        "3f9c2a10",
    ):
        assert is_identifier(word), word
    for word in ("cache", "Cache", "I", "deadbeef"):
        assert not is_identifier(word), word


def test_texts_that_only_add_a_word_pass_the_guards() -> None:
    assert text_guard("the nightly build passed", "the nightly build has passed") is None
    assert text_guard("the cache is warm", "the cache is warm") is None


def test_m_rec_183_signals_need_similar_signals_and_same_content_does_not() -> None:
    kept, later = (
        Candidate("a", "the nightly build passed"),
        Candidate("b", "the nightly build has passed"),
    )
    edge = PairFacts(semantic=frozenset({pair("a", "b")}), threshold=0.98)
    near = PairFacts(cosines={pair("a", "b"): 0.98}, threshold=0.98)
    far = PairFacts(cosines={pair("a", "b"): 0.979}, threshold=0.98)
    assert repeat_signal(kept, later, edge, similar_signals=True) == "semantic_edge"
    assert repeat_signal(kept, later, near, similar_signals=True) == "cosine"  # at the threshold
    assert repeat_signal(kept, later, far, similar_signals=True) is None
    assert repeat_signal(kept, later, edge, similar_signals=False) is None
    assert repeat_signal(kept, later, near, similar_signals=False) is None
    copy = Candidate("c", "the  nightly build passed")
    assert repeat_signal(
        Candidate("a", "the nightly build passed"), copy, PairFacts(), similar_signals=False
    ) == ("same_content")


@pytest.mark.parametrize("field", ["contradictions", "superseded"])
def test_m_rec_185_186_a_contradiction_or_possibly_superseded_pair_is_never_a_repeat(
    field: str,
) -> None:
    kept, later = Candidate("a", "the cache is warm"), Candidate("b", "the cache is warm")
    pairs = frozenset({pair("b", "a")})  # either direction
    facts = (
        PairFacts(contradictions=pairs)
        if field == "contradictions"
        else PairFacts(superseded=pairs)
    )
    assert repeat_signal(kept, later, facts, similar_signals=True) is None


def test_m_rec_181_199_a_repeat_gives_its_slot_to_the_next_hit_and_order_is_kept() -> None:
    a, b, c, d, e = _ids(5)
    ranked = [
        Candidate(a, "X is on"),
        Candidate(b, "X  is on"),
        Candidate(c, "Y is up"),
        Candidate(d, "X is on"),
        Candidate(e, "Z is down"),
    ]
    chosen = select(ranked, 3, PairFacts(), similar_signals=False)
    assert chosen.kept == (a, c, e)
    assert chosen.skipped == {a: (Skipped(b, "same_content"), Skipped(d, "same_content"))}


def test_m_rec_192_193_protected_hits_are_never_skipped_but_may_keep_others() -> None:
    a, b, c = _ids(3)
    ranked = [Candidate(a, "X"), Candidate(b, "X", protected=True), Candidate(c, "X")]
    chosen = select(ranked, 3, PairFacts(), similar_signals=False)
    assert chosen.kept == (a, b)
    assert chosen.skipped == {a: (Skipped(c, "same_content"),)}


def test_a_hit_that_is_not_compared_keeps_its_slot() -> None:
    a, b, c = _ids(3)
    ranked = [Candidate(a, "X"), Candidate(b, None), Candidate(c, "X")]
    chosen = select(ranked, 2, PairFacts(), similar_signals=False)
    assert chosen.kept == (a, b)
    assert chosen.skipped == {}


def test_m_rec_194_only_the_first_min_20_4_top_k_hits_are_checked() -> None:
    assert [checked_count(k) for k in (1, 2, 5, 6, 100)] == [4, 8, 20, 20, 20]
    ids = _ids(10)
    ranked = [Candidate(uuid, "X") for uuid in ids]
    chosen = select(ranked, 2, PairFacts(), similar_signals=False)
    assert chosen.kept == (ids[0], ids[8])  # the ninth hit is past the 8 checked
    assert [s.node_id for s in chosen.skipped[ids[0]]] == ids[1:8]


def test_m_rec_198_nothing_repeated_keeps_the_first_top_k() -> None:
    ids = _ids(6)
    ranked = [Candidate(uuid, f"fact {word}") for uuid, word in zip(ids, "abcdef", strict=True)]
    chosen = select(ranked, 4, PairFacts(), similar_signals=True)
    assert chosen.kept == tuple(ids[:4])
    assert chosen.skipped == {}


@pytest.mark.parametrize(("word", "opposite"), OPPOSITES)
def test_m_rec_190_every_listed_opposite_keeps_two_texts_apart(word: str, opposite: str) -> None:
    reason = text_guard(
        f"the release flag is {word} today", f"the release flag is {opposite} today"
    )
    assert reason == ("negation" if "no" in (word, opposite) else "opposite")


@pytest.mark.parametrize("word", sorted(NUMBER_WORDS))
def test_m_rec_188_every_number_word_keeps_two_texts_apart(word: str) -> None:
    assert text_guard(f"retry the upload {word} times", "retry the upload times") == "number"
