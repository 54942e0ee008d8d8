"""Seed 001's open questions answered by behaviour (OQ-43, OQ-45, OQ-53, OQ-55): what the
implementation chose where the document is silent, on a real workspace through the one
dispatch."""

from __future__ import annotations

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)


def _edges(workspace: Workspace, kind: str) -> set[tuple[str, str]]:
    rows = workspace.reader().execute(
        "SELECT source, target FROM memory_edges WHERE kind=?", (kind,)
    )
    return {(str(source), str(target)) for source, target in rows}


def test_oq_45_parent_of_ends_are_text_and_action_targets_resolve_ids(
    app: App, workspace: Workspace
) -> None:
    """A parent_of end is matched by text only: a short id there is the content of a new
    concept, not the concept it would name. An action's produces and modifies entries resolve
    a short id (or a full id) to the concept, as depends_on does."""
    settled(app, derive(app, concept("the billing service", "entity")))
    billing = node_by_content(workspace, "the billing service")
    short = billing.uuid[:8]
    pairs = [{"parent": short, "child": "the invoice job"}]
    settled(app, derive(app, concept("the invoice job", "entity"), parent_of=pairs))
    child = node_by_content(workspace, "the invoice job")
    [(parent, _)] = [pair for pair in _edges(workspace, "parent_of") if pair[1] == child.uuid]
    assert parent != billing.uuid
    assert node_by_content(workspace, short).uuid == parent  # a concept whose content is it
    settled(app, derive(app, concept("the tax service", "entity")))
    tax = node_by_content(workspace, "the tax service")
    ack = call(
        app,
        "lambo_record_action",
        agent_id=AGENT,
        action="rotated the service keys",
        modifies=[tax.uuid[:8]],
        produces=[billing.uuid],
    )
    settled(app, ack["structuredContent"]["receipt"])
    assert {target for _, target in _edges(workspace, "modifies")} == {tax.uuid}
    assert {target for _, target in _edges(workspace, "produces")} == {billing.uuid}


def test_oq_43_each_write_call_opens_one_interaction_never_a_reference(
    app: App, workspace: Workspace
) -> None:
    """An interaction is the node each derive or record_action call opens, carrying the
    caller's agent_id; its id names no concept."""
    settled(app, derive(app, concept("the cache is warm"), concept("the cache is cold")))
    ack = call(app, "lambo_record_action", agent_id=AGENT, action="flushed the cache")
    settled(app, ack["structuredContent"]["receipt"])
    rows = workspace.reader().execute(
        "SELECT uuid, agent_id FROM memory_nodes WHERE node_kind='interaction' ORDER BY seq"
    )
    interactions = [(str(uuid), str(agent)) for uuid, agent in rows]
    assert [agent for _, agent in interactions] == [AGENT, AGENT]
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    assert stats["interaction_count"] == 2
    with pytest.raises(DomainError, match="interaction"):
        derive(app, concept("cites a turn", depends_on=[interactions[0][0]]))


def test_oq_53_an_empty_concepts_array_is_refused_and_an_action_needs_no_targets(
    app: App, workspace: Workspace
) -> None:
    with pytest.raises(DomainError) as refused:
        call(app, "lambo_derive", agent_id=AGENT, concepts=[])
    assert refused.value.field == "concepts"
    ack = call(app, "lambo_record_action", agent_id=AGENT, action="read the runbook")
    assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"


@pytest.mark.parametrize("query", ["", "   ", "\t\n"])
def test_oq_55_a_blank_query_with_no_image_or_vector_is_refused_as_missing(
    app: App, query: str
) -> None:
    with pytest.raises(DomainError) as refused:
        call(app, "lambo_recall", agent_id=AGENT, query=query)
    assert refused.value.field == "query"


def test_oq_06_pair_ends_do_not_count_toward_the_combined_cap(
    app: App, workspace: Workspace
) -> None:
    """The cap of 512 concepts and pairs is kept as stated and counts the `concepts` entries
    and the pairs only: the largest call (64 concepts, 256 pairs whose 512 ends are all new
    texts) is accepted, so the combined cap never binds (OQ-06 left open upstream)."""
    concepts = [concept(f"component {n}", "entity") for n in range(64)]
    pairs = [{"parent": f"system {n}", "child": f"part {n}"} for n in range(256)]
    ack = call(app, "lambo_derive", agent_id=AGENT, concepts=concepts, parent_of=pairs)
    assert ack["structuredContent"]["receipt"]
    with pytest.raises(DomainError) as refused:
        call(app, "lambo_derive", agent_id=AGENT, concepts=concepts, parent_of=[*pairs, pairs[0]])
    assert refused.value.field == "parent_of"  # the per-call pair cap (M-LIM-007), not 512
    assert "256" in refused.value.message
