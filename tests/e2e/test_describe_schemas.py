"""`lcg describe TOOL` shows the fields of the objects a tool takes, with their types,
bounds, descriptions and an example of each, and the tool's example call (issue 26 item 3):
a concept of `lambo_derive` is no longer "array of any"."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from lcg.interfaces import tool_catalogue
from tests.helpers.console_script import LCG, run
from tests.helpers.service_process import clean_env


def describe(tmp_path: Path, name: str) -> str:
    done = run([str(LCG), "describe", name], env=clean_env(COLUMNS="80"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_describe_lambo_derive_shows_a_concepts_fields_with_examples(tmp_path: Path) -> None:
    shown = describe(tmp_path, "lambo_derive")
    lines = shown.splitlines()
    assert all(len(line) <= 80 for line in lines[:-1]), shown  # the example call is one line
    assert "  concepts: array of concept, required, min items 1; max items 64" in lines
    assert "array of any" not in shown
    concept_type = lines.index(
        '    concepts[].concept_type: "entity" | "logic" | "constraint" | "resource" |'
    )
    assert lines[concept_type + 1].strip() == '"observation", required'
    assert "entity, logic, constraint, resource or observation" in lines[concept_type + 2]
    assert lines[concept_type + 3].strip() == 'e.g. "logic"'
    assert "    concepts[].content: string, required, max length 16384" in lines
    assert any(line.startswith("    concepts[].depends_on: array of string") for line in lines)
    assert '        e.g. ["user schema"]' in lines
    assert "    parent_of[].child: string, required, max length 16384" in lines
    call = shlex.split(lines[-1])
    assert call[:3] == ["lcg", "call", "lambo_derive"]
    example = json.loads(call[3])
    assert example == tool_catalogue.by_name()["lambo_derive"].example
    assert example["concepts"][0]["concept_type"] == "logic"


def test_describe_shows_an_objects_fields_and_a_tool_without_parameters(tmp_path: Path) -> None:
    edge = describe(tmp_path, "knowledge_add_cross_group_edge").splitlines()
    assert "  source: object, required" in edge
    assert any(line.startswith("    source.endpoint_name: string or null") for line in edge)
    status = describe(tmp_path, "knowledge_status")
    assert "scope: read" in status
    assert "no parameters" in status
    assert "  lcg call knowledge_status '{}'" in status
