"""Issue 13's aim "a killed process mid-cycle leaves either the whole cycle's events or none"
(ADR 0031), for the canonization cycle and for a GC sweep, under a real serving child.

The workspace is prepared here (a small session whose concepts survived three sweeps, so the
next cycle promotes and a sweep is due), then `tests/helpers/jobs_child.py` serves it with the
scheduler running the jobs and is held in the middle of the chosen job's append: before the
WAL commit (the batch's projection rows written, uncommitted) or after it (the WAL holds the
event, the projection does not). It is SIGKILLed there. Reopened, the WAL holds that job's
event whole or not at all, the projection shows all of it or none of it, and the projection
equals a rebuild from the WAL.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import pytest

from lcg.domain.events import ConceptsCanonized, EventCodec, GcSwept
from lcg.domain.ids import GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.wal.store import RecordedEvent
from tests.conftest import SteppingClock, make_workspace
from tests.helpers.jobs_child import settings
from tests.helpers.service_process import clean_env
from tests.integration.test_memory_writes import concept, derive, settled
from tests.integration.test_property_memory_rebuild import dump_all

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # seconds for the child to be held (it starts, reads, plans: well under this)
KINDS = {"cycle": ConceptsCanonized, "sweep": GcSwept}


def _prepare(workspace: Path) -> None:
    """A session whose concepts survived three sweeps (Stage 1 promotes on the next cycle),
    then one more write (the next tick's sweep is due). It is written two years before the
    child serves it (the child's clock is the real one), so that sweep collects the resources
    no concept cites: their score is under the Resource bar once recency is 0."""
    clock = SteppingClock(datetime.now(UTC) - timedelta(days=730))
    with make_workspace(settings(workspace), HashingEmbedder(), clock=clock) as ws:
        app = App(ws)
        for number in range(3):
            settled(app, derive(app, concept(f"scratch export bucket {number}", "resource")))
        written: list[str] = []
        for number in range(12):
            cited = {"depends_on": written[-2:]} if written else {}
            text = f"service {number} reads the ledger table"
            settled(app, derive(app, concept(text, "entity", **cited)))
            written.append(text)
        jobs = ws.memory.jobs_or_fail()
        for _ in range(3):
            jobs.sweep()
            while jobs.pending_bumps:
                jobs.tick()
        settled(app, derive(app, concept("the ledger table is append-only", "constraint")))


def _events(ws: Workspace, session: GroupId) -> list[RecordedEvent]:
    return [recorded for page in ws.log.read(session) for recorded in page]


def _lines(stream: IO[str]) -> queue.Queue[str]:
    found: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in stream:
            found.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return found


@pytest.fixture
def held() -> Iterator[list[subprocess.Popen[str]]]:
    """Children started by a test; one still running at teardown is killed by its pid."""
    children: list[subprocess.Popen[str]] = []
    yield children
    for child in children:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=WAIT)


def _kill_when_held(
    workspace: Path, job: str, at: str, children: list[subprocess.Popen[str]]
) -> dict[str, Any]:
    environment = clean_env()
    command = [sys.executable, "-m", "tests.helpers.jobs_child", "--workspace", str(workspace)]
    child = subprocess.Popen(
        [*command, "--job", job, "--at", at],
        cwd=ROOT,
        env=environment,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children.append(child)
    assert child.stdout is not None
    lines = _lines(child.stdout)
    while True:
        try:
            line = lines.get(timeout=WAIT)
        except queue.Empty:
            child.kill()
            pytest.fail(f"the child was not held within {WAIT} s: {child.communicate()[1]}")
        if line.startswith("{"):
            break
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait(timeout=WAIT) == -signal.SIGKILL
    found: dict[str, Any] = json.loads(line)
    assert (found["job"], found["at"]) == (job, at)
    return found


def _rebuilt_equals_live(ws: Workspace, session: GroupId) -> None:
    live = dump_all(ws.reader())
    app = App(ws)
    result = operations.dispatch(
        app, "knowledge_rebuild_from_wal", {"group_id": session, "force_clear": True}
    )
    assert "error" not in result
    assert dump_all(ws.reader()) == live


def _history(ws: Workspace, seq: int) -> list[tuple[str, str, str]]:
    return [
        (str(node), str(old), str(new))
        for node, old, new in ws.reader().execute(
            "SELECT node_id, from_status, to_status FROM canon_history WHERE seq=?"
            " ORDER BY position",
            (seq,),
        )
    ]


@pytest.mark.parametrize("at", ["wal", "graph"])
def test_i13_a_cycle_killed_mid_append_leaves_its_whole_event_or_none(
    tmp_path: Path, at: str, held: list[subprocess.Popen[str]]
) -> None:
    workspace = tmp_path / "ws"
    _prepare(workspace)
    found = _kill_when_held(workspace, "cycle", at, held)
    transitions = found["event"]["transitions"]
    assert transitions, "the held cycle moved something"
    with make_workspace(settings(workspace), HashingEmbedder()) as ws:
        session = GroupId(ws.settings.session)
        cycles = [r for r in _events(ws, session) if isinstance(r.event, ConceptsCanonized)]
        hops = [(t["node_id"], t["from_status"], t["to_status"]) for t in transitions]
        if at == "wal":
            assert cycles == [], "nothing of a cycle killed before its WAL commit is stored"
            assert ws.log.head(session) < found["seq"]
            assert ws.reader().execute("SELECT COUNT(*) FROM canon_history").fetchone()[0] == 0
        else:
            assert [r.seq for r in cycles] == [found["seq"]]
            assert EventCodec().encode(cycles[0].event) == found["event"]
            assert _history(ws, found["seq"]) == hops  # every hop of it, caught up at open
            statuses = dict(ws.reader().execute("SELECT node_id, status FROM canon_nodes"))
            assert all(statuses[node] == to for node, _, to in hops)
        _rebuilt_equals_live(ws, session)
        assert ws.memory.processor.failure is None


@pytest.mark.parametrize("at", ["wal", "graph"])
def test_i13_a_sweep_killed_mid_append_leaves_its_whole_event_or_none(
    tmp_path: Path, at: str, held: list[subprocess.Popen[str]]
) -> None:
    workspace = tmp_path / "ws"
    _prepare(workspace)
    with make_workspace(settings(workspace), HashingEmbedder()) as ws:
        session = GroupId(ws.settings.session)
        sweeps_before = [r for r in _events(ws, session) if isinstance(r.event, GcSwept)]
    found = _kill_when_held(workspace, "sweep", at, held)
    assert found["event"]["collected"], "the held sweep collects something"
    with make_workspace(settings(workspace), HashingEmbedder()) as ws:
        sweeps = [r for r in _events(ws, session) if isinstance(r.event, GcSwept)]
        clock = (
            ws.reader()
            .execute(
                "SELECT sweeps, last_gc_epoch FROM canon_sessions WHERE group_id=?", (session,)
            )
            .fetchone()
        )
        if at == "wal":
            assert sweeps == sweeps_before, "nothing of a sweep killed before its WAL commit"
            assert ws.log.head(session) < found["seq"]
            assert clock["sweeps"] == len(sweeps_before)
        else:
            assert [r.seq for r in sweeps] == [*(r.seq for r in sweeps_before), found["seq"]]
            assert EventCodec().encode(sweeps[-1].event) == found["event"]
            assert clock["sweeps"] == len(sweeps)
            assert clock["last_gc_epoch"] == found["event"]["epoch"]
            collected = [item["node_id"] for item in found["event"]["collected"]]
            for node in collected:
                row = ws.reader().execute("SELECT 1 FROM memory_nodes WHERE uuid=?", (node,))
                assert row.fetchone() is None, "a collected concept left memory"
        _rebuilt_equals_live(ws, session)
        assert ws.memory.processor.failure is None
