"""lambo_reserve, lambo_inspect, lambo_stale and lambo_saints items no other test names (seed
001, M-RES, M-INS, M-STL, M-SNT), on a real workspace through the one dispatch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

SHARED = "the shared release checklist"


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("lambo_reserve", {"node_id": "n", "colour": 1}),  # M-RES-002
        ("lambo_stale", {"colour": 1}),  # M-STL-002
        ("lambo_inspect", {"focus": "x" * 16_385}),  # M-INS-003
        ("lambo_inspect", {}),  # M-INS-003: focus is required
        ("lambo_reserve", {}),  # M-RES-003: node_id is required
    ],
)
def test_m_res_002_003_m_stl_002_m_ins_003_arguments_beyond_the_tools_are_refused(
    app: App, tool: str, params: dict[str, object]
) -> None:
    with pytest.raises(DomainError) as error:
        call(app, tool, agent_id=AGENT, **params)
    assert error.value.field is not None


def test_m_res_013_reservations_do_not_survive_a_restart(
    tmp_path: Path, embedder: Embedder
) -> None:
    settings = Settings(workspace=tmp_path)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept(SHARED, "entity")))
        node = node_by_content(ws, SHARED).uuid
        call(app, "lambo_reserve", agent_id=AGENT, node_id=node, ttl_seconds=3600)
        with pytest.raises(DomainError, match="reserved by"):
            call(app, "lambo_reserve", agent_id="agent-b", node_id=node)
    with make_workspace(settings, embedder) as ws:
        held = call(App(ws), "lambo_reserve", agent_id="agent-b", node_id=node)
        assert held["structuredContent"]["reserved"] is True


def test_m_res_014_a_reservation_does_not_block_another_agents_write(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(SHARED, "entity")))
    node = node_by_content(workspace, SHARED).uuid
    call(app, "lambo_reserve", agent_id=AGENT, node_id=node, ttl_seconds=3600)
    receipt = derive(
        app,
        concept(SHARED, "entity"),
        concept("it has ten steps", depends_on=[node]),
        agent="agent-b",
    )
    body = settled(app, receipt, agent="agent-b")
    assert body["state"] == "applied"
    assert body["matched_count"] == 1


def test_m_ins_012_the_short_id_of_a_truncation_marker_inspects_the_whole_concept(
    app: App,
) -> None:
    """Also M-REC-067: the marker's short id as `focus` returns the whole concept."""
    long = "the build cache " + "keeps artifacts for reuse " * 60
    settled(app, derive(app, concept(long.strip())))
    text = str(
        call(app, "lambo_recall", agent_id=AGENT, query="build cache artifacts", max_tokens=40)[
            "text"
        ]
    )
    marker = text.rsplit("\n", maxsplit=1)[-1]
    (short,) = re.findall(r"\b[0-9a-f]{8}\b", marker)
    inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=short)
    assert inspected["structuredContent"]["content"] == long.strip()


def test_m_ins_026_inspect_shows_a_concepts_citations(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept(SHARED, "entity")))
    settled(app, derive(app, concept("it has ten steps", depends_on=[SHARED])))
    shared = node_by_content(workspace, SHARED).uuid
    result = call(app, "lambo_inspect", agent_id=AGENT, focus="it has ten steps")
    (edge,) = result["structuredContent"]["edges"]
    assert (edge["target"], edge["kind"]) == (shared, "depends_on")
    assert f"-[depends_on]-> {shared[:8]}" in result["text"]


def test_m_stl_015_016_m_lim_033_a_stale_report_is_bounded_and_keeps_the_true_total(
    app: App, workspace: Workspace
) -> None:
    """60 citations of what a write contradicts: the receipt's stale_report keeps the true
    total and at most 50 rows within 2,048 bytes of ids, cited ids and snippets (the stale
    half of M-LIM-033; the candidates' half needs 2 KB of near concepts)."""
    settled(app, derive(app, concept(SHARED, "entity")))
    for batch in range(2):
        cites = [concept(f"step {batch}-{n} of it", depends_on=[SHARED]) for n in range(30)]
        settled(app, derive(app, *cites))
    body = settled(app, derive(app, concept("the checklist was retired", against=[SHARED])))
    report = body["stale_report"]
    dependents = state.blast_radius(workspace.reader(), node_by_content(workspace, SHARED).uuid)
    assert report["total"] == dependents > 50  # the true total (near texts may have merged)
    assert 0 < len(report["rows"]) <= 50
    used = sum(
        len(f"{row['node_id']}{row['cited_id']}{row['content']}".encode()) for row in report["rows"]
    )
    assert used <= 2048


def test_m_lim_044_m_ins_008_past_the_scan_cap_the_substring_leg_reads_a_bounded_subset(
    app: App,
) -> None:
    """2,051 concepts: past the 2,000-concept cap the substring leg runs on a bounded
    recency-plus-blast-radius subset. A recent concept is found there, and the answer says
    the leg was bounded; an old concept a later one cites is in the blast-radius part, so it
    is found too; the oldest concept, which nothing cites, is in neither part of the subset,
    so its substring finds nothing, and the refusal says the leg was bounded."""
    settled(app, derive(app, concept("a vendor called Quillfeather once quoted for hosting")))
    ruling = "the ruling called Brightwater on where hosting lives"
    settled(app, derive(app, concept(ruling, "entity")))
    settled(app, derive(app, concept("the hosting plan follows it", depends_on=[ruling])))
    for batch in range(32):
        fillers = [
            concept(f"filler note {batch}-{n} about the build", "observation") for n in range(64)
        ]
        settled(app, derive(app, *fillers))
    found = call(app, "lambo_inspect", agent_id=AGENT, focus="note 31-63 about")
    assert "past the scan cap" in found["text"]
    assert found["structuredContent"]["content"] == "filler note 31-63 about the build"
    old = call(app, "lambo_inspect", agent_id=AGENT, focus="called Brightwater")
    assert old["structuredContent"]["content"] == ruling
    assert "largest blast radius" in old["text"]
    with pytest.raises(DomainError, match="matches no concept") as error:
        call(app, "lambo_inspect", agent_id=AGENT, focus="Quillfeather")
    assert "past the scan cap" in error.value.message


def test_m_ins_021_025_blast_radius_counts_an_actions_citation_and_every_contradiction_shows(
    app: App, workspace: Workspace
) -> None:
    """The blast radius counts a concept's dependents of every kind: a derive's `depends_on`,
    an action's `depends_on` and a `parent_of` child (M-INS-021); all three contradictions
    of the concept are listed, not only the newest (M-INS-025)."""
    settled(app, derive(app, concept(SHARED, "entity")))
    settled(app, derive(app, concept("it has ten steps", depends_on=[SHARED])))
    ran = call(app, "lambo_record_action", agent_id=AGENT, action="ran it", depends_on=[SHARED])
    settled(app, ran["structuredContent"]["receipt"])
    pair = {"parent": SHARED, "child": "step one"}
    settled(app, derive(app, concept("step one", "entity"), parent_of=[pair]))
    contradictions = [f"the checklist changed in week {n}" for n in range(3)]
    for n, text in enumerate(contradictions):
        settled(app, derive(app, concept(text, "observation", against=[SHARED]), agent=f"c{n}"))
    result = call(app, "lambo_inspect", agent_id=AGENT, focus=SHARED)
    found = result["structuredContent"]
    assert found["blast_radius"] == 3
    assert len(found["dependents"]) == 3
    by = [node_by_content(workspace, text).uuid for text in contradictions]
    assert sorted(found["contradicted_by"]) == sorted(by)
    for uuid in by:
        assert f"  - {uuid[:8]} " in result["text"]


def test_m_stl_017_the_ack_of_a_contradiction_carries_no_stale_report(app: App) -> None:
    """A derive and an action that contradict a cited concept: each ack is the four-line ack
    with no report; the report arrives with the settled receipt."""
    settled(app, derive(app, concept(SHARED, "entity")))
    settled(app, derive(app, concept("it has ten steps", depends_on=[SHARED])))
    acks = [
        call(
            app,
            "lambo_derive",
            agent_id=AGENT,
            concepts=[concept("the checklist was retired", "observation", against=[SHARED])],
        ),
        call(app, "lambo_record_action", agent_id=AGENT, action="skipped it", against=[SHARED]),
    ]
    for ack in acks:
        content = ack["structuredContent"]
        assert set(content) == {"summary", "receipt", "receipt_state", "agent_id", "warnings"}
        assert "stale" not in ack["text"]
        assert settled(app, content["receipt"])["stale_report"]["total"] == 1
