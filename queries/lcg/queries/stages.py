"""Named, switchable stages of passage retrieval after the legs are fused (issue 31, ADR 0068).

Each stage reorders (or extends) the fused candidates, passages or concepts alike (a key's
session and day come from its episode, or its concept's `about_time`); each is off unless its
setting turns it on, and what each measured on REALTALK is in docs/adr/0068-retrieval-stages.md.

- session scoring: a passage also scores by the best other candidates of its session (its
  group's episodes of the same day), so a session whose turns match well lifts them all;
- diversity: at most `per_session` passages of one session among the first results, so a
  question needing evidence from two sessions gets both;
- time: a date range read from the query ("in May", "last week", "in 2023") keeps the
  candidates whose episode falls in it, unless that leaves fewer than `min_kept`;
- speaker (passages): a chat turn ("Name: ...") whose speaker the query names scores more,
  since a question about one participant is mostly answered by their own turns (ADR 0099);
- budget (recall): a hit whose block does not fit what max_tokens leaves moves after the
  hits that fit, so the context block holds more of them (lcg.domain.memory.context.
  pack_for_budget, ADR 0103).
"""

from __future__ import annotations

import calendar
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from lcg.queries.fusion import Fused, K, fused_order

Session = tuple[str, str]  # (group id, UTC day of the episode's reference time)


@dataclass(frozen=True, slots=True)
class Stages:
    """Which stages run, with their one parameter each (0 or False: off)."""

    session_weight: float = 0.0  # share of a passage's score taken from its session's best
    per_session: int = 0  # most passages of one session among the first results
    time_filter: bool = False  # read a date range from the query and keep what falls in it
    # search again by the names the strongest hits mention; what that finds scores this x
    # its source's score x its bm25 share (0: off)
    entity_hop: float = 0.0
    # the vector leg scored as this x its cosine over the leg's best cosine, as the BM25 leg
    # is scored against its best (0: the cosine as it is)
    vector_weight: float = 0.0
    # passage search's fusion (ADR 0090): reciprocal rank fusion of its BM25 and vector legs,
    # the vector leg's terms weighted by `rrf_vector` and k = `rrf_k`; 0: the search context's
    # fusion ([fusion] strategy) instead
    rrf_vector: float = 0.25
    rrf_k: int = 60
    # passage search: a `message` passage whose speaker the query names scores
    # (1 + speaker_weight) x its fused score (0: off; ADR 0099)
    speaker_weight: float = 0.0
    # lambo_recall: when the context block cannot hold every hit, the hits whose blocks fit go
    # first, so more of them are in the block (ADR 0103)
    budget_pack: bool = False

    @property
    def reorders(self) -> bool:
        """Whether a stage that runs after fusion (time, session scoring, diversity) is on."""
        return self.time_filter or self.session_weight > 0 or self.per_session > 0


OFF = Stages()
ENTITY_FROM = 3  # strongest hits whose names the entity hop searches by
_NAME = re.compile(r"(?<![\w'’])([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b(?!:)")


def mentioned_names(texts: Sequence[str], query: str, stop: frozenset[str]) -> list[str]:
    """The capitalised words of `texts` (names of people, places, things) that the query does
    not hold: what a second hop searches by. A word opening a line and followed by a colon
    (a chat's speaker) and stop words ("I", "The") are not names."""
    asked = {word.lower() for word in re.findall(r"\w+", query)}
    found: dict[str, None] = {}
    for text in texts:
        for name in _NAME.findall(text):
            low = name.lower()
            if low not in asked and low not in stop and len(low) > 2:
                found.setdefault(name, None)
    return list(found)


_SPEAKER = re.compile(r"\s*([^\n:]{1,40}):")
_WORDS = re.compile(r"\w+")


def speaker_of(text: str) -> str | None:
    """A chat turn's speaker, lowercased: what comes before the colon that ends its first
    words ("Emi: ..." -> "emi"), or None."""
    found = _SPEAKER.match(text)
    if found is None:
        return None
    return found[1].strip().lower() or None


def named_speakers(query: str, speakers: Sequence[str]) -> set[str]:
    """The speakers the query names, by their whole name or its first word ("Kate's" names
    kate, "Fahim" names fahim khan)."""
    words = [w.lower() for w in _WORDS.findall(query)]
    said = " ".join(words)
    named = set()
    for speaker in set(speakers):
        parts = _WORDS.findall(speaker)
        if parts and (parts[0] in words or " ".join(parts) in said):
            named.add(speaker)
    return named


def boost_speakers(
    fused: Sequence[Fused[K]], speakers: Mapping[K, str], query: str, weight: float
) -> list[Fused[K]]:
    """Each candidate whose speaker the query names scores (1 + weight) x its score; nothing
    changes when the query names no speaker, or every speaker among the candidates."""
    if weight <= 0 or not speakers:
        return list(fused)
    named = named_speakers(query, list(speakers.values()))
    if not named or named == set(speakers.values()):
        return list(fused)
    boosted = [
        replace(e, score=e.score * (1 + weight), ranks=dict(e.ranks))
        if speakers.get(e.key) in named
        else e
        for e in fused
    ]
    return sorted(boosted, key=fused_order)


SESSION_TOP = 2  # a session scores by the mean of its best candidates' scores, this many
TIME_MIN_KEPT = 3  # the time filter keeps at least this many candidates, or falls back


def scaled_vectors(hits: Sequence[tuple[K, float]], weight: float) -> list[tuple[K, float]]:
    """A vector leg's hits scored `weight` x cosine / best cosine (unchanged with weight 0)."""
    if weight <= 0 or not hits:
        return list(hits)
    best = max(score for _, score in hits)
    if best <= 0:
        return list(hits)
    return [(key, weight * score / best) for key, score in hits]


def run_stages(
    stages: Stages,
    query: str,
    fused: list[Fused[K]],
    placed: Mapping[K, tuple[str, str]],
    top: int,
) -> list[Fused[K]]:
    """The stages `stages` turns on, in order: time, session scoring, diversity. `placed`
    gives each known candidate's group and reference time (an episode's `valid_at`, a
    concept's `about_time`); a candidate it does not name keeps its place."""
    if stages.time_filter and placed:
        days = {key: day_of(when) for key, (_, when) in placed.items()}
        fused = in_range(fused, days, query_span(query, max(days.values())))
    sessions = {key: session_of(group, when) for key, (group, when) in placed.items()}
    fused = score_sessions(fused, sessions, stages.session_weight)
    return diversify(fused, sessions, stages.per_session, top)


def session_of(group_id: str, reference_time: str) -> Session:
    """A passage's session: its group and the UTC day its episode happened."""
    return group_id, reference_time[:10]


def score_sessions(
    fused: Sequence[Fused[K]], sessions: Mapping[K, Session], weight: float
) -> list[Fused[K]]:
    """Blend each candidate's score with its session's: (1 - weight) x its own + weight x
    the mean of the session's best SESSION_TOP scores. Candidates of an unknown episode keep
    their own score (scaled alike, so the order among them is unchanged)."""
    if weight <= 0 or not fused:
        return list(fused)
    by_session: dict[Session, list[float]] = defaultdict(list)
    for entry in fused:
        session = sessions.get(entry.key)
        if session is not None:
            by_session[session].append(entry.score)
    strength = {
        session: sum(sorted(scores, reverse=True)[:SESSION_TOP]) / SESSION_TOP
        for session, scores in by_session.items()
    }
    blended = []
    for entry in fused:
        session = sessions.get(entry.key)
        boost = strength[session] if session is not None else entry.score
        score = (1 - weight) * entry.score + weight * boost
        blended.append(replace(entry, score=score, ranks=dict(entry.ranks)))
    return sorted(blended, key=fused_order)


def diversify(
    fused: Sequence[Fused[K]], sessions: Mapping[K, Session], per_session: int, top: int
) -> list[Fused[K]]:
    """The same candidates, with at most `per_session` of one session among the first `top`:
    a passage over the cap moves after them, in its order (nothing is dropped)."""
    if per_session <= 0:
        return list(fused)
    taken: dict[Session, int] = defaultdict(int)
    first: list[Fused[K]] = []
    later: list[Fused[K]] = []
    for entry in fused:
        session = sessions.get(entry.key)
        if len(first) < top and (session is None or taken[session] < per_session):
            first.append(entry)
            if session is not None:
                taken[session] += 1
        else:
            later.append(entry)
    return first + later


def in_range(
    fused: Sequence[Fused[K]],
    days: Mapping[K, date],
    span: tuple[date, date] | None,
    min_kept: int = TIME_MIN_KEPT,
) -> list[Fused[K]]:
    """The candidates whose episode's day is within `span` (inclusive), or all of them when
    there is no span or fewer than `min_kept` fall in it (a filter must not empty a search)."""
    if span is None:
        return list(fused)
    start, end = span
    kept = [e for e in fused if e.key in days and start <= days[e.key] <= end]
    return kept if len(kept) >= min_kept else list(fused)


_MONTHS = {name.lower(): n for n, name in enumerate(calendar.month_name) if name}
_MONTH = "(?P<month>" + "|".join(_MONTHS) + ")"
_YEAR = r"(?:,?\s*(?P<year>(?:19|20)\d\d))?"
_ORDINAL = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_BOUND = r"(?:(?P<bound>in|during|last|this|of|on|since|before|after|until|by)\s+(?:the\s+)?)"
# "the 10th of February 2024", "before 5th of January", "January 4th, 2024", "on May 3"
_DAY_OF_RE = re.compile(rf"\b{_BOUND}?{_ORDINAL}\s+of\s+{_MONTH}{_YEAR}", re.IGNORECASE)
_MONTH_DAY_RE = re.compile(rf"\b{_BOUND}?{_MONTH}\s+{_ORDINAL}\b{_YEAR}", re.IGNORECASE)
_MONTH_RE = re.compile(rf"\b{_BOUND}{_MONTH}\b{_YEAR}", re.IGNORECASE)
_YEAR_RE = re.compile(r"\b(?:in|during)\s+(?P<year>(?:19|20)\d\d)\b", re.IGNORECASE)
_RELATIVE = {
    "yesterday": (1, 1),
    "last week": (14, 7),
    "this week": (7, 0),
    "last month": (62, 28),
    "this month": (31, 0),
    "last year": (730, 365),
    "this year": (366, 0),
}
_RELATIVE_RE = re.compile(r"\b(" + "|".join(_RELATIVE) + r")\b", re.IGNORECASE)
_BEFORE = ("before", "until", "by")
_AFTER = ("after", "since")


def query_span(query: str, today: date) -> tuple[date, date] | None:
    """The date range a query names, read with a few rules, or None.

    A day ("on the 10th of February 2024", "January 4th"): that day and the next (a chat's
    day and a UTC day differ); a month ("in May", "last May", "during May 2023"): that
    month; without a year, the latest one up to `today`; "in 2023": that year; "yesterday",
    "last week|month|year", "this week|month|year": a window back from `today`, wide enough
    to hold the period meant. "before", "until", "by", "after" and "since" bound one side
    only."""
    for pattern in (_DAY_OF_RE, _MONTH_DAY_RE, _MONTH_RE):
        found = pattern.search(query)
        if found is None:
            continue
        groups = found.groupdict()
        number = _MONTHS[(groups.get("month") or "").lower()]
        year = int(groups["year"]) if groups.get("year") else _latest_year(number, today)
        if groups.get("day"):
            day = min(max(int(groups["day"]), 1), calendar.monthrange(year, number)[1])
            first = last = date(year, number, day)
            last = first + timedelta(days=1)
        else:
            first = date(year, number, 1)
            last = date(year, number, calendar.monthrange(year, number)[1])
        bound = (groups.get("bound") or "").lower()
        if bound in _BEFORE:
            return date.min, first
        if bound in _AFTER:
            return first, date.max
        return first, last
    named_year = _YEAR_RE.search(query)
    if named_year is not None:
        value = int(named_year["year"])
        return date(value, 1, 1), date(value, 12, 31)
    relative = _RELATIVE_RE.search(query)
    if relative is not None:
        back, until = _RELATIVE[relative[1].lower()]
        return today - timedelta(days=back), today - timedelta(days=until)
    return None


def _latest_year(month: int, today: date) -> int:
    return today.year if month <= today.month else today.year - 1


def day_of(reference_time: str) -> date:
    """The UTC day of an ISO reference time."""
    return datetime.fromisoformat(reference_time[:10]).date()
