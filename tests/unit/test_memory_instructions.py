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


def test_m_instr_008_010_agent_id_and_server_stamped_times() -> None:
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
