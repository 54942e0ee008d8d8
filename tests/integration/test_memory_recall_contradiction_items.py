"""lambo_recall's contradiction companions (seed 001, M-REC-133..135/143) on a real workspace
through the one dispatch: how many are added, which carry `companion_of`, and that the hits
carry no annotation of their own."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.integration.test_memory_writes import AGENT, call, concept, derive, node_by_content
from tests.integration.test_memory_writes import settled as applied

POSTGRES = "the billing service stores invoices in postgres"
RETRIES = "the billing service retries webhooks twice"
LEDGER = "ledger moved to cockroach last spring"
LEDGER_AGAIN = "ledger moved to cockroach in march"
FIVE = "retries were raised to five"


def _contradict(app: App, text: str, ruling: str) -> None:
    applied(app, derive(app, concept(text, "observation", against=[ruling]), agent="agent-c"))


def _recall(app: App, query: str, top_k: int) -> dict[str, Any]:
    result: dict[str, Any] = call(
        app, "lambo_recall", agent_id=AGENT, query=query, top_k=top_k, traversal_depth=0
    )
    return result


@pytest.fixture
def contradicted(app: App) -> None:
    """Two rulings, the first contradicted twice, the second once; a note nothing asks about."""
    applied(app, derive(app, concept(POSTGRES, "entity"), concept(RETRIES, "entity")))
    _contradict(app, LEDGER, POSTGRES)
    _contradict(app, LEDGER_AGAIN, POSTGRES)
    _contradict(app, FIVE, RETRIES)
    applied(app, derive(app, concept("lunch is at noon on fridays", "observation")))


@pytest.mark.usefixtures("contradicted")
def test_m_rec_133_134_one_companion_per_contradicted_hit_up_to_twice_top_k(
    app: App, workspace: Workspace
) -> None:
    """Both top_k = 2 hits are contradicted: each brings one companion (the newest of the
    first's two contradictions), four hits in all; each companion names its hit."""
    hits = _recall(app, "billing service", top_k=2)["structuredContent"]["hits"]
    assert {hit["content"] for hit in hits} == {POSTGRES, RETRIES, LEDGER_AGAIN, FIVE}
    assert len(hits) == 2 * 2
    uuid = {text: node_by_content(workspace, text).uuid for text in (POSTGRES, RETRIES)}
    companions = {hit["content"]: hit["companion_of"] for hit in hits if "companion_of" in hit}
    assert companions == {LEDGER_AGAIN: [uuid[POSTGRES]], FIVE: [uuid[RETRIES]]}


@pytest.mark.usefixtures("contradicted")
def test_m_rec_135_a_contradicting_concept_that_ranked_in_shows_the_line_without_the_key(
    app: App, workspace: Workspace
) -> None:
    result = _recall(app, "billing service retries webhooks raised to five", top_k=2)
    hits = result["structuredContent"]["hits"]
    assert {hit["content"] for hit in hits} == {RETRIES, FIVE}  # no companion past top_k
    (five,) = [hit for hit in hits if hit["content"] == FIVE]
    assert "companion_of" not in five
    retries = node_by_content(workspace, RETRIES)
    line = f'⚠ Contradicts "{RETRIES}" (id {retries.uuid[:8]})'
    assert line in str(result["text"]).split("\n")


@pytest.mark.usefixtures("contradicted")
def test_m_rec_143_hits_carry_no_annotation_the_lines_are_in_warnings_and_context(
    app: App,
) -> None:
    result = _recall(app, "billing service", top_k=2)
    content = result["structuredContent"]
    lines = [line for line in str(result["text"]).split("\n") if line.startswith("⚠")]
    assert len(lines) == 4  # two Contradicted lines, two Contradicts lines
    assert set(lines) <= set(content["warnings"])
    for hit in content["hits"]:
        assert "annotations" not in hit
        assert not any("⚠" in str(value) for value in hit.values())
