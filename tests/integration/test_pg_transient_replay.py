"""Nodes on one PostgreSQL log (ADR 0085) and a write failed for a transient cause (ADR 0108,
M-STA-105): the node holding the intents lease fails a write while its embedder is down; the
replay is owed by the next server to apply the session's writes, which on a shared log is
the node that takes the lease over, even one started before the failure. The real server,
two serving workspaces in the test's process, the outage injected into node A's embedder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from lcg.commands.tenure import INTENTS
from lcg.interfaces.read_after import reading_after
from lcg.interfaces.service import Service
from tests.helpers.memory_log import APPLIED, FAILED
from tests.helpers.service_process import wait_until
from tests.integration.test_pg_node_killed import session_events
from tests.integration.test_pg_nodes import (
    AGENT,
    SESSION,
    node_of,
    serve,
    structured,
    workspace_of,
)

pytestmark = pytest.mark.postgres
CONTENT = "the release train leaves on thursdays"


def stats(node: Service, **params: Any) -> dict[str, Any]:
    return structured(node.call("lambo_stats", {"agent_id": AGENT, **params}))


def test_m_sta_105_the_node_taking_the_intents_lease_replays_a_failure_the_holder_left(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = serve(tmp_path / "a", pg_url)
    try:
        wait_until(lambda: INTENTS in node_of(a).held(), "node A to take the intents lease")
        b = serve(tmp_path / "b", pg_url)  # started before the failure: its start owes nothing
    except BaseException:
        a.close()
        raise
    try:

        def unreachable(texts: Sequence[str]) -> Any:
            raise ConnectionError("the embedder refused the connection")

        monkeypatch.setattr(workspace_of(a).embedder.inner, "embed", unreachable)
        concepts = [{"content": CONTENT, "concept_type": "logic"}]
        receipt = structured(a.call("lambo_derive", {"agent_id": AGENT, "concepts": concepts}))[
            "receipt"
        ]
        failed = stats(a, receipt=receipt, wait_ms=20_000)["receipt"]
        assert failed["state"] == "failed"
        assert "the next server on this session replays it once" in failed["detail"]
        assert stats(b)["write_queue_replay_owed"] == 0  # B does not hold the intents lease
        a.close()  # releases its leases: B takes the intents lease at its next renewal
        wait_until(lambda: node_of(b).held().get(INTENTS), "B to take the intents lease")
        answer = stats(b, receipt=receipt, wait_ms=20_000)["receipt"]
        assert answer["state"] == "applied_after_restart"
        figures = stats(b)
        assert (figures["write_queue_replayed"], figures["write_queue_replay_owed"]) == (1, 0)
        with reading_after({SESSION: workspace_of(b).log.head(SESSION)}):
            recalled = b.call("lambo_recall", {"agent_id": AGENT, "query": "release train"})
        assert CONTENT in str(recalled["text"])
    finally:
        b.close()
    outcomes = [
        (topic, payload) for topic, payload in session_events(pg_url) if topic in (FAILED, APPLIED)
    ]
    assert [topic for topic, _ in outcomes] == [FAILED, APPLIED]
    assert outcomes[0][1]["replay_owed"] is True
