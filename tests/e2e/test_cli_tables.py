"""The CLI's tables read in an 80-column terminal (issue 26 item 6): one line per row, no
empty column, a uuid whole; each command runs in its own process, whose console takes its
width from COLUMNS."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli_people import PEOPLE, invoke, workspace_with_people
from tests.helpers.console_script import LCG, run
from tests.helpers.service_process import clean_env


def _shown(columns: int, *args: str) -> str:
    """`lcg ARGS` as printed in a terminal `columns` wide: in its own process, whose console
    takes its width from COLUMNS (this process's console may have fixed its width already)."""
    done = run([str(LCG), *args], env=clean_env(COLUMNS=str(columns)))
    assert done.returncode == 0, done.stderr
    return done.stdout


def _table_lines(stdout: str, header: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return lines[start:]


def test_tables_read_in_an_80_column_terminal(tmp_path: Path) -> None:
    """list-entities, log, status and tools: no line over 80 characters, one line per row
    (so a uuid is whole on its line), and every column shown has a header and content."""
    workspace = workspace_with_people(tmp_path)
    entities = _shown(80, "list-entities", *workspace)
    lines = _table_lines(entities, "group")
    assert all(len(line) <= 80 for line in lines), entities
    assert len(lines) == 2 + len(PEOPLE)  # the header, its rule, a line per entity
    assert lines[0].split() == ["group", "name", "labels", "uuid"]
    listed = json.loads(invoke("list-entities", "--json", *workspace)[1])["nodes"]
    for node in listed:
        row = next(line for line in lines if node["uuid"] in line)
        assert row.startswith("kestrel-issue-412"[:5])
        assert node["name"][:5] in row
        assert node["labels"][0][:5] in row
    wide = _table_lines(_shown(160, "list-entities", *workspace), "group")
    assert wide[0].split() == ["group", "name", "labels", "summary", "uuid"]
    assert "Mathematician" in "\n".join(wide)

    logged = _shown(80, "log", "-g", "kestrel-issue-412", *workspace)
    lines = _table_lines(logged, "seq")
    assert all(len(line) <= 80 for line in lines), logged
    events = [line for line in lines[2:] if line[:1].isdigit()]
    assert len(events) == len(PEOPLE)
    for node in listed:
        assert any(f"entity_uuid={node['uuid']}" in line for line in events)

    status = _shown(80, "status", *workspace)
    assert all(len(line) <= 80 for line in _table_lines(status, "group")), status

    tools = _shown(80, "tools")
    lines = _table_lines(tools, "tool")
    assert all(len(line) <= 80 for line in lines), tools
    assert lines[0].split() == ["tool", "scope", "what", "it", "does"]
    for line in lines[2:]:
        name, scope, *what = line.split()
        assert name.startswith(("knowledge_", "lambo_")), line
        assert scope in {"read", "write", "admin", "cypher", "memory"}, line
        assert what, line
