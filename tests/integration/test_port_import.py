"""`lcg import` (issue 32): the real MCP memory server's file, idempotence, the mark that
undoes an import, --dry-run, and bad input named by file and line (nothing imported unless
--skip-bad). Run in this process as the console script runs it."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json

lcg_json = functools.partial(run_json, run=lcg)
FIXTURES = Path(__file__).parents[2] / "fixtures" / "lcg" / "fixtures" / "data" / "port"
SERVER_FILE = FIXTURES / "mcp-memory-server.jsonl"


def entities(workspace: Path, group: str) -> dict[str, dict[str, Any]]:
    nodes = lcg_json(
        workspace, "call", "knowledge_get_nodes_by_group", json.dumps({"group_ids": [group]})
    )["nodes"]
    return {n["name"]: n for n in nodes}


def edges(workspace: Path, group: str) -> set[tuple[str, str, str]]:
    names = {n["uuid"]: name for name, n in entities(workspace, group).items()}
    found = lcg_json(
        workspace, "call", "knowledge_get_edges_by_group", json.dumps({"group_ids": [group]})
    )["edges"]
    return {(names[e["source_node_uuid"]], e["name"], names[e["target_node_uuid"]]) for e in found}


def head(workspace: Path, group: str) -> int:
    return int(lcg_json(workspace, "log", "-g", group, "--json")["max_seq"])


def write(path: Path, *lines: Any) -> Path:
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def test_issue_32_imports_the_file_the_official_mcp_memory_server_wrote(tmp_path: Path) -> None:
    report = lcg_json(
        tmp_path, "import", str(SERVER_FILE), "--format", "mcp-memory", "-g", "mem", "--json"
    )
    assert report["entities"]["created"] == 4
    assert report["relations"]["created"] == 4
    assert report["mark"]["seq"] == 0  # the group was empty: a replay to 0 undoes it all
    ada = entities(tmp_path, "mem")["Ada Lovelace"]
    assert ada["labels"] == ["person"]
    observations = [
        "Wrote the first published algorithm",
        "Born 1815 in London",
        "Daughter of Lord Byron",  # added by the server's add_observations
    ]
    assert ada["summary"] == "\n".join(observations)
    assert json.loads(ada["attributes"]) == {"observations": observations}
    assert edges(tmp_path, "mem") == {
        ("Ada Lovelace", "wrote_notes_on", "Analytical Engine"),
        ("Charles Babbage", "designed", "Analytical Engine"),
        ("Ada Lovelace", "corresponded_with", "Charles Babbage"),
        ("Ada Lovelace", "born_in", "London"),
    }


def test_issue_32_importing_the_same_file_twice_appends_nothing(tmp_path: Path) -> None:
    args = ("import", str(SERVER_FILE), "--format", "mcp-memory", "-g", "mem")
    assert lcg(tmp_path, *args).returncode == 0
    before = head(tmp_path, "mem")
    again = lcg(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert "nothing to write: the group already holds all of it" in again.stdout
    assert head(tmp_path, "mem") == before
    marks = lcg_json(tmp_path, "call", "knowledge_wal_mark_list", '{"group_id": "mem"}')
    assert len(marks["checkpoints"]) == 1  # no second mark either


def test_issue_32_a_changed_observation_is_written_again_and_only_it(tmp_path: Path) -> None:
    lines = SERVER_FILE.read_text(encoding="utf-8").splitlines()
    first = write(tmp_path / "a.jsonl", *lines)
    lcg_json(tmp_path, "import", str(first), "-f", "mcp-memory", "-g", "mem", "--json")
    changed = [json.loads(line) for line in lines]
    changed[3]["observations"].append("Has many bridges")  # London
    second = write(tmp_path / "b.jsonl", *changed)
    report = lcg_json(tmp_path, "import", str(second), "-f", "mcp-memory", "-g", "mem", "--json")
    assert report["entities"] == {"created": 0, "updated": 1, "unchanged": 3}
    assert report["relations"] == {"created": 0, "updated": 0, "unchanged": 4}
    assert "Has many bridges" in entities(tmp_path, "mem")["London"]["summary"]


def test_issue_32_a_replay_to_the_import_mark_undoes_the_import(tmp_path: Path) -> None:
    earlier = write(
        tmp_path / "one.jsonl",
        {"type": "entity", "name": "Kept", "entityType": "x", "observations": []},
    )
    lcg_json(tmp_path, "import", str(earlier), "-f", "mcp-memory", "-g", "mem", "--json")
    report = lcg_json(
        tmp_path, "import", str(SERVER_FILE), "-f", "mcp-memory", "-g", "mem", "--json"
    )
    mark = report["mark"]
    assert mark["seq"] == 1
    assert mark["name"].startswith("import-")
    logged = lcg_json(tmp_path, "log", "-g", "mem", "--json")["events"]
    assert [e["type"] for e in logged][1:] == ["entity_created"] * 4 + ["relationship_created"] * 4
    replayed = lcg(
        tmp_path, "replay", "--group", "mem", "--to-seq", str(mark["seq"]), "--force-clear"
    )
    assert replayed.returncode == 0, replayed.stderr
    assert set(entities(tmp_path, "mem")) == {"Kept"}


def test_issue_32_dry_run_says_what_would_change_and_writes_nothing(tmp_path: Path) -> None:
    done = lcg(tmp_path, "import", str(SERVER_FILE), "-f", "mcp-memory", "-g", "mem", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "entities: 4 new, 0 changed, 0 already there" in done.stdout
    assert "would write 8 event(s) (dry run: nothing written)" in done.stdout
    assert not (tmp_path / ".lcg").exists()  # not even a workspace


BAD_LINES: list[Any] = [
    {"type": "entity", "name": "A", "entityType": "t", "observations": ["one"]},
    '{"type": "entity", "name": "B",',  # line 2: cut short
    {"type": "concept", "name": "C"},  # line 3: a type the format does not have
    {"type": "entity", "name": "a", "entityType": "t", "observations": []},  # 4: A again
    {"type": "relation", "from": "A", "to": "Nobody", "relationType": "knows"},  # 5
    {"type": "entity", "name": "D", "entityType": "t", "observations": "not a list"},  # 6
    {"type": "entity", "name": "E", "entityType": "t", "observations": []},
    {"type": "relation", "from": "A", "to": "E", "relationType": "knows"},
]


def test_issue_32_bad_lines_are_named_by_file_and_line_and_nothing_is_imported(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "bad.jsonl", *BAD_LINES)
    done = lcg(tmp_path, "import", str(path), "-f", "mcp-memory", "-g", "mem")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{path}:2: is not JSON" in said
    assert f"{path}:3: unknown \"type\" 'concept'" in said
    assert f"{path}:4: duplicate entity name 'a': first at {path}:1" in said
    assert f"{path}:5: relation to a missing entity 'Nobody'" in said
    assert f'{path}:6: "observations" must be a list of strings' in said
    assert "nothing imported: 5 bad line(s)" in said
    assert not (tmp_path / ".lcg").exists()


def test_issue_32_skip_bad_imports_the_rest_and_lists_what_it_skipped(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", *BAD_LINES)
    done = lcg(tmp_path, "import", str(path), "-f", "mcp-memory", "-g", "mem", "--skip-bad")
    assert done.returncode == 0, done.stderr
    assert f"skipped: {path}:5: relation to a missing entity 'Nobody'" in " ".join(
        done.stderr.split()
    )
    assert "skipped 5 bad line(s)" in done.stdout
    assert set(entities(tmp_path, "mem")) == {"A", "E"}
    assert edges(tmp_path, "mem") == {("A", "knows", "E")}


def test_issue_32_a_file_that_is_not_utf8_is_named_with_its_encoding_problem(
    tmp_path: Path,
) -> None:
    path = tmp_path / "utf16.jsonl"
    path.write_text(json.dumps(BAD_LINES[0]) + "\n", encoding="utf-16")
    done = lcg(tmp_path, "import", str(path), "-f", "mcp-memory")
    assert done.returncode == 2
    assert f"{path}:1: is not UTF-8 text (byte 0xff at column 1)" in " ".join(done.stderr.split())


def test_issue_32_a_relation_may_name_an_entity_the_group_already_holds(tmp_path: Path) -> None:
    lcg_json(tmp_path, "import", str(SERVER_FILE), "-f", "mcp-memory", "-g", "mem", "--json")
    more = write(
        tmp_path / "more.jsonl",
        {
            "type": "relation",
            "from": "London",
            "to": "Ada Lovelace",
            "relationType": "birthplace_of",
        },
    )
    report = lcg_json(tmp_path, "import", str(more), "-f", "mcp-memory", "-g", "mem", "--json")
    assert report["relations"]["created"] == 1
    assert ("London", "birthplace_of", "Ada Lovelace") in edges(tmp_path, "mem")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-f", "csv"), "--format: must be one of mcp-memory, basic-memory, neo4j, lcg-jsonl"),
        (("-f", "mcp-memory", "-g", "a", "--session", "b"), "give at most one of --group"),
        (("-f", "mcp-memory", "-g", "no spaces"), "--group"),
    ],
)
def test_issue_32_bad_options_are_refused_by_name(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = lcg(tmp_path, "import", str(SERVER_FILE), *args)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())


def test_issue_32_a_line_past_lcgs_limits_is_named_with_the_rule(tmp_path: Path) -> None:
    header = {"format": "lcg-jsonl", "version": 1, "group_id": "g"}
    path = write(
        tmp_path / "limits.jsonl",
        header,
        {"kind": "entity", "name": "x" * 600},
        {"kind": "entity", "name": "A"},
        {"kind": "edge", "source": "A", "target": "A", "predicate": "is", "valid_at": "yesterday"},
        {"kind": "episode", "name": "e", "content": "c", "source": "email"},
        {"kind": "note", "name": "n"},
    )
    done = lcg(tmp_path, "import", str(path), "-f", "lcg-jsonl")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{path}:2: name: must be at most 512 characters (got 600)" in said
    assert f"{path}:4: valid_at: must be an RFC 3339 timestamp (got 'yesterday')" in said
    assert f"{path}:5: source must be one of text, message, json" in said
    assert f"{path}:6: unknown \"kind\" 'note'" in said


def test_issue_32_a_relation_given_twice_is_written_once(tmp_path: Path) -> None:
    entity = {"type": "entity", "name": "A", "entityType": "t", "observations": []}
    relation = {"type": "relation", "from": "A", "to": "A", "relationType": "likes"}
    path = write(tmp_path / "twice.jsonl", entity, relation, relation)
    report = lcg_json(tmp_path, "import", str(path), "-f", "mcp-memory", "-g", "g", "--json")
    assert report["relations"] == {"created": 1, "updated": 0, "unchanged": 1}
    assert head(tmp_path, "g") == 2  # the entity and one relation
