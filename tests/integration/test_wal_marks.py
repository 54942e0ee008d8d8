"""knowledge_wal_mark_create / _list / _delete on real workspaces (ADR 0032).

Checklist: K-INV-050..052, K-WAL-006..010, K-REC-005; P-135, P-136 (shapes). Marks live in
wal.sqlite, so they survive a restart and a graph.sqlite rebuilt after damage or loss.
"""

from __future__ import annotations

import sqlite3

import pytest

from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.operations import BY_NAME, Scope
from lcg.projections.embedding.port import Embedder
from tests.conftest import Call, make_call, make_workspace
from tests.helpers import damage
from tests.integration.test_rebuild import node_count, snapshot, write_ten


def _names(call: Call, group: str | None = None) -> list[str]:
    params = {} if group is None else {"group_id": group}
    return [mark["name"] for mark in call("knowledge_wal_mark_list", **params)["checkpoints"]]


def test_k_inv_050_051_052_the_mark_tools_are_admin_rows() -> None:
    for name in (
        "knowledge_wal_mark_create",
        "knowledge_wal_mark_list",
        "knowledge_wal_mark_delete",
    ):
        assert BY_NAME[name].scope is Scope.ADMIN


def test_k_wal_006_007_p_135_a_mark_names_the_default_groups_applied_seq(call: Call) -> None:
    write_ten(call, group="liminis")
    created = call("knowledge_wal_mark_create", name="before-cleanup")
    assert created == {
        "success": True,
        "name": "before-cleanup",
        "group_id": "liminis",  # K-WAL-007: the default group
        "seq": 10,
        "generation": 1,
        "created_at": created["created_at"],
    }
    call("knowledge_assert_entity", name="F", group_id="liminis")
    (mark,) = call("knowledge_wal_mark_list")["checkpoints"]
    assert mark["seq"] == 10  # a named position, not the head: the head moved on
    assert mark["reachable"] is True
    assert (mark["wal_min_seq"], mark["wal_max_seq"]) == (1, 11)


def test_k_wal_008_010_a_list_shows_only_its_own_groups_marks(call: Call) -> None:
    write_ten(call, group="a")
    write_ten(call, group="liminis")
    call("knowledge_wal_mark_create", name="in-a", group_id="a")
    call("knowledge_wal_mark_create", name="in-liminis")
    assert _names(call, "a") == ["in-a"]
    assert _names(call, "b") == []  # never an aggregate over groups
    assert _names(call) == ["in-liminis"]  # K-WAL-008: omitted group_id is liminis
    assert call("knowledge_wal_mark_list", group_id="a")["group_id"] == "a"


def test_k_wal_009_p_136_delete_tombstones_the_mark_and_frees_its_name(
    call: Call, settings: Settings
) -> None:
    write_ten(call, group="liminis")
    call("knowledge_wal_mark_create", name="m")
    assert call("knowledge_wal_mark_delete", name="m") == {
        "success": True,
        "name": "m",
        "group_id": "liminis",  # K-WAL-009: the default group
    }
    assert _names(call) == []
    with pytest.raises(NotFound) as error:
        call("knowledge_wal_mark_delete", name="m")  # already deleted
    assert (error.value.field, error.value.rule) == (
        "name",
        "must name an active mark of the group",
    )
    call("knowledge_assert_entity", name="F", group_id="liminis")
    assert call("knowledge_wal_mark_create", name="m")["seq"] == 11  # the name is free again
    with sqlite3.connect(settings.wal_path) as conn:  # the tombstone is kept
        rows = conn.execute("SELECT seq, deleted_at IS NOT NULL FROM lcg_marks ORDER BY id")
        assert rows.fetchall() == [(10, 1), (11, 0)]


def test_k_wal_009_a_mark_is_deleted_in_its_own_group_only(call: Call) -> None:
    write_ten(call, group="a")
    call("knowledge_wal_mark_create", name="m", group_id="a")
    with pytest.raises(NotFound, match="group 'liminis' has no mark named 'm'"):
        call("knowledge_wal_mark_delete", name="m")
    call("knowledge_wal_mark_delete", name="m", group_id="a")
    assert _names(call, "a") == []


@pytest.mark.parametrize(
    ("params", "field", "rule"),
    [
        ({}, "name", "is required"),
        ({"name": "has space"}, "name", "must contain only letters, digits, _ and -"),
        ({"name": "x" * 201}, "name", "at most 200 characters"),
        ({"name": ""}, "name", "at least 1 character"),
        ({"name": "m", "group_id": "bad group"}, "group_id", "must start with a letter or digit"),
        ({"name": "m", "seq": 3}, "seq", "is not a parameter of this tool"),
    ],
)
def test_p_135_bad_input_is_refused_naming_the_field_and_rule(
    call: Call, params: dict[str, object], field: str, rule: str
) -> None:
    with pytest.raises(InvalidParams) as error:
        call("knowledge_wal_mark_create", **params)
    assert error.value.field == field
    assert rule in str(error.value)
    assert _names(call) == []


def test_p_135_a_name_already_marked_in_the_group_is_refused(call: Call) -> None:
    write_ten(call, group="liminis")
    call("knowledge_wal_mark_create", name="m")
    call("knowledge_assert_entity", name="F", group_id="liminis")
    with pytest.raises(Conflict) as error:
        call("knowledge_wal_mark_create", name="m")
    assert error.value.field == "name"
    assert "already has a mark named 'm'" in str(error.value)
    (mark,) = call("knowledge_wal_mark_list")["checkpoints"]
    assert mark["seq"] == 10  # the first record is unchanged
    call("knowledge_wal_mark_create", name="m", group_id="other")  # names are per group


def test_k_rec_005_a_mark_is_the_to_seq_of_a_bounded_rebuild_that_restores_it(
    call: Call, app: App
) -> None:
    write_ten(call)
    write_ten(call, group="other")
    good = snapshot(app.workspace.reader(), "g")
    seq = call("knowledge_wal_mark_create", name="good", group_id="g")["seq"]
    call("knowledge_assert_entity", name="A", summary="a bad revision", group_id="g")
    call("knowledge_delete_by_group", group_ids=["g"], confirm=True)
    assert node_count(call) == 0
    other = snapshot(app.workspace.reader(), "other")
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=seq, force_clear=True)
    assert snapshot(app.workspace.reader(), "g") == good
    assert snapshot(app.workspace.reader(), "other") == other


def test_a_pinned_groups_mark_names_its_pin_not_the_head(call: Call) -> None:
    write_ten(call)
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=4, force_clear=True)
    assert call("knowledge_wal_mark_create", name="pinned", group_id="g")["seq"] == 4


def test_a_mark_of_an_empty_group_names_seq_0_which_a_rebuild_accepts(call: Call) -> None:
    assert call("knowledge_wal_mark_create", name="empty", group_id="g")["seq"] == 0
    write_ten(call)
    (mark,) = call("knowledge_wal_mark_list", group_id="g")["checkpoints"]
    assert mark["reachable"] is True
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=mark["seq"], force_clear=True)
    assert node_count(call) == 0


@pytest.mark.parametrize(
    "harm",
    [damage.truncate_half, lambda path: path.unlink()],
    ids=["graph-damaged", "graph-deleted"],
)
def test_marks_survive_a_restart_and_a_rebuilt_graph_sqlite(
    settings: Settings, embedder: Embedder, harm: object
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        call("knowledge_wal_mark_create", name="one", group_id="g")
        call("knowledge_assert_entity", name="F", group_id="g")
        call("knowledge_wal_mark_create", name="two", group_id="g")
        before = call("knowledge_wal_mark_list", group_id="g")
    with make_workspace(settings, embedder) as ws:  # a plain restart
        assert make_call(App(ws))("knowledge_wal_mark_list", group_id="g") == before
    assert callable(harm)
    harm(settings.graph_path)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert call("knowledge_wal_mark_list", group_id="g") == before
        assert [m["seq"] for m in before["checkpoints"]] == [10, 11]


def test_clear_all_leaves_marks_of_the_old_numbering_unreachable(call: Call) -> None:
    write_ten(call)
    call("knowledge_wal_mark_create", name="old", group_id="g")
    call("knowledge_clear_all", confirm=True)  # the WAL is erased: seqs start again at 1
    write_ten(call)
    write_ten(call)  # seq 10 exists again, but it is another event
    listed = call("knowledge_wal_mark_list", group_id="g")
    assert listed["generation"] == 2
    (mark,) = listed["checkpoints"]
    assert (mark["seq"], mark["generation"], mark["reachable"]) == (10, 1, False)
    call("knowledge_wal_mark_create", name="new", group_id="g")
    assert [
        m["reachable"] for m in call("knowledge_wal_mark_list", group_id="g")["checkpoints"]
    ] == [
        False,
        True,
    ]
