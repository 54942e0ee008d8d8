"""`lcg ingest` of ordinary Markdown notes (issue 26 item 5), in this process as the console
script runs it, with the real spaCy extractor: sections under their headings, the notes' facts
written between named things, one entity for a name and its prefix alias in one file."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.helpers.console_script import refused

lcg_json = functools.partial(run_json, run=lcg)

TEAM = """---
title: Team
date: 2026-11-30
---
# People

Maria Chen leads the Kestrel Scheduler team. Tom Berg maintains Kestrel.

## Stack

Kestrel uses Redis for its queue.

- Redis holds the queue
- Postgres holds the jobs
"""
PLACES = """# Offices

Maria Chen works in Lisbon. She joined Corvid Labs in 2024.

Tom Berg is based in Cork.
"""


def test_issue_26_two_markdown_notes_give_their_six_facts(tmp_path: Path) -> None:
    team, places = tmp_path / "team.md", tmp_path / "places.md"
    team.write_text(TEAM, encoding="utf-8")
    places.write_text(PLACES, encoding="utf-8")
    report = lcg_json(tmp_path, "ingest", str(team), str(places), "--json")
    first, second = report["files"]
    assert first["chunk_ids"] == ["team.md-0001 People", "team.md-0002 People > Stack"]
    assert first["attributes"] == {"title": "Team", "date": "2026-11-30"}
    assert second["chunk_ids"] == ["places.md-0001 Offices"]
    assert first["edges"] + second["edges"] == 6

    episodes = lcg_json(tmp_path, "call", "knowledge_get_episodes", '{"last_n": 10}')["episodes"]
    by_name = {e["name"]: e for e in episodes}
    stack = by_name["team.md-0002 People > Stack"]
    assert not stack["content"].startswith("#")  # the heading is context, not content
    assert stack["valid_at"].startswith("2026-11-30")  # the front matter's date

    nodes = lcg_json(tmp_path, "call", "knowledge_list_entities", '{"group_ids": ["liminis"]}')
    labels = {n["name"]: n["labels"] for n in nodes["nodes"]}
    assert "Kestrel" not in labels  # the prefix alias of "Kestrel Scheduler" in the same file
    assert labels["Redis"] == ["Product"]
    assert labels["Lisbon"] == ["Location"]
    edges = lcg_json(tmp_path, "call", "knowledge_list_relationships", "{}")["edges"]
    names = {n["uuid"]: n["name"] for n in nodes["nodes"]}
    pairs = {(names[e["source_node_uuid"]], names[e["target_node_uuid"]]) for e in edges}
    assert pairs == {
        ("Maria Chen", "Kestrel Scheduler"),
        ("Tom Berg", "Kestrel Scheduler"),
        ("Kestrel Scheduler", "Redis"),
        ("Maria Chen", "Lisbon"),
        ("Maria Chen", "Corvid Labs"),
        ("Tom Berg", "Cork"),
    }


def test_issue_26_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    note = tmp_path / "one.md"
    note.write_text("# One\n\nMira Okafor joined Tallow Systems.\n", encoding="utf-8")
    done = lcg(tmp_path, "ingest", str(note))
    assert done.returncode == 0, done.stderr
    assert "ingesting" not in done.stderr


def test_issue_26_bad_front_matter_refuses_before_any_file_is_written(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.md", tmp_path / "bad.md"
    good.write_text("# One\n\nMira Okafor joined Tallow Systems.\n", encoding="utf-8")
    bad.write_text("---\ntitle: [unclosed\n---\n\nText.\n", encoding="utf-8")
    message = refused(lcg(tmp_path, "ingest", str(good), str(bad)), 2)
    assert "front matter must be valid YAML" in message
    assert str(bad) in message
    assert not (tmp_path / ".lcg" / "wal.sqlite").exists()
