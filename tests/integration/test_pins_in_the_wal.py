"""A bounded replay's pin is the operator's choice and lives in the WAL (ADR 0023, issue 9).

graph.sqlite is derivable: when it is damaged and rebuilt, or lost, the rebuild must replay each
pinned group to its pin again, not to the head (which would bring back the events the operator
replayed away). Real files: each test writes, pins, harms or interrupts, and opens again.
"""

from __future__ import annotations

import sqlite3

import pytest

from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_call, make_workspace
from tests.helpers import damage
from tests.integration.test_rebuild import node_count, write_ten


def _pin_g_at_3(settings: Settings, embedder: Embedder) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        write_ten(call, group="other")
        call("knowledge_rebuild_from_wal", group_id="g", to_seq=3, force_clear=True)
        assert ws.log.pins() == {"g": 3}


@pytest.mark.parametrize(
    "harm",
    [damage.truncate_half, damage.corrupt_header, lambda path: path.unlink()],
    ids=["half-truncated", "bad-header", "deleted"],
)
def test_a_pinned_group_stays_at_its_pin_when_graph_sqlite_is_rebuilt(
    settings: Settings, embedder: Embedder, harm: object
) -> None:
    _pin_g_at_3(settings, embedder)
    assert callable(harm)
    harm(settings.graph_path)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        groups = call("knowledge_status")["wal_groups"]
        assert groups["g"]["pinned_to"] == 3
        assert groups["g"]["applied_seq"] == 3
        assert node_count(call) == 3  # seqs 1..3 are three entities; not the head's five
        assert groups["other"]["pinned_to"] is None
        assert node_count(call, "other") == 5
        # the pin still refuses writes and is released as the refusal says
        with pytest.raises(Exception, match="pinned at seq 3"):
            call("knowledge_assert_entity", name="F", group_id="g")
        call("knowledge_rebuild_from_wal", group_id="g", from_seq=4)
        assert ws.log.pins() == {}
    with make_workspace(settings, embedder) as ws:  # released for good
        call = make_call(App(ws))
        assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] is None
        assert node_count(call) == 5


def test_a_crash_between_recording_a_pin_and_the_replay_is_finished_at_open(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        ws.log.set_pins({GroupId("g"): 4})  # the process died here, before the graph replay
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] == 4
        assert node_count(call) == 4


def test_a_crash_between_releasing_a_pin_and_the_replay_releases_it_at_open(
    settings: Settings, embedder: Embedder
) -> None:
    _pin_g_at_3(settings, embedder)
    with make_workspace(settings, embedder) as ws:
        ws.log.set_pins({GroupId("g"): None})  # released in the WAL; the graph still pinned
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] is None
        assert node_count(call) == 5


def test_a_wal_from_before_pins_adopts_the_graphs_pins(
    settings: Settings, embedder: Embedder
) -> None:
    _pin_g_at_3(settings, embedder)
    with sqlite3.connect(settings.wal_path) as conn:  # a WAL written before ADR 0023
        conn.execute("DROP TABLE lcg_pins")
    conn.close()
    with make_workspace(settings, embedder) as ws:
        assert ws.log.pins() == {"g": 3}
        assert node_count(make_call(App(ws))) == 3


def test_clear_all_preserving_the_wal_holds_every_group_empty_after_a_graph_rebuild(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        call("knowledge_clear_all", confirm=True, preserve_wal=True)
    damage.truncate_half(settings.graph_path)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] == 0
        assert node_count(call) == 0


def test_clear_all_erasing_the_wal_erases_its_pins(settings: Settings, embedder: Embedder) -> None:
    _pin_g_at_3(settings, embedder)
    with make_workspace(settings, embedder) as ws:
        make_call(App(ws))("knowledge_clear_all", confirm=True, preserve_wal=False)
        assert ws.log.pins() == {}
