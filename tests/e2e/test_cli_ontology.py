"""`lcg ontology show|check` at the console script (P-018; ADR 0042)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.console_script import lcg

GOOD = """\
relation_types:
  - name: WORKS_FOR
    description: A person is employed by an organization.
    aliases: [employed by]
entity_types:
  - {name: Person, description: A human being.}
"""


def _write(workspace: Path, text: str, name: str = "ontology.yaml") -> None:
    path = workspace / ".lcg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_p_018_check_passes_a_valid_file_and_show_prints_it_resolved(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    checked = lcg(tmp_path, "ontology", "check")
    assert checked.returncode == 0, checked.stderr
    assert "ok: .lcg/ontology.yaml: 1 entity type(s), 1 relation type(s)" in checked.stdout
    shown = lcg(tmp_path, "ontology", "show", "--group", "g1", "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert (data["group_id"], data["mode"], data["source"]) == (
        "g1",
        "workspace",
        ".lcg/ontology.yaml",
    )
    assert data["relation_types"][0]["aliases"] == ["employed by"]
    _write(tmp_path, "relation_types:\n  - {name: KNOWS, description: d}\n", "ontology/g1.yaml")
    own = json.loads(lcg(tmp_path, "ontology", "show", "-g", "g1", "--json").stdout)
    assert (own["mode"], [t["name"] for t in own["relation_types"]]) == ("group", ["KNOWS"])
    assert "WORKS_FOR" in lcg(tmp_path, "ontology", "show").stdout  # the default group


def test_p_018_check_exits_2_naming_every_problem(tmp_path: Path) -> None:
    _write(tmp_path, GOOD)
    _write(
        tmp_path,
        "relation_types:\n  - {name: bad name, description: d, kw: [x]}\n",
        "ontology/g2.yaml",
    )
    checked = lcg(tmp_path, "ontology", "check")
    assert checked.returncode == 2
    assert "ok: .lcg/ontology.yaml" in checked.stdout
    lines = [line for line in checked.stderr.splitlines() if line.startswith("invalid: ")]
    assert lines == [
        "invalid: .lcg/ontology/g2.yaml: relation_types[0] (bad name): unknown key(s) kw;"
        " allowed: aliases, description, keywords, name",
        "invalid: .lcg/ontology/g2.yaml: relation_types[0] (bad name): name must start with a"
        " letter and hold only letters, digits and _",
    ]
    assert lcg(tmp_path, "ontology", "show", "-g", "g2").returncode == 2


def test_p_018_check_with_no_files_says_so(tmp_path: Path) -> None:
    checked = lcg(tmp_path, "ontology", "check")
    assert checked.returncode == 0
    assert "no ontology files" in checked.stdout
    assert not (tmp_path / ".lcg").exists()  # nothing was created
