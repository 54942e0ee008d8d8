"""`lcg replay` and the refusals of bad input, each command run in this process as the console
script runs it (stdin is not a TTY there either, so `lcg replay` cannot ask). Exit codes: 0 ok,
2 invalid params, 3 refused. The console script as a process: tests/e2e/test_cli.py.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from lcg.projections.embedding.port import Embedder
from tests.helpers.console_script import graph_rows, names, refused, said, seed, status
from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json

lcg_json = functools.partial(run_json, run=lcg)


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
    before = status(tmp_path, lcg), graph_rows(tmp_path)

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

    assert (status(tmp_path, lcg), graph_rows(tmp_path)) == before


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
    assert status(tmp_path, lcg)["wal_groups"]["g"]["pinned_to"] is None
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
    assert names(tmp_path, "g", lcg) == group_names[:3]
    wal_groups = status(tmp_path, lcg)["wal_groups"]
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
    assert names(tmp_path, "g", lcg) == group_names[:3]
    assert lcg_json(tmp_path, "assert-entity", "h2", "--group", "h", "--json")["created"] is True

    released = lcg_json(tmp_path, "replay", "--group", "g", "--force-clear", "--json")
    assert released["pinned_to"] is None
    assert released["to_seq"] is None
    assert released["mutations_replayed"] == 5
    assert released["last_committed_seq"] == 5
    assert lcg_json(tmp_path, "assert-entity", "e6", "--group", "g", "--json")["created"] is True
    assert names(tmp_path, "g", lcg) == [*group_names, "e6"]


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
    before = status(tmp_path, lcg), graph_rows(tmp_path)

    message = refused(lcg(tmp_path, "replay", "--group", "g", "--json"), 3)
    assert "force_clear" in message
    assert "not empty" in message
    for extra in ((), ("--force-clear",)):
        message = refused(lcg(tmp_path, "replay", "--group", "g", "--dry-run", *extra), 3)
        assert "dry run" in message

    assert (status(tmp_path, lcg), graph_rows(tmp_path)) == before

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
