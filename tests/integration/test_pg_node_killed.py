"""A node SIGKILLed while it holds the intent applier's lease on a PostgreSQL log (issue 28,
"Faults"; docs/adr/0085-nodes-on-one-postgresql-log.md): another node takes the lease over
within the lease time, and every write the killed node acked resolves exactly once: one
intent and one outcome per receipt in the shared log, none failed. The real server, a real
`lcg serve` process killed with SIGKILL, and a serving workspace in the test's process.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest

from lcg.commands.tenure import INTENTS
from lcg.domain.ids import GroupId
from lcg.projections.wal.store import stream_id
from tests.helpers.memory_log import ACCEPTED, APPLIED, FAILED
from tests.helpers.service_process import wait_until
from tests.integration.test_pg_nodes import (
    AGENT,
    SESSION,
    holder_process,
    intents_held_by,
    node_of,
    serve,
)

pytestmark = pytest.mark.postgres
WRITES = 12


def session_events(url: str) -> list[tuple[str, dict[str, Any]]]:
    """(topic, payload) of every event of the session's stream on the server, in seq order."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT topic, state FROM stored_events WHERE originator_id = %s"
            " ORDER BY originator_version",
            (stream_id(GroupId(SESSION)),),
        ).fetchall()
    return [(str(topic), orjson.loads(bytes(state))) for topic, state in rows]


def test_a_sigkilled_intents_holder_is_taken_over_and_each_acked_write_resolves_once(
    tmp_path: Path, pg_url: str
) -> None:
    a = holder_process(tmp_path / "a", pg_url)
    b = None
    try:
        held = intents_held_by(a, pg_url)
        b = serve(tmp_path / "b", pg_url)
        acked: list[str] = []
        with a.connect() as client:
            for n in range(WRITES):
                concepts = [
                    {"content": f"deploy step {n} waits for its checks", "concept_type": "logic"}
                ]
                ack = client.result("lambo_derive", {"agent_id": AGENT, "concepts": concepts})
                acked.append(ack["structuredContent"]["receipt"])
        a.kill()  # SIGKILL right after the last ack: some writes still owed (3 of 12 here)
        assert a.proc.returncode == -signal.SIGKILL
        taken = wait_until(lambda: node_of(b).held().get(INTENTS), "B to take the lease over")
        assert taken == held[1] + 1

        def outcomes() -> Counter[str] | None:
            found = Counter(
                p["receipt"] for t, p in session_events(pg_url) if t in (APPLIED, FAILED)
            )
            return found if set(acked) <= set(found) else None

        settled = wait_until(outcomes, "an outcome for every write the killed node acked")
        assert [settled[receipt] for receipt in acked] == [1] * WRITES  # exactly once each
        events = session_events(pg_url)
        intents = Counter(p["receipt"] for t, p in events if t == ACCEPTED)
        assert set(acked) <= set(intents)
        assert set(intents.values()) == {1}, "an intent was appended twice"
        assert not [p for t, p in events if t == FAILED], "a write failed"
    finally:
        if b is not None:
            b.close()
        if a.proc.poll() is None:
            a.stop()
