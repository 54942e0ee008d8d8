"""Concept identity: the canonical key, short ids, node ids and the calibrated merge threshold.

Two concepts of a session are the same concept when their canonical keys are equal
(canonization.md §9), except observations, which never match by key. A concept whose key is new
may still be merged into an existing one by similarity: cosine >= the merge threshold of the
session's embedding contract, each text embedded framed with its call's text
(`lcg.domain.memory.text.embedding_text`).
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from lcg.domain.memory.text import drop_invisible_characters, porter_stems

STOPWORDS: Final = frozenset(
    ("the", "a", "an", "for", "of", "at", "in", "to", "on", "and", "or", "is", "are")
)

# Punctuation (decision in docs/adr/0025): sentence punctuation at the end of a word, and
# quotes, brackets and dashes at either end, are typography, not content: "Lease TTL is 45s."
# restates "Lease TTL is 45s", and agents add or drop the final period at random. Punctuation
# inside a word is kept, because there it names things: config.toml, v1.2.3, 10.0.0.1, TCP/IP,
# don't. A leading "." is kept (.env is not env), and so are #, %, @, $, /, <, > and = anywhere
# (#52, 50%, a >= b). A word left empty (a lone "—" or ":") is dropped.
_TRAILING_PUNCTUATION: Final = ".,;:!?…"
_ENCLOSING_PUNCTUATION: Final = "\"'`()[]{}«»“”‘’„‚—–"

_CAMEL_BOUNDARY: Final = re.compile(r"(?<=[a-z])(?=[A-Z])")
_WORD_SEPARATORS: Final = re.compile(r"[-_\s]+")
_SHORT_ID: Final = re.compile(r"[0-9a-fA-F]{8}")
_NODE_UUID: Final = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")

SYNONYMS: Final[Mapping[str, str]] = MappingProxyType({})
"""Synonym hook of §9: the trimmed raw text -> the text whose key it takes. Empty by default.

One direct lookup, before any normalizing: an entry matches only the exact trimmed text (case,
spacing and invisible characters count), and its value is then normalized like any text. So
`{"k8s": "Kubernetes"}` gives `k8s` the key of `Kubernetes`, but not `K8s` or `k8s cluster`.
A deployment that wants synonyms passes its own mapping to `canonical_key`.
"""

OBSERVATION: Final = "observation"

# Calibrated on fixtures/lcg/fixtures/data/merge-pairs.json by bench/bench_merge_threshold.py;
# the set, the method and the numbers are in docs/adr/0025-memory-identity-and-merge-threshold.md.
# It meets precision >= 0.9 only together with `digit_words_differ` refusing the merge: under
# MiniLM a changed number ("version 2.3" / "2.4", 0.994) is closer than any restatement, and
# cosine alone reaches no threshold with precision >= 0.9 on both halves of the set. It holds
# only for this contract: (kind, model, dim) as lcg.projections.embedding.minilm.CONTRACT.
MINILM_MERGE_THRESHOLD: Final = 0.98
MINILM_CONTRACT: Final = ("onnx", "all-MiniLM-L6-v2-int8", 384)


def _strip_punctuation(word: str) -> str:
    return word.rstrip(_TRAILING_PUNCTUATION + _ENCLOSING_PUNCTUATION).lstrip(
        _ENCLOSING_PUNCTUATION
    )


def _words(text: str) -> list[str]:
    """The key's words before stopwords and stemming: split, edge punctuation trimmed, lower."""
    text = unicodedata.normalize("NFC", drop_invisible_characters(text))
    text = _CAMEL_BOUNDARY.sub(" ", text)
    words = (_strip_punctuation(word).lower() for word in _WORD_SEPARATORS.split(text))
    return [word for word in words if word]


def canonical_key(text: str, *, synonyms: Mapping[str, str] = SYNONYMS) -> str:
    """The canonical key of a concept's text (canonization.md §9).

    Synonym lookup on the trimmed raw text; strip invisible codepoints; NFC; split at ASCII
    lowercase->uppercase boundaries and on `-`, `_` and whitespace; trim edge punctuation
    (see above); lowercase; drop the 13 stopwords; Porter-stem; sort; join with one space.
    A text of stopwords and punctuation alone has the empty key.
    """
    text = synonyms.get(text.strip(), text)
    kept = [word for word in _words(text) if word not in STOPWORDS]
    return " ".join(sorted(porter_stems(kept)))


def digit_words_differ(first: str, second: str) -> bool:
    """Whether the two texts name different values: their words holding a digit differ.

    The guard the MiniLM merge threshold is calibrated with (docs/adr/0025): under that model
    "port 8080" and "port 8081" are closer than most restatements, so a similarity merge is
    refused when this holds. A first cut at the seed's "identifiers differ": it sees numbers,
    versions, addresses, times and ids with digits, not names (config.toml vs settings.toml),
    and it refuses "3" against "three" or "10s" against "10 seconds" (safe: no merge).
    """
    return _digit_words(first) != _digit_words(second)


def one_value_differs(older: str, newer: str) -> bool:
    """Whether `newer` restates `older` with one value changed after an identical prefix (the
    seed's "possibly superseded": "the embedder listens on port 8080" then "... 8081"). The
    two have the same words but one, which is not the first (a change before the predicate,
    "J1 verdict" against "J2 verdict", is a different thing); two changes are never one."""
    first, second = _words(older), _words(newer)
    if len(first) != len(second):
        return False
    changed = [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b]
    return len(changed) == 1 and changed[0] > 0


def _digit_words(text: str) -> frozenset[str]:
    return frozenset(word for word in _words(text) if any(char.isdigit() for char in word))


def matches_by_key(concept_type: str) -> bool:
    """Whether a concept of this type (wire name, lower case) is found by its canonical key.

    Observations never are: two agents seeing the same thing are two observations.
    """
    return concept_type != OBSERVATION


def short_id(node_uuid: uuid.UUID | str) -> str:
    """The id recall shows: the first 8 hex characters of the hyphenated uuid, lower case."""
    if isinstance(node_uuid, str):
        if not is_node_uuid(node_uuid):
            raise ValueError(f"node id: {node_uuid!r} is not a hyphenated uuid")
        node_uuid = uuid.UUID(node_uuid)
    return str(node_uuid)[:8]


def is_short_id(text: str) -> bool:
    """Exactly 8 ASCII hex characters (either case): what a reference may mean as a short id."""
    return _SHORT_ID.fullmatch(text) is not None


def is_node_uuid(text: str) -> bool:
    """A full node id in its hyphenated 8-4-4-4-12 form (either case).

    The unhyphenated, braced and urn:uuid: forms are not ids: the seed makes them text.
    """
    return _NODE_UUID.fullmatch(text) is not None
