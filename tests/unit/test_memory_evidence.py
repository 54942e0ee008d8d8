"""The evidence rules of contradiction warnings (M-REC-113..128, 138, 160..169; M-STL-003..012)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lcg.domain.errors import InvalidParams
from lcg.domain.memory.evidence import (
    EDGE_MIN_AGE,
    STALE_PAGE_ROWS,
    Concept,
    ConceptId,
    Contradiction,
    InteractionId,
    RestsOn,
    StaleRow,
    Support,
    SupportKind,
    check_stale_offset,
    current_contradiction,
    current_contradictions,
    next_change,
    rests_on_contradicted,
    stale_page,
    stale_rows,
)

T0 = datetime(2026, 8, 10, 10, 0, 0, tzinfo=UTC)
HIT = ConceptId("f0000000-0000-4000-8000-000000000000")
C1 = ConceptId("8c41d0e2-0000-4000-8000-000000000000")
C2 = ConceptId("9d52e1f3-0000-4000-8000-000000000000")
D1 = ConceptId("4bf3835a-0000-4000-8000-000000000000")
D2 = ConceptId("5c04946b-0000-4000-8000-000000000000")


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def cid(n: int) -> ConceptId:
    return ConceptId(f"{n:08x}-0000-4000-8000-000000000000")


def concept(node_id: ConceptId = HIT, minute: float = 0, agent: str = "agent-a") -> Concept:
    return Concept(node_id, at(minute), at(minute), agent, InteractionId(f"write-of-{node_id}"))


def contradiction(
    minute: float,
    source: ConceptId = C1,
    *,
    target: ConceptId = HIT,
    agent: str = "agent-c",
    key: str | None = "account replac tabl user",
    about: datetime | None = None,
) -> Contradiction:
    written = at(minute)
    return Contradiction(target, source, key, agent, written, written if about is None else about)


def support(
    minute: float,
    dependent: ConceptId = D1,
    *,
    target: ConceptId = HIT,
    agent: str = "agent-b",
    kind: SupportKind = SupportKind.DEPENDS_ON,
    about: datetime | None = None,
    interaction: str | None = None,
    wrote_target: bool = False,
) -> Support:
    written = at(minute)
    return Support(
        target,
        dependent,
        kind,
        agent,
        written,
        written if about is None else about,
        InteractionId(interaction or f"write-at-{minute}-of-{dependent}"),
        wrote_target,
    )


def current(
    contradictions: list[Contradiction],
    evidence: list[Support],
    now: datetime,
    hit: Concept | None = None,
) -> Contradiction | None:
    return current_contradiction(hit or concept(), contradictions, evidence, now)


# --- when it fires ----------------------------------------------------------------------------


def test_m_rec_110_111_the_seeds_example_a_contradiction_with_no_support_is_current() -> None:
    edge = contradiction(28)
    found = current([edge], [], at(30))
    assert found == edge
    assert found.dated == datetime(2026, 8, 10, 10, 28, tzinfo=UTC)
    assert (found.agent_id, found.source) == ("agent-c", C1)


def test_m_rec_113_a_dependent_cited_before_the_contradiction_does_not_silence_it() -> None:
    assert current([contradiction(28)], [support(10)], at(30)) is not None


@pytest.mark.parametrize("kind", list(SupportKind))
def test_m_rec_113_a_newer_dependent_or_parent_of_child_outweighs_the_contradiction(
    kind: SupportKind,
) -> None:
    assert current([contradiction(28)], [support(29, kind=kind)], at(31)) is None


def test_m_rec_114_support_is_dated_by_the_write_that_declared_it_not_by_its_concept() -> None:
    # D1 is an old concept; the citation it gained at 10:29 is what is dated.
    old_concept_new_citation = support(29, D1)
    assert current([contradiction(28)], [old_concept_new_citation], at(31)) is None


def test_m_rec_115_support_counts_only_once_its_write_is_60_seconds_old() -> None:
    edge, piece = contradiction(28), support(29)
    assert timedelta(seconds=60) == EDGE_MIN_AGE
    assert current([edge], [piece], piece.written_at + timedelta(seconds=59.999)) == edge
    assert current([edge], [piece], piece.written_at + timedelta(seconds=60)) is None


def test_m_rec_115_the_age_floor_reads_the_write_time_whatever_the_event_time() -> None:
    # Written at 10:29 but dated 10:28:30 by its event_time: still young until 10:30.
    edge = contradiction(28)
    piece = support(29, about=at(28.5))
    assert current([edge], [piece], at(29.9)) == edge
    assert current([edge], [piece], at(30)) is None


def test_m_rec_115_the_age_floor_is_a_parameter() -> None:
    edge, piece = contradiction(28), support(29)
    hit = concept()
    assert current_contradiction(hit, [edge], [piece], at(29), min_age=timedelta(0)) is None
    assert current_contradiction(hit, [edge], [piece], at(31), timedelta(minutes=5)) == edge


def test_m_rec_116_a_concept_written_in_the_hits_own_write_never_counts() -> None:
    hit = concept(minute=30)
    edge = contradiction(40)
    same_write = support(50, interaction=f"write-of-{HIT}")
    assert current([edge], [same_write], at(60), hit) == edge


def test_m_rec_116_a_write_that_also_wrote_the_hit_again_does_not_count() -> None:
    edge = contradiction(28)
    resent_with_hit = support(29, wrote_target=True)
    assert current([edge], [resent_with_hit], at(40)) == edge


def test_m_rec_117_the_contradiction_must_be_strictly_newer_than_the_latest_support() -> None:
    edge = contradiction(28, about=at(20))
    same_date = support(29, about=at(20))
    assert current([edge], [same_date], at(40)) is None


def test_m_rec_118_the_contradiction_must_be_newer_than_the_hit_even_with_no_support() -> None:
    hit = concept(minute=30)
    assert current([contradiction(40, about=at(29))], [], at(50), hit) is None
    assert current([contradiction(40, about=at(30))], [], at(50), hit) is None
    assert current([contradiction(40, about=at(31))], [], at(50), hit) is not None


def test_m_rec_118_a_citation_backdated_before_the_hit_lets_no_earlier_contradiction_warn() -> None:
    hit = concept(minute=30)
    backdated_contradiction = contradiction(40, about=at(20))
    backdated_citation = support(41, about=at(10))
    assert current([backdated_contradiction], [backdated_citation], at(50), hit) is None


def test_m_rec_119_an_older_contradiction_outweighed_by_later_evidence_stays_quiet() -> None:
    assert current([contradiction(28)], [support(29), support(5, D2)], at(40)) is None


def test_m_rec_119_a_contradiction_newer_than_the_support_that_outweighed_an_older_one() -> None:
    older, newer = contradiction(28), contradiction(35, C2, agent="agent-d")
    assert current([older, newer], [support(29)], at(40)) == newer


# --- dates ------------------------------------------------------------------------------------


def test_m_rec_122_a_future_event_time_on_the_contradiction_counts_as_its_write_time() -> None:
    edge = contradiction(28, about=at(600))
    found = current([edge], [], at(30))
    assert found is not None
    assert found.dated == at(28)
    # Support at 10:29 outweighs it: the contradiction is not dated in the future.
    assert current([edge], [support(29)], at(31)) is None


def test_m_rec_122_a_future_event_time_on_support_counts_as_its_write_time() -> None:
    edge = contradiction(28)
    piece = support(20, about=at(600))
    assert piece.dated == at(20)
    assert current([edge], [piece], at(30)) == edge


def test_m_rec_122_dates_compare_across_offsets_in_utc() -> None:
    plus_two = timezone(timedelta(hours=2))
    edge = contradiction(28, about=datetime(2026, 8, 10, 12, 28, tzinfo=plus_two))
    assert edge.dated == at(28)
    assert edge.dated.tzinfo == UTC


def test_m_rec_123_a_historical_ingest_backdating_the_contradiction_reads_as_outweighed() -> None:
    citations = [support(10), support(11, D2)]
    backfilled = contradiction(60, about=at(5))
    assert current([backfilled], citations, at(70)) is None


def test_m_rec_124_sending_the_same_contradiction_again_does_not_re_date_it() -> None:
    first, again = contradiction(28), contradiction(50)
    assert current([first, again], [support(29)], at(60)) is None
    assert current([again, first], [support(29)], at(60)) is None


def test_m_rec_124_the_first_write_of_a_contradiction_gives_its_date_and_agent() -> None:
    first, again = contradiction(28), contradiction(50, agent="agent-z")
    assert current([again, first], [], at(60)) == first


def test_m_rec_125_a_re_sent_citation_reinforces_without_counting_as_new_evidence() -> None:
    edge = contradiction(28)
    first, resent = support(10), support(40)
    assert current([edge], [first, resent], at(60)) == edge
    assert current([edge], [resent, first], at(60)) == edge


def test_m_rec_125_only_a_new_dependence_outweighs_the_contradiction() -> None:
    edge = contradiction(28)
    resent = [support(10), support(40)]
    new_dependent = support(40, D2)
    new_child = support(40, D1, kind=SupportKind.PARENT_OF)
    assert current([edge], [*resent, new_dependent], at(60)) is None
    assert current([edge], [*resent, new_child], at(60)) is None


def test_m_rec_126_support_by_the_declaring_agent_does_not_silence_it() -> None:
    edge = contradiction(28, agent="agent-c")
    assert current([edge], [support(29, agent="agent-c")], at(40)) == edge
    assert current([edge], [support(29, agent="agent-b")], at(40)) is None


def test_m_rec_126_own_evidence_is_judged_per_contradiction() -> None:
    by_c = contradiction(28, C1, agent="agent-c")
    by_d = contradiction(27, C2, agent="agent-d")
    support_by_c = support(29, agent="agent-c")
    # agent-c's citation outweighs agent-d's contradiction but not agent-c's own.
    assert current([by_c, by_d], [support_by_c], at(40)) == by_c
    assert current([by_d], [support_by_c], at(40)) is None


def test_m_rec_127_support_by_the_contradicting_concept_itself_does_not_silence_it() -> None:
    edge = contradiction(28, C1)
    assert current([edge], [support(29, C1, agent="agent-b")], at(40)) == edge


def test_m_rec_120_the_rule_reads_no_status() -> None:
    # Any hit can be flagged: nothing about status reaches the rule.
    assert set(Concept.__dataclass_fields__) == {
        "node_id",
        "written_at",
        "about_time",
        "agent_id",
        "interaction",
    }


# --- one per hit ------------------------------------------------------------------------------


def test_m_rec_128_several_contradictions_show_the_newest() -> None:
    older = contradiction(20, C1, key="a")
    newer = contradiction(25, C2, key="z")
    assert current([older, newer], [], at(30)) == newer


def test_m_rec_128_a_tie_is_broken_by_the_canonical_key_then_the_id() -> None:
    by_key_b = contradiction(28, cid(1), key="b")
    by_key_a = contradiction(28, cid(2), key="a")
    assert current([by_key_b, by_key_a], [], at(30)) == by_key_a
    same_key_low, same_key_high = contradiction(28, cid(3), key="a"), by_key_a
    assert current([same_key_high, same_key_low], [], at(30)) == by_key_a
    assert current([same_key_low, same_key_high], [], at(30)) == by_key_a


def test_m_rec_128_a_concept_without_a_canonical_key_comes_after_every_key() -> None:
    keyless = contradiction(28, cid(1), key=None)
    keyed = contradiction(28, cid(9), key="zzz")
    assert current([keyless, keyed], [], at(30)) == keyed


def test_m_rec_128_an_outweighed_newer_contradiction_leaves_the_older_one_shown() -> None:
    # The newer one is agent-b's; agent-c's aged support outweighs it but not agent-c's own.
    older = contradiction(20, C1, agent="agent-c")
    newer = contradiction(25, C2, agent="agent-b")
    assert current([older, newer], [support(26, agent="agent-c")], at(30)) == older


# --- it lapses by itself ----------------------------------------------------------------------


def test_m_rec_138_the_warning_lapses_once_newer_support_ages_in() -> None:
    edge, piece = contradiction(28), support(29)
    assert current([edge], [piece], at(29)) == edge
    assert current([edge], [piece], at(29) + timedelta(seconds=30)) == edge
    assert current([edge], [piece], at(30) + timedelta(seconds=1)) is None


def test_m_rec_138_the_warning_lapses_once_the_contradicting_concept_is_removed() -> None:
    # Removed concepts are no longer loaded: the rule sees no contradiction.
    assert current([], [support(10)], at(30)) is None


def test_records_written_after_now_have_not_happened_yet() -> None:
    assert current([contradiction(28)], [], at(27)) is None


def test_records_about_other_concepts_are_ignored() -> None:
    elsewhere = contradiction(28, target=D2)
    assert current([elsewhere], [], at(30)) is None
    edge = contradiction(28)
    assert current([edge], [support(29, target=D2)], at(40)) == edge


def test_a_naive_clock_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        current([], [], datetime(2026, 8, 10, 10, 30))


def test_current_contradictions_answers_many_concepts_at_once() -> None:
    other = cid(7)
    edges = [contradiction(28), contradiction(28, C2, target=other)]
    found = current_contradictions(
        [concept(), concept(other)], edges, [support(29, target=other)], at(40)
    )
    assert found == {HIT: edges[0]}


# --- rests on a contradicted concept ----------------------------------------------------------


def _rests(
    cited: list[Concept],
    edges: list[Contradiction],
    evidence: list[Support],
    now: datetime,
    hit: ConceptId = D1,
) -> tuple[list[RestsOn], int]:
    lines = rests_on_contradicted(hit, cited, edges, evidence, now)
    return list(lines.shown), lines.more


def test_m_rec_160_a_hit_citing_a_contradicted_concept_names_it_and_its_contradiction() -> None:
    edge = contradiction(28)
    assert _rests([concept()], [edge], [support(10)], at(30)) == ([RestsOn(HIT, edge)], 0)


def test_m_rec_160_the_cited_concept_is_contradicted_by_exactly_the_warnings_rule() -> None:
    outweighed = contradiction(28)
    assert _rests([concept()], [outweighed], [support(29, D2)], at(31)) == ([], 0)


def test_m_rec_162_a_chain_does_not_count() -> None:
    # The hit cites B; B cites the contradicted concept. Only B is the hit's to check.
    b = cid(0xB)
    edges = [contradiction(28)]
    chain = [support(10, b), support(10, D1, target=b)]
    assert _rests([concept(b)], edges, chain, at(30)) == ([], 0)


def test_m_rec_163_no_line_for_a_concept_the_hit_contradicts_itself() -> None:
    by_hit = contradiction(28, D1, agent="agent-b")
    by_other = contradiction(29, C2, agent="agent-d")
    assert _rests([concept()], [by_hit, by_other], [support(10)], at(30)) == ([], 0)


def test_m_rec_166_167_three_lines_in_the_order_of_the_cited_ids_then_the_count() -> None:
    cited = [concept(cid(n)) for n in (5, 1, 4, 2, 3)]
    edges = [contradiction(28, C1, target=c.node_id) for c in cited]
    shown, more = _rests(cited, edges, [], at(30))
    assert [line.cited for line in shown] == [cid(1), cid(2), cid(3)]
    assert more == 2


def test_m_rec_167_a_hit_citing_three_contradicted_concepts_has_no_count() -> None:
    cited = [concept(cid(n)) for n in (1, 2, 3)]
    edges = [contradiction(28, C1, target=c.node_id) for c in cited]
    assert _rests(cited, edges, [], at(30))[1] == 0


def test_m_rec_169_the_line_goes_once_a_new_citation_ages_in() -> None:
    edge = contradiction(28)
    # The hit's own citation, written after the contradiction, is support of the cited concept.
    own_citation = support(29, D1)
    assert _rests([concept()], [edge], [own_citation], at(29.5)) == ([RestsOn(HIT, edge)], 0)
    assert _rests([concept()], [edge], [own_citation], at(30)) == ([], 0)


# --- lambo_stale ------------------------------------------------------------------------------


def test_m_stl_003_004_rows_are_the_direct_dependents_of_a_contradicted_concept() -> None:
    edge = contradiction(28)
    rows = stale_rows([concept()], [edge], [support(10, D2), support(11, D1)], at(30))
    assert rows == (StaleRow(D1, HIT, edge), StaleRow(D2, HIT, edge))


def test_m_stl_009_rows_follow_the_warnings_rule_clock_and_age_floor() -> None:
    edge = contradiction(28)
    newer = support(29, D2)
    young = stale_rows([concept()], [edge], [support(10), newer], at(29.5))
    assert [row.dependent for row in young] == [D1, D2]
    assert stale_rows([concept()], [edge], [support(10), newer], at(30)) == ()


def test_m_stl_009_support_by_the_declaring_agent_leaves_the_rows() -> None:
    edge = contradiction(28, agent="agent-c")
    rows = stale_rows([concept()], [edge], [support(10), support(29, D2, agent="agent-c")], at(40))
    assert [row.dependent for row in rows] == [D1, D2]


def test_m_stl_010_a_dependent_that_contradicts_the_cited_concept_is_excluded() -> None:
    edge = contradiction(28, C1)
    own_citation_by_contradictor = support(10, C1)
    rows = stale_rows([concept()], [edge], [own_citation_by_contradictor, support(11)], at(30))
    assert [row.dependent for row in rows] == [D1]


def test_m_stl_011_indirect_dependents_and_parent_of_children_are_not_rows() -> None:
    edge = contradiction(28)
    child = support(10, D2, kind=SupportKind.PARENT_OF)
    indirect = support(10, cid(9), target=D1)
    rows = stale_rows([concept(), concept(D1)], [edge], [support(10), child, indirect], at(30))
    assert rows == (StaleRow(D1, HIT, edge),)


def test_m_stl_012_new_support_ends_the_rows() -> None:
    edge = contradiction(28)
    assert stale_rows([concept()], [edge], [support(10), support(29, D2)], at(31)) == ()


def test_m_stl_oq_18_rows_are_ordered_by_cited_id_then_dependent_id() -> None:
    first, second = cid(1), cid(2)
    edges = [contradiction(28, C1, target=second), contradiction(28, C2, target=first)]
    evidence = [
        support(10, D2, target=second),
        support(10, D1, target=second),
        support(10, D2, target=first),
    ]
    rows = stale_rows([concept(second), concept(first)], edges, evidence, at(30))
    assert [(r.cited, r.dependent) for r in rows] == [(first, D2), (second, D1), (second, D2)]


def test_m_stl_014_targets_keep_only_the_affected_cited_concepts() -> None:
    other = cid(7)
    edges = [contradiction(28), contradiction(28, target=other)]
    evidence = [support(10), support(10, target=other)]
    rows = stale_rows([concept(), concept(other)], edges, evidence, at(30), targets=[other])
    assert [row.cited for row in rows] == [other]


def test_m_stl_005_006_007_pages_of_50_with_the_total() -> None:
    """Also M-LIM-034."""
    edge = contradiction(28)
    evidence = [support(10, cid(n)) for n in range(1, 121)]
    rows = stale_rows([concept()], [edge], evidence, at(30))
    assert STALE_PAGE_ROWS == 50
    first, third = stale_page(rows), stale_page(rows, 100)
    assert (len(first.rows), first.total, first.offset) == (50, 120, 0)
    assert first.rows[0].dependent == cid(1)
    assert (len(third.rows), third.rows[0].dependent) == (20, cid(101))
    assert stale_page(rows, 500).rows == ()
    assert stale_page(rows, 500).total == 120


def test_m_stl_007_oq_18_offset_defaults_to_0_and_a_negative_one_is_refused() -> None:
    assert check_stale_offset(None) == 0
    with pytest.raises(InvalidParams) as refused:
        check_stale_offset(-1)
    assert refused.value.field == "offset"


# --- properties -------------------------------------------------------------------------------

minutes = st.integers(min_value=0, max_value=120)
agents = st.sampled_from(["agent-a", "agent-b", "agent-c", "agent-d"])
sources = st.sampled_from([C1, C2, cid(3)])
dependents = st.sampled_from([D1, D2, cid(4), cid(5)])


@st.composite
def contradictions(draw: st.DrawFn) -> Contradiction:
    written = draw(minutes)
    about = draw(st.integers(min_value=-30, max_value=130))
    return contradiction(
        written,
        draw(sources),
        agent=draw(agents),
        key=draw(st.sampled_from([None, "a", "b"])),
        about=at(about),
    )


@st.composite
def supports(draw: st.DrawFn) -> Support:
    written = draw(minutes)
    about = draw(st.integers(min_value=-30, max_value=130))
    return support(
        written,
        draw(dependents),
        agent=draw(agents),
        kind=draw(st.sampled_from(list(SupportKind))),
        about=at(about),
    )


edges_lists = st.lists(contradictions(), max_size=5)
support_lists = st.lists(supports(), max_size=6)
NOW = at(200)


@given(edges_lists, support_lists, st.randoms(use_true_random=False))
def test_property_the_answer_ignores_the_order_of_the_records(
    edges: list[Contradiction], evidence: list[Support], shuffle: random.Random
) -> None:
    expected = current(edges, evidence, NOW)
    edges2, evidence2 = list(edges), list(evidence)
    shuffle.shuffle(edges2)
    shuffle.shuffle(evidence2)
    assert current(edges2, evidence2, NOW) == expected


@given(edges_lists, support_lists, supports())
def test_property_support_dated_before_the_contradiction_never_silences_it(
    edges: list[Contradiction], evidence: list[Support], extra: Support
) -> None:
    if (extra.kind, extra.concept) in {(p.kind, p.concept) for p in evidence}:
        return  # an earlier write of a known dependence is its first write, not new support
    found = current(edges, evidence, NOW)
    if found is None or extra.dated >= found.dated:
        return
    # Old support cannot outweigh this one; it stays current (or a newer one is shown).
    after = current(edges, [*evidence, extra], NOW)
    assert after is not None
    assert after.dated >= found.dated


@given(edges_lists, support_lists, st.integers(min_value=0, max_value=300))
def test_property_a_lapsed_warning_never_comes_back_as_the_clock_advances(
    edges: list[Contradiction], evidence: list[Support], later: int
) -> None:
    # Every record is written by minute 120, so advancing the clock only ages support in.
    if current(edges, evidence, at(121)) is None:
        assert current(edges, evidence, at(121 + later)) is None


@given(edges_lists, support_lists, contradictions())
def test_property_adding_a_contradiction_never_silences_the_warning(
    edges: list[Contradiction], evidence: list[Support], extra: Contradiction
) -> None:
    if extra.source in {e.source for e in edges}:
        return  # an earlier write of a known edge is that edge's first write, not a new one
    if current(edges, evidence, NOW) is not None:
        assert current([*edges, extra], evidence, NOW) is not None


@given(contradictions(), st.lists(supports(), max_size=6, unique_by=lambda p: (p.kind, p.concept)))
def test_property_the_declaring_agents_own_support_never_matters(
    edge: Contradiction, evidence: list[Support]
) -> None:
    others = [p for p in evidence if p.agent_id != edge.agent_id]
    assert current([edge], evidence, NOW) == current([edge], others, NOW)


@given(edges_lists, support_lists, st.integers(min_value=1, max_value=60))
def test_property_re_sending_any_record_later_changes_nothing(
    edges: list[Contradiction], evidence: list[Support], delay: int
) -> None:
    expected = current(edges, evidence, NOW)
    later = timedelta(minutes=delay)
    resent_edges = [
        Contradiction(e.target, e.source, e.source_key, "agent-z", e.written_at + later, NOW)
        for e in edges
    ]
    resent_support = [
        Support(p.target, p.concept, p.kind, "agent-z", p.written_at + later, NOW, p.interaction)
        for p in evidence
    ]
    assert current([*resent_edges, *edges], [*evidence, *resent_support], NOW) == expected


@given(edges_lists, support_lists)
def test_property_stale_rows_exist_only_for_a_contradicted_concept(
    edges: list[Contradiction], evidence: list[Support]
) -> None:
    rows = stale_rows([concept()], edges, evidence, NOW)
    found = current(edges, evidence, NOW)
    assert all(row.contradiction == found for row in rows)
    if found is None:
        assert rows == ()


@given(
    edges_lists,
    support_lists,
    st.integers(min_value=-10, max_value=200),
    st.integers(min_value=0, max_value=300),
)
def test_the_answer_holds_from_now_until_next_change(
    edges: list[Contradiction], pieces: list[Support], start: int, step: int
) -> None:
    concepts = [concept(), concept(C1), concept(C2)]
    now = at(start)
    until = next_change(edges, pieces, now)
    later = now + timedelta(minutes=step)
    answer = current_contradictions(concepts, edges, pieces, now)
    if until is None or later < until:
        assert current_contradictions(concepts, edges, pieces, later) == answer
    else:
        assert until > now
