"""One holder serves every session of its workspace (ADR 0067): a real workspace opened by
`Service.start`, as a serving process opens it, and calls naming the session they are for.

The workspace lease is per workspace, so a second session cannot have a process of its own
beside the holder: the holder makes its memory service on first use, with its own receipts
and its own scheduled jobs, and the one intent processor applies both sessions' writes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import RpcError
from lcg.interfaces.service import Service
from lcg.projections.memory import state
from tests.helpers.service_process import wait_until

AGENT = "agent-a"
OWN = "alpha"  # the serve's own session (--session)
OTHER = "beta"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    served = Service(Settings(workspace=tmp_path, session=OWN), command="pytest")
    assert served.start() == "healthy", served.reason
    try:
        yield served
    finally:
        served.close()


def tool(service: Service, name: str, session: str | None, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = service.call(name, {"agent_id": AGENT, **params}, session=session)
    return result


def derive(service: Service, session: str | None, content: str) -> str:
    concepts = [{"content": content, "concept_type": "logic"}]
    ack = tool(service, "lambo_derive", session, concepts=concepts)
    receipt: str = ack["structuredContent"]["receipt"]
    return receipt


def settled(service: Service, session: str | None, receipt: str) -> dict[str, Any]:
    answer = tool(service, "lambo_stats", session, receipt=receipt, wait_ms=10_000)
    body: dict[str, Any] = answer["structuredContent"]["receipt"]
    return body


def recalled(service: Service, session: str | None, query: str) -> str:
    answer = tool(service, "lambo_recall", session, query=query)
    return str(answer["text"])


def test_two_sessions_through_one_service_keep_their_writes_apart(service: Service) -> None:
    mine = derive(service, None, "the billing queue retries three times before paging")
    theirs = derive(service, OTHER, "the search index is rebuilt every night at two")
    assert settled(service, None, mine)["state"] == "applied"
    assert settled(service, OTHER, theirs)["state"] == "applied"

    assert "billing queue" in recalled(service, OWN, "billing queue retries")
    assert "search index" not in recalled(service, OWN, "search index rebuilt nightly")
    assert "search index" in recalled(service, OTHER, "search index rebuilt nightly")
    assert "billing queue" not in recalled(service, OTHER, "billing queue retries")

    workspace = service._workspace
    assert workspace is not None
    conn = workspace.reader()
    assert state.counts(conn, OWN)["concept_count"] == 1
    assert state.counts(conn, OTHER)["concept_count"] == 1
    assert workspace.memory_sessions.sessions() == [OWN, OTHER]


def test_each_session_settles_its_own_receipts_and_counts_its_own_nodes(
    service: Service,
) -> None:
    receipt = derive(service, OTHER, "deploys go out on tuesdays only")
    assert settled(service, OTHER, receipt)["state"] == "applied"
    stats_there = tool(service, "lambo_stats", OTHER)["structuredContent"]
    stats_here = tool(service, "lambo_stats", None)["structuredContent"]
    assert stats_there["session"] == OTHER
    assert stats_there["concept_count"] == 1
    assert stats_here["session"] == OWN
    assert stats_here["concept_count"] == 0


def test_a_session_first_named_later_gets_its_own_scheduled_jobs(service: Service) -> None:
    def cycles(session: str) -> int:
        payload = tool(service, "lambo_stats", session)["structuredContent"]
        return int(payload["daemon_cycles"])

    # the daemon tick runs each second by default; a new session's jobs start when it is made
    assert cycles(OTHER) == 0
    wait_until(lambda: cycles(OTHER) >= 2, "the new session's daemon ticks")
    wait_until(lambda: cycles(OWN) >= 2, "the serve's own session's daemon ticks")
    workspace = service._workspace
    assert workspace is not None
    services = {s: workspace.memory_sessions.get(s) for s in (OWN, OTHER)}
    assert services[OWN].jobs is not services[OTHER].jobs


def test_an_invalid_session_name_is_refused_naming_the_rule(service: Service) -> None:
    workspace = service._workspace
    assert workspace is not None
    before = workspace.log.head(OWN)
    with pytest.raises(RpcError) as refused:
        derive(service, "no spaces allowed", "anything")
    message = refused.value.message
    assert message.startswith("session: ")
    assert "got 'no spaces allowed'" in message
    assert workspace.memory_sessions.sessions() == [OWN]
    assert workspace.log.head(OWN) == before


def test_an_unknown_valid_session_is_a_new_empty_one(service: Service) -> None:
    stats = tool(service, "lambo_stats", "gamma")["structuredContent"]
    assert stats["session"] == "gamma"
    assert stats["node_count"] == 0
