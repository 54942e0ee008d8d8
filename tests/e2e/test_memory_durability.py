"""SIGKILL after acks: a real `lcg serve --session crash` loses no acknowledged memory write and
applies none twice (issue 11, "Done when"; ADR 0026).

One workspace is reused across the kill cycles. In each cycle a fresh `lcg serve` starts, two
writers (threads, each its own socket connection, each its own agent_id) send lambo_derive and
lambo_record_action calls whose contents are unique, and the process is SIGKILLed. The kinds
of kill point take turns (right after the n-th ack; mid-burst after a random delay; right
after a wait_ms answer said applied, the other writer maybe still writing; while the next start
replays the intents the last one left; during start-up itself), and a seeded RNG picks the
point within each: n, the delay, how many concepts each derive holds. A last, clean start
then answers every acked receipt through lambo_stats with wait_ms, and the files are read
directly once it ended: one intent and at most one outcome per receipt in the WAL, one
memory_writes row each, and each acked content exactly once as a concept.

Set LCG_TEST_SEED to replay another sequence of kill points (the default is fixed).

Checklist: M-DER-088/089, M-STA-103/111 (applied_after_restart), M-ACT (record_action acks),
ADR 0026 (a durable intent before the ack; an outcome at most once per intent).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.memory_log import (
    ACCEPTED,
    APPLIED,
    FAILED,
    graph_rows,
    outcomes_per_receipt,
    session_events,
)
from tests.helpers.service_process import DEADLINE, RpcClient, ServiceProcess, wait_until

pytestmark = pytest.mark.slow

SESSION = "crash"
KILL_POINTS = 20  # the "at least 20 random kill points"; each is a process start
WRITERS = 2
WRITES_PER_WRITER = 10  # 20 kill points (25 before, 7 writes each) still ack well over 100
WAIT_MS = 34_000
SEED = int(os.environ.get("LCG_TEST_SEED", "1111"))
MODES = ("after_ack", "during_replay", "mid_burst", "during_startup", "after_applied")
SETTLED = ("applied", "applied_after_restart")
DROPPED_CONNECTION = (OSError, AssertionError, ValueError)


@dataclass(frozen=True, slots=True)
class Write:
    """One planned call and the unique texts it would store as concepts."""

    agent: str
    tool: str
    params: dict[str, Any]
    contents: tuple[str, ...]


@dataclass
class Ledger:
    """What the writers were told: acked receipts, and writes sent without an answer."""

    acked: dict[str, Write] = field(default_factory=dict)
    unanswered: list[Write] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    on_ack: Any = None  # called (under the lock) with the cycle's ack count

    def ack(self, receipt: str, write: Write, cycle_acks: list[int]) -> None:
        with self.lock:
            assert receipt not in self.acked, f"receipt {receipt} handed out twice"
            self.acked[receipt] = write
            cycle_acks[0] += 1
            if self.on_ack is not None:
                self.on_ack(cycle_acks[0])


def plan(cycle: int, writer: int, rng: random.Random) -> list[Write]:
    """A writer's calls for one cycle: derives of one or two concepts, every third call an
    action. Each text carries one token unique to the call (c<cycle>w<writer>k<call>), so no
    two texts share a canonical key or pass ADR 0025's digit guard for a similarity merge."""
    agent = f"writer-{writer}"
    writes = []
    for k in range(WRITES_PER_WRITER):
        token = f"c{cycle:02d}w{writer}k{k:02d}"
        if k % 3 == 2:
            action = f"shipped build {token} to staging"
            writes.append(
                Write(
                    agent, "lambo_record_action", {"agent_id": agent, "action": action}, (action,)
                )
            )
            continue
        contents = tuple(
            f"{kind} {token}: the service keeps its state in one file"
            for kind in ("fact", "note")[: rng.randint(1, 2)]
        )
        concepts = [{"content": text, "concept_type": "logic"} for text in contents]
        params: dict[str, Any] = {"agent_id": agent, "concepts": concepts}
        writes.append(Write(agent, "lambo_derive", params, contents))
    return writes


def run_writer(
    socket_path: Path,
    writes: list[Write],
    ledger: Ledger,
    cycle_acks: list[int],
    applied_seen: list[str],
    wait_last: bool,
    errors: list[Exception],
) -> None:
    """Send the writes one after another; stop at the first dropped connection. Anything else
    that goes wrong is kept in `errors` for the test to fail on."""
    try:
        _write_all(socket_path, writes, ledger, cycle_acks, applied_seen, wait_last)
    except Exception as error:  # noqa: BLE001 (the thread's failure, reported by the test)
        errors.append(error)


def _write_all(
    socket_path: Path,
    writes: list[Write],
    ledger: Ledger,
    cycle_acks: list[int],
    applied_seen: list[str],
    wait_last: bool,
) -> None:
    try:
        client = RpcClient(socket_path, timeout=DEADLINE)
    except DROPPED_CONNECTION:
        return
    try:
        last = None
        for write in writes:
            try:
                client.send(write.tool, write.params)
            except DROPPED_CONNECTION:
                ledger.unanswered.append(write)  # may or may not have arrived
                return
            try:
                frame = client.read()
            except DROPPED_CONNECTION:
                ledger.unanswered.append(write)
                return
            content = frame["result"]["structuredContent"]
            assert content["receipt_state"] == "pending", content  # never dropped here
            last = content["receipt"]
            ledger.ack(last, write, cycle_acks)
        if wait_last and last is not None:
            try:
                answer = client.result(
                    "lambo_stats",
                    {"agent_id": writes[0].agent, "receipt": last, "wait_ms": WAIT_MS},
                )
            except DROPPED_CONNECTION:
                return
            assert answer["structuredContent"]["receipt"]["state"] == "applied", answer
            applied_seen.append(last)
    finally:
        with contextlib.suppress(OSError):
            client.close()


def kill_cycle(
    workspace: Path, cycle: int, mode: str, rng: random.Random, ledger: Ledger
) -> dict[str, Any]:
    """Start a server, drive it per `mode`, SIGKILL it; what happened, for the report."""
    service = ServiceProcess(workspace, args=("--session", SESSION))
    point: dict[str, Any] = {"cycle": cycle, "mode": mode}
    try:
        if mode == "during_startup":
            delay = rng.uniform(0.0, 1.2)
            time.sleep(delay)  # a random kill point, not a synchronisation
            point["delay_s"] = round(delay, 3)
            return point
        service.wait_ready()
        if mode == "during_replay":
            delay = rng.uniform(0.0, 0.4)
            time.sleep(delay)
            point["delay_s"] = round(delay, 3)
            return point
        writes = [plan(cycle, w, rng) for w in range(WRITERS)]
        total = sum(len(w) for w in writes)
        cycle_acks = [0]
        applied_seen: list[str] = []
        errors: list[Exception] = []
        if mode == "after_ack":
            nth = rng.randint(1, total)
            point["after_ack"] = nth

            def kill_at(count: int) -> None:
                if count == nth:
                    os.kill(service.proc.pid, signal.SIGKILL)

            ledger.on_ack = kill_at
        threads = [
            threading.Thread(
                target=run_writer,
                args=(
                    service.socket_path,
                    writes[w],
                    ledger,
                    cycle_acks,
                    applied_seen,
                    mode == "after_applied" and w == 0,
                    errors,
                ),
                daemon=True,
            )
            for w in range(WRITERS)
        ]
        for thread in threads:
            thread.start()
        if mode == "mid_burst":
            delay = rng.uniform(0.0, 0.05)  # the burst lasts some tens of ms
            time.sleep(delay)
            point["delay_s"] = round(delay, 3)
            service.proc.kill()
        elif mode == "after_applied":
            wait_until(lambda: applied_seen or errors, "a wait_ms answer saying applied")
            service.proc.kill()  # right after the answer; the other writer may still write
        for thread in threads:
            thread.join(DEADLINE)
            assert not thread.is_alive(), "a writer hung after the kill"
        assert not errors, errors
        point["acks"] = cycle_acks[0]
        return point
    finally:
        ledger.on_ack = None
        if service.proc.poll() is None:
            service.proc.kill()
        code = service.proc.wait(DEADLINE)
        assert code == -signal.SIGKILL, f"lcg serve ended with {code} before the kill"


def test_sigkill_after_acks_every_receipt_resolves_and_no_write_is_applied_twice(
    tmp_path: Path,
) -> None:
    """Done when: "SIGKILL after acks: every acked receipt resolves to applied /
    applied_after_restart on the next start (0 lost over at least 20 random kill points), and
    no write is applied twice". Also M-STA-155: after a crash applied writes survive and
    intents not yet applied are replayed on restart."""
    workspace = tmp_path / "ws"
    rng = random.Random(SEED)
    ledger = Ledger()
    points = []
    for cycle in range(KILL_POINTS):
        events = session_events(workspace, SESSION)
        owed = sum(e.topic == ACCEPTED for e in events) - len(outcomes_per_receipt(events))
        point = kill_cycle(workspace, cycle, MODES[cycle % len(MODES)], rng, ledger)
        points.append({**point, "owed_at_start": owed})
    report = f"seed {SEED}; kill points: {points}"
    assert len(points) >= 20
    assert sum(p.get("acks", 0) for p in points) == len(ledger.acked)
    assert len(ledger.acked) >= 100, report
    replay_kills = [p for p in points if p["owed_at_start"] and p["mode"].startswith("during")]
    assert len(replay_kills) >= 4, report  # killed while intents of a killed process were owed

    # The next start: every acked receipt resolves, and only to an applied state.
    service = ServiceProcess(workspace, args=("--session", SESSION))
    try:
        service.wait_ready()
        states: Counter[str] = Counter()
        with service.connect() as client:
            for receipt, write in ledger.acked.items():
                answer = client.result(
                    "lambo_stats", {"agent_id": write.agent, "receipt": receipt, "wait_ms": WAIT_MS}
                )
                body = answer["structuredContent"]["receipt"]
                assert body["state"] in SETTLED, (receipt, body, report)
                assert body["detail"], body
                states[body["state"]] += 1

            def drained() -> bool:
                stats = client.result("lambo_stats", {"agent_id": "verifier"})["structuredContent"]
                return bool(stats["log_depth"] == 0 and stats["write_queue_replay_owed"] == 0)

            wait_until(drained, "the replay of every intent left pending")
    finally:
        assert service.stop() == 0, service.own_log
    assert sum(states.values()) == len(ledger.acked)  # 0 lost

    # The files, read once the process ended: each intent applied at most once.
    events = session_events(workspace, SESSION)
    intents = Counter(e.payload["receipt"] for e in events if e.topic == ACCEPTED)
    assert set(intents.values()) == {1}, "a receipt's intent was appended twice"
    outcomes = outcomes_per_receipt(events)
    assert max(outcomes.values()) == 1, [r for r, n in outcomes.items() if n > 1]
    assert set(outcomes) == set(intents), "an intent was left without its outcome"
    assert not [e for e in events if e.topic == FAILED], "a write failed"
    assert set(ledger.acked) <= set(intents), "an acked write's intent is missing from the log"
    rows = graph_rows(
        workspace,
        "SELECT receipt, state, COUNT(*) FROM memory_writes WHERE group_id=? GROUP BY receipt",
        SESSION,
    )
    assert {r[0] for r in rows} == set(intents)
    assert {(r[1], r[2]) for r in rows} == {("applied", 1)}

    concepts = Counter(
        content
        for (content,) in graph_rows(
            workspace,
            "SELECT content FROM memory_nodes WHERE group_id=? AND node_kind='concept'",
            SESSION,
        )
    )
    for receipt, write in ledger.acked.items():
        for content in write.contents:
            assert concepts[content] == 1, (receipt, content, concepts[content])
    for write in ledger.unanswered:  # sent, never answered: stored once or not at all
        for content in write.contents:
            assert concepts[content] <= 1, content
    assert max(concepts.values()) == 1, "a concept was stored twice"
    (interactions,) = graph_rows(
        workspace,
        "SELECT COUNT(*) FROM memory_nodes WHERE group_id=? AND node_kind='interaction'",
        SESSION,
    )
    applied = sum(1 for e in events if e.topic == APPLIED)
    assert interactions == (applied,), "an applied write made more than one interaction"
    print(
        f"\n{report}\nacked {len(ledger.acked)} receipts over {len(points)} kill points "
        f"({Counter(p['mode'] for p in points)}); resolved {dict(states)}; "
        f"{len(intents)} intents, {applied} outcomes, "
        f"{len(ledger.unanswered)} writes sent without an answer"
    )
