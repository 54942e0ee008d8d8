"""The hashing embedder's own promises, beyond the port contract (tests/integration)."""

from __future__ import annotations

import numpy as np

from lcg.projections.embedding.hashing import MAX_TOKENS, HashingEmbedder, words


def test_a_vector_is_pinned_so_every_process_and_machine_gets_the_same_one() -> None:
    """blake2b, not Python's salted hash(): this golden value holds under any PYTHONHASHSEED.
    The word and its three trigrams ("<ad", "ada", "da>") land in four signed slots."""
    [vector] = HashingEmbedder().embed(["Ada"])
    slots = {int(i): round(float(vector[i]), 4) for i in np.nonzero(vector)[0]}
    assert slots == {50: -0.378, 134: -0.7559, 182: 0.378, 231: -0.378}


def test_words_are_lower_cased_and_punctuation_is_ignored() -> None:
    assert words("Ada, LOVELACE! ada") == ["ada", "lovelace", "ada"]
    first, second = HashingEmbedder().embed(["Ada Lovelace", "ada... lovelace?"])
    assert np.array_equal(first, second)


def test_words_past_the_window_do_not_change_the_vector() -> None:
    window = " ".join(f"w{n}" for n in range(MAX_TOKENS))
    first, second = HashingEmbedder().embed([window, window + " extra words here"])
    assert np.array_equal(first, second)


def test_a_word_form_shares_trigrams_with_its_stem() -> None:
    adopt, adopted, unrelated = HashingEmbedder().embed(["adopt", "adopted", "harbour"])
    assert float(adopt @ adopted) > 0.3 > abs(float(adopt @ unrelated))


def test_the_dimension_is_a_parameter_and_part_of_the_contract() -> None:
    small = HashingEmbedder(dim=64)
    assert small.embed(["x"]).shape == (1, 64)
    assert small.contract != HashingEmbedder().contract
