"""An event damaged after the projections applied it is found at open (issue 24, item 5; ADR
0049): its group's writes are refused naming the file, group and seq (a rebuild would stop
before it and hide them), reads and other groups go on. Real SQLite files, bytes flipped on disk.
"""

from __future__ import annotations

import sqlite3

import pytest

from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import STORAGE_ERROR, error_from_exception
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import CorruptEvent
from lcg.projections.wal.store import stream_id
from lcg.projections.wal.sums import CHANGED
from tests.conftest import make_call, make_workspace
from tests.helpers.damage import overwrite_text
from tests.integration.test_storage_failures import (
    add,
    names,
    replay_from_the_wal,
    write_two_groups,
)


def assert_names_the_damage(message: str, settings: Settings, group: str, seq: int) -> None:
    assert f"{settings.wal_path} holds a damaged event at seq {seq} of group {group!r}" in message
    assert f"lcg replay --group {group} --to-seq {seq - 1} --force-clear" in message


def forget_the_checksums(settings: Settings) -> None:
    """The WAL as a version before checksums left it."""
    with sqlite3.connect(settings.wal_path) as conn:
        conn.execute("DROP TABLE lcg_event_sums")


def test_an_applied_event_changed_on_disk_refuses_its_groups_writes_naming_file_group_and_seq(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)  # applied: graph.sqlite holds a1..a5 and b1, b2
    # still valid JSON and UTF-8: only the checksum can tell
    assert overwrite_text(settings.wal_path, "marker3zz", b"MARKER3ZZ") == 1
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert_names_the_damage(str(ws.log_damage[GroupId("a")]), settings, "a", 3)
        with pytest.raises(CorruptEvent) as refused:
            add(call, "a", "a6")
        assert_names_the_damage(str(refused.value), settings, "a", 3)
        assert "checksum mismatch" in str(refused.value)
        assert ws.log.head(GroupId("a")) == 5  # nothing appended: nothing acked past the damage
        rpc = error_from_exception(refused.value)
        assert rpc.code == STORAGE_ERROR
        assert rpc.data == {
            "kind": "corrupt_event",
            "file": str(settings.wal_path),
            "group_id": "a",
            "seq": 3,
        }
        assert names(call, "a") == ["a1", "a2", "a3", "a4", "a5"]  # reads still served
        add(call, "b", "b3")
        assert names(call, "b") == ["b1", "b2", "b3"]
        status = call("knowledge_status")
        assert status["degraded"] is True
        assert_names_the_damage(str(status["reason"]), settings, "a", 3)


def test_an_old_wal_without_checksums_is_decoded_once_at_open_and_sealed(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    forget_the_checksums(settings)
    with make_workspace(settings, embedder) as ws:  # opens as before, and seals every event
        assert ws.faults() == []
        add(make_call(App(ws)), "a", "a6")
    with sqlite3.connect(settings.wal_path) as conn:
        sealed = conn.execute(
            "SELECT SUM(LENGTH(sums)) / 4 FROM lcg_event_sums WHERE stream_id=?",
            (stream_id("a").hex,),
        ).fetchone()[0]
    assert sealed == 6
    assert overwrite_text(settings.wal_path, "marker2zz", b"MARKER2ZZ") == 1
    with make_workspace(settings, embedder) as ws:  # sealed: a change that decodes is found
        assert_names_the_damage(str(ws.log_damage[GroupId("a")]), settings, "a", 2)


def test_an_undecodable_applied_event_of_a_wal_without_checksums_is_found_at_open(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    forget_the_checksums(settings)
    assert overwrite_text(settings.wal_path, "marker4zz", b"\xff\xfe") == 1  # not UTF-8
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        with pytest.raises(CorruptEvent) as refused:
            add(call, "a", "a6")
        assert_names_the_damage(str(refused.value), settings, "a", 4)
        add(call, "b", "b3")
    with sqlite3.connect(settings.wal_path) as conn:  # a damaged group is not sealed
        rows = conn.execute(
            "SELECT COUNT(*) FROM lcg_event_sums WHERE stream_id=?", (stream_id("a").hex,)
        ).fetchone()[0]
    assert rows == 0


def test_an_applied_event_deleted_from_the_wal_is_found_at_open(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    with sqlite3.connect(settings.wal_path) as conn:
        conn.execute(
            "DELETE FROM stored_events WHERE originator_id=? AND originator_version=2",
            (stream_id("a").hex,),
        )
    with make_workspace(settings, embedder) as ws:
        damage = ws.log_damage[GroupId("a")]
        assert (damage.seq, damage.reason) == (2, "the event is missing")


def test_the_bounded_replay_the_refusal_names_takes_the_group_back_and_a_full_one_does_not(
    settings: Settings, embedder: Embedder
) -> None:
    write_two_groups(settings, embedder)
    assert overwrite_text(settings.wal_path, "marker3zz", b"MARKER3ZZ") == 1
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        with pytest.raises(CorruptEvent) as stopped:  # a full replay stops at it: rolled back
            call("knowledge_rebuild_from_wal", group_id="a", force_clear=True)
        assert "holds an unreadable event at seq 3 of group 'a'" in str(stopped.value)
        assert names(call, "a") == ["a1", "a2", "a3", "a4", "a5"]
        with pytest.raises(CorruptEvent):
            add(call, "a", "a6")
        result = call("knowledge_rebuild_from_wal", group_id="a", to_seq=2, force_clear=True)
        assert result["pinned_to"] == 2
        assert ws.faults() == []
        assert names(call, "a") == ["a1", "a2"]
    with make_workspace(settings, embedder) as ws:  # pinned before the damage: nothing to say
        assert ws.log_damage == {}
        assert ws.faults() == []


def test_a_changed_event_the_projections_had_not_applied_is_not_applied_by_the_catch_up(
    settings: Settings, embedder: Embedder
) -> None:
    """Its bytes still decode; its checksum stops the replay before it, as an undecodable
    event does (ADR 0019), naming it."""
    write_two_groups(settings, embedder)
    assert overwrite_text(settings.wal_path, "marker4zz", b"MARKER4ZZ") == 1
    replay_from_the_wal(settings)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        failure = ws.catch_up_failures[GroupId("a")]
        assert isinstance(failure, CorruptEvent)
        assert (failure.seq, failure.reason) == (4, CHANGED)
        assert names(call, "a") == ["a1", "a2", "a3"]
        assert names(call, "b") == ["b1", "b2"]
        assert "MARKER4ZZ" not in str(call("knowledge_get_episodes", group_id="a", last_n=9))
