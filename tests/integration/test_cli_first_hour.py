"""Small things that surprised a new user (issue 26 item 6): a group the workspace does not
hold is refused by `list-entities` as by `status`; a command that creates a workspace says
so; the CLI's tables read in an 80-column terminal, one line per row and no empty column."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lcg.interfaces.cli_app import cli
from lcg.interfaces.exit_codes import EXIT_REFUSED

NARROW = {"COLUMNS": "80"}
PEOPLE = (
    ("Ada Lovelace", "Person", "Mathematician; wrote the first published program " * 2),
    ("Analytical Engine of Charles Babbage", "Machine,Design", "A general-purpose computer"),
    ("Kestrel", "Project", ""),
)


def _invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def _workspace_with_people(tmp_path: Path) -> list[str]:
    workspace = ["--workspace", str(tmp_path)]
    for name, labels, summary in PEOPLE:
        flags = [flag for label in labels.split(",") for flag in ("--label", label)]
        code, _, said = _invoke(
            "assert-entity",
            name,
            "--summary",
            summary,
            *flags,
            "-g",
            "kestrel-issue-412",
            *workspace,
        )
        assert code == 0, said
    return workspace


def test_list_entities_refuses_a_group_the_workspace_does_not_hold_as_status_does(
    tmp_path: Path,
) -> None:
    workspace = _workspace_with_people(tmp_path)
    listed = _invoke("list-entities", "-g", "nosuchgroup", *workspace, env=NARROW)
    status = _invoke("status", "-g", "nosuchgroup", *workspace, env=NARROW)
    assert listed[0] == status[0] == EXIT_REFUSED
    assert listed[2] == status[2]
    assert "no group 'nosuchgroup' in this workspace (groups: kestrel-issue-412)" in listed[2]
    assert listed[1] == ""
    known = _invoke("list-entities", "-g", "kestrel-issue-412", "--json", *workspace)
    assert known[0] == 0, known[2]
    assert len(json.loads(known[1])["nodes"]) == len(PEOPLE)


def test_a_write_that_creates_the_workspace_says_so_once(tmp_path: Path) -> None:
    workspace = ["--workspace", str(tmp_path / "new")]
    read = _invoke("list-entities", *workspace)
    assert read[0] != 0
    assert "created" not in read[2]
    first = _invoke("add-episode", "note", "Maria leads Kestrel.", *workspace)
    assert first[0] == 0, first[2]
    assert first[2] == f"note: created a new workspace at {tmp_path / 'new'}\n"
    second = _invoke("add-episode", "note", "Tomasz keeps the cache.", *workspace)
    assert second[0] == 0, second[2]
    assert second[2] == ""


def _table_lines(stdout: str, header: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return lines[start:]


def test_tables_read_in_an_80_column_terminal(tmp_path: Path) -> None:
    """list-entities, log, status and tools: no line over 80 characters, one line per row
    (so a uuid is whole on its line), and every column shown has a header and content."""
    workspace = _workspace_with_people(tmp_path)
    code, entities, said = _invoke("list-entities", *workspace, env=NARROW)
    assert code == 0, said
    lines = _table_lines(entities, "group")
    assert all(len(line) <= 80 for line in lines), entities
    assert len(lines) == 2 + len(PEOPLE)  # the header, its rule, a line per entity
    assert lines[0].split() == ["group", "name", "labels", "uuid"]
    listed = json.loads(_invoke("list-entities", "--json", *workspace)[1])["nodes"]
    for node in listed:
        row = next(line for line in lines if node["uuid"] in line)
        assert row.startswith("kestrel-issue-412"[:5])
        assert node["name"][:5] in row
        assert node["labels"][0][:5] in row
    wide = _table_lines(_invoke("list-entities", *workspace, env={"COLUMNS": "160"})[1], "group")
    assert wide[0].split() == ["group", "name", "labels", "summary", "uuid"]
    assert "Mathematician" in "\n".join(wide)

    code, logged, said = _invoke("log", "-g", "kestrel-issue-412", *workspace, env=NARROW)
    assert code == 0, said
    lines = _table_lines(logged, "seq")
    assert all(len(line) <= 80 for line in lines), logged
    events = [line for line in lines[2:] if line[:1].isdigit()]
    assert len(events) == len(PEOPLE)
    for node in listed:
        assert any(f"entity_uuid={node['uuid']}" in line for line in events)

    code, status, said = _invoke("status", *workspace, env=NARROW)
    assert code == 0, said
    assert all(len(line) <= 80 for line in _table_lines(status, "group")), status

    code, tools, said = _invoke("tools", env=NARROW)
    assert code == 0, said
    lines = _table_lines(tools, "tool")
    assert all(len(line) <= 80 for line in lines), tools
    assert lines[0].split() == ["tool", "scope", "what", "it", "does"]
    for line in lines[2:]:
        name, scope, *what = line.split()
        assert name.startswith(("knowledge_", "lambo_")), line
        assert scope in {"read", "write", "admin", "cypher", "memory"}, line
        assert what, line
