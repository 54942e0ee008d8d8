"""lambo_derive items no other test names (seed 001, M-DER): reference forms, citations and
contradictions as recorded, cycles closed between acceptance and apply, and embeddings, on a
real workspace through the one dispatch."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.memory import evidence, state
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    head,
    node_by_content,
    settled,
)

RULING = "the cache lives in redis"


def _refused(app: App, workspace: Workspace, **params: Any) -> DomainError:
    before = head(workspace)
    with pytest.raises(DomainError) as error:
        call(app, "lambo_derive", agent_id=AGENT, **params)
    assert head(workspace) == before, "a refused call wrote nothing"
    return error.value


def _edge(workspace: Workspace, kind: str) -> tuple[str, str, str, int]:
    (row,) = (
        workspace.reader()
        .execute(
            "SELECT source, target, about_time, reinforced FROM memory_edges WHERE kind=?",
            (kind,),
        )
        .fetchall()
    )
    return str(row[0]), str(row[1]), str(row[2]), int(row[3])


def test_m_der_025_026_058_a_longer_hex_prefix_and_a_substring_are_text_that_matches_nothing(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    ruling = node_by_content(workspace, RULING)
    for reference in (ruling.uuid[:9], ruling.uuid.replace("-", ""), "cache lives", "redis"):
        for key in ("depends_on", "against"):  # an against reference resolves the same way
            named = {"content": "x", "concept_type": "logic", key: [reference]}
            error = _refused(app, workspace, concepts=[named])
            assert "matches nothing" in error.message, reference
    for reference in (ruling.uuid[:8], ruling.uuid, RULING):  # the three reference forms
        body = settled(app, derive(app, concept(f"cites by {reference}", depends_on=[reference])))
        assert body["state"] == "applied"


def test_m_der_013_052_053_a_contradiction_is_dated_by_the_writes_about_time_once(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    at = "2025-06-01T00:00:00Z"
    correction = concept("the cache moved to memcached", "observation", against=[RULING])
    settled(app, derive(app, correction, event_time=at))
    node = node_by_content(workspace, "the cache moved to memcached")
    assert node.about_time.startswith("2025-06-01T00:00:00")  # the write's about-time
    _, _, dated, reinforced = _edge(workspace, "contradicts")
    assert dated.startswith("2025-06-01T00:00:00")
    assert reinforced == 0
    settled(app, derive(app, correction))  # again, now: one edge, reinforced, not re-dated
    _, _, again, reinforced = _edge(workspace, "contradicts")
    assert again == dated
    assert reinforced == 1


def test_m_der_041_043_a_citation_counts_toward_the_blast_radius_and_none_adds_no_clause(
    app: App, workspace: Workspace
) -> None:
    plain = settled(app, derive(app, concept(RULING, "entity")))
    assert "citation" not in plain["detail"]
    ruling = node_by_content(workspace, RULING)
    assert state.blast_radius(workspace.reader(), ruling.uuid) == 0
    settled(app, derive(app, concept("sessions use the cache", depends_on=[RULING])))
    assert state.blast_radius(workspace.reader(), ruling.uuid) == 1


def test_m_der_055_a_contradiction_makes_no_conflict_line(app: App) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept("the cache moved", "observation", against=[RULING])))
    text = str(call(app, "lambo_recall", agent_id=AGENT, query="cache redis moved")["text"])
    assert "⚠ Contradicted" in text
    assert "onflict" not in text


def test_m_der_061_separate_writes_may_cite_and_contradict_one_concept(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept("sessions use the cache", depends_on=[RULING])))
    body = settled(app, derive(app, concept("sessions use the cache", against=[RULING])))
    assert body["state"] == "applied"
    citing = node_by_content(workspace, "sessions use the cache").uuid
    ruling = node_by_content(workspace, RULING).uuid
    assert _edge(workspace, "depends_on")[:2] == (citing, ruling)
    assert _edge(workspace, "contradicts")[:2] == (citing, ruling)


def test_m_der_066_a_contradiction_may_close_a_loop_a_citation_may_not(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept("sessions use the cache", depends_on=[RULING])))
    body = settled(app, derive(app, concept(RULING, "entity", against=["sessions use the cache"])))
    assert body["state"] == "applied"
    error = _refused(
        app, workspace, concepts=[concept(RULING, "entity", depends_on=["sessions use the cache"])]
    )
    assert "loop" in error.message or "cycle" in error.message


def test_m_der_076_a_cycle_closed_between_acceptance_and_apply_fails_on_the_receipt(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept("auth", "entity"), concept("tokens", "entity")))
    with workspace.memory.processor.paused():
        first = derive(
            app, concept("auth", "entity"), parent_of=[{"parent": "auth", "child": "tokens"}]
        )
        second = derive(
            app, concept("tokens", "entity"), parent_of=[{"parent": "tokens", "child": "auth"}]
        )
    assert settled(app, first)["state"] == "applied"
    body = settled(app, second)
    assert body["state"] == "failed"
    assert "cycle" in body["detail"]


def test_m_der_131_137_m_rec_025_every_concept_written_keeps_its_embedding(
    app: App, workspace: Workspace
) -> None:
    workspace.settle()
    before = workspace.vectors.count()
    body = settled(
        app,
        derive(app, concept(RULING, "entity"), concept("sessions use it"), concept("tokens")),
    )
    assert body["embedded"] == 3
    workspace.settle()
    assert workspace.vectors.count() == before + 3


def test_m_der_064_a_concept_is_never_merged_into_what_it_contradicts(
    app: App, workspace: Workspace
) -> None:
    """An observation never matches by key, so the same text again merges by its vector
    alone; naming the first in `against` keeps the second apart."""
    text = "the build cache is cold on a fresh runner"
    settled(app, derive(app, concept(text, "observation")))
    merged = settled(app, derive(app, concept(text, "observation")))
    assert (merged["semantic_merged"], merged["created_count"]) == (1, 0)
    (first,) = state.concepts_with_content(workspace.reader(), SESSION, text)
    body = settled(app, derive(app, concept(text, "observation", against=[first.uuid])))
    assert (body["semantic_merged"], body["created_count"]) == (0, 1)
    assert len(state.concepts_with_content(workspace.reader(), SESSION, text)) == 2


def test_m_der_098_the_ack_does_not_wait_for_the_embedder(app: App, workspace: Workspace) -> None:
    with workspace.memory.processor.paused():
        before = workspace.embedder.texts
        ack = call(app, "lambo_derive", agent_id=AGENT, concepts=[concept("not embedded yet")])
        assert ack["structuredContent"]["receipt_state"] == "pending"
        assert workspace.embedder.texts == before  # embedding happens after the ack
    assert settled(app, ack["structuredContent"]["receipt"])["embedded"] == 1
    assert workspace.embedder.texts > before


def test_m_der_040_a_concept_merged_into_what_it_cites_drops_the_citation(
    app: App, workspace: Workspace
) -> None:
    """An observation never matches by key: the same text again merges into the first by its
    vector; citing that first concept is then dropped (a reinforcement) and the write is
    applied."""
    text = "the build cache is cold on a fresh runner"
    settled(app, derive(app, concept(text, "observation")))
    (first,) = state.concepts_with_content(workspace.reader(), SESSION, text)
    body = settled(app, derive(app, concept(text, "observation", depends_on=[first.uuid])))
    assert body["state"] == "applied"
    assert (body["semantic_merged"], body["created_count"]) == (1, 0)
    assert body["reinforced"] >= 1
    edges = workspace.reader().execute("SELECT 1 FROM memory_edges WHERE kind='depends_on'")
    assert edges.fetchall() == []


def test_m_err_027_029_each_reference_refusal_reason_on_each_tool_that_resolves_references(
    app: App, workspace: Workspace
) -> None:
    """The reasons a reference is refused for (the one naming another scope is in
    test_memory_layers.py), on derive's depends_on and against and record_action's against
    and depends_on; each refused before the ack with nothing written."""
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept("sessions use the cache", depends_on=[RULING])))
    settled(app, derive(app, concept("port is 8080", "observation")))
    settled(app, derive(app, concept("port is 8080", "logic")))
    (interaction,) = [
        str(row[0])
        for row in workspace.reader().execute(
            "SELECT uuid FROM memory_nodes WHERE node_kind != 'concept' LIMIT 1"
        )
    ]
    derived: list[tuple[dict[str, Any], str]] = [
        (concept("x", depends_on=["nothing like it"]), "matches nothing"),
        (concept("x", against=["nothing like it"]), "matches nothing"),
        (concept("x", depends_on=["port is 8080"]), "matches several"),
        (concept("x", against=["port is 8080"]), "matches several"),
        (concept("x", depends_on=[interaction]), "interaction"),
        (concept("x", against=[interaction]), "interaction"),
        (concept(RULING, "entity", depends_on=[RULING]), "names the concept itself"),
        (concept(RULING, "entity", depends_on=["sessions use the cache"]), "loop"),
        (concept("x", depends_on=[RULING], against=[RULING]), "both cited and contradicted"),
    ]
    for refused_concept, reason in derived:
        error = _refused(app, workspace, concepts=[refused_concept])
        assert error.message.startswith("reference refused"), error.message
        assert reason in error.message, (reason, error.message)
    acted: list[tuple[dict[str, Any], str]] = [
        ({"against": ["nothing like it"]}, "matches nothing"),
        ({"against": ["port is 8080"]}, "matches several"),
        ({"depends_on": [interaction]}, "interaction"),
    ]
    for params, reason in acted:
        before = head(workspace)
        with pytest.raises(DomainError) as caught:
            call(app, "lambo_record_action", agent_id=AGENT, action="ran it", **params)
        assert caught.value.message.startswith("reference refused"), caught.value.message
        assert reason in caught.value.message, (reason, caught.value.message)
        assert head(workspace) == before


def _stock(app: App, prefix: str, count: int) -> list[str]:
    """`count` existing entities to cite or contradict, one word each, in one call."""
    names = [f"{prefix}{n:02d}" for n in range(count)]
    assert settled(app, derive(app, *(concept(name, "entity") for name in names)))["state"] == (
        "applied"
    )
    return names


def _claims(count: int, **refs: list[list[str]]) -> list[dict[str, Any]]:
    """`count` new concepts, the n-th citing (or contradicting) refs[key][n]."""
    return [
        {"content": f"claim {n}", "concept_type": "logic", **{k: v[n] for k, v in refs.items()}}
        for n in range(count)
    ]


def test_m_der_021_at_most_32_depends_on_references_per_call(
    app: App, workspace: Workspace
) -> None:
    """Also M-LIM-012: 32 references across the call's concepts are applied; 33 are refused
    naming the per-call limit, before the ack, writing nothing."""
    cited = _stock(app, "cited", 33)
    groups = [cited[n : n + 8] for n in range(0, 32, 8)]
    error = _refused(app, workspace, concepts=_claims(5, depends_on=[*groups, cited[32:]]))
    assert (error.field, error.rule) == ("depends_on", "per-call limit")
    assert error.message == "depends_on: at most 32 references per call (33 given)"
    body = settled(app, derive(app, *_claims(4, depends_on=groups)))
    assert body["state"] == "applied"
    rows = workspace.reader().execute("SELECT COUNT(*) FROM memory_edges WHERE kind='depends_on'")
    assert rows.fetchone()[0] == 32


def test_m_der_050_against_is_at_most_8_per_concept_and_32_per_call_apart_from_depends_on(
    app: App, workspace: Workspace
) -> None:
    """Also M-LIM-013/014: 32 citations and 32 contradictions in one call are both within
    their limits (counted apart); 9 against on one concept, or 33 in the call, are refused."""
    cited, wrong = _stock(app, "cited", 32), _stock(app, "wrong", 33)
    nine = _refused(app, workspace, concepts=_claims(1, against=[wrong[:9]]))
    assert nine.field is not None
    assert nine.field.startswith("concepts[0].against")
    groups = [wrong[n : n + 8] for n in range(0, 32, 8)]
    over = _refused(app, workspace, concepts=_claims(5, against=[*groups, wrong[32:]]))
    assert (over.field, over.rule) == ("against", "per-call limit")
    assert over.message == "against: at most 32 references per call (33 given)"
    both = _claims(4, depends_on=[cited[n : n + 8] for n in range(0, 32, 8)], against=groups)
    assert settled(app, derive(app, *both))["state"] == "applied"
    reader = workspace.reader()
    for kind in ("depends_on", "contradicts"):
        rows = reader.execute("SELECT COUNT(*) FROM memory_edges WHERE kind=?", (kind,))
        assert rows.fetchone()[0] == 32, kind


def test_m_der_071_at_most_256_parent_of_pairs_per_call(app: App, workspace: Workspace) -> None:
    """Also M-LIM-008: 256 pairs are applied; 257 are refused naming parent_of."""
    pairs = [{"parent": "catalogue", "child": f"item{n:03d}"} for n in range(257)]
    error = _refused(app, workspace, concepts=[concept("catalogue", "entity")], parent_of=pairs)
    assert error.field is not None
    assert error.field.startswith("parent_of")
    body = settled(app, derive(app, concept("catalogue", "entity"), parent_of=pairs[:256]))
    assert body["state"] == "applied"
    catalogue = node_by_content(workspace, "catalogue")
    assert len(state.targets(workspace.reader(), SESSION, catalogue.uuid, ["parent_of"])) == 256


def test_m_der_054_m_can_014_a_contradiction_adds_no_evidence_dependent_or_score_input(
    app: App, workspace: Workspace
) -> None:
    """The contradicted concept's blast radius, its canonization support and the counters its
    daemon score and promotion stage read (memory_concept_stats) are what they were before
    the contradiction; only the contradicting concept's row is new."""
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept("sessions use the cache", depends_on=[RULING])))
    ruling = node_by_content(workspace, RULING).uuid

    def measured() -> tuple[int, list[Any], tuple[Any, ...]]:
        reader = workspace.reader()
        support = evidence.load(reader, SESSION, [ruling]).support
        row = reader.execute(
            "SELECT incident, derived_by, steady, parents, produced FROM memory_concept_stats"
            " WHERE node_id=?",
            (ruling,),
        ).fetchone()
        return state.blast_radius(reader, ruling), [s.concept for s in support], tuple(row)

    before = measured()
    correction = concept("the cache moved to memcached", "observation", against=[RULING])
    assert settled(app, derive(app, correction))["state"] == "applied"
    assert _edge(workspace, "contradicts")[1] == ruling
    assert measured() == before
    assert before[0] == 1  # the citation, which is evidence
