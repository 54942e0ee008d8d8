"""knowledge_rebuild_from_wal / lcg replay: bounds, refusals, pins, isolation (K-WAL, K-REC)."""

from __future__ import annotations

import sqlite3

import pytest

from lcg.commands import recovery
from lcg.commands.writer import GroupPinned
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.workspace import Workspace, utc_now
from lcg.projections.embedding.port import Embedder
from tests.conftest import Call, make_call, make_workspace


def snapshot(conn: sqlite3.Connection, group: str) -> dict[str, list[tuple[object, ...]]]:
    """Every graph row of the group, for equality checks."""
    tables = {
        "entities": "uuid",
        "relationships": "uuid",
        "episodes": "uuid",
        "mentions": "episode_uuid, entity_uuid",
    }
    return {
        table: [
            tuple(r)
            for r in conn.execute(
                f"SELECT * FROM {table} WHERE group_id=? ORDER BY {order}", (group,)
            )
        ]
        for table, order in tables.items()
    }


def write_ten(call: Call, group: str = "g") -> None:
    """Seqs 1..10: five entities, then four edges, then one episode."""
    for name in ("A", "B", "C", "D", "E"):
        call("knowledge_assert_entity", name=name, group_id=group)
    for source, target in (("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")):
        call(
            "knowledge_assert_relationship",
            source_name=source,
            predicate="NEXT",
            target_name=target,
            group_id=group,
        )
    call("knowledge_add_episode", name="ep", episode_body="A to E", group_id=group)


def node_count(call: Call, group: str = "g") -> int:
    count: int = call("knowledge_get_nodes_by_group", group_ids=[group])["count"]
    return count


def edge_count(call: Call, group: str = "g") -> int:
    count: int = call("knowledge_get_edges_by_group", group_ids=[group])["count"]
    return count


def test_k_wal_016_017_full_rebuild_of_non_empty_group_fails_fast_once(call: Call) -> None:
    write_ten(call)
    with pytest.raises(Conflict) as error:
        call("knowledge_rebuild_from_wal", group_id="g")
    message = str(error.value)
    assert message.startswith("force_clear: ")
    assert error.value.field == "force_clear"
    # Issue 10: the advice works as written; deleting the group first (the old advice)
    # appends a purge that a replay re-applies, so it restored nothing.
    assert "`lcg replay --group g --force-clear`" in message
    assert "knowledge_delete_by_group" not in message


def test_k_wal_012_018_019_force_clear_rebuilds_only_the_target_group(
    call: Call, workspace: Workspace
) -> None:
    write_ten(call, "g")
    write_ten(call, "other")
    before_g = snapshot(workspace.reader(), "g")
    before_other = snapshot(workspace.reader(), "other")
    other_wal = call("knowledge_status")["wal_groups"]["other"]
    result = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert result["success"] is True
    assert result["mutations_replayed"] == 10
    assert result["last_committed_seq"] == 10
    assert snapshot(workspace.reader(), "g") == before_g
    # K-WAL-013/014: another group's data and position are untouched.
    assert snapshot(workspace.reader(), "other") == before_other
    assert call("knowledge_status")["wal_groups"]["other"] == other_wal


def test_k_wal_012_group_defaults_to_liminis(call: Call) -> None:
    call("knowledge_assert_entity", name="A")
    result = call("knowledge_rebuild_from_wal", force_clear=True)
    assert result["group_id"] == "liminis"


def test_k_wal_022_rebuild_after_delete_by_group_needs_no_force_clear(call: Call) -> None:
    write_ten(call)
    call("knowledge_delete_by_group", group_ids=["g"], confirm=True)
    result = call("knowledge_rebuild_from_wal", group_id="g")
    # The purge is itself in the stream (seq 11), so a full replay ends empty again;
    # a bounded replay before it restores the data (K-REC-004).
    assert result["mutations_replayed"] == 11
    assert node_count(call) == 0
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=10, force_clear=True)
    assert node_count(call) == 5


def test_issue_10_rebuild_refusals_name_commands_that_work_as_written(call: Call) -> None:
    """A bounded replay's refusal keeps its --to-seq; a dry run's never advises deleting the
    group (a replay after knowledge_delete_by_group re-applies the purge: it restores
    nothing)."""
    write_ten(call)
    with pytest.raises(Conflict) as bounded:
        call("knowledge_rebuild_from_wal", group_id="g", to_seq=5)
    assert "`lcg replay --group g --to-seq 5 --force-clear`" in str(bounded.value)
    with pytest.raises(Conflict) as dry:
        call("knowledge_rebuild_from_wal", group_id="g", dry_run=True, to_seq=5)
    message = str(dry.value)
    assert "knowledge_delete_by_group" not in message
    assert "`lcg log --group g`" in message
    assert "`lcg replay --group g --to-seq 5 --force-clear`" in message


@pytest.mark.parametrize("force_clear", [False, True])
def test_k_wal_023_024_dry_run_on_non_empty_group_fails_and_clears_nothing(
    call: Call, workspace: Workspace, force_clear: bool
) -> None:
    write_ten(call)
    before = snapshot(workspace.reader(), "g")
    with pytest.raises(Conflict):
        call("knowledge_rebuild_from_wal", group_id="g", dry_run=True, force_clear=force_clear)
    assert snapshot(workspace.reader(), "g") == before


def test_k_wal_025_dry_run_counts_and_never_mutates(call: Call, workspace: Workspace) -> None:
    write_ten(call)
    call("knowledge_clear_all", confirm=True, preserve_wal=True)
    status_before = call("knowledge_status")["wal_groups"]["g"]
    result = call("knowledge_rebuild_from_wal", group_id="g", dry_run=True, to_seq=7)
    assert result["dry_run"] is True
    assert result["mutations_replayed"] == 7
    assert node_count(call) == 0
    assert call("knowledge_status")["wal_groups"]["g"] == status_before


def test_k_wal_026_034_incremental_resume_reapplies_the_excluded_range(call: Call) -> None:
    write_ten(call)
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=5, force_clear=True)
    assert edge_count(call) == 0
    result = call("knowledge_rebuild_from_wal", group_id="g", from_seq=3)
    assert result["mutations_replayed"] == 5  # seqs 3..5 are already applied: no-ops
    assert edge_count(call) == 4
    assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] is None


def test_resume_that_would_skip_unapplied_events_is_refused(call: Call) -> None:
    write_ten(call)
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=3, force_clear=True)
    with pytest.raises(InvalidParams, match=r"skip seqs 4\.\.7") as error:
        call("knowledge_rebuild_from_wal", group_id="g", from_seq=8)
    assert error.value.field == "from_seq"
    assert node_count(call) == 3


@pytest.mark.parametrize("to_seq", [0, 1, 5, 9, 10])
def test_k_wal_027_replay_to_seq_shows_exactly_the_state_at_that_seq(
    settings: Settings, to_seq: int, tmp_path_factory: pytest.TempPathFactory, embedder: Embedder
) -> None:
    """Compare with a second workspace that only ever received the first to_seq writes."""
    reference_settings = Settings(workspace=tmp_path_factory.mktemp("reference"))
    with (
        make_workspace(settings, embedder) as ws,
        make_workspace(reference_settings, embedder) as ref,
    ):
        ids = iter(f"00000000-0000-4000-8000-{n:012d}" for n in range(100))
        ids_ref = iter(f"00000000-0000-4000-8000-{n:012d}" for n in range(100))
        call = make_call(App(ws, new_id=lambda: next(ids)))
        write_ten(call)
        call("knowledge_rebuild_from_wal", group_id="g", to_seq=to_seq, force_clear=True)
        ref_call = make_call(App(ref, new_id=lambda: next(ids_ref)))
        write_ten_first(ref_call, to_seq)
        assert snapshot(ws.reader(), "g") == snapshot(ref.reader(), "g")


def write_ten_first(call: Call, n: int) -> None:
    """The first n of write_ten's writes, one call each."""
    steps: list[tuple[str, dict[str, str]]] = [
        ("knowledge_assert_entity", {"name": name, "group_id": "g"})
        for name in ("A", "B", "C", "D", "E")
    ]
    steps += [
        (
            "knowledge_assert_relationship",
            {"source_name": s, "predicate": "NEXT", "target_name": t, "group_id": "g"},
        )
        for s, t in (("A", "B"), ("B", "C"), ("C", "D"), ("D", "E"))
    ]
    steps.append(
        ("knowledge_add_episode", {"name": "ep", "episode_body": "A to E", "group_id": "g"})
    )
    for name, params in steps[:n]:
        call(name, **params)


def test_k_wal_028_033_unbounded_rebuild_reapplies_what_a_bounded_one_excluded(
    call: Call, workspace: Workspace
) -> None:
    write_ten(call)
    full = snapshot(workspace.reader(), "g")
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=6, force_clear=True)
    result = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert result["to_seq"] is None
    assert result["mutations_replayed"] == 10
    assert snapshot(workspace.reader(), "g") == full


@pytest.mark.parametrize("force_clear", [False, True])
def test_k_wal_029_030_to_seq_below_from_seq_is_rejected_before_anything(
    call: Call, workspace: Workspace, force_clear: bool
) -> None:
    write_ten(call)
    before = snapshot(workspace.reader(), "g")
    wal = call("knowledge_status")["wal_groups"]["g"]
    with pytest.raises(InvalidParams) as error:
        call(
            "knowledge_rebuild_from_wal",
            group_id="g",
            from_seq=5,
            to_seq=4,
            force_clear=force_clear,
        )
    assert error.value.field == "to_seq"
    assert snapshot(workspace.reader(), "g") == before
    assert call("knowledge_status")["wal_groups"]["g"] == wal


def test_k_wal_029_to_seq_below_from_seq_rejected_even_for_unknown_group(call: Call) -> None:
    with pytest.raises(InvalidParams):
        call("knowledge_rebuild_from_wal", group_id="nowhere", from_seq=2, to_seq=1)


def test_k_wal_031_to_seq_equal_to_from_seq_is_accepted(call: Call) -> None:
    write_ten(call)
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=3, force_clear=True)
    result = call("knowledge_rebuild_from_wal", group_id="g", from_seq=4, to_seq=4)
    assert result["mutations_replayed"] == 1
    assert node_count(call) == 4


def test_k_wal_032_events_after_to_seq_stay_in_the_log(call: Call, workspace: Workspace) -> None:
    write_ten(call)
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=2, force_clear=True)
    assert workspace.log.head("g") == 10
    assert [r.seq for page in workspace.log.read(GroupId("g")) for r in page] == list(range(1, 11))
    wal = call("knowledge_status")["wal_groups"]["g"]
    assert wal == {"applied_seq": 2, "max_seq": 10, "hydration_status": "wal_ahead", "pinned_to": 2}


def test_bounded_rebuild_pins_the_group_and_refuses_writes_until_released(
    call: Call, workspace: Workspace
) -> None:
    write_ten(call)
    call("knowledge_assert_entity", name="Z", group_id="free")
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=5, force_clear=True)
    with pytest.raises(GroupPinned) as error:
        call("knowledge_assert_entity", name="F", group_id="g")
    assert "lcg replay --group g" in str(error.value)
    assert workspace.log.head("g") == 10
    call("knowledge_assert_entity", name="Y", group_id="free")  # other groups still write
    # Start-up catch-up does not apply a pinned group's tail either.
    assert workspace.runner.catch_up() == 0
    assert node_count(call) == 5
    call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert call("knowledge_assert_entity", name="F", group_id="g")["created"] is True


def test_pin_survives_a_restart(settings: Settings, embedder: Embedder) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        call("knowledge_rebuild_from_wal", group_id="g", to_seq=4, force_clear=True)
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert node_count(call) == 4
        assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] == 4


def test_k_rec_004_excluding_a_bad_mutation_restores_the_earlier_state(
    call: Call, workspace: Workspace
) -> None:
    write_ten(call, "g")
    write_ten(call, "other")
    good = snapshot(workspace.reader(), "g")
    call("knowledge_assert_entity", name="A", summary="corrupted", group_id="g")  # seq 11
    other = snapshot(workspace.reader(), "other")
    call("knowledge_rebuild_from_wal", group_id="g", from_seq=0, to_seq=10, force_clear=True)
    assert snapshot(workspace.reader(), "g") == good
    assert snapshot(workspace.reader(), "other") == other


def test_rebuild_of_a_group_without_events_is_refused(call: Call) -> None:
    with pytest.raises(NotFound) as error:
        call("knowledge_rebuild_from_wal", group_id="empty")
    assert error.value.field == "group_id"


def test_progress_is_reported_during_a_rebuild(app: App, call: Call) -> None:
    write_ten(call)
    from lcg.interfaces import operations

    seen: list[tuple[int, int]] = []
    operations.dispatch(
        app,
        "knowledge_rebuild_from_wal",
        {"group_id": "g", "force_clear": True},
        lambda done, total: seen.append((done, total)),
    )
    assert seen[-1] == (10, 10)


def test_k_wal_027_a_to_seq_past_the_head_replays_to_the_head_and_says_so(call: Call) -> None:
    """Issue 24, item 6: accepted (the entries up to 999 are all there are), clamped, and the
    result says so and where the group is held; it was pinned silently before."""
    write_ten(call)
    result = call("knowledge_rebuild_from_wal", group_id="g", to_seq=999, force_clear=True)
    assert (result["mutations_replayed"], result["last_committed_seq"]) == (10, 10)
    assert result["pinned_to"] == 10
    assert result["warnings"] == [
        "to_seq: 999 is past the last seq of group 'g' (10): replayed to seq 10, where the group "
        "is pinned like any bounded replay (writes refused until `lcg replay --group g`, or a "
        "rebuild without to_seq, releases it)"
    ]
    assert "warnings" not in call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)


def test_k_wal_035_a_resume_bounded_below_the_applied_seq_changes_nothing_and_recovery_keeps_it(
    settings: Settings,
) -> None:
    """Issue 24, item 6: `{from_seq: 2, to_seq: 2}` on a group at seq 5 replays nothing; it
    used to pin the group at 2, and the next knowledge_recover rebuilt it to 2: three entities
    gone from every read."""
    service = Service(settings, command="lcg test")
    service.start()
    try:
        for name in ("A", "B", "C", "D", "E"):
            service.call("knowledge_assert_entity", {"name": name, "group_id": "g"})
        result = service.call(
            "knowledge_rebuild_from_wal", {"group_id": "g", "from_seq": 2, "to_seq": 2}
        )
        assert (result["mutations_replayed"], result["last_committed_seq"]) == (0, 5)
        assert result["pinned_to"] is None
        assert result["warnings"][0].startswith(
            "to_seq: group 'g' is applied to seq 5, past to_seq 2: nothing was replayed and "
            "nothing changed"
        )
        assert "`lcg replay --group g --to-seq 2 --force-clear`" in result["warnings"][0]
        recovered = service.call("knowledge_recover", {"strategy": "rebuild_from_workspace_wal"})
        assert recovered["success"] is True
        nodes = service.call("knowledge_get_nodes_by_group", {"group_ids": ["g"]})
        assert nodes["count"] == 5
        assert service.call("knowledge_status", {})["wal_groups"]["g"]["pinned_to"] is None
        service.call("knowledge_assert_entity", {"name": "F", "group_id": "g"})  # not held
    finally:
        service.close()


def test_k_wal_035_recovery_keeps_what_a_group_applied_past_a_pin_a_no_op_replay_left(
    settings: Settings, embedder: Embedder
) -> None:
    """A workspace where the old no-op bounded replay already pinned a group below what it
    applied (WAL and graph pinned at 2, the graph at 5): rebuild_from_workspace_wal raises the
    pin to 5 rather than replaying the group to 2."""
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for name in ("A", "B", "C", "D", "E"):
            call("knowledge_assert_entity", name=name, group_id="g")
        ws.log.set_pins({GroupId("g"): 2})
        with ws.runner.conn:
            ws.runner.conn.execute("UPDATE projection_positions SET pinned_to=2 WHERE group_id='g'")
    recovery.apply_strategy(settings.files, recovery.Strategy.REBUILD_FROM_WORKSPACE_WAL, utc_now())
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        assert node_count(call) == 5
        assert call("knowledge_status")["wal_groups"]["g"]["pinned_to"] == 5


def test_k_wal_015_from_seq_defaults_to_0_a_full_rebuild(call: Call) -> None:
    write_ten(call)
    with pytest.raises(Conflict) as refused:  # omitted from_seq: the full rebuild's check
        call("knowledge_rebuild_from_wal", group_id="g")
    assert refused.value.field == "force_clear"
    result = call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert (result["from_seq"], result["mutations_replayed"]) == (0, 10)
    assert (node_count(call), edge_count(call)) == (5, 4)


def test_k_wal_020_force_clear_keeps_the_database_file_open(
    call: Call, workspace: Workspace, settings: Settings
) -> None:
    write_ten(call)
    inode = settings.graph_path.stat().st_ino
    conn = workspace.reader()
    call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert settings.graph_path.stat().st_ino == inode
    # the connection opened before the rebuild reads the rebuilt rows: same file, not reopened
    assert conn.execute("SELECT COUNT(*) FROM entities WHERE group_id='g'").fetchone()[0] == 5


def test_a_09_force_clear_with_from_seq_above_0_is_ignored(
    call: Call, workspace: Workspace
) -> None:
    """No purge and no error: the incremental resume runs as without force_clear."""
    write_ten(call)
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=5, force_clear=True)
    kept = snapshot(workspace.reader(), "g")["entities"]
    result = call("knowledge_rebuild_from_wal", group_id="g", from_seq=6, force_clear=True)
    assert result["success"] is True
    assert result["mutations_replayed"] == 5
    assert snapshot(workspace.reader(), "g")["entities"] == kept  # not cleared and rewritten
    assert (node_count(call), edge_count(call)) == (5, 4)


def test_k_wal_011_a_replay_only_moves_forward(call: Call, workspace: Workspace) -> None:
    """A resume can only add what follows the applied position: re-applied seqs are no-ops
    and a resume ending below it undoes nothing. Going back takes a full rebuild, which
    clears the group and replays forward from its first seq."""
    write_ten(call)
    before = snapshot(workspace.reader(), "g")
    again = call("knowledge_rebuild_from_wal", group_id="g", from_seq=1)
    assert again["last_committed_seq"] == 10
    back = call("knowledge_rebuild_from_wal", group_id="g", from_seq=1, to_seq=5)
    assert back["mutations_replayed"] == 0
    assert "never undoes applied events" in back["warnings"][0]
    assert snapshot(workspace.reader(), "g") == before
    assert call("knowledge_status")["wal_groups"]["g"]["applied_seq"] == 10
