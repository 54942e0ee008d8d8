"""Neo4j id spaces (issue 32, ADR 0089): ids are unique within their space, so users 1, 2, 3
and movies 1, 2, 3 are six nodes and each rating joins the user and the movie its columns'
spaces name (the fixture is laid out as neo4j-admin's ID-space example); two APOC files'
ids are each file's own; an id twice in one space is a bad line."""

from __future__ import annotations

import functools
import json
from pathlib import Path

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.integration.test_port_formats import FIXTURES, edges, nodes

lcg_json = functools.partial(run_json, run=lcg)
SPACES = FIXTURES / "neo4j-id-spaces"


def test_issue_32_neo4j_id_spaces_keep_users_and_movies_with_the_same_ids_apart(
    tmp_path: Path,
) -> None:
    files = [str(SPACES / name) for name in ("ratings.csv", "users.csv", "movies.csv")]
    report = lcg_json(tmp_path, "import", *files, "-f", "neo4j", "-g", "ml", "--json")
    assert report["entities"]["created"] == 6
    assert report["relations"]["created"] == 4
    found = nodes(tmp_path, "ml")
    assert sorted(found) == [
        "Heat", "Jumanji", "Toy Story", "User-ID:1", "User-ID:2", "User-ID:3",
    ]  # fmt: skip
    assert found["Toy Story"]["labels"] == ["Movie", "Animation"]
    attributes = json.loads(found["Toy Story"]["attributes"])
    assert attributes == {"movieId": "1", "title": "Toy Story", "year": "1995"}
    assert edges(tmp_path, "ml") == {
        ("User-ID:1", "RATED", "Toy Story"),
        ("User-ID:1", "RATED", "Heat"),
        ("User-ID:2", "RATED", "Jumanji"),
        ("User-ID:3", "RATED", "Toy Story"),
    }


def test_issue_32_an_id_twice_in_a_space_or_an_end_in_another_space_is_a_bad_line(
    tmp_path: Path,
) -> None:
    users = tmp_path / "users.csv"
    users.write_text("userId:ID(User-ID),name\n1,Ann\n1,Bob\n", encoding="utf-8")
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(":START_ID(User-ID),:END_ID(Movie-ID),:TYPE\n1,1,RATED\n", encoding="utf-8")
    done = lcg(tmp_path, "import", str(users), str(ratings), "-f", "neo4j", "-g", "ml")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{users}:3: duplicate node id '1' in id space 'User-ID': first at {users}:2" in said
    assert f"{ratings}:2: relationship to a missing node id '1' in id space 'Movie-ID'" in said


def test_issue_32_two_apoc_files_reusing_ids_do_not_collide(tmp_path: Path) -> None:
    def export(path: Path, first: str, second: str) -> str:
        lines = [
            {"type": "node", "id": "0", "labels": ["Person"], "properties": {"name": first}},
            {"type": "node", "id": "1", "labels": ["Person"], "properties": {"name": second}},
            {
                "type": "relationship", "id": "0", "label": "KNOWS", "properties": {},
                "start": {"id": "0"}, "end": {"id": "1"},
            },
        ]  # fmt: skip
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        return str(path)

    one = export(tmp_path / "one.json", "Tom", "Meg")
    two = export(tmp_path / "two.json", "Ada", "Charles")
    lcg_json(tmp_path, "import", one, two, "-f", "neo4j", "-g", "n", "--json")
    assert edges(tmp_path, "n") == {("Tom", "KNOWS", "Meg"), ("Ada", "KNOWS", "Charles")}
