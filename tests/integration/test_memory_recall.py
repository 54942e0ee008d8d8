"""lambo_recall on a real workspace (issue 12, seed 001 M-REC): the context block, its hits,
dependency questions, contradiction and rests-on warnings, budgets and refusals."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory.context import BLOCK_SEPARATOR, estimate_tokens
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.conftest import SteppingClock
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

RULING = "user schema owns the users table"
CITING = "logins read the users table"
CORRECTION = "accounts replaced the users table"


@pytest.fixture
def story(app: App) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept(CITING, depends_on=[RULING])))
    settled(app, derive(app, concept(CORRECTION, "observation", against=[RULING]), agent="agent-c"))


def _recall(app: App, query: str, **extra: object) -> dict[str, Any]:
    result: dict[str, Any] = call(app, "lambo_recall", agent_id=AGENT, query=query, **extra)
    return result


@pytest.mark.usefixtures("story")
def test_m_rec_040_041_042_044_the_context_is_the_first_text_and_hits_carry_the_keys(
    app: App, workspace: Workspace
) -> None:
    result = _recall(app, "users table")
    content = result["structuredContent"]
    assert isinstance(content, dict)
    assert result["text"] == content["context"]
    hits = content["hits"]
    assert {h["content"] for h in hits} == {RULING, CITING, CORRECTION}
    ruling = node_by_content(workspace, RULING)
    (hit,) = [h for h in hits if h["node_id"] == ruling.uuid]
    assert hit["concept_type"] == "Entity"
    assert hit["is_canonical"] is False
    assert hit["blast_radius"] is None
    label = f"{RULING} [Entity] (score {hit['score']:.2f}, id {ruling.uuid[:8]})"
    assert label in str(result["text"]).split("\n")


@pytest.mark.usefixtures("story")
def test_m_rec_110_111_112_160_contradiction_lines_and_the_concept_beside_it(
    app: App, workspace: Workspace
) -> None:
    """Also M-REC-052/137/175: the Contradicted, Contradicts and Rests-on lines are in the
    context and in `warnings`."""
    ruling = node_by_content(workspace, RULING)
    correction = node_by_content(workspace, CORRECTION)
    result = _recall(app, "users table")
    lines = str(result["text"]).split("\n")
    contradicted = [line for line in lines if line.startswith("⚠ Contradicted at ")]
    assert contradicted == [
        f'⚠ Contradicted at {correction.about_time[:19]}Z by agent-c: "{CORRECTION}"'
        f" (id {correction.uuid[:8]})"
    ]
    assert f'⚠ Contradicts "{RULING}" (id {ruling.uuid[:8]})' in lines
    rests = f'⚠ Rests on a contradicted concept: "{RULING}" (id {ruling.uuid[:8]})'
    assert any(line.startswith(rests) for line in lines)
    warnings = result["structuredContent"]["warnings"]
    assert contradicted[0] in warnings
    assert f'⚠ Contradicts "{RULING}" (id {ruling.uuid[:8]})' in warnings
    assert any(warning.startswith(rests) for warning in warnings)


@pytest.mark.usefixtures("story")
def test_m_rec_130_a_contradicted_hit_brings_its_contradiction_past_top_k(
    app: App, workspace: Workspace
) -> None:
    result = _recall(app, "who owns the users table schema", top_k=1, traversal_depth=0)
    hits = result["structuredContent"]["hits"]
    if hits[0]["content"] == RULING:
        assert [h["content"] for h in hits] == [RULING, CORRECTION]
        assert hits[1]["companion_of"] == [node_by_content(workspace, RULING).uuid]
    else:  # the correction ranked first by itself: nothing is added past top_k
        assert len(hits) == 1


@pytest.mark.usefixtures("story")
def test_m_rec_080_082_a_dependency_question_is_answered_by_traversal(
    app: App, workspace: Workspace
) -> None:
    """Also M-REC-099/174: the traversal answer (its hit rests on a contradicted concept)
    carries no contradiction, conflict or rests-on line."""
    ruling = node_by_content(workspace, RULING)
    result = _recall(app, f"what depends on {RULING}?")
    assert str(result["text"]).startswith(
        f'Answered by graph traversal: 1 concept depends on "{RULING}" (id {ruling.uuid[:8]}).'
    )
    hits = result["structuredContent"]["hits"]
    assert [h["content"] for h in hits] == [CITING]
    assert "⚠" not in str(result["text"])  # no warnings on traversal answers (M-REC-150)


@pytest.mark.usefixtures("story")
def test_m_rec_060_062_whole_blocks_within_the_budget(app: App) -> None:
    """Also M-REC-051: with one block in the budget, `hits` still carries every hit, each with
    its full content."""
    full = _recall(app, "users table")
    blocks = str(full["text"]).split("\n\n")
    one = str(full["text"]).split("\n\n")[0]
    budget = math.ceil(len(one.encode()) / 3.5)
    small = _recall(app, "users table", max_tokens=budget)
    assert small["text"] == one
    assert len(blocks) > 1
    assert len(small["structuredContent"]["hits"]) == len(
        full["structuredContent"]["hits"]
    )  # M-REC-051: every hit, whether or not its block fit
    assert [h["content"] for h in small["structuredContent"]["hits"]] == [
        h["content"] for h in full["structuredContent"]["hits"]
    ]


def test_m_rec_064_065_a_first_block_over_budget_is_cut_with_the_marker(app: App) -> None:
    long = "the build cache " + "keeps artifacts for reuse " * 60
    settled(app, derive(app, concept(long.strip())))
    result = _recall(app, "build cache artifacts", max_tokens=40)
    text = str(result["text"])
    assert "…" in text
    assert text.rsplit("\n", maxsplit=1)[-1].startswith("[truncated: ")
    assert text.rsplit("\n", maxsplit=1)[-1].endswith(" for the full concept]")
    assert math.ceil(len(text.encode()) / 3.5) <= 40
    (hit,) = [h for h in result["structuredContent"]["hits"] if h.get("truncated_in_context")]
    assert hit["content"] == long.strip()
    assert _recall(app, "build cache artifacts", max_tokens=10)["text"] == ""


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": "x", "top_k": 0}, "top_k"),
        ({"query": "x", "top_k": 101}, "top_k"),
        ({"query": "x", "max_tokens": 0}, "max_tokens"),
        ({"query": "x", "traversal_depth": 6}, "traversal_depth"),
        ({"query": "   "}, "query"),
        ({"query": "x", "image": {"mime": "image/png", "data": "AA=="}}, "image"),
        ({"query": "x", "query_vector": {"values": [1.0], "contract": {}}}, "query_vector"),
        ({"query": "x", "scope": "elsewhere"}, "scope"),
        ({"query": "x\u0000"}, "query"),
    ],
)
def test_m_rec_001_010_arguments_are_refused_by_name(
    app: App, params: dict[str, object], field: str
) -> None:
    with pytest.raises(DomainError) as error:
        call(app, "lambo_recall", agent_id=AGENT, **params)
    assert error.value.field is not None
    assert error.value.field.startswith(field)


def test_m_rec_033_recall_leaves_access_counts_behind(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("a fact worth recalling")))
    _recall(app, "fact worth recalling")
    workspace.memory.flush_accesses(min_age=0.0)
    (count,) = (
        workspace.reader()
        .execute(
            "SELECT access_count FROM memory_nodes WHERE content='a fact worth recalling'"
            " AND node_kind='concept'"
        )
        .fetchone()
    )
    assert count == 1


def test_m_rec_113_115_125_126_a_contradiction_lapses_once_newer_support_ages_in(
    app: App, workspace: Workspace
) -> None:
    """Support newer than the contradiction counts once it is 60 s old (the clock is moved),
    and support written by the agent that declared the contradiction never counts."""
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept(CORRECTION, "observation", against=[RULING]), agent="agent-c"))

    def contradicted() -> bool:
        return any(
            line.startswith("⚠ Contradicted at ")
            for line in str(_recall(app, "users table")["text"]).split("\n")
        )

    assert contradicted()
    settled(
        app, derive(app, concept("agent-c cites it anyway", depends_on=[RULING]), agent="agent-c")
    )
    clock = workspace.clock
    assert isinstance(clock, SteppingClock)
    clock.now += timedelta(seconds=120)
    assert contradicted()  # the declaring agent's own support does not count
    settled(app, derive(app, concept(CITING, depends_on=[RULING])))
    assert contradicted()  # newer support, but younger than the 60 s age floor
    clock.now += timedelta(seconds=120)
    assert not contradicted()  # aged in: the warning lapses by itself


@pytest.mark.minilm
def test_m_der_097_m_rec_190_a_changed_value_is_flagged_possibly_superseded(
    app: App, workspace: Workspace
) -> None:
    """Also M-REC-210/222/226: a near match changed in one value is recorded as a possible
    replacement; the older hit alone carries `possibly_superseded_by`; an explicit `against`
    between the two removes it. Also OQ-15 (that field): it is the newer node's full id."""
    older_text = "the release pins version 2.3 of the parser"
    newer_text = "the release pins version 2.4 of the parser"
    settled(app, derive(app, concept(older_text)))
    body = settled(app, derive(app, concept(newer_text)))
    assert "; 1 possible undeclared supersession(s) flagged" in body["detail"]
    older = node_by_content(workspace, older_text)
    newer = node_by_content(workspace, newer_text)
    hits = _recall(app, "which parser version does the release pin?")["structuredContent"]["hits"]
    by_id = {hit["node_id"]: hit for hit in hits}
    assert by_id[older.uuid]["possibly_superseded_by"] == newer.uuid
    assert "possibly_superseded_by" not in by_id[newer.uuid]
    # declaring the relation removes the suspicion (the writer said what it is)
    settled(app, derive(app, concept(newer_text, against=[older.uuid])))
    hits = _recall(app, "which parser version does the release pin?")["structuredContent"]["hits"]
    assert all("possibly_superseded_by" not in hit for hit in hits)


def test_m_rec_160_the_rests_on_line_quotes_a_cited_concept_that_is_not_a_hit(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept("the quarterly report uses the ledger", "entity")))
    settled(
        app,
        derive(
            app,
            concept(
                "zebra crossings are painted white",
                depends_on=["the quarterly report uses the ledger"],
            ),
        ),
    )
    settled(
        app,
        derive(
            app,
            concept(
                "the ledger was retired",
                "observation",
                against=["the quarterly report uses the ledger"],
            ),
            agent="agent-c",
        ),
    )
    result = _recall(app, "zebra crossings painted", top_k=1, traversal_depth=0)
    (line,) = [row for row in str(result["text"]).split("\n") if row.startswith("⚠ Rests on")]
    assert '"the quarterly report uses the ledger"' in line
    assert 'contradicted by "the ledger was retired"' in line


def test_m_rec_031_a_query_text_is_embedded_once(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("the cache keeps query embeddings")))
    workspace.settle()
    before = workspace.embedder.calls
    _recall(app, "what does the cache keep?")
    _recall(app, "what does the cache keep?")
    assert workspace.embedder.calls - before == 1


@pytest.mark.usefixtures("story")
def test_m_rec_170_the_rests_on_line_reads_memory_not_the_daemons_list(
    app: App, workspace: Workspace
) -> None:
    """With the cited concept's entry gone from the daemon's warning list (as the
    contradiction budget drops it), the citing hit still warns that it rests on it, while the
    cited concept, shown, carries no Contradicted line."""
    workspace.memory.jobs_or_fail().contradiction_list = frozenset()  # its entry dropped
    ruling = node_by_content(workspace, RULING)
    result = _recall(app, "users table")
    text = str(result["text"])
    assert {h["content"] for h in result["structuredContent"]["hits"]} >= {RULING, CITING}
    assert "⚠ Contradicted at " not in text
    rests = f'⚠ Rests on a contradicted concept: "{RULING}" (id {ruling.uuid[:8]})'
    assert any(line.startswith(rests) for line in text.split("\n"))


@pytest.mark.usefixtures("story")
def test_m_rec_171_rests_on_lines_count_toward_max_tokens(app: App) -> None:
    """The citing hit's Rests-on line is part of its block: a budget that would hold both
    blocks without that line holds only the first with it, and the later block falls out of
    the context (its hit is still in `hits`)."""
    full = _recall(app, "logins read", top_k=2, traversal_depth=0)
    text = str(full["text"])
    first, second, *_ = text.split(BLOCK_SEPARATOR)
    assert first.startswith(CITING), text
    rests = first.split("\n")[1]
    assert rests.startswith("⚠ Rests on a contradicted concept: ")
    both = first + BLOCK_SEPARATOR + second
    budget = estimate_tokens(both) - 1
    without = both.replace("\n" + rests, "")
    assert estimate_tokens(without) <= budget  # both blocks would fit without the line
    tight = _recall(app, "logins read", top_k=2, traversal_depth=0, max_tokens=budget)
    assert tight["text"] == first
    assert [h["content"] for h in tight["structuredContent"]["hits"]] == [
        h["content"] for h in full["structuredContent"]["hits"]
    ]
