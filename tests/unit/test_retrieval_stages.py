"""Passage search's stages after fusion (issue 31, ADR 0068): time, sessions, diversity."""

from __future__ import annotations

from datetime import date

from lcg.queries.fusion import Fused
from lcg.queries.stages import (
    Session,
    day_of,
    diversify,
    in_range,
    named_speakers,
    query_span,
    score_sessions,
    session_of,
    speaker_of,
)

Key = str


def ranked(*scores: tuple[str, float]) -> list[Fused[Key]]:
    return [Fused(key, score, score, {"text": n}) for n, (key, score) in enumerate(scores, 1)]


def keys(fused: list[Fused[Key]]) -> list[str]:
    return [entry.key for entry in fused]


def test_last_may_reads_as_the_latest_may_up_to_today() -> None:
    assert query_span("What did Emi cook last May?", date(2024, 3, 10)) == (
        date(2023, 5, 1),
        date(2023, 5, 31),
    )
    assert query_span("what did we plant in May", date(2024, 8, 1)) == (
        date(2024, 5, 1),
        date(2024, 5, 31),
    )


def test_a_day_a_year_and_a_bound_are_read_and_the_verb_may_is_not() -> None:
    today = date(2024, 3, 10)
    assert query_span("Where is Paola going on the 10th of February 2024?", today) == (
        date(2024, 2, 10),
        date(2024, 2, 11),
    )
    assert query_span("games he watched before January 4th, 2024", today) == (
        date.min,
        date(2024, 1, 4),
    )
    assert query_span("a match in 2017", today) == (date(2017, 1, 1), date(2017, 12, 31))
    assert query_span("she may come", today) is None
    assert query_span("what did he cook", today) is None


def test_the_time_filter_keeps_the_may_turns_of_a_last_may_question() -> None:
    fused = ranked(("june-cake", 0.9), ("may-cake", 0.8), ("may-pie", 0.7), ("may-tea", 0.6))
    days = {
        "june-cake": date(2023, 6, 2),
        "may-cake": date(2023, 5, 3),
        "may-pie": date(2023, 5, 20),
        "may-tea": date(2023, 5, 28),
    }
    span = query_span("what did they bake last May", date(2023, 6, 2))
    assert keys(in_range(fused, days, span)) == ["may-cake", "may-pie", "may-tea"]


def test_the_time_filter_falls_back_when_it_would_leave_too_few_hits() -> None:
    fused = ranked(("june-cake", 0.9), ("may-cake", 0.8), ("june-pie", 0.7))
    days = {
        "june-cake": date(2023, 6, 2),
        "may-cake": date(2023, 5, 3),
        "june-pie": date(2023, 6, 9),
    }
    span = query_span("what did they bake last May", date(2023, 6, 9))
    assert keys(in_range(fused, days, span, min_kept=2)) == ["june-cake", "may-cake", "june-pie"]
    assert keys(in_range(fused, days, None)) == ["june-cake", "may-cake", "june-pie"]


def test_diversity_lets_a_second_session_into_the_top_k_and_drops_nothing() -> None:
    fused = ranked(("a1", 0.9), ("a2", 0.85), ("a3", 0.8), ("b1", 0.5), ("a4", 0.4))
    sessions: dict[str, Session] = {
        k: ("g", "2023-05-01" if k[0] == "a" else "2023-05-02") for k in keys(fused)
    }
    out = diversify(fused, sessions, per_session=2, top=3)
    assert keys(out) == ["a1", "a2", "b1", "a3", "a4"]
    assert keys(diversify(fused, sessions, per_session=0, top=3)) == keys(fused)


def test_session_scoring_lifts_a_turn_whose_session_matches_well() -> None:
    # "quiet" is a short reply in a session whose other turns match strongly; "lone" matches
    # a little better on its own, in a session nothing else matches
    fused = ranked(("s1-best", 0.9), ("s1-next", 0.8), ("lone", 0.45), ("quiet", 0.4))
    sessions = {
        "s1-best": session_of("g", "2023-05-01T10:00:00+00:00"),
        "s1-next": session_of("g", "2023-05-01T10:01:00+00:00"),
        "quiet": session_of("g", "2023-05-01T10:02:00+00:00"),
        "lone": session_of("g", "2023-06-01T09:00:00+00:00"),
    }
    assert keys(score_sessions(fused, sessions, 0.0)) == keys(fused)
    assert keys(score_sessions(fused, sessions, 0.35)) == ["s1-best", "s1-next", "quiet", "lone"]


def test_a_session_is_a_group_and_a_utc_day() -> None:
    assert session_of("g", "2023-05-01T23:59:00+00:00") == ("g", "2023-05-01")
    assert day_of("2023-05-01T23:59:00+00:00") == date(2023, 5, 1)


def test_issue_31_a_speaker_is_what_comes_before_a_turns_first_colon() -> None:
    assert speaker_of("Emi: on Sundays I cook ramen") == "emi"
    assert speaker_of("Fahim Khan: hi") == "fahim khan"
    assert speaker_of("no speaker here") is None
    assert speaker_of("a long line that is not a name at all, only prose: then a colon") is None
    assert named_speakers("What are Emi's hobbies?", ["emi", "elise"]) == {"emi"}
    assert named_speakers("Where did Fahim go?", ["fahim khan", "akib"]) == {"fahim khan"}
