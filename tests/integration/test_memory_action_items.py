"""lambo_record_action items no other test names (seed 001, M-ACT): its arguments, how its
entries name concepts, `against`, cycles, and its receipt and queue, on a real workspace
through the one dispatch."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory.evidence import SupportKind
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

SCHEMA = "user schema owns the accounts table"


def _act(app: App, action: str, **params: Any) -> dict[str, Any]:
    ack: dict[str, Any] = call(app, "lambo_record_action", agent_id=AGENT, action=action, **params)
    return ack


def _refused(app: App, workspace: Workspace, action: str, **params: Any) -> DomainError:
    before = head(workspace)
    with pytest.raises(DomainError) as error:
        _act(app, action, **params)
    assert head(workspace) == before, "a refused call wrote nothing"
    return error.value


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"action": "x", "colour": "red"}, "colour"),  # M-ACT-002
        ({"action": "x" * 16_385}, "action"),  # M-ACT-003
        ({}, "action"),  # M-ACT-003: required
    ],
)
def test_m_act_002_003_an_unknown_argument_and_an_action_over_16_kb_are_refused(
    app: App, workspace: Workspace, params: dict[str, Any], field: str
) -> None:
    before = head(workspace)
    with pytest.raises(DomainError) as error:
        call(app, "lambo_record_action", agent_id=AGENT, **params)
    assert error.value.field is not None
    assert error.value.field.startswith(field)
    assert head(workspace) == before


def test_m_act_002_003_005_008_every_argument_at_its_limit_is_accepted(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(SCHEMA, "entity"), concept("the old layout", "entity")))
    ack = _act(
        app,
        "x" * 16_384,
        event_time="2025-06-01T00:00:00Z",
        against=["the old layout"],
        produces=["out.txt"],
        modifies=["in.txt"],
        depends_on=[SCHEMA],
        scope=str(SESSION),
    )
    assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"
    action = node_by_content(workspace, "x" * 16_384)
    assert action.about_time.startswith("2025-06-01T00:00:00")  # M-ACT-005


def test_m_act_020_022_an_id_entry_cites_its_concept_by_full_or_short_id(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(SCHEMA, "entity")))
    schema = node_by_content(workspace, SCHEMA)
    for n, reference in enumerate((schema.uuid, schema.uuid[:8])):
        ack = _act(app, f"migration {n}", depends_on=[reference])
        settled(app, ack["structuredContent"]["receipt"])
        action = node_by_content(workspace, f"migration {n}")
        targets = state.targets(workspace.reader(), SESSION, action.uuid, ["depends_on"])
        assert targets == [schema.uuid]
    assert len(state.concepts_with_content(workspace.reader(), SESSION, schema.uuid)) == 0


def test_m_act_021_an_interactions_id_is_refused(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept(SCHEMA, "entity")))
    (interaction,) = (
        workspace.reader()
        .execute("SELECT uuid FROM memory_nodes WHERE node_kind != 'concept'")
        .fetchall()
    )
    error = _refused(app, workspace, "ran it", depends_on=[str(interaction[0])])
    assert "reference refused" in error.message


def test_m_act_026_027_other_entries_are_text_created_if_new(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(SCHEMA, "entity")))
    schema = node_by_content(workspace, SCHEMA)
    entries = [
        "3f2a9c1",  # a 7-character commit hash
        "d41d8cd98f00b204e9800998ecf8427e",  # an MD5
        schema.uuid[:9],  # a longer id prefix
        schema.uuid.replace("-", ""),  # the unhyphenated form
        f"urn:uuid:{schema.uuid}",
        f"{{{schema.uuid}}}",
        "src/lib.rs",
        "#142",
        "0b5e1f3c-7a0e-4d6b-9f51-1c2d3e4f5a6b",  # a hyphenated id naming no concept
    ]
    ack = _act(app, "reviewed the references", depends_on=entries)
    assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"
    for entry in entries:
        assert state.concepts_with_content(workspace.reader(), SESSION, entry), entry
    action = node_by_content(workspace, "reviewed the references")
    cited = state.targets(workspace.reader(), SESSION, action.uuid, ["depends_on"])
    assert schema.uuid not in cited
    assert len(cited) == len(entries)


def test_m_act_030_033_034_045_against_names_one_existing_concept_and_is_recorded(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(SCHEMA, "entity")))
    settled(app, derive(app, concept("logins read the accounts table", depends_on=[SCHEMA])))
    settled(app, derive(app, concept("port is 8080", "observation")))
    settled(app, derive(app, concept("port is 8080", "logic")))
    assert "matches nothing" in _refused(app, workspace, "x", against=["no such thing"]).message
    assert "matches several" in _refused(app, workspace, "x", against=["port is 8080"]).message
    assert not state.concepts_with_content(workspace.reader(), SESSION, "no such thing")
    ack = _act(app, "dropped the accounts table", against=[SCHEMA])
    body = settled(app, ack["structuredContent"]["receipt"])
    action = node_by_content(workspace, "dropped the accounts table")
    schema = node_by_content(workspace, SCHEMA)
    assert state.targets(workspace.reader(), SESSION, action.uuid, ["contradicts"]) == [schema.uuid]
    assert body["stale_report"]["total"] == 1  # the login concept rests on it


def test_m_act_036_a_cycle_closed_between_acceptance_and_apply_fails_on_the_receipt(
    app: App, workspace: Workspace
) -> None:
    with workspace.memory.processor.paused():
        first = _act(app, "wrote a.txt", produces=["b.txt"])
        second = _act(app, "b.txt", produces=["wrote a.txt"])
    assert settled(app, first["structuredContent"]["receipt"])["state"] == "applied"
    body = settled(app, second["structuredContent"]["receipt"])
    assert body["state"] == "failed"
    assert "cycle" in body["detail"]


def test_m_act_040_043_044_the_ack_is_pending_and_one_agents_writes_apply_in_order(
    app: App, workspace: Workspace
) -> None:
    with workspace.memory.processor.paused():
        action = _act(app, "renamed the table", produces=["accounts v2"])
        content = action["structuredContent"]
        assert content["receipt_state"] == "pending"
        for key in ("action_node", "created", "edges"):
            assert key not in content
        after = derive(app, concept("accounts v2 has a tenant column"))
    body = settled(app, content["receipt"])
    assert body["action_node"] == node_by_content(workspace, "renamed the table").uuid
    assert "created" in body
    assert "edges" in body
    assert settled(app, after)["state"] == "applied"
    seq = {
        str(content): int(at)
        for content, at in workspace.reader().execute("SELECT content, seq FROM memory_nodes")
    }
    assert seq["renamed the table"] < seq["accounts v2 has a tenant column"]  # in the order sent


def test_m_act_046_a_record_action_embeds_its_texts_in_one_embedder_call(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedder batches (the hashing one takes a list): the action's own text and the
    concepts it creates (each embedded with the action as its context) go in one call. Also
    OQ-05: a record_action has an embedding step of its own, as a derive does."""
    batches: list[list[str]] = []
    embed = workspace.embedder.embed

    def recording(texts: Any) -> Any:
        batches.append(list(texts))
        return embed(texts)

    monkeypatch.setattr(workspace.embedder, "embed", recording)
    texts = ["the nightly export file", "the export manifest", "the export schedule"]
    ack = _act(app, "ran the nightly export", produces=texts[:2], modifies=texts[2:])
    settled(app, ack["structuredContent"]["receipt"])
    action = "ran the nightly export"
    holding = [b for b in batches if any(t.startswith(action) for t in b)]
    assert len(holding) == 1, batches
    assert sorted(t.split(" — ")[0] for t in holding[0]) == sorted([action, *texts])


def test_m_act_006_targets_are_at_most_64_combined_across_the_three(
    app: App, workspace: Workspace
) -> None:
    """Also M-LIM-010: 64 produces + modifies + depends_on entries are accepted and applied;
    one more, split any way across the three, is refused naming the combined limit."""
    entries = [f"target {n}" for n in range(65)]
    error = _refused(
        app, workspace, "x", produces=entries[:30], modifies=entries[30:60], depends_on=entries[60:]
    )
    assert error.field == "depends_on"
    assert "at most 64 entries combined (65 given)" in error.message
    ack = _act(
        app, "touched 64", produces=entries[:30], modifies=entries[30:60], depends_on=entries[60:64]
    )
    assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"
    action = node_by_content(workspace, "touched 64")
    kinds = ["produces", "modifies", "depends_on"]
    assert len(state.targets(workspace.reader(), SESSION, action.uuid, kinds)) == 64


def test_m_act_007_against_is_at_most_8_entries(app: App, workspace: Workspace) -> None:
    """Also M-LIM-015: 8 `against` entries are accepted and recorded; 9 are refused."""
    wrong = [f"the old rule {n}" for n in range(9)]
    settled(app, derive(app, *(concept(text, "entity") for text in wrong)))
    error = _refused(app, workspace, "replaced the rules", against=wrong)
    assert error.field is not None
    assert error.field.startswith("against")
    ack = _act(app, "replaced the rules", against=wrong[:8])
    assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"
    action = node_by_content(workspace, "replaced the rules")
    assert len(state.targets(workspace.reader(), SESSION, action.uuid, ["contradicts"])) == 8


def test_m_act_013_014_depends_on_is_evidence_and_blast_radius_produces_and_modifies_are_not(
    app: App, workspace: Workspace
) -> None:
    """The named concept's blast radius and its canonization evidence (the support the
    evidence rules read) gain the action's depends_on entry, and nothing from its produces or
    modifies entries."""
    settled(app, derive(app, *(concept(t, "entity") for t in (SCHEMA, "out.sql", "in.sql"))))
    ack = _act(app, "migrated", depends_on=[SCHEMA], produces=["out.sql"], modifies=["in.sql"])
    settled(app, ack["structuredContent"]["receipt"])
    reader = workspace.reader()
    action = node_by_content(workspace, "migrated")
    schema, out, into = (node_by_content(workspace, t).uuid for t in (SCHEMA, "out.sql", "in.sql"))
    assert state.blast_radius(reader, schema) == 1
    assert state.blast_radius(reader, out) == 0
    assert state.blast_radius(reader, into) == 0
    support = evidence.load(reader, SESSION, [schema, out, into]).support
    assert [(s.target, s.concept, s.kind) for s in support] == [
        (schema, action.uuid, SupportKind.DEPENDS_ON)
    ]


def test_m_act_024_an_8_hex_entry_that_is_a_concepts_text_names_that_concept(
    app: App, workspace: Workspace
) -> None:
    """The 8-hex entry also prefixes another concept's id; the text match wins."""
    settled(app, derive(app, concept(SCHEMA, "entity")))
    prefix = node_by_content(workspace, SCHEMA).uuid[:8]
    settled(app, derive(app, concept(prefix, "entity")))
    named = node_by_content(workspace, prefix)
    ack = _act(app, "checked the prefix", depends_on=[prefix])
    settled(app, ack["structuredContent"]["receipt"])
    action = node_by_content(workspace, "checked the prefix")
    cited = state.targets(workspace.reader(), SESSION, action.uuid, ["depends_on"])
    assert cited == [named.uuid]
