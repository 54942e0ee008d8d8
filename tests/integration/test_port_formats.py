"""`lcg import` of basic-memory notes (written by basic-memory itself) and of Neo4j's bulk
import CSV pair and APOC JSON lines as Neo4j's documentation writes them (issue 32); paths
outside the folder refused."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json

lcg_json = functools.partial(run_json, run=lcg)
FIXTURES = Path(__file__).parents[2] / "fixtures" / "lcg" / "fixtures" / "data" / "port"
NOTES = FIXTURES / "basic-memory"


def nodes(workspace: Path, group: str) -> dict[str, dict[str, Any]]:
    found = lcg_json(
        workspace, "call", "knowledge_get_nodes_by_group", json.dumps({"group_ids": [group]})
    )["nodes"]
    return {n["name"]: n for n in found}


def edges(workspace: Path, group: str) -> set[tuple[str, str, str]]:
    names = {n["uuid"]: name for name, n in nodes(workspace, group).items()}
    found = lcg_json(
        workspace, "call", "knowledge_get_edges_by_group", json.dumps({"group_ids": [group]})
    )["edges"]
    return {(names[e["source_node_uuid"]], e["name"], names[e["target_node_uuid"]]) for e in found}


def test_issue_32_notes_basic_memory_wrote_become_episodes_entities_and_edges(
    tmp_path: Path,
) -> None:
    report = lcg_json(tmp_path, "import", str(NOTES), "-f", "basic-memory", "-g", "bm", "--json")
    assert report["entities"]["created"] == 3
    assert report["episodes"]["created"] == 3
    brewing = nodes(tmp_path, "bm")["Coffee Brewing Methods"]
    assert brewing["summary"] == (
        "[method] Pour over gives more clarity #brewing\n[tip] Water just off the boil (about 96 C)"
    )
    attributes = json.loads(brewing["attributes"])
    assert attributes["observations"][0] == {
        "category": "method",
        "text": "Pour over gives more clarity #brewing",
    }
    assert attributes["front_matter"]["permalink"] == "main/coffee/coffee-brewing-methods"
    assert edges(tmp_path, "bm") == {
        ("Coffee Brewing Methods", "relates_to", "Coffee Bean Origins"),
        ("Coffee Brewing Methods", "requires", "Burr Grinder"),
        ("Burr Grinder", "part_of", "Coffee Brewing Methods"),
    }
    episodes = lcg_json(
        tmp_path, "call", "knowledge_get_episodes", '{"group_id": "bm", "last_n": 10}'
    )["episodes"]
    by_name = {e["name"]: e for e in episodes}
    assert by_name["Burr Grinder"]["source_description"] == "equipment/Burr Grinder.md"
    assert by_name["Burr Grinder"]["content"] == (
        NOTES / "equipment" / "Burr Grinder.md"
    ).read_text(encoding="utf-8")
    again = lcg_json(tmp_path, "import", str(NOTES), "-f", "basic-memory", "-g", "bm", "--json")
    assert again["mark"] is None  # nothing new: no mark, no event


def test_issue_32_a_symbolic_link_in_the_notes_folder_is_refused_by_name(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ok.md").write_text("# Ok\n\n- [fact] fine\n", encoding="utf-8")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n", encoding="utf-8")
    os.symlink(secret, folder / "link.md")
    os.symlink(tmp_path, folder / "up")
    done = lcg(tmp_path, "import", str(folder), "-f", "basic-memory")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{folder / 'link.md'}: a symbolic link: refused" in said
    assert f"{folder / 'up'}: a symbolic link: refused" in said
    skipped = lcg_json(
        tmp_path, "import", str(folder), "-f", "basic-memory", "--skip-bad", "--json"
    )
    assert skipped["entities"]["created"] == 1
    assert set(nodes(tmp_path, "liminis")) == {"Ok"}


def test_issue_32_a_path_with_dot_dot_is_refused(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    done = lcg(tmp_path, "import", str(tmp_path / "notes" / ".."), "-f", "basic-memory")
    assert done.returncode == 2
    assert "a path with '..' is refused" in " ".join(done.stderr.split())


def test_issue_32_a_note_link_to_no_note_is_a_relation_to_a_missing_entity(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text(
        "# A\n\n- [fact] one\n\n- knows [[Nobody]]\n- [] \n", encoding="utf-8"
    )
    done = lcg(tmp_path, "import", str(folder), "-f", "basic-memory")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{folder / 'a.md'}:5: relation to a missing entity 'Nobody'" in said
    assert f"{folder / 'a.md'}:6: an observation with no text" in said


NODES_CSV = """personId:ID,name,born:int,:LABEL
keanu,Keanu Reeves,1964,Actor;Person
matrix,The Matrix,1999,Movie
"""
RELS_CSV = (
    ":START_ID,:END_ID,role,:TYPE\n"
    'keanu,matrix,"Neo, ""The One""",ACTED_IN\n'
    "keanu,nowhere,,ACTED_IN\n"
)


def test_issue_32_the_neo4j_csv_pair_imports_as_neo4j_admin_reads_it(tmp_path: Path) -> None:
    nodes_file, rels_file = tmp_path / "movies.csv", tmp_path / "roles.csv"
    nodes_file.write_text(NODES_CSV, encoding="utf-8")
    rels_file.write_text(RELS_CSV, encoding="utf-8")
    # relationships first on the command line: nodes are still read first
    done = lcg(tmp_path, "import", str(rels_file), str(nodes_file), "-f", "neo4j", "-g", "n")
    assert done.returncode == 2
    assert f"{rels_file}:3: relationship to a missing node id 'nowhere'" in " ".join(
        done.stderr.split()
    )
    report = lcg_json(
        tmp_path,
        "import",
        str(rels_file),
        str(nodes_file),
        "-f",
        "neo4j",
        "-g",
        "n",
        "--skip-bad",
        "--json",
    )
    assert report["entities"]["created"] == 2
    keanu = nodes(tmp_path, "n")["Keanu Reeves"]
    assert keanu["labels"] == ["Actor", "Person"]
    # CSV values stay text; the named id column is a property, as Neo4j keeps it
    assert json.loads(keanu["attributes"]) == {"born": "1964", "personId": "keanu"}
    assert edges(tmp_path, "n") == {("Keanu Reeves", "ACTED_IN", "The Matrix")}
    found = lcg_json(tmp_path, "call", "knowledge_get_edges_by_group", '{"group_ids": ["n"]}')[
        "edges"
    ]
    assert json.loads(found[0]["attributes"]) == {"role": 'Neo, "The One"'}


APOC = [
    {"type": "node", "id": "0", "labels": ["Person"], "properties": {"name": "Tom", "age": 67}},
    {
        "type": "relationship",
        "id": "0",
        "label": "KNOWS",
        "properties": {"since": 1990},
        "start": {"id": "0", "labels": ["Person"]},
        "end": {"id": "1", "labels": ["Person"]},
    },
    {"type": "node", "id": "1", "labels": ["Person"], "properties": {"name": "Meg"}},
    {"type": "path", "id": "9"},
]


def test_issue_32_apoc_json_lines_import_with_relationships_before_their_nodes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "all.json"
    path.write_text("".join(json.dumps(x) + "\n" for x in APOC), encoding="utf-8")
    done = lcg(tmp_path, "import", str(path), "-f", "neo4j", "-g", "n")
    assert done.returncode == 2
    assert f"{path}:4: unknown \"type\" 'path'" in " ".join(done.stderr.split())
    lcg_json(tmp_path, "import", str(path), "-f", "neo4j", "-g", "n", "--skip-bad", "--json")
    assert json.loads(nodes(tmp_path, "n")["Tom"]["attributes"]) == {"age": 67}
    assert edges(tmp_path, "n") == {("Tom", "KNOWS", "Meg")}


def test_issue_32_an_lcg_jsonl_file_without_its_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"kind": "entity", "name": "A"}\n', encoding="utf-8")
    done = lcg(tmp_path, "import", str(path), "-f", "lcg-jsonl")
    assert done.returncode == 2
    assert f'{path}:1: the first line must be the header {{"format": "lcg-jsonl"' in " ".join(
        done.stderr.split()
    )
