"""Which label a spaCy entity gets, and which names in one chunk are one entity (issue 26).

spaCy's small English pipeline guesses an entity's type from the words around it, and on
names it has never seen it guesses badly (on the labelled set: "Pellar Dairy" a person,
"Redis" a place, "Bosphorus Film Festival" a facility). Three kinds of evidence in the chunk
itself come before its guess, in this order:

1. the name's last word: an organisation's ("Labs", "Bank", "Press", "University"), an
   event's ("Festival", "Marathon", "Forum") or software's ("app", "Scheduler", "server");
2. the place it holds in a sentence: the object of `in`/`near`/`outside` (or of `from` and
   `to` on one verb) is a Location; the object of a verb of use (`uses`, `runs`, `deploys`,
   `replaces`) is a Product, not a place;
3. spaCy's types over all the name's mentions, the most frequent (a tie goes to Person).

Aliases: a name that is the first words of exactly one longer name in the same chunk is that
entity ("Kestrel" and "Kestrel Scheduler"; "Vesna" and "Vesna Petrović"). Measured on the
labelled set before it was turned on (bench/README.md, `bench_extraction`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final

SPACY_LABELS: Final = {
    "PERSON": "Person",
    "ORG": "Organization",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Facility",
    "PRODUCT": "Product",
    "EVENT": "Event",
    "WORK_OF_ART": "Work",
    "LAW": "Law",
    "LANGUAGE": "Language",
    "NORP": "Group",
}
ORGANIZATION_WORDS: Final = frozenset(
    [
        "labs",
        "lab",
        "inc",
        "ltd",
        "llc",
        "gmbh",
        "corp",
        "corporation",
        "company",
        "co",
        "systems",
        "bank",
        "capital",
        "press",
        "books",
        "foods",
        "dairy",
        "biotech",
        "pharmaceuticals",
        "insurance",
        "analytics",
        "airways",
        "airlines",
        "energy",
        "rail",
        "robotics",
        "studios",
        "studio",
        "works",
        "university",
        "college",
        "school",
        "academy",
        "hospital",
        "library",
        "club",
        "institute",
        "foundation",
        "group",
        "partners",
        "holdings",
        "ventures",
        "agency",
        "council",
        "ministry",
        "society",
        "association",
        "union",
        "fund",
    ]
)
EVENT_WORDS: Final = frozenset(
    [
        "festival",
        "marathon",
        "forum",
        "conference",
        "summit",
        "expo",
        "olympics",
        "games",
        "championship",
        "cup",
        "fair",
        "symposium",
        "workshop",
        "meetup",
        "hackathon",
    ]
)
PRODUCT_WORDS: Final = frozenset(
    [
        "app",
        "scheduler",
        "server",
        "database",
        "engine",
        "platform",
        "framework",
        "api",
        "sdk",
        "cli",
        "drone",
    ]
)
LOCATIVE: Final = frozenset({"in", "near", "outside", "around", "inside", "throughout"})
USE_VERBS: Final = frozenset(
    [
        "use",
        "run",
        "deploy",
        "install",
        "adopt",
        "replace",
        "upgrade",
        "configure",
        "host",
        "cache",
        "query",
    ]
)


def label(name: str, mentions: Sequence[Any]) -> str | None:
    """Our label for an entity called `name`, from its mentions (spaCy spans) in one chunk;
    None when spaCy's types say it names no thing (dates and amounts)."""
    spacy_types = [SPACY_LABELS[m.label_] for m in mentions if m.label_ in SPACY_LABELS]
    if not spacy_types:
        return None
    last = name.rsplit(maxsplit=1)[-1].casefold().rstrip(".") if name.split() else ""
    for words, by_word in (
        (ORGANIZATION_WORDS, "Organization"),
        (EVENT_WORDS, "Event"),
        (PRODUCT_WORDS, "Product"),
    ):
        if last in words:
            return by_word
    roles = {_role(m.root) for m in mentions}
    if "place" in roles:
        return "Location"
    if "used" in roles:
        return "Product"
    counts = Counter(spacy_types)
    return max(counts, key=lambda t: (counts[t], t == "Person", -spacy_types.index(t)))


def _role(root: Any) -> str | None:
    """ "place" for the object of a locative preposition, "used" for the object of a verb of
    use, else None."""
    head = root.head
    if root.dep_ == "pobj" and head.dep_ == "prep":
        word = head.lower_
        if word in LOCATIVE:
            return "place"
        if word in ("from", "to"):
            siblings = {c.lower_ for c in head.head.children if c.dep_ == "prep"}
            if {"from", "to"} <= siblings:
                return "place"
    if root.dep_ == "dobj" and head.lemma_.casefold() in USE_VERBS:
        return "used"
    return None


def prefix_aliases(names: Iterable[str]) -> dict[str, str]:
    """Name key -> the longer name it is the first words of, when exactly one name of the
    chunk starts with it ("kestrel" -> "Kestrel Scheduler"), as `prefix_alias` decides for
    one name; through the names sorted by their words, where the longer names starting with
    a name follow it."""
    distinct = {tuple(name.casefold().split()): name for name in names}
    ordered = sorted(words for words in distinct if words)
    aliases: dict[str, str] = {}
    for index, words in enumerate(ordered):
        longer = [other for other in ordered[index + 1 : index + 3] if other[: len(words)] == words]
        if len(longer) == 1:
            aliases[distinct[words].casefold()] = distinct[longer[0]]
    return aliases
