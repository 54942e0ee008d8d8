"""`lcg dump` and `lcg restore`, each command run in this process as the console script runs
it (ADR 0032; K-WAL-003/004/005). Through a serving process: tests/e2e/test_cli_dump_restore.py.

Exit codes: 0 ok, 2 invalid (PATH names no dump, or a target that is not empty), 3 refused
(restoring over a non-empty workspace without --force).
"""

from __future__ import annotations

import functools
from pathlib import Path

from lcg.projections.embedding.port import Embedder
from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.helpers.console_script import names, refused, said, seed

lcg_json = functools.partial(run_json, run=lcg)


def test_lcg_dump_and_restore_make_a_workspace_with_the_same_graph(
    tmp_path: Path, embedder: Embedder
) -> None:
    source, dump, copy = tmp_path / "source", tmp_path / "dump", tmp_path / "copy"
    seed(embedder, source, ("a", "Ada"), ("a", "Analytical Engine"), ("b", "Babbage"))
    lcg_json(source, "call", "knowledge_wal_mark_create", '{"name": "before", "group_id": "a"}')

    dumped = lcg_json(source, "dump", str(dump), "--group", "a", "--json")
    assert [g["group_id"] for g in dumped["groups"]] == ["a"]
    assert dumped["target_dir"] == str(dump)
    again = said(lcg(source, "dump", str(dump)).stderr)
    assert "PATH: target_dir: must name a directory that does not exist or is empty" in again

    restored = lcg_json(copy, "restore", str(dump), "--json")
    assert restored["groups"]["a"]["events"] == 2
    assert restored["set_aside"] is None
    assert names(copy, "a", lcg) == names(source, "a", lcg) == ["Ada", "Analytical Engine"]
    assert lcg_json(copy, "status", "--json")["wal_groups"].keys() == {"a"}
    marks = lcg_json(copy, "call", "knowledge_wal_mark_list", '{"group_id": "a"}')
    assert marks["checkpoints"] == []  # K-WAL-005
    found = lcg_json(
        copy, "call", "knowledge_find_entities", '{"query": "Ada", "group_ids": ["a"]}'
    )
    assert found["nodes"][0]["name"] == "Ada"

    over = refused(lcg(copy, "restore", str(dump)), 3)
    assert "--force" in over
    assert "already holds a workspace" in over
    forced = lcg_json(copy, "restore", str(dump), "--force", "--json")
    kept = Path(forced["set_aside"])
    assert kept.parent == copy
    assert kept.name.startswith(".lcg.replaced-")
    assert (kept / "wal.sqlite").exists()  # the workspace that was there is not deleted
    assert names(copy, "a", lcg) == ["Ada", "Analytical Engine"]

    not_a_dump = refused(lcg(tmp_path / "other", "restore", str(source)), 2)
    assert "PATH: must name a dump written by knowledge_dump_wal" in not_a_dump
    assert not (tmp_path / "other" / ".lcg").exists()
