"""The multi-agent transcript of fixtures/ (issue 412) replayed through the memory tools."""

from __future__ import annotations

from typing import Any

from lcg.fixtures import corpus
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace


def test_issue_11_the_transcript_lands_as_concepts_citations_and_actions(
    settings: Settings, embedder: Embedder
) -> None:
    transcript = corpus.transcript(corpus.MEMORY)
    settings = Settings(workspace=settings.workspace, session=transcript.session)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)

        def call(name: str, **params: Any) -> dict[str, Any]:
            result: dict[str, Any] = operations.dispatch(app, name, params)
            return result

        receipts = corpus.write_transcript(call, transcript)
        for agent, receipt in receipts:
            answer = call("lambo_stats", agent_id=agent, receipt=receipt, wait_ms=20_000)
            assert answer["structuredContent"]["receipt"]["state"] == "applied", receipt
        derived = transcript.derived()
        actions = [turn for turn in transcript.turns if turn.action is not None]
        counts = state.counts(ws.reader(), transcript.session)
        assert counts["concept_count"] == len(derived) + len(actions)
        assert counts["interaction_count"] == len(receipts)
        (citations,) = (
            ws.reader()
            .execute("SELECT COUNT(*) FROM memory_edges WHERE kind='depends_on'")
            .fetchone()
        )
        assert citations == sum(len(d.rests_on) for d in derived.values())
        agents = {
            row[0] for row in ws.reader().execute("SELECT DISTINCT agent_id FROM memory_nodes")
        }
        assert agents == set(transcript.agents)
