"""[retrieval] budget_pack (issue 31 "rank for the budget", ADR 0103): the rank order that lets
more whole blocks into max_tokens, rendered by the seed's rules (M-REC-056, 060, 061)."""

from __future__ import annotations

import random

from lcg.domain.memory.context import (
    HitView,
    budget_order,
    contradicts_line,
    estimate_tokens,
    pack_for_budget,
    render_block,
    render_context,
)


def _node(n: int) -> str:
    return f"{n:08x}-0000-4000-8000-000000000000"


def _hit(n: int, content: str, score: float, **fields: object) -> HitView:
    return HitView(_node(n), content, "Observation", score, **fields)  # type: ignore[arg-type]


EVIDENCE_A = _hit(1, "Emi: I adopted a cat named Miso in May", 0.9)
LONG = _hit(2, "Elise: " + "we talked about the weather and the trains again " * 12, 0.8)
EVIDENCE_B = _hit(3, "Emi: Miso sleeps on the piano", 0.7)
EVIDENCE_C = _hit(4, "Elise: the cat came from the shelter", 0.6)


def _budget(*hits: HitView) -> int:
    """The tokens of exactly these blocks together."""
    return estimate_tokens(render_context(hits, 100_000).text)


def test_issue_31_budget_pack_a_long_hit_no_longer_crowds_out_two_short_evidence_hits() -> None:
    hits = [EVIDENCE_A, LONG, EVIDENCE_B, EVIDENCE_C]
    budget = _budget(EVIDENCE_A, EVIDENCE_B, EVIDENCE_C)
    assert render_context(hits, budget).included == (EVIDENCE_A.node_id,)  # off: stops at LONG
    packed = pack_for_budget(hits, budget)
    assert packed == [EVIDENCE_A, EVIDENCE_B, EVIDENCE_C, LONG]  # LONG moved, kept in hits
    rendered = render_context(packed, budget)
    assert rendered.included == (EVIDENCE_A.node_id, EVIDENCE_B.node_id, EVIDENCE_C.node_id)
    assert rendered.truncated is None
    assert estimate_tokens(rendered.text) <= budget


def test_issue_31_budget_pack_changes_nothing_when_every_block_fits() -> None:
    hits = [EVIDENCE_A, LONG, EVIDENCE_B]
    assert budget_order(hits, _budget(*hits)) == [0, 1, 2]
    assert budget_order(hits, 100_000) == [0, 1, 2]


def test_m_rec_063_budget_pack_keeps_a_top_hit_over_the_budget_first_and_cut() -> None:
    """The top block alone over the budget: the order is kept and that block is cut, nothing
    after it, as without the stage (M-REC-063, M-REC-070), even when later blocks would fit."""
    for hits in ([LONG, _hit(5, "x" * 900, 0.5)], [LONG, EVIDENCE_B, EVIDENCE_C]):
        budget = min(estimate_tokens(render_block(LONG)) - 20, _budget(*hits[1:]))
        assert pack_for_budget(hits, budget) == hits
        rendered = render_context(pack_for_budget(hits, budget), budget)
        assert rendered.truncated == LONG.node_id
        assert rendered.included == (LONG.node_id,)


def test_m_rec_057_budget_pack_moves_a_companion_with_the_hit_it_stands_beside() -> None:
    """A contradicting concept kept only to stand beside a hit stays right after it: the two
    fit together or stop the packing together (their blocks carry lines)."""
    contradicted = _hit(8, "Emi: Miso is a dog", 0.75, warning_lines=("⚠ Contradicted ...",))
    line = contradicts_line(contradicted.content, contradicted.node_id)
    companion = _hit(6, "Elise: Miso is a cat", 0.0, warning_lines=(line,))
    hits = [EVIDENCE_A, LONG, contradicted, companion, EVIDENCE_B]
    beside = frozenset({companion.node_id})
    budget = _budget(EVIDENCE_A, contradicted, companion, EVIDENCE_B)
    packed = pack_for_budget(hits, budget, followers=beside)
    assert packed == [EVIDENCE_A, contradicted, companion, EVIDENCE_B, LONG]
    # the hit fits without its companion, not with it: neither moves ahead of LONG
    budget = _budget(EVIDENCE_A, contradicted, EVIDENCE_B)
    assert pack_for_budget(hits, budget, followers=beside) == hits


def test_m_rec_172_budget_pack_leaves_a_block_with_a_warning_line_in_its_place() -> None:
    """A hit whose block carries a line and does not fit stops the packing: it and what
    follows keep their order (the line is in warnings either way)."""
    warned = _hit(7, "Elise: the cat is allergic to fish " * 6, 0.8, warning_lines=("⚠ x",))
    hits = [EVIDENCE_A, warned, EVIDENCE_B, LONG, EVIDENCE_C]
    budget = _budget(EVIDENCE_A, EVIDENCE_B, EVIDENCE_C)
    assert pack_for_budget(hits, budget) == hits
    # moved before it: a unit without lines that did not fit
    hits = [EVIDENCE_A, LONG, EVIDENCE_B, warned, EVIDENCE_C]
    assert pack_for_budget(hits, budget) == [EVIDENCE_A, EVIDENCE_B, LONG, warned, EVIDENCE_C]


def test_m_rec_060_budget_pack_counts_a_header_like_a_block() -> None:
    header = "Answered by graph traversal: 3 concepts depend on something long enough."
    hits = [EVIDENCE_A, LONG, EVIDENCE_B]
    budget = estimate_tokens(render_context([EVIDENCE_A, EVIDENCE_B], 100_000, header=header).text)
    packed = pack_for_budget(hits, budget, header=header)
    assert packed == [EVIDENCE_A, EVIDENCE_B, LONG]
    assert render_context(packed, budget, header=header).included == (
        EVIDENCE_A.node_id,
        EVIDENCE_B.node_id,
    )
    assert pack_for_budget(hits, budget - 1, header=header) == [EVIDENCE_A, LONG, EVIDENCE_B]


def test_m_rec_056_budget_pack_renders_a_prefix_of_its_order_never_fewer_blocks() -> None:
    """On random hits and budgets: the context holds whole blocks of the packed order from
    its start, exactly the units that packing fitted, never fewer than without it, and stays
    within the budget; the hits are the same hits."""
    chance = random.Random(31)
    for _ in range(300):
        hits = [
            _hit(n, "w" * chance.choice((10, 30, 80, 300, 900)), 1.0 - n / 100)
            for n in range(1, chance.randint(2, 10))
        ]
        budget = chance.randint(25, 600)
        packed = pack_for_budget(hits, budget)
        assert sorted(h.node_id for h in packed) == sorted(h.node_id for h in hits)
        before = render_context(hits, budget)
        after = render_context(packed, budget)
        assert after.included == tuple(h.node_id for h in packed[: len(after.included)])
        assert estimate_tokens(after.text) <= budget
        if before.truncated is None:
            assert len(after.included) >= len(before.included)
        if after.truncated is None and len(after.included) < len(packed):
            rest = packed[len(after.included) :]
            fits = [
                h for h in rest if estimate_tokens(after.text + "\n\n" + render_block(h)) <= budget
            ]
            assert fits == []  # nothing left out would still have fitted
