"""The socket protocol names a call's memory session with a top-level `session` member beside
`method` and `params` (ADR 0067): a real `lcg serve` child serves two sessions at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.service_process import RpcClient, ServiceProcess

pytestmark = pytest.mark.slow

AGENT = "agent-s"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[RpcClient]:
    process = ServiceProcess(tmp_path / "ws")
    try:
        assert process.wait_ready()["healthy"] is True, process.log
        with process.connect() as connection:
            yield connection
    finally:
        process.stop()


def in_session(client: RpcClient, session: Any, method: str, **params: Any) -> dict[str, Any]:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    if session is not None:
        frame["session"] = session
    client.send_line(json.dumps(frame).encode())
    answer: dict[str, Any] = client.read()
    assert answer["id"] == 7, answer
    return answer


def test_a_call_names_its_session_and_writes_stay_in_it(client: RpcClient) -> None:
    concepts = [{"content": "the nightly export runs at three", "concept_type": "logic"}]
    ack = in_session(client, "other", "lambo_derive", agent_id=AGENT, concepts=concepts)
    receipt = ack["result"]["structuredContent"]["receipt"]
    waited = in_session(
        client, "other", "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=10_000
    )
    assert waited["result"]["structuredContent"]["receipt"]["state"] == "applied"
    there = in_session(client, "other", "lambo_stats", agent_id=AGENT)["result"]
    here = in_session(client, None, "lambo_stats", agent_id=AGENT)["result"]
    assert there["structuredContent"]["concept_count"] == 1
    assert here["structuredContent"]["concept_count"] == 0
    assert here["structuredContent"]["session"] != "other"


@pytest.mark.parametrize("session", ["bad name!", 5])
def test_a_bad_session_member_is_refused_naming_the_field(client: RpcClient, session: Any) -> None:
    answer = in_session(client, session, "lambo_stats", agent_id=AGENT)
    assert answer["error"]["message"].startswith("session: "), answer
    assert answer["error"]["data"]["field"] == "session"
