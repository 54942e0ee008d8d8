"""The `lcg` console script, driven as a subprocess against real workspaces under tmp_path.

Exit codes (interfaces/lcg/interfaces/cli.py): 0 ok, 2 invalid params, 3 refused, 4 workspace
busy, 5 projection error. Rich wraps stderr at 80 columns when it is not a terminal, so
messages are compared with their whitespace collapsed (`said`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from tests.helpers.console_script import (
    graph_rows,
    lcg,
    lcg_json,
    names,
    refused,
    said,
    seed,
    status,
)

pytestmark = pytest.mark.slow


def test_write_and_read_commands_round_trip_through_the_console_script(tmp_path: Path) -> None:
    """assert-entity, assert-relationship, add-episode, list-entities, status and call agree.

    Checklist: K-AST-001, K-AST-004 (same name twice: one entity, same uuid), K-AST-021,
    K-AST-026 (default fact), K-CFG-005 and K-AST-002 (default group `liminis`), K-WAL-001 and
    K-WAL-002 (each write is the next seq of its own group's stream), K-STA-001/002/003/005;
    P-102, P-107, P-108, P-109 (result shapes).
    """
    ada = lcg_json(
        tmp_path,
        "assert-entity",
        "Ada Lovelace",
        "--summary",
        "Mathematician",
        "--label",
        "Person",
        "--attributes",
        '{"born": 1815}',
        "--group",
        "g",
        "--json",
    )
    assert ada == {
        "entity_uuid": ada["entity_uuid"],
        "created": True,
        "embedding_warning": None,
        "embedding_stale": [],
    }
    again = lcg_json(
        tmp_path,
        "assert-entity",
        "Ada Lovelace",
        "--summary",
        "Mathematician",
        "--label",
        "Person",
        "--attributes",
        '{"born": 1815}',
        "--group",
        "g",
        "--json",
    )
    assert again == {**ada, "created": False}
    engine = lcg_json(tmp_path, "assert-entity", "Analytical Engine", "--group", "g", "--json")
    assert engine["created"] is True
    assert engine["entity_uuid"] != ada["entity_uuid"]

    edge = lcg_json(
        tmp_path,
        "assert-relationship",
        "Ada Lovelace",
        "WROTE_NOTES_ON",
        "Analytical Engine",
        "--group",
        "g",
        "--json",
    )
    assert edge == {
        "edge_uuid": edge["edge_uuid"],
        "created": True,
        "embedding_warning": None,
        "embedding_stale": [],
    }

    episode = lcg_json(tmp_path, "add-episode", "note-1", "Ada's notes on the Engine.", "--json")
    assert list(episode) == ["episode_uuid"]

    listed = lcg_json(tmp_path, "list-entities", "--group", "g", "--json")
    assert listed["count"] == 2
    assert [n["uuid"] for n in listed["nodes"]] == [ada["entity_uuid"], engine["entity_uuid"]]
    first = listed["nodes"][0]
    assert first["name"] == "Ada Lovelace"
    assert first["labels"] == ["Person"]
    assert first["summary"] == "Mathematician"
    assert json.loads(first["attributes"]) == {"born": 1815}
    assert first["group_id"] == "g"

    shown = lcg_json(tmp_path, "status", "--json")
    assert (shown["entity_count"], shown["relationship_count"], shown["episode_count"]) == (2, 1, 1)
    assert shown["connected"] is shown["queryable"] is True
    assert shown["initializing"] is False
    assert shown["wal_groups"] == {
        # 3: the identical re-assertion of Ada appended nothing (ADR 0021)
        "g": {"applied_seq": 3, "max_seq": 3, "hydration_status": "hydrated", "pinned_to": None},
        "liminis": {
            "applied_seq": 1,
            "max_seq": 1,
            "hydration_status": "hydrated",
            "pinned_to": None,
        },
    }
    assert shown["wal"]["max_seq"] == shown["wal"]["applied_seq"] == 1  # the default group

    episodes = lcg_json(tmp_path, "call", "knowledge_get_episodes", "{}")
    assert episodes["count"] == 1
    assert episodes["episodes"][0]["uuid"] == episode["episode_uuid"]
    assert episodes["episodes"][0]["group_id"] == "liminis"
    assert episodes["episodes"][0]["content"] == "Ada's notes on the Engine."
    edges = lcg_json(
        tmp_path, "call", "knowledge_get_edges_by_uuids", json.dumps({"uuids": [edge["edge_uuid"]]})
    )
    assert edges["count"] == 1
    assert edges["edges"][0]["fact"] == "Ada Lovelace WROTE_NOTES_ON Analytical Engine"
    assert edges["edges"][0]["source_node_uuid"] == ada["entity_uuid"]
    assert edges["edges"][0]["target_node_uuid"] == engine["entity_uuid"]
    via_call = lcg_json(tmp_path, "call", "knowledge_status")
    assert via_call["wal_groups"] == shown["wal_groups"]


def test_invalid_input_exits_2_names_the_field_and_changes_nothing(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Bad parameters exit 2 with the field named on stderr, and the workspace is unchanged.

    Missing `name` (through `lcg call`), attributes that are not JSON, and a replay whose
    to_seq is below from_seq, even with --force-clear, which must not purge anything first.

    Checklist: K-AST-003 (no name: error, nothing written), K-WAL-029, K-WAL-030 (refused before
    the WAL is read: no data cleared even with force_clear, no position changed); P-137.
    """
    seed(embedder, tmp_path, ("g", "Ada"), ("g", "Babbage"), ("h", "Other"))
    before = status(tmp_path), graph_rows(tmp_path)

    message = refused(lcg(tmp_path, "call", "knowledge_assert_entity", '{"group_id": "g"}'), 2)
    assert "name: is required" in message
    message = refused(
        lcg(tmp_path, "assert-entity", "X", "--group", "g", "--attributes", "{bad"), 2
    )
    assert "--attributes: must be a JSON object" in message
    message = refused(
        lcg(
            tmp_path,
            "replay",
            "--group",
            "g",
            "--from-seq",
            "5",
            "--to-seq",
            "2",
            "--force-clear",
            "--json",
        ),
        2,
    )
    assert "to_seq: must not be less than from_seq" in message

    assert (status(tmp_path), graph_rows(tmp_path)) == before


def test_k_wal_027_035_lcg_replay_says_what_its_bounds_did_not_do(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Issue 24, item 6. `--to-seq 999` past the head replays to the head and warns that the
    group is pinned there (it pinned silently). A resume bounded below the applied seq
    replays nothing, pins nothing and says how to go back (it pinned the group at 2, and the
    next recovery rebuilt it there)."""
    seed(embedder, tmp_path, *(("g", f"e{seq}") for seq in range(1, 6)))
    past = lcg(tmp_path, "replay", "--group", "g", "--to-seq", "999", "--force-clear")
    assert past.returncode == 0, past.stderr
    assert said(past.stderr) == (
        "warning: to_seq: 999 is past the last seq of group 'g' (5): replayed to seq 5, where "
        "the group is pinned like any bounded replay (writes refused until `lcg replay --group "
        "g`, or a rebuild without to_seq, releases it)"
    )
    assert "replayed 5 events of group 'g' up to seq 5; pinned at seq 5" in said(past.stdout)
    released = lcg_json(tmp_path, "replay", "--group", "g", "--force-clear", "--json")
    assert released["pinned_to"] is None
    before = graph_rows(tmp_path)
    noop = lcg(tmp_path, "replay", "--group", "g", "--from-seq", "2", "--to-seq", "2", "--json")
    assert noop.returncode == 0, noop.stderr
    result = json.loads(noop.stdout)
    assert (result["mutations_replayed"], result["pinned_to"]) == (0, None)
    assert said(noop.stderr).startswith(
        "warning: to_seq: group 'g' is applied to seq 5, past to_seq 2: nothing was replayed "
        "and nothing changed"
    )
    assert graph_rows(tmp_path) == before  # same rowids: not even replayed in place
    assert status(tmp_path)["wal_groups"]["g"]["pinned_to"] is None
    assert lcg_json(tmp_path, "assert-entity", "e6", "--group", "g", "--json")["created"] is True


def test_bounded_replay_shows_the_state_at_that_seq_and_pins_the_group_until_released(
    tmp_path: Path,
    embedder: Embedder,
) -> None:
    """`replay --to-seq N` shows exactly seq N and pins the group; a full replay releases it.

    While pinned, a write to the group exits 3 and points at `lcg replay`; another group still
    takes writes. The WAL past N stays on disk and the unbounded replay re-applies it.

    Checklist: K-WAL-012, K-WAL-013 and K-WAL-014 (the other group's rows and position are
    untouched), K-WAL-018, K-WAL-027 (to_seq inclusive), K-WAL-028, K-WAL-032 (entries past
    to_seq stay), K-WAL-033 (a later unbounded rebuild re-applies them), K-REC-004; P-137.
    """
    group_names = [f"e{seq}" for seq in range(1, 6)]
    seed(embedder, tmp_path, *(("g", name) for name in group_names), ("h", "h1"))
    other_before = [row for row in graph_rows(tmp_path)[0] if row[2] == "h"]

    pinned = lcg_json(
        tmp_path, "replay", "--group", "g", "--to-seq", "3", "--force-clear", "--json"
    )
    assert pinned["success"] is True
    assert pinned["pinned_to"] == 3
    assert pinned["to_seq"] == 3
    assert pinned["last_committed_seq"] == 3
    assert pinned["mutations_replayed"] == 3
    assert names(tmp_path, "g") == group_names[:3]
    wal_groups = status(tmp_path)["wal_groups"]
    assert wal_groups["g"] == {
        "applied_seq": 3,
        "max_seq": 5,
        "hydration_status": "wal_ahead",
        "pinned_to": 3,
    }
    assert wal_groups["h"] == {
        "applied_seq": 1,
        "max_seq": 1,
        "hydration_status": "hydrated",
        "pinned_to": None,
    }
    assert [row for row in graph_rows(tmp_path)[0] if row[2] == "h"] == other_before

    message = refused(lcg(tmp_path, "assert-entity", "e6", "--group", "g"), 3)
    assert "pinned at seq 3" in message
    assert "lcg replay --group g" in message
    assert names(tmp_path, "g") == group_names[:3]
    assert lcg_json(tmp_path, "assert-entity", "h2", "--group", "h", "--json")["created"] is True

    released = lcg_json(tmp_path, "replay", "--group", "g", "--force-clear", "--json")
    assert released["pinned_to"] is None
    assert released["to_seq"] is None
    assert released["mutations_replayed"] == 5
    assert released["last_committed_seq"] == 5
    assert lcg_json(tmp_path, "assert-entity", "e6", "--group", "g", "--json")["created"] is True
    assert names(tmp_path, "g") == [*group_names, "e6"]


def test_full_replay_of_a_non_empty_group_is_refused_without_force_clear_and_in_a_dry_run(
    tmp_path: Path,
    embedder: Embedder,
) -> None:
    """A full replay over existing rows exits 3 naming force_clear; a dry run exits 3 as well.

    stdin is not a TTY, so `lcg replay` cannot ask and must refuse. A dry run of a full
    rebuild of a non-empty group fails fast even with --force-clear. Nothing changes: status,
    rows (by rowid) and positions are identical before and after. As a control, the same
    replay with --force-clear succeeds and re-inserts only that group's rows.

    Checklist: K-WAL-016, K-WAL-017 (one explicit error), K-WAL-021 (force_clear defaults to
    false), K-WAL-023, K-WAL-024, K-WAL-025, and for the control K-WAL-018, K-WAL-019.
    """
    seed(embedder, tmp_path, ("g", "Ada"), ("g", "Babbage"), ("h", "Other"))
    before = status(tmp_path), graph_rows(tmp_path)

    message = refused(lcg(tmp_path, "replay", "--group", "g", "--json"), 3)
    assert "force_clear" in message
    assert "not empty" in message
    for extra in ((), ("--force-clear",)):
        message = refused(lcg(tmp_path, "replay", "--group", "g", "--dry-run", *extra), 3)
        assert "dry run" in message

    assert (status(tmp_path), graph_rows(tmp_path)) == before

    replayed = lcg_json(tmp_path, "replay", "--group", "g", "--force-clear", "--json")
    assert replayed["mutations_replayed"] == 2
    entities_before, positions_before = before[1]
    entities_after, positions_after = graph_rows(tmp_path)
    assert positions_after == positions_before
    assert [row for row in entities_after if row[2] == "h"] == [
        row for row in entities_before if row[2] == "h"
    ]
    group_before = [row for row in entities_before if row[2] == "g"]
    group_after = [row for row in entities_after if row[2] == "g"]
    assert [row[1:] for row in group_after] == [row[1:] for row in group_before]
    assert [row[0] for row in group_after] != [row[0] for row in group_before]


def test_demo_runs_the_main_job_and_replays_to_the_end(tmp_path: Path) -> None:
    """`lcg demo --workspace DIR` exits 0, leaves its state in DIR/.lcg and says it replayed.

    Checklist: K-CFG-003 (state in `.lcg/`), K-WAL-027, K-WAL-028 (bounded, then full replay).
    """
    workspace = tmp_path / "demo"
    result = lcg(workspace, "demo")
    assert result.returncode == 0, result.stderr
    assert "replayed to the end" in said(result.stdout)
    assert "(hydrated)" in said(result.stdout)
    assert "project corpus 'kestrel': 15 entities" in said(result.stdout)
    assert "-> 'Kestrel Scheduler'" in said(result.stdout)
    # issue 11: a derive, its receipt applied, and stats of the transcript's session
    assert "accepted 1 concept(s) for background write" in said(result.stdout)
    assert "applied — derived 1 concept(s): 1 created (1 embedded)" in said(result.stdout)
    assert "session kestrel-issue-412: 44 nodes (22 concepts, 22 interactions)" in said(
        result.stdout
    )
    assert Settings(workspace).wal_path.exists()
    assert Settings(workspace).graph_path.exists()


def test_names_that_look_like_markup_are_printed_verbatim(tmp_path: Path) -> None:
    """Stored names and error messages are plain text, never Rich markup."""
    created = lcg(tmp_path, "assert-entity", "[/x] odd [bold]name[/bold]")
    assert created.returncode == 0, created.stderr
    listed = lcg(tmp_path, "list-entities")
    assert listed.returncode == 0, listed.stderr
    # The table may wrap the cell, but every piece is printed as typed.
    assert "[/x] odd" in listed.stdout
    assert "[bold]name[/bold]" in listed.stdout
    message = refused(lcg(tmp_path, "assert-relationship", "[x]", "R", "y"), 3)
    assert "no entity named '[x]'" in message
    assert "knowledge_add_cross_group_edge" in message
