"""knowledge_canonicalize_relations and knowledge_backfill_relation_types (seed 000 §Relation
typing; K-RT-001..027, P-127, P-128, A-02, A-03, A-21; ADR 0042): real workspaces, the
ontology file on disk, the embedding fallback through the workspace's embedding cache."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.events import RelationTypesAssigned
from lcg.domain.ids import GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import normalise
from tests.conftest import Call, make_call
from tests.helpers.projection_state import dump

ONTOLOGY = """\
relation_types:
  - name: WORKS_FOR
    description: A person is employed by an organization.
    aliases: [employed by, works at]
    keywords: [employ]
  - name: HOLDS
    description: A person holds a position, title or office.
    aliases: [has role]
    keywords: [position]
  - name: LOCATED_IN
    description: A place or organization is situated inside a larger place.
entity_types:
  - name: Person
    description: A human being.
"""


def write_ontology(workspace: Workspace, text: str = ONTOLOGY, group: str | None = None) -> None:
    state = workspace.settings.state_dir
    path = state / "ontology.yaml" if group is None else state / "ontology" / f"{group}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def edge(
    call: Call,
    predicate: str,
    fact: str | None = None,
    *,
    relation_type: str | None = None,
    group: str = "g1",
    source: str = "Ada",
    target: str | None = None,
) -> str:
    target = target or f"T-{predicate}-{fact}"
    for name in (source, target):
        call("knowledge_assert_entity", name=name, group_id=group)
    params: dict[str, Any] = {
        "source_name": source,
        "predicate": predicate,
        "target_name": target,
        "group_id": group,
    }
    if fact is not None:
        params["fact"] = fact
    if relation_type is not None:
        params["relation_type"] = relation_type
    uuid: str = call("knowledge_assert_relationship", **params)["edge_uuid"]
    return uuid


def types(call: Call, group: str = "g1") -> dict[str, str | None]:
    edges = call("knowledge_get_edges_by_group", group_ids=[group])["edges"]
    return {e["uuid"]: e["relation_type"] for e in edges}


def canonicalize(call: Call, **params: Any) -> dict[str, Any]:
    params.setdefault("group_id", "g1")
    return call("knowledge_canonicalize_relations", **params)


def typing_events(workspace: Workspace, group: str = "g1") -> list[RelationTypesAssigned]:
    return [
        r.event
        for page in workspace.log.read(GroupId(group))
        for r in page
        if isinstance(r.event, RelationTypesAssigned)
    ]


@pytest.fixture
def ontology(workspace: Workspace) -> None:
    write_ontology(workspace)


@pytest.mark.parametrize("group_id", ["omitted", None, ""])
@pytest.mark.parametrize(
    "tool", ["knowledge_canonicalize_relations", "knowledge_backfill_relation_types"]
)
def test_k_rt_001_to_005_026_group_id_is_required_and_nothing_is_written(
    call: Call, workspace: Workspace, ontology: None, tool: str, group_id: str | None
) -> None:
    edge(call, "WORKS_FOR", "Ada works for Acme.", group="liminis")
    head = workspace.log.head("liminis")
    before = dump(workspace.reader())
    params = {} if group_id == "omitted" else {"group_id": group_id}
    with pytest.raises(InvalidParams) as refused:
        call(tool, **params)
    assert refused.value.field == "group_id"
    assert workspace.log.head("liminis") == head  # no fallback to the default group
    assert dump(workspace.reader()) == before


def test_k_rt_006_007_027_only_the_named_groups_edges_and_stream_change(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    mine = edge(call, "employed_by", "Ada is employed by Acme.")
    other = edge(call, "employed_by", "Bob is employed by Acme.", group="g2")
    other_head = workspace.log.head("g2")
    assert canonicalize(call)["mapped_count"] == 1
    assert types(call)[mine] == "WORKS_FOR"
    assert types(call, "g2")[other] is None
    assert workspace.log.head("g2") == other_head
    call("knowledge_backfill_relation_types", group_id="g1")
    assert types(call, "g2")[other] is None
    assert workspace.log.head("g2") == other_head


def test_k_rt_008_lexical_pass_matches_names_aliases_and_keywords(
    call: Call, ontology: None
) -> None:
    by_name = edge(call, "works_for", "x1")
    by_alias = edge(call, "HAS ROLE", "x2")
    by_keyword = edge(call, "EMPLOYED_AS_CONTRACTOR", "x3")  # keyword employ: a whole word?
    by_keyword_word = edge(call, "CURRENT_POSITION", "x4")
    by_type = edge(call, "met", "x5", relation_type="located in")
    result = canonicalize(call, embedding_threshold=1.0)
    got = types(call)
    assert got[by_name] == "WORKS_FOR"
    assert got[by_alias] == "HOLDS"
    assert got[by_keyword] == "UNCLASSIFIED"  # EMPLOYED is not the word EMPLOY
    assert got[by_keyword_word] == "HOLDS"
    assert got[by_type] == "LOCATED_IN"
    assert (result["mapped_count"], result["residual_count"]) == (4, 1)


def test_k_rt_009_the_lexical_pass_never_reads_the_fact(call: Call, ontology: None) -> None:
    """Also K-CFG-008: the abstention sentinel is the literal `UNCLASSIFIED`."""
    uuid = edge(call, "RELATED", "Ada works for Acme, employed by it as WORKS_FOR says.")
    result = canonicalize(call, embedding_threshold=1.0)
    assert result["mapped_count"] == 0
    assert types(call)[uuid] == "UNCLASSIFIED"


def test_k_rt_010_embedding_threshold_defaults_to_0_7(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    """Also K-CFG-009."""
    schema = operations.BY_NAME["knowledge_canonicalize_relations"].input_schema()
    assert schema["properties"]["embedding_threshold"]["default"] == 0.7
    assert schema["required"] == ["group_id"]
    edge(call, "RELATED", "Ada met Bob.")
    canonicalize(call)
    (event,) = typing_events(workspace)
    assert event.run["embedding_threshold"] == 0.7
    assert event.run["summary"] == {  # the run's summary rides with its decisions
        "total_edges": 1,
        "mapped_count": 0,
        "noise_count": 0,
        "residual_count": 1,
    }


def _nearest(workspace: Workspace, fact: str) -> float:
    descriptions = [
        "A person is employed by an organization.",
        "A person holds a position, title or office.",
        "A place or organization is situated inside a larger place.",
    ]
    vectors = normalise(np.asarray(workspace.embed_texts([fact, *descriptions])))
    return round(float(max(vectors[1:] @ vectors[0])), 6)


def test_k_rt_011_the_threshold_never_changes_lexically_mapped_edges(
    call: Call, ontology: None
) -> None:
    outcomes = []
    for index, threshold in enumerate((-1.0, 0.0, 0.7, 1.0)):
        group = f"t{index}"
        mapped = edge(call, "works_at", "Ada works at Acme.", group=group)
        noise = edge(call, "PERSON -> ORG", "Ada and Acme.", group=group)
        result = canonicalize(call, group_id=group, embedding_threshold=threshold)
        got = types(call, group)
        outcomes.append((got[mapped], got[noise], result["noise_count"]))
    assert set(outcomes) == {("WORKS_FOR", "UNCLASSIFIED", 1)}


def test_k_rt_012_013_the_fallback_promotes_at_or_above_the_threshold(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    fact = "Grace serves as the rear admiral of the navy."
    similarity = _nearest(workspace, fact)
    at = edge(call, "RELATED", fact, group="at")
    above = edge(call, "RELATED", fact, group="above")
    promoted = canonicalize(call, group_id="at", embedding_threshold=similarity)
    assert promoted["embedding_fallback_promoted"] == 1  # equality counts
    assert types(call, "at")[at] != "UNCLASSIFIED"
    missed = canonicalize(call, group_id="above", embedding_threshold=similarity + 1e-5)
    assert missed["embedding_fallback_promoted"] == 0
    assert types(call, "above")[above] == "UNCLASSIFIED"
    (event,) = typing_events(workspace, "at")
    assert event.reasons == ("embedding_fallback",)


@pytest.mark.minilm
def test_k_rt_014_the_fallback_never_abstains_below_a_low_threshold(
    call: Call, ontology: None
) -> None:
    uuid = edge(call, "RELATED", "X is affiliated with Y.")
    result = canonicalize(call, embedding_threshold=0.0)
    assert result["embedding_fallback_promoted"] == 1
    assert types(call)[uuid] in {"WORKS_FOR", "HOLDS", "LOCATED_IN"}  # force-fit, right or not


@pytest.mark.minilm
def test_k_rt_012_the_fallback_reads_the_fact_against_the_descriptions(
    call: Call, ontology: None
) -> None:
    job = edge(call, "RELATED", "Alice is on the payroll of Acme Corporation as an engineer.")
    place = edge(call, "RELATED", "The city of Berlin is located inside Germany.")
    cats = edge(call, "RELATED", "Cats purr.")  # near nothing: residual
    result = canonicalize(call, embedding_threshold=0.3)
    got = types(call)
    assert (got[job], got[place], got[cats]) == ("WORKS_FOR", "LOCATED_IN", "UNCLASSIFIED")
    assert (result["embedding_fallback_promoted"], result["residual_count"]) == (2, 1)


def test_k_rt_015_lowering_the_threshold_never_types_fewer_edges(
    call: Call, ontology: None
) -> None:
    for index, fact in enumerate(
        ["Ada works for Acme.", "Bob is the mayor.", "Paris is in France.", "Cats purr."]
    ):
        edge(call, "RELATED", fact, target=f"t{index}")
    typed = [
        canonicalize(call, embedding_threshold=t, dry_run=True)["mapped_count"]
        for t in (1.0, 0.9, 0.7, 0.5, 0.3, 0.1, 0.0, -1.0)
    ]
    assert typed == sorted(typed)
    assert typed[-1] == 4


def test_k_rt_016_to_018_residual_reads_unclassified_and_a_rerun_writes_nothing(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    mapped = edge(call, "works_for", "Ada works for Acme.")
    residual = edge(call, "RELATED", "Cats purr.")
    first = canonicalize(call, embedding_threshold=1.0)
    assert types(call) == {mapped: "WORKS_FOR", residual: "UNCLASSIFIED"}
    assert (first["mapped_count"], first["residual_count"]) == (1, 1)
    head = workspace.log.head("g1")
    again = canonicalize(call, embedding_threshold=1.0)
    assert workspace.log.head("g1") == head
    assert again == first


def test_k_rt_019_a_changed_classification_is_overwritten(call: Call, ontology: None) -> None:
    pseudo = edge(call, "works_for", "Ada works for Acme.", relation_type="ADA_WORKS_FOR_ACME")
    stale = edge(call, "RELATED", "Cats purr.", relation_type="OLD_TYPE")
    canonicalize(call, embedding_threshold=1.0)
    assert types(call) == {pseudo: "WORKS_FOR", stale: "UNCLASSIFIED"}


def test_k_rt_020_a_03_noise_edges_keep_their_predicate_and_a_rich_type(
    call: Call, ontology: None
) -> None:
    rich = edge(call, "PERSON → ORGANIZATION", "Ada and Acme.", relation_type="FOUNDED")
    bare = edge(call, "PERSON -> PLACE", "Ada and London.")
    result = canonicalize(call, embedding_threshold=-1.0)
    assert result["noise_count"] == 2
    assert result["embedding_fallback_promoted"] == 0  # noise never reaches the fallback
    edges = {e["uuid"]: e for e in call("knowledge_get_edges_by_group", group_ids=["g1"])["edges"]}
    assert (edges[rich]["name"], edges[rich]["relation_type"]) == (
        "PERSON → ORGANIZATION",
        "FOUNDED",
    )
    assert (edges[bare]["name"], edges[bare]["relation_type"]) == (
        "PERSON -> PLACE",
        "UNCLASSIFIED",
    )


def test_k_rt_021_canonicalize_cannot_restore_a_cleared_relation_type(
    call: Call, ontology: None
) -> None:
    uuid = edge(call, "RELATED", "Ada works for Acme.", relation_type="WORKS_FOR")
    canonicalize(call, embedding_threshold=1.0)
    assert types(call)[uuid] == "WORKS_FOR"
    edge(call, "RELATED", "Ada works for Acme.")  # re-asserted without it: cleared
    assert types(call)[uuid] is None
    canonicalize(call, embedding_threshold=1.0)
    assert types(call)[uuid] == "UNCLASSIFIED"


def test_p_127_result_fields_percentages_and_dry_run_appends_nothing(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    edge(call, "works_for", "a1")
    edge(call, "has_role", "a2")
    edge(call, "PERSON -> ORG", "a3")
    edge(call, "RELATED", "Cats purr.")
    head = workspace.log.head("g1")
    before = dump(workspace.reader())
    result = canonicalize(call, dry_run=True, embedding_threshold=1.0)
    assert result == {
        "group_id": "g1",
        "total_edges": 4,
        "mapped_count": 2,
        "noise_count": 1,
        "residual_count": 1,
        "embedding_fallback_promoted": 0,
        "mapped_pct": 50.0,
        "noise_pct": 25.0,
        "residual_pct": 25.0,
        "dry_run": True,
    }
    assert workspace.log.head("g1") == head
    assert dump(workspace.reader()) == before
    applied = canonicalize(call, embedding_threshold=1.0)
    assert applied == {**result, "dry_run": False}


def test_p_127_an_empty_group_answers_zeros(call: Call, ontology: None) -> None:
    result = canonicalize(call, group_id="empty")
    assert (result["total_edges"], result["mapped_pct"], result["residual_pct"]) == (0, 0.0, 0.0)


def test_p_127_no_relation_types_in_the_ontology_is_an_error(
    call: Call, workspace: Workspace
) -> None:
    edge(call, "works_for", "a1")
    with pytest.raises(DomainError) as refused:
        canonicalize(call)
    assert refused.value.field == "ontology"
    assert "no relation types" in refused.value.message
    write_ontology(workspace, "entity_types:\n  - {name: Person}\n")
    with pytest.raises(DomainError, match="no relation types"):
        canonicalize(call)


def test_p_018_a_groups_own_file_overrides_the_workspace_file(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    write_ontology(
        workspace,
        "relation_types:\n  - {name: KNOWS, description: Two people know each other.}\n",
        group="g1",
    )
    mine = edge(call, "knows", "Ada knows Bob.")
    theirs = edge(call, "knows", "Ada knows Bob.", group="g2")
    canonicalize(call, embedding_threshold=1.0)
    canonicalize(call, group_id="g2", embedding_threshold=1.0)
    assert types(call)[mine] == "KNOWS"
    assert types(call, "g2")[theirs] == "UNCLASSIFIED"


def test_adr_0042_a_replay_reproduces_every_type_without_embedding(
    call: Call, workspace: Workspace, ontology: None
) -> None:
    edge(call, "works_for", "Ada works for Acme.")
    edge(call, "RELATED", "Grace serves as the rear admiral of the navy.")
    edge(call, "RELATED", "Cats purr.")
    canonicalize(call, embedding_threshold=0.1)
    call("knowledge_backfill_relation_types", group_id="g1")
    live = dump(workspace.reader())
    embedded = workspace.embedder.texts
    call("knowledge_rebuild_from_wal", group_id="g1", force_clear=True)
    assert dump(workspace.reader()) == live
    assert workspace.embedder.texts == embedded


def test_k_rt_022_backfill_is_still_a_write_tool_described_as_deprecated() -> None:
    operation = operations.BY_NAME["knowledge_backfill_relation_types"]
    assert operation.scope is operations.Scope.WRITE
    assert operation.description.startswith("DEPRECATED")
    assert "knowledge_reprocess_relation_types" in operation.description
    assert 'scope "untyped"' in operation.description


def test_k_rt_023_to_025_p_128_backfill_mints_fact_prefix_pseudo_types(
    call: Call, workspace: Workspace
) -> None:
    spec = edge(call, "DEFINES", "The specification document defines the wire format.")
    short = edge(call, "SAYS", "Ada's notes!")
    typed = edge(call, "KNOWS", "Ada knows Bob.", relation_type="KNOWS")
    head = workspace.log.head("g1")
    dry = call("knowledge_backfill_relation_types", group_id="g1", dry_run=True)
    assert dry == {"group_id": "g1", "total_edges": 3, "backfilled": 2, "dry_run": True}
    assert workspace.log.head("g1") == head
    result = call("knowledge_backfill_relation_types", group_id="g1")
    assert result == {**dry, "dry_run": False}
    assert types(call) == {
        spec: "THE_SPECIFICATION_DOCUMENT_DEFINES",  # never the predicate
        short: "ADAS_NOTES",
        typed: "KNOWS",
    }
    again = call("knowledge_backfill_relation_types", group_id="g1")
    assert again["backfilled"] == 0  # they all have a type now


def test_k_prg_001_canonicalize_and_backfill_report_progress(
    workspace: Workspace, ontology: None
) -> None:
    app = App(workspace)
    for index in range(3):
        edge(make_call(app), "RELATED", f"Fact {index}.", target=f"T{index}")
    frames: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        frames.append((done, total))

    operations.dispatch(app, "knowledge_backfill_relation_types", {"group_id": "g1"}, progress)
    assert frames == [(1, 1)]  # one page of writes: one step (P-008)
    frames.clear()
    operations.dispatch(app, "knowledge_canonicalize_relations", {"group_id": "g1"}, progress)
    assert frames == [(1, 1), (2, 2)]  # the fallback's page of embeddings, then the writes
