"""`lcg store copy` and `lcg store verify` (issue 28 item 4; ADR 0073), and `lcg restore`
into a PostgreSQL log: the CLI's commands in the test's process, the real server, real workspaces.

A copy keeps the log's identity, so the workspace switched to the copy serves its projections
as they are (no row replayed); verify names the first group and seq that differ (exit 1).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lcg.projections.embedding.port import Embedder
from lcg.projections.wal.postgres import describe
from tests.helpers.console_script import graph_rows, lcg_in_process, names, refused, said, seed

pytestmark = pytest.mark.postgres


def lcg(workspace: Path, *args: str, url: str = "") -> subprocess.CompletedProcess[str]:
    """The command in this process (its subject is the command, not the process)."""
    return lcg_in_process(workspace, *args, env={"LCG_STORE_URL": url} if url else None)


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(ok(result).stdout)
    return parsed


def on(url: str) -> Any:
    return lambda workspace, *args: lcg(workspace, *args, url=url)


def test_copy_to_postgresql_keeps_the_identity_and_back_verifies_equal(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    ws = tmp_path / "ws"
    seed(embedder, ws, ("a", "Ada"), ("a", "Analytical Engine"), ("b", "Babbage"))
    mark = '{"name": "good", "group_id": "a"}'
    ok(lcg(ws, "call", "knowledge_wal_mark_create", mark))
    before = graph_rows(ws)

    copied = lcg(ws, "store", "copy", "--to", pg_url)
    ok(copied)
    assert "copied 3 events of 2 group(s), 1 mark(s) and 0 pin(s)" in said(copied.stdout)
    assert f"to {describe(pg_url)}" in said(copied.stdout)
    assert "a: 2 of 3 events" in said(copied.stderr)  # progress, group by group
    assert as_json(lcg(ws, "store", "verify", "--against", pg_url, "--json"))["same"] is True

    # the workspace on the copy: the same identity, so nothing is set aside or replayed
    assert names(ws, "a", on(pg_url)) == ["Ada", "Analytical Engine"]
    assert graph_rows(ws) == before
    assert not list((ws / ".lcg").glob("graph.sqlite.*"))
    marks = as_json(lcg(ws, "call", "knowledge_wal_mark_list", '{"group_id": "a"}', url=pg_url))
    logged = as_json(
        lcg(ws, "log", "--group", "a", "--json", url=pg_url)
    )  # lcg log reads the server's
    assert [e["seq"] for e in logged["events"]] == [1, 2]
    assert [m["name"] for m in marks["checkpoints"]] == ["good"]

    ok(lcg(ws, "assert-entity", "Lovelace", "--group", "a", url=pg_url))
    differs = lcg(ws, "store", "verify", "--against", pg_url)
    assert differs.returncode == 1
    assert "group 'a' at seq 3" in said(differs.stderr)

    back = tmp_path / "back.sqlite"
    ok(lcg(ws, "store", "copy", "--to", str(back), url=pg_url))  # from the configured store
    same = as_json(lcg(ws, "store", "verify", "--against", str(back), "--json", url=pg_url))
    assert same["same"] is True
    assert same["same_identity"] is True
    assert same["groups"] == {"a": {"events": 3, "head": 3}, "b": {"events": 1, "head": 1}}


def test_a_target_that_holds_events_is_refused_unless_forced(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    seed(embedder, one, ("a", "Ada"))
    seed(embedder, two, ("z", "Zuse"), ("z", "Z3"))
    ok(lcg(one, "store", "copy", "--to", pg_url))
    again = refused(lcg(two, "store", "copy", "--to", pg_url), 3)
    assert "--force" in again
    assert "already holds events" in again
    assert as_json(lcg(one, "store", "verify", "--against", pg_url, "--json"))["same"] is True
    forced = as_json(lcg(two, "store", "copy", "--to", pg_url, "--force", "--json"))
    assert (forced["events"], forced["groups"]) == (2, 1)
    assert as_json(lcg(two, "store", "verify", "--against", pg_url, "--json"))["same"] is True
    mismatch = lcg(one, "store", "verify", "--against", pg_url)
    assert mismatch.returncode == 1
    assert "group 'a' at seq 1" in said(mismatch.stderr)


def test_copy_refuses_a_bad_source_or_target_naming_the_flag(
    tmp_path: Path, embedder: Embedder
) -> None:
    seed(embedder, tmp_path, ("a", "Ada"))
    secret = "pw-never-shown-4242"  # noqa: S105 (made up)
    bad = refused(lcg(tmp_path, "store", "copy", "--to", f"mysql://u:{secret}@h/db"), 2)
    assert "--to" in bad
    assert secret not in bad
    missing = refused(lcg(tmp_path, "store", "verify", "--against", str(tmp_path / "no")), 3)
    assert "--against" in missing


def test_lcg_restore_makes_a_workspace_on_the_postgresql_log(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    source, dump, ws = tmp_path / "source", tmp_path / "dump", tmp_path / "ws"
    seed(embedder, source, ("a", "Ada"), ("a", "Analytical Engine"))
    ok(lcg(source, "dump", str(dump)))
    restored = as_json(lcg(ws, "restore", str(dump), "--json", url=pg_url))
    assert restored["groups"]["a"]["events"] == 2
    assert not (ws / ".lcg" / "wal.sqlite").exists()
    assert names(ws, "a", on(pg_url)) == ["Ada", "Analytical Engine"]
    over = refused(lcg(tmp_path / "empty", "restore", str(dump), url=pg_url), 3)
    assert describe(pg_url) in over  # the log holds events: refused without --force
    ok(lcg(ws, "restore", str(dump), "--force", url=pg_url))
    assert names(ws, "a", on(pg_url)) == ["Ada", "Analytical Engine"]
