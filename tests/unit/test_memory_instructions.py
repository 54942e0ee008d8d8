"""The server's instructions when it serves the memory tools (seed 001, M-INSTR)."""

from __future__ import annotations

from lcg.interfaces.mcp_server import INSTRUCTIONS, instructions_for
from lcg.interfaces.operations import Scope
from lcg.interfaces.scopes import Visibility

MEMORY_ONLY = Visibility(frozenset({Scope.MEMORY}))


def test_m_instr_002_003_013_the_seed_text_naming_the_session() -> None:
    text = instructions_for(MEMORY_ONLY, "demo")
    assert text.startswith("Lambo agentic graph memory for session 'demo'. Call lambo_recall")
    assert text.endswith("(two you fire at once have no order to\nkeep).")
    assert "applied in the BACKGROUND" in text
    assert "lambo_stale" not in text
    assert "lambo_derive_image" not in text
    assert instructions_for(MEMORY_ONLY, "kestrel") == text.replace("'demo'", "'kestrel'")


def test_m_instr_008_010_oq_30_agent_id_and_server_stamped_times() -> None:
    """OQ-30: the line breaks are literal, as the document prints them, and so is
    `(<your-model-id>)`."""
    text = instructions_for(MEMORY_ONLY, "demo")
    assert "(<your-model-id>)" in text
    assert "caller-asserted and unverified" in text
    assert "created_at is\nserver-stamped" in text


def test_knowledge_tools_alone_keep_their_sentence_and_both_get_both() -> None:
    knowledge = Visibility(frozenset({Scope.READ, Scope.WRITE}))
    assert instructions_for(knowledge, "demo") == INSTRUCTIONS
    both = instructions_for(Visibility(frozenset(Scope)), "demo")
    assert both.startswith("Lambo agentic graph memory for session 'demo'.")
    assert both.endswith(INSTRUCTIONS)


def _flat() -> str:
    return " ".join(instructions_for(MEMORY_ONLY, "demo").split())


def test_m_instr_004_005_recall_first_then_the_tools_to_write_reserve_and_look_around() -> None:
    text = _flat()
    assert "Call lambo_recall before acting on a task" in text
    assert (
        "lambo_derive and lambo_record_action to write what you learned and did, lambo_reserve"
        " before editing a shared concept, and lambo_inspect / lambo_saints / lambo_stats to"
        " look around" in text
    )


def test_m_instr_006_007_one_fact_a_concept_citations_by_id_and_against() -> None:
    text = _flat()
    assert "A concept is one fact, stated atomically and short" in text
    assert "activity goes to lambo_record_action" in text
    assert "cite it by its id (the 8 hex characters recall shows) in depends_on" in text
    assert "lambo_record_action's, or the concept's on lambo_derive" in text
    assert "name it the same way in against" in text


def test_m_instr_009_011_soft_locks_under_the_id_and_event_time() -> None:
    text = _flat()
    assert "Soft locks are held under it: distinct ids contend for a node" in text
    assert "callers sharing an id share its locks and can release each other's" in text
    assert (
        "lambo_derive and lambo_record_action may take optional RFC3339 event_time for"
        " historical about-time" in text
    )
    assert "omit it for a live fact" in text


def test_m_instr_012_writes_in_the_background_with_a_receipt_and_a_wait() -> None:
    text = _flat()
    assert "writes are applied in the BACKGROUND" in text
    assert "their ack carries a receipt id" in text
    assert "Their outcome arrives on your next tool response" in text
    assert "call lambo_stats with that receipt and a wait_ms first" in text
