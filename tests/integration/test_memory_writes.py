"""lambo_derive, lambo_record_action and lambo_stats on a real workspace (issue 11, seed 001).

Writes go through the one dispatch; the intent processor applies them on its own thread, and
`settled` waits for a receipt through lambo_stats's wait_ms, as an agent would. Refusals are
checked with the session's WAL head unchanged: nothing was written.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.ids import GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace

AGENT = "agent-a"
SESSION = GroupId("liminis")
PAIR = {"parent": "p", "child": "q"}


def call(app: App, name: str, /, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = operations.dispatch(app, name, params)
    return result


def derive(app: App, *concepts: dict[str, Any], agent: str = AGENT, **extra: Any) -> str:
    """Derive and return the receipt id."""
    ack = call(app, "lambo_derive", agent_id=agent, concepts=list(concepts), **extra)
    receipt: str = ack["structuredContent"]["receipt"]
    return receipt


def concept(content: str, kind: str = "logic", **refs: list[str]) -> dict[str, Any]:
    return {"content": content, "concept_type": kind, **refs}


def settled(app: App, receipt: str, agent: str = AGENT) -> dict[str, Any]:
    answer = call(app, "lambo_stats", agent_id=agent, receipt=receipt, wait_ms=10_000)
    body: dict[str, Any] = answer["structuredContent"]["receipt"]
    return body


def node_by_content(workspace: Workspace, content: str) -> state.Node:
    (found,) = state.concepts_with_content(workspace.reader(), SESSION, content)
    return found


def head(workspace: Workspace) -> int:
    return workspace.log.head(SESSION)


def test_m_der_081_082_083_084_the_ack_is_four_lines_and_names_no_node(app: App) -> None:
    """Also M-DER-080: the call answers `pending`, before the write is applied."""
    ack = call(app, "lambo_derive", agent_id=AGENT, concepts=[concept("user schema", "entity")])
    lines = ack["text"].split("\n")
    content = ack["structuredContent"]
    receipt = content["receipt"]
    assert lines == [
        "accepted 1 concept(s) for background write; validated and ordered, not yet applied",
        f"receipt {receipt}: pending — admitted, not yet applied; ask again",
        "The outcome arrives on your next tool response. To wait for it, call lambo_stats"
        f" with receipt={receipt} (add wait_ms to block).",
        'Recorded under agent_id "agent-a"; send this same id on every call.',
    ]
    assert content == {
        "summary": lines[0],
        "receipt": receipt,
        "receipt_state": "pending",
        "agent_id": AGENT,
        "warnings": [],
    }
    assert receipt.startswith("lwr1.")


def test_m_der_096_m_sta_081_an_applied_receipt_carries_ids_and_counts(
    app: App, workspace: Workspace
) -> None:
    receipt = derive(app, concept("user schema", "entity"), concept("lease TTL is 45s"))
    body = settled(app, receipt)
    assert body["state"] == "applied"
    assert body["detail"].startswith("derived 2 concept(s): 2 created (2 embedded), 0 matched")
    assert body["created_count"] == 2
    assert body["matched_count"] == 0
    assert {node_by_content(workspace, "user schema").uuid} <= set(body["created"])
    for key in ("semantic_merged", "reinforced", "edges", "embedded"):
        assert isinstance(body[key], int)


def test_m_der_086_087_the_outcome_is_piggybacked_once_on_the_next_response(app: App) -> None:
    receipt = derive(app, concept("flushes retry three times"))
    call(app, "lambo_stats", agent_id="someone-else", receipt=receipt, wait_ms=10_000)
    first = call(app, "lambo_stats", agent_id=AGENT)
    assert "write receipts:" in first["text"]
    (piggy,) = first["structuredContent"]["write_receipts"]
    assert piggy["id"] == receipt
    assert piggy["state"] == "applied"
    again = call(app, "lambo_stats", agent_id=AGENT)
    assert "write_receipts" not in again["structuredContent"]


def test_m_sta_085_115_a_receipt_is_the_agents_own_and_unknown_ids_were_never_issued(
    app: App,
) -> None:
    """Also M-STA-116: another agent asking is `forbidden`."""
    receipt = derive(app, concept("the cache is content addressed"))
    assert settled(app, receipt, agent="agent-b")["state"] == "forbidden"
    assert settled(app, receipt)["state"] == "applied"
    epoch = receipt.split(".")[1]
    unknown = f"lwr1.{epoch}.1.ff"
    assert settled(app, unknown)["state"] == "never_issued"
    with pytest.raises(DomainError, match="receipt"):
        call(app, "lambo_stats", agent_id=AGENT, receipt="not-a-receipt")


def test_m_arg_040_look_alike_texts_land_on_one_concept(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("deploys go through the staging cluster")))
    look_alike = "deploys go through the sta\u200dging cluster"  # a zero-width joiner inside
    body = settled(app, derive(app, concept(look_alike)))
    assert body["created_count"] == 0
    assert body["matched_count"] == 1
    assert state.counts(workspace.reader(), SESSION)["concept_count"] == 1


def test_m_arg_039_allowed_invisible_characters_are_kept_in_content(
    app: App, workspace: Workspace
) -> None:
    text = "the \U0001f468\u200d\U0001f469\u200d\U0001f467 family emoji is one grapheme"
    settled(app, derive(app, concept(text, "observation")))
    assert node_by_content(workspace, text).content == text


@pytest.mark.parametrize("form", ["short_id", "node_id", "content"])
def test_m_der_022_023_024_042_a_citation_by_each_reference_form(
    app: App, workspace: Workspace, form: str
) -> None:
    settled(app, derive(app, concept("rulings are cited by id", "constraint")))
    ruling = node_by_content(workspace, "rulings are cited by id")
    ref = {"short_id": ruling.uuid[:8], "node_id": ruling.uuid, "content": ruling.content}[form]
    body = settled(app, derive(app, concept("flush retries keep the lease", depends_on=[ref])))
    assert body["detail"].endswith("; 1 citation(s) recorded")
    citing = node_by_content(workspace, "flush retries keep the lease")
    assert state.targets(workspace.reader(), SESSION, citing.uuid, ["depends_on"]) == [ruling.uuid]
    assert state.blast_radius(workspace.reader(), ruling.uuid) == 1


def test_m_der_039_the_same_citation_again_reinforces_one_edge(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept("a ruling", "constraint")))
    for _ in range(2):
        settled(app, derive(app, concept("a decision", depends_on=["a ruling"])))
    rows = (
        workspace.reader()
        .execute("SELECT reinforced FROM memory_edges WHERE kind='depends_on'")
        .fetchall()
    )
    assert [tuple(row) for row in rows] == [(1,)]


def _refused(app: App, workspace: Workspace, match: str, **params: Any) -> DomainError:
    before = head(workspace)
    with pytest.raises(DomainError, match=match) as error:
        call(app, "lambo_derive", agent_id=AGENT, **params)
    assert head(workspace) == before, "a refused call wrote nothing"
    return error.value


def test_m_der_028_033_a_reference_that_matches_nothing_is_refused(
    app: App, workspace: Workspace
) -> None:
    """Also M-DER-027: a reference must name a concept that already exists."""
    error = _refused(
        app,
        workspace,
        "matches nothing",
        concepts=[concept("new ruling"), concept("cites it", depends_on=["new ruling"])],
    )
    assert error.message.startswith('reference refused: concepts[1].depends_on[0] "new ruling"')
    assert error.message.endswith("nothing was written")


def test_m_der_029_a_reference_matching_several_lists_them(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("port is 8080", "observation")))  # never matched by key
    settled(app, derive(app, concept("port is 8080", "logic")))  # merges only with its type
    error = _refused(
        app, workspace, "matches several", concepts=[concept("x", depends_on=["port is 8080"])]
    )
    for found in state.concepts_with_content(workspace.reader(), SESSION, "port is 8080"):
        assert found.uuid[:8] in error.message


def test_m_der_030_an_interactions_id_is_refused(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("something learned")))
    (interaction,) = (
        workspace.reader()
        .execute("SELECT uuid FROM memory_nodes WHERE node_kind='interaction'")
        .fetchone()
    )
    _refused(
        app,
        workspace,
        "is an interaction's id",
        concepts=[concept("y", depends_on=[interaction])],
    )


def test_m_der_031_060_a_concept_citing_itself_or_citing_and_contradicting_one(
    app: App, workspace: Workspace
) -> None:
    """Also M-DER-059: an `against` naming the concept itself is refused as a citation is."""
    settled(app, derive(app, concept("the ruling", "constraint")))
    _refused(
        app,
        workspace,
        "names the concept itself",
        concepts=[concept("the ruling", "constraint", depends_on=["the ruling"])],
    )
    _refused(
        app,
        workspace,
        "both cited and contradicted",
        concepts=[concept("z", depends_on=["the ruling"], against=["the ruling"])],
    )
    _refused(
        app,
        workspace,
        "names the concept itself",
        concepts=[concept("the ruling", "constraint", against=["the ruling"])],
    )


def test_m_der_032_a_citation_that_would_close_a_dependency_loop(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept("A holds")))
    settled(app, derive(app, concept("B holds", depends_on=["A holds"])))
    _refused(
        app,
        workspace,
        "would close a dependency loop",
        concepts=[concept("A holds", depends_on=["B holds"])],
    )


def test_m_der_051_057_065_contradictions_are_recorded_both_ways(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept("users live in the users table", "entity")))
    body = settled(
        app,
        derive(
            app,
            concept(
                "accounts replaced the users table",
                "observation",
                against=["users live in the users table"],
            ),
        ),
    )
    assert body["detail"].endswith("; 1 contradiction(s) recorded")
    newer = node_by_content(workspace, "accounts replaced the users table")
    older = node_by_content(workspace, "users live in the users table")
    assert state.targets(workspace.reader(), SESSION, newer.uuid, ["contradicts"]) == [older.uuid]
    assert state.blast_radius(workspace.reader(), older.uuid) == 0  # M-DER-054: not evidence
    settled(
        app,
        derive(app, concept("users live in the users table", "entity", against=[newer.uuid])),
    )
    assert state.targets(workspace.reader(), SESSION, older.uuid, ["contradicts"]) == [newer.uuid]


def test_m_der_074_075_077_parent_of_stays_acyclic(app: App, workspace: Workspace) -> None:
    """Also M-DER-070/073: `parent_of` pairs whose ends the call creates are applied."""
    pairs = [{"parent": "auth", "child": "sessions"}, {"parent": "sessions", "child": "tokens"}]
    settled(app, derive(app, concept("auth", "entity"), parent_of=pairs))
    auth = node_by_content(workspace, "auth")
    assert state.blast_radius(workspace.reader(), auth.uuid) == 1
    message = (
        "store error: parent_of would close a Hierarchical cycle (the hierarchy must stay "
        "acyclic); nothing was written"
    )
    error = _refused(
        app,
        workspace,
        "Hierarchical cycle",
        concepts=[concept("tokens", "entity")],
        parent_of=[{"parent": "tokens", "child": "auth"}],
    )
    assert error.message == message
    _refused(
        app,
        workspace,
        "Hierarchical cycle",
        concepts=[concept("p", "entity")],
        parent_of=[{"parent": "p", "child": "q"}, {"parent": "q", "child": "p"}],
    )


def test_m_act_010_011_012_041_an_action_and_its_targets(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("user schema", "entity")))
    ack = call(
        app,
        "lambo_record_action",
        agent_id=AGENT,
        action="created migrations/003.sql",
        produces=["migrations/003.sql"],
        depends_on=["user schema"],
    )
    assert ack["text"].split("\n")[0] == (
        "accepted action 'created migrations/003.sql' for background write; validated and"
        " ordered, not yet applied"
    )
    assert "action_node" not in ack["structuredContent"]
    body = settled(app, ack["structuredContent"]["receipt"])
    action = node_by_content(workspace, "created migrations/003.sql")
    assert action.concept_type == "resource"
    assert body["action_node"] == action.uuid
    produced = node_by_content(workspace, "migrations/003.sql")
    schema = node_by_content(workspace, "user schema")
    reader = workspace.reader()
    assert state.targets(reader, SESSION, action.uuid, ["produces"]) == [produced.uuid]
    assert state.targets(reader, SESSION, action.uuid, ["depends_on"]) == [schema.uuid]
    assert state.blast_radius(reader, schema.uuid) == 1  # M-ACT-013
    assert state.blast_radius(reader, produced.uuid) == 0  # M-ACT-014


def test_m_act_031_032_035_action_refusals(app: App, workspace: Workspace) -> None:
    settled(app, derive(app, concept("the build is green", "observation")))
    before = head(workspace)
    with pytest.raises(DomainError, match="both cited and contradicted"):
        call(
            app,
            "lambo_record_action",
            agent_id=AGENT,
            action="ran the build",
            depends_on=["the build is green"],
            against=["the build is green"],
        )
    first = settled(
        app,
        call(app, "lambo_record_action", agent_id=AGENT, action="wrote a.txt", produces=["b.txt"])[
            "structuredContent"
        ]["receipt"],
    )
    assert first["state"] == "applied"
    with pytest.raises(DomainError, match="Causal or Dependency cycle"):
        call(app, "lambo_record_action", agent_id=AGENT, action="b.txt", produces=["wrote a.txt"])
    assert head(workspace) == before + 2  # the one applied action: its intent and its outcome


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"concepts": [concept("x")]}, "agent_id"),
        ({"agent_id": AGENT, "concepts": [concept("x")], "created_at": "2024"}, "created_at"),
        ({"agent_id": AGENT, "concepts": [concept("x")], "flushed_at": "2024"}, "flushed_at"),
        ({"agent_id": AGENT, "concepts": [concept("x")], "colour": 1}, "colour"),
        ({"agent_id": AGENT, "concepts": [{**concept("x"), "weight": 2}]}, "concepts[0]"),
        ({"agent_id": AGENT, "concepts": [concept("x", "Entity")]}, "concepts[0].concept_type"),
        ({"agent_id": "a\nb", "concepts": [concept("x")]}, "agent_id"),
        ({"agent_id": AGENT, "concepts": [concept("x\u202e")]}, "concepts[0].content"),
        ({"agent_id": AGENT, "concepts": [concept("see [IMAGE:R17]")]}, "concepts[0].content"),
        ({"agent_id": AGENT, "concepts": [concept("x")], "event_time": "yesterday"}, "event_time"),
        ({"agent_id": AGENT, "concepts": [concept("x" * 8190)]}, "concepts[0]"),
        ({"agent_id": AGENT, "concepts": [concept("x")] * 65}, "concepts"),
        ({"agent_id": AGENT, "concepts": [concept("x")], "scope": "other"}, "scope"),
        ({"agent_id": AGENT, "concepts": [concept("x")], "repo_scope": "g/a b"}, "repo_scope"),
        ({"agent_id": "a" * 257, "concepts": [concept("x")]}, "agent_id"),  # M-ARG-053
        ({"agent_id": AGENT, "concepts": [concept("é" * 8193)]}, "concepts[0].content"),
        ({"agent_id": AGENT, "concepts": [concept("x", depends_on=["r"] * 9)]}, "concepts"),
        (
            {
                "agent_id": AGENT,
                "concepts": [concept(f"c{n}", depends_on=["r"] * 8) for n in "abcde"],
            },
            "depends_on",
        ),  # 40 > 32 per call (M-DER-021)
        ({"agent_id": AGENT, "concepts": [concept("x", against=["r"] * 9)]}, "concepts"),
        (
            {"agent_id": AGENT, "concepts": [concept(f"c{n}", against=["r"] * 8) for n in "abcde"]},
            "against",
        ),  # M-DER-050
        (
            {"agent_id": AGENT, "concepts": [concept("x")], "parent_of": [PAIR] * 257},
            "parent_of",
        ),  # M-DER-071
    ],
)
def test_m_arg_m_der_every_argument_rule_refuses_before_the_ack(
    app: App, workspace: Workspace, params: dict[str, Any], field: str
) -> None:
    """Also M-DER-002/003/004/005/020: an unknown argument or concept key, 65 concepts, content
    over 16 KB and 9 citations are refused by field before the ack; M-DER-146: so is a concept
    over the embedding-text limit (8,190 bytes sent alone)."""
    before = head(workspace)
    with pytest.raises(DomainError) as error:
        call(app, "lambo_derive", **params)
    assert error.value.field is not None
    assert error.value.field.startswith(field.split("[", maxsplit=1)[0])
    assert head(workspace) == before


def test_m_der_007_a_capitalised_type_gets_the_seeds_sentence(app: App) -> None:
    with pytest.raises(DomainError) as error:
        call(app, "lambo_derive", agent_id=AGENT, concepts=[concept("x", "Entity")])
    assert error.value.message == (
        "unknown variant Entity, expected one of entity, logic, constraint, resource, observation"
    )


def test_m_sta_005_a_long_wait_is_clamped_not_refused(app: App) -> None:
    """Also M-STA-006: a negative wait_ms is refused, naming the field."""
    receipt = derive(app, concept("waits clamp at 34 s"))
    answer = call(app, "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=10**9)
    assert answer["structuredContent"]["receipt"]["state"] == "applied"
    with pytest.raises(DomainError, match="wait_ms"):
        call(app, "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=-1)


def test_m_sta_120_the_payload_carries_every_queue_key_and_the_embedding_line(
    app: App,
) -> None:
    """Also M-STA-050/055/122: `embedding_contract` as {kind, model, dim} and
    `embedding_modalities` are always there, and the server-wide bound is 1024. Also M-CFG-051
    (the text-only half): a text embedder gives `embedding_modalities` `["text"]`."""
    answer = call(app, "lambo_stats", agent_id=AGENT)
    payload = answer["structuredContent"]
    for key in (
        "flush_lag_ms",
        "node_count",
        "edge_count",
        "concept_count",
        "degraded",
        "promotion_policy",
        "embedding_contract",
        "embedding_modalities",
        "gc",
        "write_queue_bound",
        "write_queue_lane_bound",
        "write_queue_apply_ms_p50",
        "write_queue_replay_owed",
        "write_queue_dropped_closed",
        "receipts_retained",
    ):
        assert key in payload, key
    assert payload["write_queue_lane_bound"] == 64
    assert payload["write_queue_bound"] == 1024
    assert answer["text"].split("\n")[-1].startswith("embedding: ")
    assert set(payload["embedding_contract"]) == {"kind", "model", "dim"}
    assert payload["embedding_modalities"] == ["text"]  # a text embedder


def test_m_sta_124_a_full_lane_drops_the_write_and_writes_nothing(
    app: App, workspace: Workspace
) -> None:
    """Also M-STA-134: the dropped write is counted in `write_queue_dropped`."""
    with workspace.memory.processor.paused():  # nothing settles: the lane fills
        for n in range(64):
            derive(app, concept(f"fact number {n}"))
        before = head(workspace)
        ack = call(app, "lambo_derive", agent_id=AGENT, concepts=[concept("one too many")])
        assert ack["structuredContent"]["receipt_state"] == "dropped"
        assert "nothing was written" in ack["structuredContent"]["summary"]
        assert head(workspace) == before
        stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]  # M-STA-134
        assert (stats["write_queue_dropped"], stats["write_queue_dropped_closed"]) == (1, 0)
        other = call(app, "lambo_derive", agent_id="agent-b", concepts=[concept("another lane")])
        assert other["structuredContent"]["receipt_state"] == "pending"
    assert settled(app, other["structuredContent"]["receipt"], agent="agent-b")["state"] == (
        "applied"
    )


def test_m_res_reserve_conflict_and_release(app: App, workspace: Workspace) -> None:
    """M-RES-003/005: node_id names a node; `release: true` releases instead of taking."""
    settled(app, derive(app, concept("shared concept", "entity")))
    node = node_by_content(workspace, "shared concept").uuid
    held = call(app, "lambo_reserve", agent_id=AGENT, node_id=node, ttl_seconds=60)
    assert held["structuredContent"]["reserved"] is True
    with pytest.raises(DomainError, match='reserved by agent_id "agent-a"'):
        call(app, "lambo_reserve", agent_id="agent-b", node_id=node)
    released = call(app, "lambo_reserve", agent_id=AGENT, node_id=node, release=True)
    assert released["structuredContent"]["released"] is True
    call(app, "lambo_reserve", agent_id="agent-b", node_id=node)
    with pytest.raises(DomainError, match="names no node"):
        call(app, "lambo_reserve", agent_id=AGENT, node_id="00000000-0000-0000-0000-000000000000")


def test_m_sta_103_111_intents_left_pending_are_applied_by_the_next_process(
    settings: Settings, embedder: Embedder
) -> None:
    """An acked write the process did not apply before it closed is a durable intent: the next
    process applies it first, and its receipt answers from the log there. Also M-STA-136..139,
    M-STA-151/152/156: the closing process counts it deferred; the next counts it replayed,
    not applied, and owes nothing once it is; the write applied before the close survives."""
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        applied = derive(app, concept("applied before the restart"))
        settled(app, applied)
        with ws.memory.processor.paused():
            owed = derive(app, concept("owed across the restart"))
            asked = call(app, "lambo_stats", agent_id=AGENT, receipt=owed)
            assert asked["structuredContent"]["receipt"]["state"] == "pending"
            ws.memory.close()  # as a clean shutdown does, with the write still pending
        asked = call(app, "lambo_stats", agent_id=AGENT, receipt=owed)
        assert asked["structuredContent"]["receipt"]["state"] == "intent_durable"
        assert asked["structuredContent"]["write_queue_deferred"] == 1
        assert asked["structuredContent"]["write_queue_applied"] == 1
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = settled(app, owed)
        assert body["state"] == "applied_after_restart"
        assert body["detail"].startswith("derived 1 concept(s): 1 created")
        assert settled(app, applied)["state"] == "applied_after_restart"
        assert settled(app, owed, agent="agent-b")["state"] == "forbidden"
        stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
        assert stats["write_queue_replayed"] == 1
        assert stats["write_queue_replay_owed"] == 0
        assert stats["write_queue_applied"] == 0  # only this process's own accepted writes
        node_by_content(ws, "owed across the restart")
        node_by_content(ws, "applied before the restart")


def test_an_intent_in_a_pinned_session_waits_for_the_pins_release(
    app: App, workspace: Workspace
) -> None:
    """A bounded replay pins the session: its pending intents are not applied (the writer
    refuses the pinned group) and the processor does not spin on them; releasing the pin lets
    them apply."""
    with workspace.memory.processor.paused():
        receipt = derive(app, concept("written while the session gets pinned"))
        seq = head(workspace)
        call(app, "knowledge_rebuild_from_wal", group_id=SESSION, to_seq=seq, force_clear=True)
    asked = call(app, "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=1500)
    assert asked["structuredContent"]["receipt"]["state"] == "pending"
    assert workspace.memory.processor.failure is None
    call(app, "knowledge_rebuild_from_wal", group_id=SESSION, from_seq=seq + 1)
    assert settled(app, receipt)["state"] == "applied"


def test_delete_by_group_empties_a_session_that_holds_only_memory(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept("only memory here")))
    call(app, "knowledge_delete_by_group", group_ids=[SESSION], confirm=True)
    assert state.counts(workspace.reader(), SESSION)["node_count"] == 0


OLD_VERSION = "the release pins version 2.3 of the parser"
NEW_VERSION = "the release pins version 2.4 of the parser"


@pytest.mark.minilm
def test_m_der_100_117_118_119_a_value_change_is_a_replacement_candidate_not_a_merge(
    app: App, workspace: Workspace
) -> None:
    """Under MiniLM a sentence with one number changed clears the merge threshold; the digit
    guard refuses the merge (ADR 0025), and the receipt lists the older concept instead. Also
    M-STA-082: the receipt object carries `replacement_candidates`; M-DER-120: each candidate
    has id, node_id, excerpt, cosine and new_id, and `merged` only when merged."""
    settled(app, derive(app, concept(OLD_VERSION)))  # cosine 0.988 with NEW_VERSION
    older = node_by_content(workspace, OLD_VERSION)
    receipt = derive(app, concept(NEW_VERSION))
    body = settled(app, receipt)
    assert body["created_count"] == 1
    assert body["semantic_merged"] == 0
    newer = node_by_content(workspace, NEW_VERSION)
    (candidate,) = body["replacement_candidates"]["candidates"]
    assert body["replacement_candidates"]["total"] == 1
    assert candidate["id"] == older.uuid[:8]
    assert candidate["node_id"] == older.uuid
    assert candidate["new_id"] == newer.uuid[:8]
    assert candidate["cosine"] >= 0.98
    assert OLD_VERSION.startswith(candidate["excerpt"].rstrip("…"))
    assert "merged" not in candidate
    assert "newer" not in candidate
    assert (
        "; 1 replacement candidate(s): existing concepts this write may replace" in (body["detail"])
    )
    text = call(app, "lambo_stats", agent_id=AGENT, receipt=receipt)["text"]
    assert f'  - {older.uuid[:8]} "{OLD_VERSION}" (cosine ' in text


def test_m_der_121_a_receipt_without_candidates_has_no_key(app: App) -> None:
    body = settled(app, derive(app, concept("nothing close to this one exists yet")))
    assert "replacement_candidates" not in body
    assert "replacement candidate" not in body["detail"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (
            {
                "action": "x",
                "produces": ["a"] * 30,
                "modifies": ["b"] * 30,
                "depends_on": ["c"] * 5,
            },
            "depends_on",
        ),  # 65 combined (M-ACT-006)
        ({"action": "x", "against": ["a"] * 9}, "against"),  # M-ACT-007
        ({"action": "see [image:r17]"}, "action"),  # M-ACT-004
        ({"action": "x", "created_at": "2026-01-01T00:00:00Z"}, "created_at"),
        ({"action": "x", "event_time": "2026-13-01"}, "event_time"),
        ({"action": "x", "depends_on": ["a\x1b[31m"]}, "depends_on[0]"),
    ],
)
def test_m_act_every_argument_rule_refuses_before_the_ack(
    app: App, workspace: Workspace, params: dict[str, Any], field: str
) -> None:
    before = head(workspace)
    with pytest.raises(DomainError) as error:
        call(app, "lambo_record_action", agent_id=AGENT, **params)
    assert error.value.field is not None
    assert error.value.field.startswith(field.split("[", maxsplit=1)[0])
    assert head(workspace) == before


def test_m_sta_007_a_wait_and_a_concurrent_admission_never_deadlock(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lambo_stats wait and another agent's write at the same time: the admission holds the
    memory service's lock while it asks the processor for its bounds, so the waiter must not
    hold the processor's lock while it asks the service whether its receipt settled (it did,
    and the two deadlocked: every lambo call and the processor hung). Each admission is slowed
    inside the service's lock here, so the waiter's checks land inside that window. On a
    deadlock the workspace is left open (closing it would hang too) and the test fails."""
    ws = make_workspace(settings, embedder).open()
    app = App(ws)
    processor = ws.memory.processor
    bounds = processor.stopping

    def slow_stopping() -> bool:  # called by admission under the memory service's lock
        time.sleep(0.02)
        return bounds()

    answers: list[str] = []
    finished = threading.Event()
    admitted = threading.Event()

    def wait(receipt: str) -> None:
        answer = call(app, "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=2_500)
        answers.append(answer["structuredContent"]["receipt"]["state"])
        finished.set()

    def write() -> None:  # the lane fills, then each write is dropped: all are admissions
        n = 0
        while not finished.is_set():
            derive(app, concept(f"busy fact b{n:04d}"), agent="agent-b")
            admitted.set()
            n += 1

    with processor.paused():  # the waited-for write stays pending
        receipt = derive(app, concept("waited for while others write"))
        monkeypatch.setattr(processor, "stopping", slow_stopping)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        assert admitted.wait(10)
        waiter = threading.Thread(target=wait, args=(receipt,), daemon=True)
        waiter.start()
        waiter.join(10)
        finished.set()
        writer.join(10)
        if waiter.is_alive() or writer.is_alive():
            pytest.fail("a lambo_stats wait and a concurrent write deadlocked")
    try:
        assert answers == ["pending"]
        assert settled(app, receipt)["state"] == "applied"
    finally:
        ws.close()


def test_m_sta_040_stats_and_inspect_report_the_configured_policy(
    settings: Settings, embedder: Embedder
) -> None:
    solo = Settings(
        workspace=settings.workspace, tuning=Tuning().with_values(__promotion_policy="Solo")
    )
    with make_workspace(solo, embedder) as ws:
        app = App(ws)
        assert (
            call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]["promotion_policy"]
            == "Solo"
        )
        settled(app, derive(app, concept("a solo session's fact")))
        inspected = call(app, "lambo_inspect", agent_id=AGENT, focus="a solo session's fact")
        assert inspected["structuredContent"]["admission"]["policy"] == "Solo"


def test_m_arg_040_identity_lookups_read_the_key_and_content_indexes(
    app: App, workspace: Workspace
) -> None:
    """A derive looks its concept up by canonical key and by content (the identity rule of
    M-ARG-040). With no statistics SQLite preferred the (group, node_kind, seq) index for both,
    so every derive scanned all of the session's concepts: a 100k session wrote ~20x slower
    than an empty one. Each lookup must search the index on its own column."""
    for index in range(3):
        settled(app, derive(app, concept(f"indexed lookup fact number {index}")))
    conn = workspace.reader()
    issued: list[str] = []
    conn.set_trace_callback(issued.append)
    try:
        found = node_by_content(workspace, "indexed lookup fact number 1")
        assert found.canonical_key is not None
        assert [n.uuid for n in state.concepts_with_key(conn, SESSION, found.canonical_key)] == [
            found.uuid
        ]
    finally:
        conn.set_trace_callback(None)
    lookups = [sql for sql in issued if sql.lstrip().upper().startswith("SELECT")]
    assert len(lookups) == 2
    plans = [
        " ".join(str(row[3]) for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
        for sql in lookups
    ]
    assert "memory_nodes_content (group_id=? AND content=?)" in plans[0], plans[0]
    assert "memory_nodes_key (group_id=? AND canonical_key=?)" in plans[1], plans[1]


def test_m_sta_081_a_settled_receipt_is_already_counted_by_the_queue_figures(
    app: App, workspace: Workspace
) -> None:
    """A caller who finds its receipt settled (a wait may find it so on its first look, without
    waking) and then asks for the stats sees that write counted: the processor counts a write
    before its receipt settles, so `write_queue_applied` and the apply samples never lag it.
    Also M-STA-011 (the figures beside a waited receipt agree with it) and M-STA-133."""
    processor = workspace.memory.processor
    seen: list[tuple[int, int]] = []

    def at_settle(receipt: str, outcome_state: str, outcome: object) -> None:
        seen.append((processor.counters.applied, len(processor.counters.apply_ms)))

    processor.listeners.insert(0, at_settle)
    settled(app, derive(app, concept("user schema", "entity")))
    assert seen == [(1, 1)]
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    assert (stats["write_queue_applied"], stats["write_queue_apply_samples"]) == (1, 1)
