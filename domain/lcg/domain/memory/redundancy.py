"""Duplicate hits (#181, seed 001 "Duplicate hits", M-REC-180..200): which recall hit repeats
one recall already took, and which hits a recall keeps when ``[selection] skip_redundant`` is on.

Pure rules; the retrieval core gathers what memory says about the pairs (:class:`PairFacts`).

A later hit repeats an earlier kept one when

* ``same_content``: their texts are equal once invisible characters are dropped, the text is
  NFC-normalized and every run of whitespace counts as one space (ends trimmed). Case is kept
  ("Lease TTL" does not repeat "lease ttl"), and the two concept types do not matter (M-REC-182);
* with ``similar_signals`` on (M-REC-183), also ``semantic_edge``: memory holds a ``semantic``
  edge between the two concepts, in either direction; or ``cosine``: the cosine of their
  stored vectors is at least the session's merge threshold (the same threshold a write merges
  by, ``identity.MINILM_MERGE_THRESHOLD`` for the bundled MiniLM contract).

  *What "joined by a semantic match" means here.* This projection records a ``semantic`` edge
  only from an interaction to the concept one of its texts was merged into by similarity (a
  merge record, memory_apply); it never records one between two concepts, because a text that
  matches a concept by meaning is merged into it rather than stored beside it. So the signal
  is read as the seed words it, an edge of kind ``semantic`` whose two ends are the two
  concepts, and on stores this code writes it does not fire: near-duplicates that were kept
  apart (observations framed by different calls, a write the vector index had not caught up
  with) are found by ``cosine``. The signal is kept for a store whose projection records
  concept-to-concept matches, as upstream's does.

and none of the guards below holds (they win over every signal, M-REC-185..191):

* one of the two contradicts the other (a ``contradicts`` edge either way);
* the two are a possibly-superseded pair (#198, recorded either way round);
* their texts differ in an identifier: a word in snake_case, CamelCase or all caps, a path
  or dotted name (``/``, ``\\``, a leading ``.`` or ``~``, a ``.`` inside the word), a
  version or a hash; compared case-sensitively;
* their texts differ in a number: the words holding a digit (``identity.digit_words_differ``),
  or the number words of :data:`NUMBER_WORDS`;
* their texts differ in a negation (:data:`NEGATIONS`, and any word ending in ``n't``);
* one says a word where the other says its opposite (:data:`OPPOSITES`, compared by Porter
  stem so ``enables`` and ``disabled`` count);
* the words they share come in a different order ("A depends on B" / "B depends on A").

Never skipped (M-REC-192, M-REC-193): a hit the caller marks ``protected`` (kept past top_k for
a warning, or with a warning line of its own). Only the first ``min(20, 4 × top_k)`` hits are
checked (M-REC-194); a skipped hit's slot goes to the next hit, so the kept hits are the first
``top_k`` hits that were not skipped, in their rank order (M-REC-181, M-REC-199).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from lcg.domain.memory.identity import digit_words_differ
from lcg.domain.memory.text import drop_invisible_characters, porter_stems

Signal = Literal["same_content", "semantic_edge", "cosine"]
SAME_CONTENT: Final = "same_content"
SEMANTIC_EDGE: Final = "semantic_edge"
COSINE: Final = "cosine"

CHECKED_MAX: Final = 20  # the first min(20, 4 x top_k) hits are checked (M-REC-194)
CHECKED_PER_TOP_K: Final = 4

NEGATIONS: Final = frozenset(
    (
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "nobody",
        "nowhere",
        "neither",
        "nor",
        "without",
        "cannot",
    )
)
"""Negation words (lower case). A word ending in ``n't`` (``isn't``, ``don't``) counts as
``not``, and so does ``cannot``; the others count as themselves, so "is not" and "is never"
differ too (not skipping is the safe side)."""

OPPOSITES: Final[tuple[tuple[str, str], ...]] = (
    ("enable", "disable"),
    ("true", "false"),
    ("on", "off"),
    ("allow", "deny"),
    ("allow", "forbid"),
    ("accept", "reject"),
    ("include", "exclude"),
    ("add", "remove"),
    ("start", "stop"),
    ("open", "close"),
    ("lock", "unlock"),
    ("show", "hide"),
    ("before", "after"),
    ("above", "below"),
    ("increase", "decrease"),
    ("more", "less"),
    ("min", "max"),
    ("minimum", "maximum"),
    ("first", "last"),
    ("success", "failure"),
    ("succeed", "fail"),
    ("pass", "fail"),
    ("valid", "invalid"),
    ("required", "optional"),
    ("public", "private"),
    ("sync", "async"),
    ("read", "write"),
    ("input", "output"),
    ("upper", "lower"),
    ("yes", "no"),
)
"""Words against their opposites (M-REC-190): a short list of the switches and directions
agents write about, not a thesaurus. Matched by Porter stem (``enabled`` is ``enable``)."""

NUMBER_WORDS: Final = frozenset(
    (
        *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"),
        *("ten", "eleven", "twelve", "twenty", "thirty", "forty", "fifty", "hundred"),
        *("thousand", "million", "billion", "once", "twice", "half", "double", "triple"),
    )
)
"""Numbers written as words; two texts differing in one of them differ in a number."""

_SPACE: Final = re.compile(r"\s+")
_WORD: Final = re.compile(r"[\w'’./\\~#@:-]+")
_EDGE_PUNCTUATION: Final = ".,;:!?…'’\"`()[]{}«»“”‘’„‚—–-"
_CAMEL: Final = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2,}[a-z]")
_VERSION: Final = re.compile(r"v?\d+(\.\d+)+([-+][\w.]+)?", re.IGNORECASE)
_HASH: Final = re.compile(r"(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,}", re.IGNORECASE)


# --- the text rules ---------------------------------------------------------------------------


def comparable_text(text: str) -> str:
    """The text as ``same_content`` compares it: invisible characters dropped, NFC, each run of
    whitespace one space, ends trimmed; case kept."""
    text = unicodedata.normalize("NFC", drop_invisible_characters(text))
    return _SPACE.sub(" ", text).strip()


def same_content(first: str, second: str) -> bool:
    """Whether the two texts are the same text, spacing and invisible characters aside, case
    kept (M-REC-182)."""
    return comparable_text(first) == comparable_text(second)


def _raw_words(text: str) -> list[str]:
    words = (word.strip(_EDGE_PUNCTUATION) for word in _WORD.findall(comparable_text(text)))
    return [word for word in words if word]


def is_identifier(word: str) -> bool:
    """snake_case, CamelCase, ALL CAPS (two letters or more), a path or dotted name, a version
    or a hash (M-REC-187). ``word`` is as written: case counts."""
    letters = [c for c in word if c.isalpha()]
    return (
        "_" in word
        or _CAMEL.search(word) is not None
        or (len(letters) >= 2 and all(c.isupper() for c in letters))
        or "/" in word
        or "\\" in word
        or word.startswith((".", "~"))
        or "." in word.strip(".")
        or _VERSION.fullmatch(word) is not None
        or _HASH.fullmatch(word) is not None
    )


def _identifiers(text: str) -> Counter[str]:
    return Counter(word for word in _raw_words(text) if is_identifier(word))


def _lower_words(text: str) -> list[str]:
    return [word.lower() for word in _raw_words(text)]


def _negations(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for written in _lower_words(text):
        word = written.replace("’", "'")
        if word.endswith("n't") or word == "cannot":
            found["not"] += 1
        elif word in NEGATIONS:
            found[word] += 1
    return found


def _number_words(text: str) -> Counter[str]:
    return Counter(word for word in _lower_words(text) if word in NUMBER_WORDS)


_OPPOSITE_STEMS: Final = tuple((porter_stems([a])[0], porter_stems([b])[0]) for a, b in OPPOSITES)


def _opposite_differs(first: str, second: str) -> bool:
    stems_a = set(porter_stems(_lower_words(first)))
    stems_b = set(porter_stems(_lower_words(second)))
    for pair in _OPPOSITE_STEMS:
        side_a = stems_a.intersection(pair)
        side_b = stems_b.intersection(pair)
        if side_a and side_b and side_a != side_b:
            return True
    return False


def _shared_order_differs(first: str, second: str) -> bool:
    """Whether the words both texts use (case-folded) come in a different order: each text's
    shared words, first occurrences only, compared as sequences (M-REC-191)."""
    words_a, words_b = _lower_words(first), _lower_words(second)
    shared = set(words_a) & set(words_b)
    order_a = list(dict.fromkeys(word for word in words_a if word in shared))
    order_b = list(dict.fromkeys(word for word in words_b if word in shared))
    return order_a != order_b


def text_guard(first: str, second: str) -> str | None:
    """Why two texts are never a repeat, whatever signal joins them, or None (M-REC-187..191):
    ``identifier``, ``number``, ``negation``, ``opposite`` or ``order``."""
    if _identifiers(first) != _identifiers(second):
        return "identifier"
    if digit_words_differ(first, second) or _number_words(first) != _number_words(second):
        return "number"
    if _negations(first) != _negations(second):
        return "negation"
    if _opposite_differs(first, second):
        return "opposite"
    if _shared_order_differs(first, second):
        return "order"
    return None


# --- pairs and the selection ------------------------------------------------------------------


def pair(first: str, second: str) -> frozenset[str]:
    """The unordered key of two node ids."""
    return frozenset((first, second))


@dataclass(frozen=True, slots=True)
class PairFacts:
    """What memory says about pairs of the hits checked, each pair unordered (:func:`pair`):
    contradictions (M-REC-185) and possibly-superseded pairs (M-REC-186), never repeats;
    ``semantic`` edges and vector ``cosines`` (read only with ``similar_signals``), and the
    session's merge ``threshold``."""

    contradictions: frozenset[frozenset[str]] = frozenset()
    superseded: frozenset[frozenset[str]] = frozenset()
    semantic: frozenset[frozenset[str]] = frozenset()
    cosines: Mapping[frozenset[str], float] = field(default_factory=dict)
    threshold: float = 1.0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked hit. ``content`` None: the hit takes its slot but is never compared (the caller
    filters it out afterwards); ``protected``: never skipped (M-REC-192, M-REC-193)."""

    node_id: str
    content: str | None
    protected: bool = False


def repeat_signal(
    kept: Candidate, later: Candidate, facts: PairFacts, *, similar_signals: bool
) -> Signal | None:
    """The signal by which ``later`` repeats ``kept``, or None when it does not."""
    if kept.content is None or later.content is None or kept.node_id == later.node_id:
        return None
    key = pair(kept.node_id, later.node_id)
    if (
        key in facts.contradictions
        or key in facts.superseded
        or text_guard(kept.content, later.content) is not None
    ):
        return None
    signal: Signal | None = None
    if same_content(kept.content, later.content):
        signal = "same_content"
    elif similar_signals and key in facts.semantic:
        signal = "semantic_edge"
    elif similar_signals and facts.cosines.get(key, -1.0) >= facts.threshold:
        signal = "cosine"
    return signal


@dataclass(frozen=True, slots=True)
class Skipped:
    """A skipped hit (``node_id``) and the signal that found it."""

    node_id: str
    signal: Signal


def _original(
    kept: Sequence[Candidate], hit: Candidate, facts: PairFacts, similar_signals: bool
) -> tuple[str, Skipped] | None:
    """The first kept hit ``hit`` repeats, and ``hit`` as its repeat; None when there is none."""
    for earlier in kept:
        signal = repeat_signal(earlier, hit, facts, similar_signals=similar_signals)
        if signal is not None:
            return earlier.node_id, Skipped(hit.node_id, signal)
    return None


@dataclass(frozen=True, slots=True)
class Selection:
    """The hits kept, in rank order, and for each kept hit what it replaced, in rank order."""

    kept: tuple[str, ...]
    skipped: Mapping[str, tuple[Skipped, ...]]


def checked_count(top_k: int) -> int:
    """How many of the first hits are checked for repeats: min(20, 4 × top_k) (M-REC-194)."""
    return min(CHECKED_MAX, CHECKED_PER_TOP_K * top_k)


def select(
    ranked: Sequence[Candidate], top_k: int, facts: PairFacts, *, similar_signals: bool
) -> Selection:
    """The first ``top_k`` hits of ``ranked`` that are not repeats of a hit kept before them.

    A hit among the first :func:`checked_count` is skipped when it repeats a hit already kept
    (the first such, in rank order) and is not protected; every other hit is kept. Kept hits
    keep their order; the skipped are named under the hit they repeat.
    """
    checked = checked_count(top_k)
    kept: list[Candidate] = []
    skipped: dict[str, list[Skipped]] = {}
    for position, hit in enumerate(ranked):
        if len(kept) >= top_k:
            break
        if position < checked and not hit.protected:
            original = _original(kept, hit, facts, similar_signals)
            if original is not None:
                skipped.setdefault(original[0], []).append(original[1])
                continue
        kept.append(hit)
    return Selection(
        tuple(hit.node_id for hit in kept),
        {node: tuple(items) for node, items in skipped.items()},
    )
