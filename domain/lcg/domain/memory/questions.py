"""Dependency questions in lambo_recall: is a query asking what depends on X, and which X.

Seed 001, lambo_recall, "Dependency questions" (checklist M-REC-080..098). `find_anchor` answers
with the concept a question names, or None for "answer it like an ordinary query"; the caller
then answers by graph traversal (X's direct dependents) or by ordinary recall. Pure: no storage,
no clock; the caller passes the candidate names.

Matching, as the seed states it. Query and names are NFC-normalised, then case-folded. A name
matches where its whole text appears with a word boundary at each edge that is a word character
(Unicode letters, digits, combining marks and "_"); an edge that is punctuation needs none
(`.env` in `config/.env`). A hyphen between word characters joins an identifier, so it is no
boundary either (`SG-Base` does not name `SG-Base-VPC`). Marker phrases match by the same rule.

Decisions where the seed is silent (OQ-50 unless noted):
- Markers: the seed's five forms and the shorter phrasings upstream recognises
  (`MARKERS`). A name occurrence that overlaps a marker is question text, not a subject: it never
  anchors and never hides a name nested in it ("a clause overlapping the question marker cannot
  hide its subject"); a concept whose text is a marker phrase therefore never anchors.
- Nearest: distance in characters from the end of the closest marker before the name to its
  start. A name with no marker before it ("what does db's blast radius cover") ranks after
  every name that follows a marker, nearest to the next marker first.
- Ties: Entity/Resource before other types, then the longer name (more specific: the same
  preference that makes `user db schema` hide `db`), then folded text and place. One name held
  by several concepts is ordered by type, most dependents, then node id, so the answer never
  depends on the order of `names`.
- A name is resolved among all named concepts first, and only then is its dependents count
  read: a subject with no dependents falls through (M-REC-098) instead of letting a farther name
  answer for it.
- "Bounded occurrences": occurrences that pass the word-boundary test, counted per candidate
  and only up to 257 (the scan stops there). One candidate over 256 makes the whole query fall
  through, whatever the other candidates do.
- 16 KiB is 16,384 UTF-8 bytes of the query as sent (OQ-08, OQ-10: equal to the `query` cap,
  so the check is a guard for callers that skip argument validation).
- Function words: the English closed-class words in `FUNCTION_WORDS`. A name made only of
  them (or of no word characters at all) does not anchor. An acronym is a name with at least
  two letters and no lower-case letter; it anchors where the query writes it with no lower-case
  letter either (`IT` in "what depends on IT", never in "what depends on it").
- "Says security group": the words `security group` appear in the query, bounded like a name.
  A security group is a candidate whose folded text starts with `sg-` or contains the words
  `security group` (upstream's rule). The one with the most dependents wins, then
  Entity/Resource, then folded text and node id; none with dependents means no anchor.
- Equal names: every candidate whose folded text equals the winner's and that has dependents
  is returned in `Anchor.concepts` (a path in several repositories, M-REC-103: the caller
  decides, using `Anchor.span` to read what follows the name).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from lcg.domain.memory.text import ConceptType

MAX_QUERY_BYTES: Final = 16 * 1024
"""A query over this many UTF-8 bytes is answered like an ordinary query."""

MAX_BOUNDED_OCCURRENCES: Final = 256
"""A candidate named more often than this makes the query fall through to ordinary recall."""

MARKERS: Final = (
    "what depends on",
    "depends on",
    "depend on",
    "depends-on",
    "dependents of",
    "blast radius of",
    "blast radius",
    "is it safe to delete",
    "safe to delete",
    "what uses",
)
"""Phrases that make a query a dependency question (the seed's five forms, and shorter ones)."""

SECURITY_GROUP: Final = "security group"

# One string per word class reads better than 160 quoted words, one a line.
FUNCTION_WORDS: Final = frozenset(
    (  # noqa: SIM905
        # articles and determiners
        "a an the this that these those some any each every all both either neither no "
        "another other such what which whose whatever whichever "
        # pronouns
        "i me my mine myself you your yours yourself yourselves he him his himself she her "
        "hers herself it its itself we us our ours ourselves they them their theirs themselves "
        "who whom one ones "
        # prepositions
        "about above across after against along among around as at before behind below "
        "beneath beside besides between beyond by down during except for from in inside into "
        "like near of off on onto out outside over past per since than through throughout till "
        "to toward towards under underneath until up upon via with within without "
        # conjunctions and particles
        "and but or nor so yet if then else because although though unless whether while "
        "where when why how not there here "
        # auxiliaries and modals
        "am is are was were be been being do does did done have has had having can could may "
        "might must shall should will would"
    ).split()
)
"""English closed-class words: a name made only of these does not anchor (bar an acronym)."""

_RUNS: Final = re.compile(r"\w+")
_HYPHENS: Final = frozenset("-\u2010\u2011")  # hyphen-minus, hyphen, non-breaking hyphen
_ENTITY_OR_RESOURCE: Final = frozenset((ConceptType.ENTITY, ConceptType.RESOURCE))


@dataclass(frozen=True)
class NameCandidate:
    """A concept a dependency question may name: its text, type and dependents count.

    `dependents` is the number of concepts that depend on it (its direct dependents, the set a
    traversal answer lists); `node_id` breaks the last tie, so any stable id will do.
    """

    text: str
    concept_type: ConceptType
    dependents: int
    node_id: str


class AnchorReason(StrEnum):
    """How the anchor was found."""

    NAMED = "named"  # the query names the concept
    SECURITY_GROUP = "security group"  # the query says "security group" and names no concept


@dataclass(frozen=True)
class Anchor:
    """The concept a dependency question asks about.

    `concepts` holds every candidate with the anchor's text (after NFC and case folding) that
    has dependents, best first: one unless the same name is several concepts (a path in
    several repositories). `span` is the name's place in the NFC-normalised query, as
    `(start, end)` character offsets; None for a security group chosen by dependents.
    """

    concepts: tuple[NameCandidate, ...]
    reason: AnchorReason
    span: tuple[int, int] | None

    @property
    def concept(self) -> NameCandidate:
        """The best of `concepts`."""
        return self.concepts[0]


def find_anchor(query: str, names: Iterable[NameCandidate]) -> Anchor | None:
    """The concept a dependency question names, or None to answer the query like any other.

    None when the query is over 16 KiB, says no marker phrase, names a concept that has no
    dependents, names none (and does not say "security group", or no security group has
    dependents), or when one candidate occurs more than 256 times.

    Which names to pass: every concept of the session whose text may occur in the query,
    whether or not it has dependents (a subject with none must be seen, so that it falls
    through rather than letting a farther name answer), plus the security groups with
    dependents (for "the shared security group"). Names that cannot occur may be left out:
    the answer is the same. For a large session, bound the list with the keyword index: a name
    occurs only if each of its words is a word of the query, so look the query's words up and
    pass the concepts whose words all appear, and of the security groups pass the few with the
    most dependents.
    """
    if len(query.encode("utf-8")) > MAX_QUERY_BYTES:
        return None
    folded = _Folded.of(query)
    markers = _marker_spans(folded.text)
    if not markers:
        return None
    candidates = list(names)
    occurrences = _occurrences(folded, candidates)
    if occurrences is None:
        return None
    named = _visible(_eligible(occurrences, markers, folded))
    if named:
        return _nearest(named, markers, folded)
    if _bounded_spans(folded.text, SECURITY_GROUP, limit=1):
        return _most_depended_security_group(candidates)
    return None


def is_dependency_question(query: str) -> bool:
    """Whether the query says a marker phrase ("what depends on", "blast radius of", ...)."""
    return len(query.encode("utf-8")) <= MAX_QUERY_BYTES and bool(
        _marker_spans(_Folded.of(query).text)
    )


def names_in(query: str, name: str) -> bool:
    """Whether `name` appears in `query` by the seed's whole-word rule."""
    return bool(_bounded_spans(_Folded.of(query).text, _fold(name), limit=1))


def same_anchor(a: str, b: str) -> bool:
    """Whether two anchor texts are equal ignoring case and NFC (a layer's floor, M-REC-100)."""
    return _fold(a) == _fold(b)


# --- folding and boundaries -------------------------------------------------------------------


def _fold(text: str) -> str:
    # str.casefold folds each character on its own, so a text folds as its characters do.
    return unicodedata.normalize("NFC", text).casefold()


@dataclass(frozen=True)
class _Folded:
    """An NFC-normalised text and its case-folded form, with each folded character's origin."""

    original: str
    text: str
    origin: tuple[int, ...]

    @classmethod
    def of(cls, text: str) -> _Folded:
        original = unicodedata.normalize("NFC", text)
        folded = original.casefold()
        if len(folded) == len(original):  # no character folded into several
            return cls(original, folded, tuple(range(len(original))))
        parts: list[str] = []
        origin: list[int] = []
        for index, character in enumerate(original):
            piece = character.casefold()
            parts.append(piece)
            origin.extend([index] * len(piece))
        return cls(original, "".join(parts), tuple(origin))

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The characters of the NFC text that folded into `text[start:end]`."""
        return self.origin[start], self.origin[end - 1] + 1


def _is_word_character(character: str) -> bool:
    return character == "_" or unicodedata.category(character)[0] in "LNM"


def _joined_before(text: str, start: int) -> bool:
    """Whether `text[start]`, a word character, continues a word or hyphenated identifier."""
    if start == 0:
        return False
    before = text[start - 1]
    if _is_word_character(before):
        return True
    return before in _HYPHENS and start >= 2 and _is_word_character(text[start - 2])


def _joined_after(text: str, end: int) -> bool:
    """Whether `text[end - 1]`, a word character, runs on into a word or hyphenated identifier."""
    if end >= len(text):
        return False
    after = text[end]
    if _is_word_character(after):
        return True
    return after in _HYPHENS and end + 1 < len(text) and _is_word_character(text[end + 1])


def _bounded_spans(text: str, name: str, *, limit: int) -> list[tuple[int, int]]:
    """Where `name` occurs in `text` with the boundaries the seed asks for, at most `limit`."""
    if not name:
        return []
    check_start = _is_word_character(name[0])
    check_end = _is_word_character(name[-1])
    spans: list[tuple[int, int]] = []
    position = text.find(name)
    while position >= 0 and len(spans) < limit:
        end = position + len(name)
        if not (check_start and _joined_before(text, position)) and not (
            check_end and _joined_after(text, end)
        ):
            spans.append((position, end))
        position = text.find(name, position + 1)
    return spans


def _marker_spans(text: str) -> list[tuple[int, int]]:
    spans = [
        span for marker in MARKERS for span in _bounded_spans(text, marker, limit=len(text) + 1)
    ]
    return sorted(spans)


# --- occurrences ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Occurrence:
    start: int
    end: int
    name: NameCandidate
    folded_name: str


def _occurrences(folded: _Folded, candidates: Sequence[NameCandidate]) -> list[_Occurrence] | None:
    """Every bounded occurrence of every candidate; None once one is over the bound."""
    occurrences: list[_Occurrence] = []
    # A bounded occurrence lines each run of \w of the name up with a whole run in the query
    # (\w is narrower than a word character, so its runs split no word), and a set lookup rules
    # most names out before any scan of the query text.
    query_runs = frozenset(_RUNS.findall(folded.text))
    for candidate in candidates:
        name = _fold(candidate.text)
        if not name or not query_runs.issuperset(_RUNS.findall(name)) or name not in folded.text:
            continue
        spans = _bounded_spans(folded.text, name, limit=MAX_BOUNDED_OCCURRENCES + 1)
        if len(spans) > MAX_BOUNDED_OCCURRENCES:
            return None
        occurrences.extend(_Occurrence(start, end, candidate, name) for start, end in spans)
    return occurrences


def _eligible(
    occurrences: Iterable[_Occurrence], markers: Sequence[tuple[int, int]], folded: _Folded
) -> list[_Occurrence]:
    """The occurrences that may anchor: outside every marker, not function words alone."""
    return [
        occurrence
        for occurrence in occurrences
        if not _overlaps_marker(occurrence, markers)
        and _may_anchor(occurrence.name.text, folded.original[slice(*_span(occurrence, folded))])
    ]


def _span(occurrence: _Occurrence, folded: _Folded) -> tuple[int, int]:
    return folded.original_span(occurrence.start, occurrence.end)


def _overlaps_marker(occurrence: _Occurrence, markers: Sequence[tuple[int, int]]) -> bool:
    return any(start < occurrence.end and occurrence.start < end for start, end in markers)


def _words(text: str) -> list[str]:
    """The runs of word characters of a folded text."""
    words: list[str] = []
    current: list[str] = []
    for character in text:
        if _is_word_character(character):
            current.append(character)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words


def _is_acronym(text: str) -> bool:
    letters = [character for character in text if character.isalpha()]
    return len(letters) >= 2 and not any(character.islower() for character in letters)


def _may_anchor(name: str, as_written: str) -> bool:
    """A name anchors unless it is function words alone; an acronym written as one still does."""
    words = _words(_fold(name))
    if not words:
        return False
    if _fold(name) in MARKERS:
        return False
    if not all(word in FUNCTION_WORDS for word in words):
        return True
    return _is_acronym(name) and _is_acronym(as_written)


def _visible(occurrences: Sequence[_Occurrence]) -> list[_Occurrence]:
    """The occurrences not nested inside a longer eligible occurrence (db in user db schema)."""
    ordered = sorted(occurrences, key=lambda o: (o.start, -o.end))
    visible: list[_Occurrence] = []
    reach = -1  # the furthest end of any earlier, different span
    index = 0
    while index < len(ordered):
        span = (ordered[index].start, ordered[index].end)
        group_end = index
        while (
            group_end < len(ordered) and (ordered[group_end].start, ordered[group_end].end) == span
        ):
            group_end += 1
        if reach < span[1]:
            visible.extend(ordered[index:group_end])
        reach = max(reach, span[1])
        index = group_end
    return visible


# --- choosing ---------------------------------------------------------------------------------


def _type_rank(candidate: NameCandidate) -> int:
    return 0 if candidate.concept_type in _ENTITY_OR_RESOURCE else 1


def _distance(occurrence: _Occurrence, markers: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """(0, characters after the nearest marker before it) or (1, characters to the next one)."""
    ends = [end for _, end in markers]
    ends.sort()
    before = bisect.bisect_right(ends, occurrence.start)
    if before:
        return 0, occurrence.start - ends[before - 1]
    return 1, min(start for start, _ in markers) - occurrence.end


def _nearest(
    named: Sequence[_Occurrence], markers: Sequence[tuple[int, int]], folded: _Folded
) -> Anchor | None:
    def rank(occurrence: _Occurrence) -> tuple[int, int, int, int, str, int]:
        side, distance = _distance(occurrence, markers)
        return (
            side,
            distance,
            _type_rank(occurrence.name),
            -(occurrence.end - occurrence.start),
            occurrence.folded_name,
            occurrence.start,
        )

    best = min(named, key=rank)
    same_name = {
        occurrence.name
        for occurrence in named
        if occurrence.folded_name == best.folded_name and occurrence.name.dependents > 0
    }
    if not same_name:
        return None
    # Equal names are one name at one place: the best of them by type, dependents, then id.
    concepts = sorted(same_name, key=lambda c: (_type_rank(c), -c.dependents, c.node_id, c.text))
    return Anchor(tuple(concepts), AnchorReason.NAMED, folded.original_span(best.start, best.end))


def is_security_group(candidate: NameCandidate) -> bool:
    """Whether a concept is a security group: named `SG-...` or saying "security group"."""
    name = _fold(candidate.text)
    return name.startswith("sg-") or bool(_bounded_spans(name, SECURITY_GROUP, limit=1))


def _most_depended_security_group(candidates: Iterable[NameCandidate]) -> Anchor | None:
    groups = [c for c in candidates if c.dependents > 0 and is_security_group(c)]
    if not groups:
        return None
    best = min(groups, key=lambda c: (-c.dependents, _type_rank(c), _fold(c.text), c.node_id))
    return Anchor((best,), AnchorReason.SECURITY_GROUP, None)
