"""Layered sessions: a contradiction inside a layer, in a merged recall (seed 001 "Contradiction
warnings", its "Layered sessions" paragraph; ADR 0105). A real workspace opened by
`Service.start`, `lambo` layered over `general`, calls as a serve makes them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.service import Service
from tests.integration.test_memory_layers import applied, derive, tool
from tests.integration.test_memory_layers_order import open_service

RULING = "the billing ledger is kept in postgres"
CORRECTION = "we migrated everything to mongodb last spring"
NEAR = (  # general's concepts the query ranks above the correction
    "the billing ledger exports a monthly csv report",
    "postgres replicas serve the billing ledger reads",
    "billing ledger backups run nightly at two",
    "the billing ledger is audited each quarter",
    "the billing ledger archive moves to cold storage yearly",
    "invoices post to the billing ledger in postgres",
)
QUERY = "billing ledger postgres"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    served = open_service(tmp_path)
    try:
        yield served
    finally:
        served.close()


def _hits(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [(h.get("session", ""), h["content"]) for h in answer["structuredContent"]["hits"]]


def test_m_rec_149_a_layers_contradicting_concept_needs_its_own_relevance_in_a_merged_recall(
    service: Service,
) -> None:
    """In general, the correction contradicts the ruling, and six concepts the query matches
    rank above the correction, so it is past what general's recall reads for top_k 1 (its
    floor). Read alone, general shows the ruling with the correction beside it (never alone);
    in the merged recall the ruling still needs, and has, its own relevance, but the floored
    correction gets no block: the ruling's line, which starts with the layer's name, still
    names it by id. (lambo holds nothing, so the ruling takes the merged slot.)"""
    applied(service, derive(service, RULING, "general"))
    applied(service, derive(service, CORRECTION, "general", against=[RULING]))
    for text in NEAR:
        applied(service, derive(service, text, "general"))

    alone = tool(service, "lambo_recall", query=QUERY, top_k=1, scope="general")
    assert [content for _, content in _hits(alone)] == [RULING, CORRECTION]
    correction = alone["structuredContent"]["hits"][1]["node_id"]
    assert alone["structuredContent"]["hits"][1]["companion_of"]  # beside it, not by rank

    merged = tool(service, "lambo_recall", query=QUERY, top_k=1)
    hits = _hits(merged)
    assert ("general", RULING) in hits
    assert ("general", CORRECTION) not in hits
    (line,) = [
        line
        for line in merged["structuredContent"]["warnings"]
        if line.startswith("[general] ⚠ Contradicted")
    ]
    assert f"(id {correction[:8]})" in line
    assert CORRECTION[:40] in line
    assert line in merged["text"]  # on the ruling's block too


def test_m_rec_149_a_contradicting_concept_with_its_own_relevance_stays_beside_its_hit(
    service: Service,
) -> None:
    """The same layer without the concepts that outrank the correction: the correction is
    within general's floor by its own relevance, so the merged recall keeps it beside the
    ruling, with its Contradicts line."""
    applied(service, derive(service, RULING, "general"))
    applied(service, derive(service, CORRECTION, "general", against=[RULING]))
    merged = tool(service, "lambo_recall", query=QUERY, top_k=1)
    hits = _hits(merged)
    assert hits.index(("general", CORRECTION)) == hits.index(("general", RULING)) + 1
    assert f'[general] ⚠ Contradicts "{RULING}"' in merged["text"]
