"""A damaged WAL event, a full disk and a read-only WAL are named, contained and healed
(issue 9: F4, F5 and the read-only WAL; ADR 0019). Real SQLite files; SQLite's own
`max_page_count` and `query_only` give a real SQLITE_FULL and SQLITE_READONLY.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import STORAGE_ERROR, error_from_exception
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import CorruptEvent, GroupBehind, StorageFailure
from lcg.projections.wal.store import EventLog, stream_id
from tests.conftest import Call, make_call, make_workspace


def add(call: Call, group: str, name: str, body: str | None = None) -> str:
    result = call(
        "knowledge_add_episode", name=name, episode_body=body or f"body of {name}", group_id=group
    )
    return str(result["episode_uuid"])


def names(call: Call, group: str) -> list[str]:
    episodes = call("knowledge_get_episodes", group_id=group, last_n=50)["episodes"]
    return sorted(e["name"] for e in episodes)


def write_two_groups(settings: Settings, embedder: Embedder) -> None:
    """Group 'a' gets episodes a1..a5 (seqs 1..5), group 'b' gets b1 and b2."""
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(1, 6):
            add(call, "a", f"a{n}", f"body of a{n} marker{n}zz")
        add(call, "b", "b1")
        add(call, "b", "b2")


def replay_from_the_wal(settings: Settings) -> None:
    """Move the projections aside, so the next open applies every event from the WAL."""
    for path in [*settings.state_dir.glob("graph.sqlite*"), settings.vectors_dir]:
        path.rename(path.with_name(f"old-{path.name}"))


def corrupt_state(settings: Settings, group: str, seq: int) -> None:
    """Overwrite the stored event's payload with bytes that are not UTF-8."""
    with sqlite3.connect(settings.wal_path) as conn:
        changed = conn.execute(
            "UPDATE stored_events SET state=x'ff00fe' WHERE originator_id=?"
            " AND originator_version=?",
            (stream_id(group).hex, seq),
        ).rowcount
    assert changed == 1


def assert_names_the_event(message: str, settings: Settings, group: str, seq: int) -> None:
    assert str(settings.wal_path) in message
    assert f"seq {seq} of group {group!r}" in message
    assert f"lcg replay --group {group} --to-seq {seq - 1} --force-clear" in message


def test_f4_a_corrupted_wal_event_is_named_and_the_other_groups_keep_working(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    corrupt_state(settings, "a", 3)
    replay_from_the_wal(settings)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        failure = ws.catch_up_failures[GroupId("a")]
        assert isinstance(failure, CorruptEvent)
        assert_names_the_event(str(failure), settings, "a", 3)
        status = call("knowledge_status")
        assert status["degraded"] is True
        assert_names_the_event(str(status["reason"]), settings, "a", 3)
        assert status["wal_groups"]["a"]["applied_seq"] == 2  # the events before it
        assert names(call, "a") == ["a1", "a2"]
        assert names(call, "b") == ["b1", "b2"]
        add(call, "b", "b3")
        assert names(call, "b") == ["b1", "b2", "b3"]
        with pytest.raises(GroupBehind) as refused:
            add(call, "a", "a6")
        assert_names_the_event(str(refused.value), settings, "a", 3)
        assert ws.log.head(GroupId("a")) == 5  # nothing appended to 'a'
        rpc = error_from_exception(refused.value)
        assert rpc.code == STORAGE_ERROR


def test_f4_a_rebuild_meeting_a_corrupted_event_names_it(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    corrupt_state(settings, "a", 4)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        with pytest.raises(CorruptEvent) as refused:
            call("knowledge_rebuild_from_wal", group_id="a", force_clear=True)
        assert_names_the_event(str(refused.value), settings, "a", 4)
        assert names(call, "a") == ["a1", "a2", "a3", "a4", "a5"]  # rolled back, unchanged


def test_f4_the_bounded_replay_the_message_names_clears_the_fault(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    corrupt_state(settings, "a", 3)
    replay_from_the_wal(settings)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        result = call("knowledge_rebuild_from_wal", group_id="a", to_seq=2, force_clear=True)
        assert result["pinned_to"] == 2
        assert ws.faults() == []
        assert names(call, "a") == ["a1", "a2"]
    with make_workspace(settings, embedder) as ws:
        assert ws.catch_up_failures == {}
        assert ws.faults() == []


def test_f4_flipped_bytes_in_the_wal_file_are_named_with_file_group_and_seq(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    data = bytearray(settings.wal_path.read_bytes())
    at = data.find(b"marker4zz")
    assert at > 0
    assert data.find(b"marker4zz", at + 1) < 0  # one copy: the event's state
    data[at : at + 9] = b"\xff" * 9  # not UTF-8: the payload cannot be decoded
    settings.wal_path.write_bytes(bytes(data))
    replay_from_the_wal(settings)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert_names_the_event(str(ws.catch_up_failures[GroupId("a")]), settings, "a", 4)
        assert names(call, "a") == ["a1", "a2", "a3"]
        add(call, "b", "b3")
        assert names(call, "b") == ["b1", "b2", "b3"]


class FailingCommits:
    """Delegates to the real connection; the next `count` COMMITs fail as SQLITE_FULL would
    (the write's own commit and the immediate retry: the path the issue's full disk took)."""

    def __init__(self, conn: sqlite3.Connection, count: int) -> None:
        self._conn = conn
        self.count = count

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.count:
            self.count -= 1
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_f5_a_group_left_behind_by_a_failed_commit_catches_up_at_the_next_write(
    workspace: Workspace,
) -> None:
    call = make_call(App(workspace))
    add(call, "g", "e1")
    real = workspace.runner.conn
    workspace.runner.conn = FailingCommits(real, 2)  # type: ignore[assignment]
    with pytest.raises(StorageFailure) as failed:
        add(call, "g", "e2")
    message = str(failed.value)
    assert str(workspace.settings.graph_path) in message
    assert "database or disk is full" in message
    assert "durable in the WAL" in message
    assert workspace.faults() != []
    wal = call("knowledge_status")["wal_groups"]["g"]
    assert (wal["applied_seq"], wal["max_seq"]) == (1, 2)
    add(call, "g", "e3")  # space is back: the group catches up first, then writes
    assert names(call, "g") == ["e1", "e2", "e3"]
    wal = call("knowledge_status")["wal_groups"]["g"]
    assert wal["applied_seq"] == wal["max_seq"] == 3
    assert workspace.faults() == []
    assert call("knowledge_status")["degraded"] is False


def test_f5_a_full_projection_database_refuses_the_write_names_the_file_and_recovers(
    workspace: Workspace,
) -> None:
    """SQLite's own SQLITE_FULL: the projection database may not grow past its pages."""
    call = make_call(App(workspace))
    add(call, "g", "e1")
    conn = workspace.runner.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")
    with pytest.raises(StorageFailure) as failed:
        add(call, "g", "e2", "a long body " * 2000)
    assert str(workspace.settings.graph_path) in str(failed.value)
    assert "full" in str(failed.value)
    assert error_from_exception(failed.value).code == STORAGE_ERROR
    assert workspace.log.head(GroupId("g")) == 1  # nothing half-written, nothing acked
    assert call("knowledge_status")["degraded"] is True
    conn.execute(f"PRAGMA max_page_count={2**30}")
    add(call, "g", "e3")
    assert names(call, "g") == ["e1", "e3"]
    assert call("knowledge_status")["degraded"] is False


def test_a_read_only_wal_refuses_writes_as_a_storage_failure_and_recovers(
    workspace: Workspace,
) -> None:
    call = make_call(App(workspace))
    add(call, "g", "e1")
    # SQLite's own refusal, as for a file it could open only for reading (root ignores modes)
    wal_of(workspace)._conn.execute("PRAGMA query_only=1")
    with pytest.raises(StorageFailure) as failed:
        add(call, "g", "e2")
    message = str(failed.value)
    assert str(workspace.settings.wal_path) in message
    assert "readonly" in message
    rpc = error_from_exception(failed.value)
    assert (rpc.code, rpc.data["kind"], rpc.data["file"]) == (
        STORAGE_ERROR,
        "storage_failure",
        str(workspace.settings.wal_path),
    )
    status = call("knowledge_status")
    assert status["degraded"] is True
    assert str(workspace.settings.wal_path) in str(status["reason"])
    assert names(call, "g") == ["e1"]  # the refused write is not visible, nor half-written
    wal_of(workspace)._conn.execute("PRAGMA query_only=0")
    add(call, "g", "e3")
    assert names(call, "g") == ["e1", "e3"]
    assert call("knowledge_status")["degraded"] is False


READ_ONLY_WAL_WRITES: list[tuple[str, dict[str, Any]]] = [
    ("knowledge_add_episode", {"name": "e2", "episode_body": "refused", "group_id": "g"}),
    ("knowledge_assert_entity", {"name": "Refused", "group_id": "g"}),
    (
        "knowledge_assert_relationship",
        {"source_name": "Ada", "target_name": "Babbage", "predicate": "no", "group_id": "g"},
    ),
    ("knowledge_delete_episode", {}),  # the uuid of e1, filled in by the test
    ("knowledge_delete_by_group", {"group_ids": ["g"], "confirm": True}),
    ("knowledge_clear_all", {"confirm": True}),
    ("knowledge_clear_all", {"confirm": True, "preserve_wal": True}),
    # a full rebuild only reads the WAL (the live read-only disk, tests/e2e, refuses it)
    ("knowledge_rebuild_from_wal", {"group_id": "g", "to_seq": 1, "force_clear": True}),
]


@pytest.mark.parametrize(("method", "params"), READ_ONLY_WAL_WRITES)
def test_every_write_on_a_read_only_wal_is_a_storage_failure_reflected_in_health(
    workspace: Workspace, method: str, params: dict[str, Any]
) -> None:
    """Each write alone, on a fresh workspace: refused as a storage failure naming a file of
    the workspace (never `internal error`), health degraded, nothing changed, and writes work
    again once the WAL does (no transaction left open on it)."""
    call = make_call(App(workspace))
    uuid = add(call, "g", "e1")
    for entity in ("Ada", "Babbage"):
        call("knowledge_assert_entity", name=entity, group_id="g")
    if method == "knowledge_delete_episode":
        params = {"episode_uuid": uuid}
    wal_of(workspace)._conn.execute("PRAGMA query_only=1")
    with pytest.raises(Exception) as failed:  # noqa: PT011 (what it is, is the point)
        call(method, **params)
    rpc = error_from_exception(failed.value)
    assert (rpc.code, rpc.data["kind"]) == (STORAGE_ERROR, "storage_failure"), rpc.message
    files = {str(workspace.settings.wal_path), str(workspace.settings.graph_path)}
    assert rpc.data["file"] in files, rpc.message
    status = call("knowledge_status")
    assert status["degraded"] is True, method
    assert rpc.data["file"] in str(status["reason"])
    assert names(call, "g") == ["e1"]
    assert ws_entities(call) == ["Ada", "Babbage"]
    wal_of(workspace)._conn.execute("PRAGMA query_only=0")
    add(call, "g", "e3")
    assert names(call, "g") == ["e1", "e3"]
    assert call("knowledge_status")["degraded"] is False


def ws_entities(call: Call) -> list[str]:
    nodes = call("knowledge_list_entities", group_ids=["g"])["nodes"]
    return sorted(node["name"] for node in nodes)


def wal_of(workspace: Workspace) -> EventLog:
    """The workspace's log, the SQLite file these tests reach into."""
    log = workspace.log
    assert isinstance(log, EventLog)
    return log
