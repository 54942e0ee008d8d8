"""Two nodes on one PostgreSQL log (issue 28 item 2, docs/adr/0085-nodes-on-one-postgresql-log.md):
two serving workspaces, each with its own projections, opened as `lcg serve` opens them, on
one real database. A write on one node is read on the other (after `min_seq`); the intent
applier and each session's jobs run on the one node holding their lease; a memory write taken
by the node that does not apply intents settles there all the same; a batch fenced by an
epoch that was taken over writes nothing; closing the holder hands its jobs over.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lcg.commands.graph_file import CHECKED_FILE
from lcg.commands.tenure import INTENTS, jobs_lease
from lcg.commands.writer import WriteContext
from lcg.domain.events import EpisodeAdded
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import RpcError
from lcg.interfaces.pg_node import Node
from lcg.interfaces.read_after import reading_after
from lcg.interfaces.service import Service
from lcg.interfaces.workspace import Workspace
from lcg.projections.faults import Fenced
from lcg.projections.wal.store import stream_id
from tests.conftest import EMBEDDER
from tests.helpers.service_process import ServiceProcess, wait_until

pytestmark = pytest.mark.postgres
SESSION = "alpha"
AGENT = "agent-a"
TTL_MS = "900"  # a short lease: a handover is seen within a second


def node_settings(root: Path, url: str) -> Settings:
    env = {
        "LCG_STORE_URL": url,
        "LCG_STORE_LEASE_TTL_MS": TTL_MS,
        "LCG_STORE_MIN_SEQ_WAIT_MS": "300",
        EMBEDDER: "hashing",
    }
    return replace(Settings.load(env, root, root), session=SESSION)


def serve(root: Path, url: str) -> Service:
    service = Service(node_settings(root, url), command="pytest")
    assert service.start() == "healthy", service.reason
    return service


def workspace_of(service: Service) -> Workspace:
    app = service.app
    assert app is not None
    return app.workspace


def node_of(service: Service) -> Node:
    node = workspace_of(service).node
    assert node is not None
    return node


@pytest.fixture
def nodes(tmp_path: Path, pg_url: str) -> Iterator[tuple[Service, Service]]:
    """Node A, started first (it takes the leases), then node B."""
    a = serve(tmp_path / "a", pg_url)
    try:
        wait_until(lambda: INTENTS in node_of(a).held(), "node A to take the intents lease")
        b = serve(tmp_path / "b", pg_url)
        try:
            yield a, b
        finally:
            b.close()
    finally:
        a.close()


def structured(result: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = result.get("structuredContent", result)
    return body


def test_a_write_on_one_node_is_read_on_the_other_after_its_seq(
    nodes: tuple[Service, Service],
) -> None:
    a, b = nodes
    a.call("knowledge_add_episode", {"name": "e1", "episode_body": "one", "group_id": "g"})
    seq = workspace_of(a).log.head("g")
    read = b.call("knowledge_get_episodes", {"group_id": "g", "last_n": 5, "min_seq": {"g": seq}})
    assert [e["name"] for e in structured(read)["episodes"]] == ["e1"]
    # and the other way: B writes after what it followed, A reads it
    b.call("knowledge_add_episode", {"name": "e2", "episode_body": "two", "group_id": "g"})
    assert workspace_of(b).log.head("g") == seq + 1
    read = a.call("knowledge_get_episodes", {"group_id": "g", "last_n": 5, "min_seq": seq + 1})
    assert sorted(e["name"] for e in structured(read)["episodes"]) == ["e1", "e2"]
    with pytest.raises(RpcError, match="min_seq: this node has applied group 'g' to seq"):
        b.call("knowledge_get_episodes", {"group_id": "g", "min_seq": seq + 50})


def test_jobs_run_on_the_one_node_holding_their_lease_and_receipts_settle_on_both(
    nodes: tuple[Service, Service],
) -> None:
    a, b = nodes
    held_a, held_b = node_of(a).held(), node_of(b).held()
    wait_until(lambda: jobs_lease(SESSION) in node_of(a).held(), "A to take the session's jobs")
    assert INTENTS not in held_b
    assert jobs_lease(SESSION) not in node_of(b).held()
    assert held_a[INTENTS] >= 1
    assert workspace_of(b).memory_sessions.get().jobs_or_fail().held() is False
    assert workspace_of(a).memory_sessions.get().jobs_or_fail().held() is True
    # a memory write taken by B: A applies it (it holds the intents lease), B follows the
    # outcome and settles its receipt
    concepts = [{"content": "the billing queue retries three times", "concept_type": "logic"}]
    ack = b.call("lambo_derive", {"agent_id": AGENT, "concepts": concepts})
    receipt = structured(ack)["receipt"]
    answer = b.call("lambo_stats", {"agent_id": AGENT, "receipt": receipt, "wait_ms": 20_000})
    assert structured(answer)["receipt"]["state"] == "applied"
    # a lambo read on B after the seq of A's outcome, given beside the arguments (ADR 0086)
    with reading_after({SESSION: workspace_of(a).log.head(SESSION)}):
        recalled = b.call("lambo_recall", {"agent_id": AGENT, "query": "billing queue"})
    assert "billing queue" in str(recalled["text"])
    # A applied it as another process's intent; B counts its own write applied, by A
    took, applier = (workspace_of(s).memory_sessions.processor.counters for s in (b, a))
    assert (applier.applied, applier.replayed, took.applied, took.replayed) == (0, 1, 1, 0)


def test_a_batch_fenced_by_a_taken_over_epoch_writes_nothing(
    nodes: tuple[Service, Service], pg_url: str
) -> None:
    a, _ = nodes
    node = node_of(a)
    epoch = node.held()[INTENTS]
    writer = workspace_of(a).writer

    made: list[str] = []

    def add(ctx: WriteContext) -> str:
        now = workspace_of(a).clock()
        made.append(f"x{len(made)}")
        event = EpisodeAdded(now, EpisodeUuid(made[-1]), "x", "b", "t", "", now, None, None)
        ctx.append(GroupId("g"), [event])
        return "added"

    assert writer.execute(add, fence=(INTENTS, epoch)) == "added"  # the tenure's own epoch
    with psycopg.connect(pg_url, autocommit=True) as conn:  # another holder takes it over
        conn.execute(
            "UPDATE lcg_leases SET epoch = epoch + 1, holder = 'other' WHERE name = %s",
            (INTENTS,),
        )
    head = workspace_of(a).log.head("g")
    with pytest.raises(Fenced, match="was taken over"):
        writer.execute(add, fence=(INTENTS, epoch))
    assert workspace_of(a).log.head("g") == head  # nothing appended
    assert workspace_of(a).runner.position(GroupId("g")).position == head  # nor applied


def test_closing_the_holder_hands_its_jobs_to_the_other_node(tmp_path: Path, pg_url: str) -> None:
    a = serve(tmp_path / "a", pg_url)
    try:
        wait_until(lambda: INTENTS in node_of(a).held(), "node A to take the intents lease")
        b = serve(tmp_path / "b", pg_url)
    except BaseException:
        a.close()
        raise
    try:
        first = node_of(a).held()[INTENTS]
        a.close()  # releases its leases: B takes them at its next renewal, not at expiry
        taken = wait_until(lambda: node_of(b).held().get(INTENTS), "B to take the intents lease")
        assert taken == first + 1
        wait_until(lambda: jobs_lease(SESSION) in node_of(b).held(), "B to take the jobs")
        concepts = [{"content": "the search index is rebuilt nightly", "concept_type": "logic"}]
        ack = b.call("lambo_derive", {"agent_id": AGENT, "concepts": concepts})
        answer = b.call(
            "lambo_stats",
            {"agent_id": AGENT, "receipt": structured(ack)["receipt"], "wait_ms": 20_000},
        )
        assert structured(answer)["receipt"]["state"] == "applied"
    finally:
        b.close()


def test_the_embedded_default_is_no_node(tmp_path: Path) -> None:
    env = {EMBEDDER: "hashing"}
    with Workspace(Settings.load(env, tmp_path, tmp_path), command="pytest") as workspace:
        assert workspace.node is None
        assert workspace.memory_sessions.processor.tenure is None


def lease_holder(url: str, name: str) -> tuple[str, int] | None:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT holder, epoch FROM lcg_leases WHERE name = %s", (name,))
        found = row.fetchone()
    return None if found is None else (str(found[0]), int(found[1]))


def holder_process(root: Path, url: str) -> ServiceProcess:
    """An `lcg serve` process on the log (a short lease), not yet started."""
    env = {
        "LCG_STORE_URL": url,
        "LCG_STORE_LEASE_TTL_MS": TTL_MS,
        "LCG_SESSION": SESSION,
        EMBEDDER: "hashing",
    }
    return ServiceProcess(root, env=env)


def intents_held_by(process: ServiceProcess, url: str) -> tuple[str, int]:
    """Wait until the started process holds the intents lease: (holder, epoch)."""
    assert process.wait_ready()["healthy"], process.log
    held: tuple[str, int] = wait_until(
        lambda: (
            (found := lease_holder(url, INTENTS)) and f":{process.proc.pid}:" in found[0] and found
        ),
        "the serve process to take the intents lease",
    )
    return held


def test_a_sigstopped_holder_hands_its_jobs_over_and_applies_nothing_when_woken(
    tmp_path: Path, pg_url: str
) -> None:
    a = holder_process(tmp_path / "a", pg_url)
    b: Service | None = None
    try:
        held = intents_held_by(a, pg_url)
        b = serve(tmp_path / "b", pg_url)
        os.kill(a.proc.pid, signal.SIGSTOP)  # paused: it stops renewing
        try:
            taken = wait_until(lambda: node_of(b).held().get(INTENTS), "B to take the lease over")
        finally:
            os.kill(a.proc.pid, signal.SIGCONT)
        assert taken == held[1] + 1
        # woken, A finds its tenure gone: a write it takes is applied by B, not by A
        concepts = [{"content": "the cache is warmed at deploy", "concept_type": "logic"}]
        with a.connect() as client:
            ack = client.result("lambo_derive", {"agent_id": AGENT, "concepts": concepts})
            receipt = structured(ack)["receipt"]
            answer = client.result(
                "lambo_stats", {"agent_id": AGENT, "receipt": receipt, "wait_ms": 20_000}
            )
        assert structured(answer)["receipt"]["state"] == "applied"
        assert workspace_of(b).memory_sessions.processor.counters.replayed == 1
        assert lease_holder(pg_url, INTENTS) == (node_of(b).holder, taken)
    finally:
        if b is not None:
            b.close()
        a.stop()


def damage(url: str, group: str, seq: int) -> None:
    """Rewrite one stored event's bytes on the server (a stray write)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE stored_events SET state=%s WHERE originator_id=%s AND originator_version=%s",
            (b'{"x": 1}', stream_id(GroupId(group)), seq),
        )


def test_the_check_at_open_reads_only_what_earlier_opens_of_this_node_did_not(
    tmp_path: Path, pg_url: str
) -> None:
    settings = node_settings(tmp_path / "a", pg_url)
    with Workspace(settings, command="pytest") as workspace:
        for name in ("e1", "e2", "e3"):
            operations.dispatch(
                App(workspace), "knowledge_add_episode", {"name": name, "episode_body": name}
            )
        group = str(next(iter(workspace.log.heads())))
    with Workspace(settings, command="pytest") as workspace:  # checks 1..3 and records it
        assert workspace.log_damage == {}
        operations.dispatch(
            App(workspace), "knowledge_add_episode", {"name": "e4", "episode_body": "e4"}
        )
    recorded = json.loads((settings.state_dir / CHECKED_FILE).read_text(encoding="utf-8"))
    assert recorded["groups"] == {group: 3}
    damage(pg_url, group, 4)  # after what was checked: found at the next open
    with Workspace(settings, command="pytest") as workspace:
        assert workspace.log_damage[GroupId(group)].seq == 4
    # a record of another log is not taken: everything is checked again
    (settings.state_dir / CHECKED_FILE).write_text(
        json.dumps({"identity": "another", "groups": {group: 4}}), encoding="utf-8"
    )
    damage(pg_url, group, 2)
    with Workspace(settings, command="pytest") as workspace:
        assert workspace.log_damage[GroupId(group)].seq == 2
