"""Concept identity (canonization.md §9): canonical key, short and node ids, the merge set."""

from __future__ import annotations

import json
import uuid
from importlib import resources
from typing import Any

import pytest

from lcg.domain.memory.identity import (
    MINILM_CONTRACT,
    MINILM_MERGE_THRESHOLD,
    STOPWORDS,
    canonical_key,
    digit_words_differ,
    is_node_uuid,
    is_short_id,
    matches_by_key,
    one_value_differs,
    short_id,
)
from lcg.projections.embedding.minilm import CONTRACT

ALLOWED_INVISIBLE = [
    "\u200d",  # zero-width joiner
    "\u200c",  # zero-width non-joiner
    "\ufe0f",  # variation selector 16
    "\U000e0100",  # variation selector 17
    "\u034f",  # combining grapheme joiner
    "\u180b",
    "\u180c",
    "\u180d",
    "\u180f",  # Mongolian free variation selectors (#25)
]


def _pairs() -> list[dict[str, Any]]:
    data = resources.files("lcg.fixtures") / "data" / "merge-pairs.json"
    pairs: list[dict[str, Any]] = json.loads(data.read_text("utf-8"))["pairs"]
    return pairs


@pytest.mark.parametrize("mark", ALLOWED_INVISIBLE)
def test_m_arg_040_texts_differing_only_by_allowed_invisible_characters_share_a_key(
    mark: str,
) -> None:
    plain = "The embedder listens on port 8080"
    assert canonical_key(f"The embed{mark}der listens on port 80{mark}80{mark}") == (
        canonical_key(plain)
    )


def test_m_arg_040_refused_invisible_characters_are_stripped_from_keys_too() -> None:
    for mark in ("\u200b", "\u2060", "\ufeff", "\u202e", "\U000e0041", "\u00ad"):
        assert canonical_key(f"lease{mark} ttl") == canonical_key("lease ttl")


def test_m_arg_040_keys_are_nfc_so_composed_and_decomposed_accents_match() -> None:
    assert canonical_key("cafe\u0301 opens at nine") == canonical_key("caf\u00e9 opens at nine")


def test_the_key_splits_camel_case_at_ascii_lower_to_upper_boundaries() -> None:
    assert canonical_key("embedderListensOnPort") == canonical_key("embedder listens on port")
    assert canonical_key("leaseTTL") == "leas ttl"
    assert canonical_key("GitHub") != canonical_key("github")  # upstream's rule, kept


def test_the_key_splits_on_hyphen_underscore_and_whitespace() -> None:
    assert canonical_key("write-ahead_log\tfile\n") == canonical_key("write ahead log file")


def test_the_key_is_lower_case_so_lease_ttl_in_any_case_is_one_key() -> None:
    assert canonical_key("Lease TTL is 45s") == canonical_key("lease ttl is 45s") == "45 leas ttl"


def test_the_key_drops_exactly_the_thirteen_stopwords() -> None:
    assert sorted(STOPWORDS) == sorted(
        ["the", "a", "an", "for", "of", "at", "in", "to", "on", "and", "or", "is", "are"]
    )
    assert canonical_key("The port of the embedder is 8080 and on") == "8080 embedd port"
    assert canonical_key("it was not") == "it not wa"  # only those thirteen


def test_the_key_porter_stems_and_sorts_the_words() -> None:
    assert canonical_key("Agents decided") == canonical_key("decides agent")
    assert canonical_key("listening ports") == "listen port"


def test_a_text_of_stopwords_and_punctuation_alone_has_the_empty_key() -> None:
    assert canonical_key("The — and.") == ""


def test_sentence_punctuation_at_a_word_end_is_not_part_of_the_key() -> None:
    assert canonical_key("Lease TTL is 45s.") == canonical_key("lease ttl is 45s")
    assert canonical_key("Port: 8080, (final)!") == canonical_key("port 8080 final")
    assert canonical_key('"Lease TTL" — 45s…') == canonical_key("lease ttl 45s")


def test_punctuation_inside_a_word_and_a_leading_dot_stay_in_the_key() -> None:
    assert canonical_key("config.toml") != canonical_key("config toml")
    assert canonical_key("v1.2.3") != canonical_key("v123")
    assert canonical_key(".env") != canonical_key("env")
    assert canonical_key("x >= 5") != canonical_key("x <= 5")
    assert canonical_key("issue #52") != canonical_key("issue 52")


def test_synonyms_are_one_direct_lookup_on_the_trimmed_raw_text() -> None:
    synonyms = {"k8s": "Kubernetes"}
    assert canonical_key("  k8s ", synonyms=synonyms) == canonical_key("Kubernetes")
    kubernetes = canonical_key("Kubernetes")
    assert canonical_key("K8s", synonyms=synonyms) != kubernetes  # no normalizing before it
    assert canonical_key("k8s cluster", synonyms=synonyms) == "cluster k8"


def test_synonyms_are_empty_by_default() -> None:
    assert canonical_key("k8s") == "k8"  # Porter takes the s, as from 45s


def test_observations_never_match_by_key() -> None:
    assert matches_by_key("observation") is False
    for concept_type in ("entity", "logic", "constraint", "resource"):
        assert matches_by_key(concept_type) is True


def test_the_short_id_is_the_first_8_hex_of_the_hyphenated_uuid() -> None:
    node = uuid.UUID("1a2b3c4d-0000-4000-8000-000000000000")
    assert short_id(node) == "1a2b3c4d"
    assert short_id("1A2B3C4D-0000-4000-8000-000000000000") == "1a2b3c4d"


def test_short_id_refuses_a_text_that_is_not_a_hyphenated_uuid() -> None:
    with pytest.raises(ValueError, match="not a hyphenated uuid"):
        short_id("1a2b3c4d000040008000000000000000")


def test_a_short_id_is_exactly_8_ascii_hex_characters() -> None:
    assert is_short_id("1a2b3c4d")
    assert is_short_id("DEADBEEF")
    for text in ("1a2b3c4", "1a2b3c4d5", "1a2b3c4g", " 1a2b3c4d", "1a2b3c4d\n", "１a2b3c4d"):
        assert not is_short_id(text)


def test_only_the_hyphenated_uuid_form_is_a_node_id() -> None:
    node = str(uuid.uuid4())
    assert is_node_uuid(node)
    assert is_node_uuid(node.upper())
    for text in (node.replace("-", ""), f"{{{node}}}", f"urn:uuid:{node}", node[:-1]):
        assert not is_node_uuid(text)


def test_digit_words_differ_when_a_number_port_or_version_changes() -> None:
    assert digit_words_differ("listens on port 8080", "listens on port 8081")
    assert digit_words_differ("since version 2.3", "since version 2.4")
    assert not digit_words_differ("Backups use AES-256.", "backups get AES 256")
    assert not digit_words_differ("the parser is written in Rust", "the parser is in Go")


def test_the_minilm_threshold_names_the_bundled_models_contract() -> None:
    assert (CONTRACT.kind, CONTRACT.model, CONTRACT.dim) == MINILM_CONTRACT
    assert 0.8 <= MINILM_MERGE_THRESHOLD < 1.0


def test_the_merge_pair_set_is_labelled_and_large_enough() -> None:
    pairs = _pairs()
    assert len(pairs) >= 150
    assert len({pair["id"] for pair in pairs}) == len(pairs)
    kinds = {pair["kind"] for pair in pairs}
    assert {"number", "identifier", "negation", "opposite", "subject"} <= kinds
    for pair in pairs:
        assert isinstance(pair["same"], bool)
        assert pair["concept_type"] in {"entity", "logic", "constraint", "observation"}


def test_no_merge_pair_is_decided_by_the_key_before_similarity() -> None:
    assert [p["id"] for p in _pairs() if canonical_key(p["a"]) == canonical_key(p["b"])] == []


def test_m_rec_191_one_value_after_the_predicate_is_a_possible_supersession() -> None:
    assert one_value_differs(
        "the embedder listens on port 8080", "the embedder listens on port 8081"
    )
    assert not one_value_differs("J1 round-1 verdict: pass", "J2 round-1 verdict: pass")
    assert not one_value_differs("port 8080 on host a", "port 8081 on host b")  # two values
    assert not one_value_differs("the port is 8080", "the listening port is 8080")
