"""Small things that surprised a new user (issue 26 item 6): a group the workspace does not
hold is refused by `list-entities` as by `status`; a command that creates a workspace says
so (the tables at 80 columns: tests/e2e/test_cli_tables.py)."""

from __future__ import annotations

import json
from pathlib import Path

from lcg.interfaces.exit_codes import EXIT_REFUSED
from tests.helpers.cli_people import PEOPLE, invoke, workspace_with_people

NARROW = {"COLUMNS": "80"}


def test_list_entities_refuses_a_group_the_workspace_does_not_hold_as_status_does(
    tmp_path: Path,
) -> None:
    workspace = workspace_with_people(tmp_path)
    listed = invoke("list-entities", "-g", "nosuchgroup", *workspace, env=NARROW)
    status = invoke("status", "-g", "nosuchgroup", *workspace, env=NARROW)
    assert listed[0] == status[0] == EXIT_REFUSED
    assert listed[2] == status[2]
    assert "no group 'nosuchgroup' in this workspace (groups: kestrel-issue-412)" in listed[2]
    assert listed[1] == ""
    known = invoke("list-entities", "-g", "kestrel-issue-412", "--json", *workspace)
    assert known[0] == 0, known[2]
    assert len(json.loads(known[1])["nodes"]) == len(PEOPLE)


def test_a_write_that_creates_the_workspace_says_so_once(tmp_path: Path) -> None:
    workspace = ["--workspace", str(tmp_path / "new")]
    read = invoke("list-entities", *workspace)
    assert read[0] != 0
    assert "created" not in read[2]
    first = invoke("add-episode", "note", "Maria leads Kestrel.", *workspace)
    assert first[0] == 0, first[2]
    assert first[2] == f"note: created a new workspace at {tmp_path / 'new'}\n"
    second = invoke("add-episode", "note", "Tomasz keeps the cache.", *workspace)
    assert second[0] == 0, second[2]
    assert second[2] == ""
