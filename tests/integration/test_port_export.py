"""`lcg export` and the round trips lcg -> F -> lcg (issue 32): each format keeps what it can
carry and the tests name what it drops; an export is one snapshot, taken at any seq."""

from __future__ import annotations

import csv
import functools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json

lcg_json = functools.partial(run_json, run=lcg)
FIXTURES = Path(__file__).parents[2] / "fixtures" / "lcg" / "fixtures" / "data" / "port"


def rich_group(workspace: Path, group: str = "g") -> None:
    """Two entities (one with two labels, a summary and attributes), an edge with a fact, a
    relation type, a validity time and attributes, and an episode."""
    for args in (
        (
            "assert-entity",
            "Ada",
            "--label",
            "Person",
            "--label",
            "Writer",
            "--summary",
            "wrote notes",
            "--attributes",
            '{"born": 1815}',
        ),
        ("assert-entity", "Engine", "--label", "Machine", "--summary", "a computer"),
        (
            "assert-relationship",
            "Ada",
            "WROTE_ABOUT",
            "Engine",
            "--fact",
            "Ada wrote about the Engine",
            "--relation-type",
            "WROTE",
            "--valid-at",
            "1843-01-01",
            "--attributes",
            '{"pages": 65}',
        ),
        (
            "add-episode",
            "letter",
            "Dear Charles, the notes are done.",
            "--reference-time",
            "1843-07-02T10:00:00Z",
        ),
    ):
        done = lcg(workspace, *args, "-g", group)
        assert done.returncode == 0, done.stderr


def graph(workspace: Path, group: str) -> dict[str, Any]:
    """The group as comparable values: entities by name, edges by ends, episodes by name."""
    nodes = lcg_json(
        workspace, "call", "knowledge_get_nodes_by_group", json.dumps({"group_ids": [group]})
    )["nodes"]
    names = {n["uuid"]: n["name"] for n in nodes}
    found = lcg_json(
        workspace, "call", "knowledge_get_edges_by_group", json.dumps({"group_ids": [group]})
    )["edges"]
    episodes = lcg_json(
        workspace, "call", "knowledge_get_episodes", json.dumps({"group_id": group, "last_n": 100})
    )["episodes"]
    return {
        "entities": {
            n["name"]: (tuple(n["labels"]), n["summary"], json.loads(n["attributes"]))
            for n in nodes
        },
        "edges": {
            (names[e["source_node_uuid"]], e["name"], names[e["target_node_uuid"]]): (
                e["fact"],
                e["relation_type"],
                e["valid_at"],
                json.loads(e["attributes"]),
            )
            for e in found
        },
        "episodes": {e["name"]: (e["content"], e["valid_at"]) for e in episodes},
    }


def round_trip(workspace: Path, fmt: str, output: Path) -> dict[str, Any]:
    rich_group(workspace)
    exported = lcg_json(workspace, "export", "-f", fmt, "-g", "g", "-o", str(output), "--json")
    assert exported["as_of_seq"] == 4
    files = sorted(output.iterdir()) if output.is_dir() else [output]
    imported = lcg(workspace, "import", *map(str, files), "-f", fmt, "-g", "back")
    assert imported.returncode == 0, imported.stderr
    return exported


def test_issue_32_lcg_jsonl_round_trip_keeps_the_whole_group(tmp_path: Path) -> None:
    exported = round_trip(tmp_path, "lcg-jsonl", tmp_path / "g.jsonl")
    assert exported["dropped"] == ""
    assert graph(tmp_path, "back") == graph(tmp_path, "g")
    header = json.loads((tmp_path / "g.jsonl").read_text(encoding="utf-8").split("\n")[0])
    assert header["format"] == "lcg-jsonl"
    assert header["version"] == 1
    assert header["counts"] == {"entities": 2, "edges": 1, "episodes": 1, "concepts": 0}


def test_issue_32_neo4j_csv_round_trip_keeps_entities_and_edges_drops_episodes(
    tmp_path: Path,
) -> None:
    exported = round_trip(tmp_path, "neo4j", tmp_path / "neo")
    assert exported["written"] == {"nodes": 2, "relationships": 1}
    assert exported["dropped"] == "episodes, concepts"
    before, after = graph(tmp_path, "g"), graph(tmp_path, "back")
    assert after["entities"] == before["entities"]
    assert after["edges"] == before["edges"]
    assert after["episodes"] == {}  # dropped: the CSV pair has no episodes
    with (tmp_path / "neo" / "relationships.csv").open(encoding="utf-8") as handle:
        header = next(csv.reader(handle))
    assert header[:3] == [":START_ID", ":END_ID", ":TYPE"]


def test_issue_32_neo4j_apoc_json_round_trip_keeps_entities_and_edges(tmp_path: Path) -> None:
    round_trip(tmp_path, "neo4j", tmp_path / "graph.json")
    before, after = graph(tmp_path, "g"), graph(tmp_path, "back")
    assert after["entities"] == before["entities"]
    assert after["edges"] == before["edges"]
    first = json.loads((tmp_path / "graph.json").read_text(encoding="utf-8").split("\n")[0])
    assert first["type"] == "node"
    assert first["properties"]["name"] == "Ada"


def test_issue_32_mcp_memory_round_trip_keeps_names_a_label_and_observations(
    tmp_path: Path,
) -> None:
    exported = round_trip(tmp_path, "mcp-memory", tmp_path / "memory.jsonl")
    after = graph(tmp_path, "back")
    # kept: names, the first label, the summary (as the one observation), the predicates
    assert after["entities"]["Ada"][:2] == (("Person",), "wrote notes")
    assert after["entities"]["Engine"][:2] == (("Machine",), "a computer")
    # dropped: the second label, other attributes, the fact, relation type, validity time,
    # the edge's attributes, episodes
    assert after["entities"]["Ada"][2] == {"observations": ["wrote notes"]}
    assert after["edges"] == {
        ("Ada", "WROTE_ABOUT", "Engine"): ("Ada WROTE_ABOUT Engine", None, None, {})
    }
    assert after["episodes"] == {}
    assert "episodes" in exported["dropped"]


def test_issue_32_basic_memory_round_trip_keeps_notes_observations_and_links(
    tmp_path: Path,
) -> None:
    exported = round_trip(tmp_path, "basic-memory", tmp_path / "notes")
    assert exported["written"] == {"notes": 2}
    after = graph(tmp_path, "back")
    assert after["entities"]["Ada"][:2] == (("Person",), "[note] wrote notes")
    assert set(after["edges"]) == {("Ada", "WROTE_ABOUT", "Engine")}
    # dropped: the second label, the edge's fact, type, time and attributes; the group's
    # episodes (each note comes back as an episode of its own text instead)
    assert after["edges"][("Ada", "WROTE_ABOUT", "Engine")][1:] == (None, None, {})
    assert set(after["episodes"]) == {"Ada", "Engine"}


def test_issue_32_export_as_of_seq_is_the_group_as_it_was_then(tmp_path: Path) -> None:
    rich_group(tmp_path)
    out = tmp_path / "at1.jsonl"
    result = lcg_json(
        tmp_path,
        "export",
        "-f",
        "lcg-jsonl",
        "-g",
        "g",
        "--as-of-seq",
        "1",
        "-o",
        str(out),
        "--json",
    )
    assert result["counts"] == {"entities": 1, "edges": 0, "episodes": 0, "concepts": 0}
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["as_of_seq"] == 1
    assert [x["name"] for x in lines[1:]] == ["Ada"]
    refused = lcg(
        tmp_path,
        "export",
        "-f",
        "lcg-jsonl",
        "-g",
        "g",
        "--as-of-seq",
        "9",
        "-o",
        str(tmp_path / "late.jsonl"),
    )
    assert refused.returncode == 2
    assert "--as-of-seq: must be at most the group's last seq 4" in " ".join(refused.stderr.split())
    assert not (tmp_path / "late.jsonl").exists()


def test_issue_32_an_export_of_a_session_lists_its_concepts_types_and_edges(
    tmp_path: Path,
) -> None:
    for args in (
        ("derive", "the engine computes", "ada wrote notes"),
        ("derive", "notes include an algorithm", "--depends-on", "ada wrote notes"),
    ):
        done = lcg(tmp_path, *args, "--session", "s1", "--agent", "a1")
        assert done.returncode == 0, done.stderr
    out = tmp_path / "s1.jsonl"
    lcg_json(tmp_path, "export", "-f", "lcg-jsonl", "--session", "s1", "-o", str(out), "--json")
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()][1:]
    concepts = {x["uuid"]: x for x in lines if x["kind"] == "concept"}
    assert sorted(c["content"] for c in concepts.values()) == [
        "ada wrote notes",
        "notes include an algorithm",
        "the engine computes",
    ]
    assert {c["concept_type"] for c in concepts.values()} == {"logic"}
    assert {c["status"] for c in concepts.values()} == {"None"}  # none canonized yet
    [edge] = [x for x in lines if x["kind"] == "concept_edge"]
    assert edge["type"] == "depends_on"
    assert concepts[edge["source"]]["content"] == "notes include an algorithm"
    assert concepts[edge["target"]]["content"] == "ada wrote notes"
    # an import writes the concepts and their edge into another session (statuses are
    # canonization's to decide again: tests/integration/test_port_concepts.py)
    back = lcg_json(tmp_path, "import", str(out), "-f", "lcg-jsonl", "-g", "other", "--json")
    assert back["entities"]["created"] == 0
    assert back["concepts"]["created"] == 3
    assert back["concept_edges"]["created"] == 1


@pytest.mark.parametrize(
    ("fmt", "name", "message"),
    [
        ("lcg-jsonl", "exists.jsonl", "--output: must not exist"),
        ("neo4j", "full", "--output: must be a new or empty folder"),
    ],
)
def test_issue_32_an_export_never_overwrites(
    tmp_path: Path, fmt: str, name: str, message: str
) -> None:
    rich_group(tmp_path)
    (tmp_path / "exists.jsonl").write_text("keep me", encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep me", encoding="utf-8")
    done = lcg(tmp_path, "export", "-f", fmt, "-g", "g", "-o", str(tmp_path / name))
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert (tmp_path / "exists.jsonl").read_text(encoding="utf-8") == "keep me"


def test_issue_32_an_export_of_an_unknown_group_is_refused(tmp_path: Path) -> None:
    rich_group(tmp_path)
    done = lcg(tmp_path, "export", "-f", "lcg-jsonl", "-g", "nope", "-o", str(tmp_path / "x"))
    assert done.returncode == 3
    assert "nope" in done.stderr
