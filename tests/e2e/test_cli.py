"""The `lcg` console script, driven as a subprocess against real workspaces under tmp_path.

Exit codes (interfaces/lcg/interfaces/cli.py): 0 ok, 2 invalid params, 3 refused, 4 workspace
busy, 5 projection error. Rich wraps stderr at 80 columns when it is not a terminal, so
messages are compared with their whitespace collapsed (`said`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lcg.interfaces.config import Settings
from tests.helpers.console_script import lcg, lcg_json, refused, said

pytestmark = pytest.mark.slow


def test_write_and_read_commands_round_trip_through_the_console_script(tmp_path: Path) -> None:
    """assert-entity, assert-relationship, add-episode, list-entities, status and call agree.

    Checklist: K-AST-001, K-AST-004 (same name twice: one entity, same uuid), K-AST-021,
    K-AST-026 (default fact), K-CFG-005 and K-AST-002 (default group `liminis`), K-WAL-001 and
    K-WAL-002 (each write is the next seq of its own group's stream), K-STA-001/002/003/005;
    P-102, P-107, P-108, P-109 (result shapes).
    """
    ada = lcg_json(
        tmp_path,
        "assert-entity",
        "Ada Lovelace",
        "--summary",
        "Mathematician",
        "--label",
        "Person",
        "--attributes",
        '{"born": 1815}',
        "--group",
        "g",
        "--json",
    )
    assert ada == {
        "entity_uuid": ada["entity_uuid"],
        "created": True,
        "embedding_warning": None,
        "embedding_stale": [],
    }
    again = lcg_json(
        tmp_path,
        "assert-entity",
        "Ada Lovelace",
        "--summary",
        "Mathematician",
        "--label",
        "Person",
        "--attributes",
        '{"born": 1815}',
        "--group",
        "g",
        "--json",
    )
    assert again == {**ada, "created": False}
    engine = lcg_json(tmp_path, "assert-entity", "Analytical Engine", "--group", "g", "--json")
    assert engine["created"] is True
    assert engine["entity_uuid"] != ada["entity_uuid"]

    edge = lcg_json(
        tmp_path,
        "assert-relationship",
        "Ada Lovelace",
        "WROTE_NOTES_ON",
        "Analytical Engine",
        "--group",
        "g",
        "--json",
    )
    assert edge == {
        "edge_uuid": edge["edge_uuid"],
        "created": True,
        "embedding_warning": None,
        "embedding_stale": [],
    }

    episode = lcg_json(tmp_path, "add-episode", "note-1", "Ada's notes on the Engine.", "--json")
    assert list(episode) == ["episode_uuid"]

    listed = lcg_json(tmp_path, "list-entities", "--group", "g", "--json")
    assert listed["count"] == 2
    assert [n["uuid"] for n in listed["nodes"]] == [ada["entity_uuid"], engine["entity_uuid"]]
    first = listed["nodes"][0]
    assert first["name"] == "Ada Lovelace"
    assert first["labels"] == ["Person"]
    assert first["summary"] == "Mathematician"
    assert first["attributes"] == {"born": 1815}  # the object written (ADR 0092)
    assert first["group_id"] == "g"

    shown = lcg_json(tmp_path, "status", "--json")
    assert (shown["entity_count"], shown["relationship_count"], shown["episode_count"]) == (2, 1, 1)
    assert shown["connected"] is shown["queryable"] is True
    assert shown["initializing"] is False
    assert shown["wal_groups"] == {
        # 3: the identical re-assertion of Ada appended nothing (ADR 0021)
        "g": {"applied_seq": 3, "max_seq": 3, "hydration_status": "hydrated", "pinned_to": None},
        "liminis": {
            "applied_seq": 1,
            "max_seq": 1,
            "hydration_status": "hydrated",
            "pinned_to": None,
        },
    }
    assert shown["wal"]["max_seq"] == shown["wal"]["applied_seq"] == 1  # the default group

    episodes = lcg_json(tmp_path, "call", "knowledge_get_episodes", "{}")
    assert episodes["count"] == 1
    assert episodes["episodes"][0]["uuid"] == episode["episode_uuid"]
    assert episodes["episodes"][0]["group_id"] == "liminis"
    assert episodes["episodes"][0]["content"] == "Ada's notes on the Engine."
    edges = lcg_json(
        tmp_path, "call", "knowledge_get_edges_by_uuids", json.dumps({"uuids": [edge["edge_uuid"]]})
    )
    assert edges["count"] == 1
    assert edges["edges"][0]["fact"] == "Ada Lovelace WROTE_NOTES_ON Analytical Engine"
    assert edges["edges"][0]["source_node_uuid"] == ada["entity_uuid"]
    assert edges["edges"][0]["target_node_uuid"] == engine["entity_uuid"]
    via_call = lcg_json(tmp_path, "call", "knowledge_status")
    assert via_call["wal_groups"] == shown["wal_groups"]


def test_demo_runs_the_main_job_and_replays_to_the_end(tmp_path: Path) -> None:
    """`lcg demo --workspace DIR` exits 0, leaves its state in DIR/.lcg and says it replayed.

    Checklist: K-CFG-003 (state in `.lcg/`), K-WAL-027, K-WAL-028 (bounded, then full replay).
    """
    workspace = tmp_path / "demo"
    result = lcg(workspace, "demo")
    assert result.returncode == 0, result.stderr
    assert "replayed to the end" in said(result.stdout)
    assert "(hydrated)" in said(result.stdout)
    assert "project corpus 'kestrel': 15 entities" in said(result.stdout)
    assert "-> 'Kestrel Scheduler'" in said(result.stdout)
    # issue 11: a derive, its receipt applied, and stats of the transcript's session
    assert "accepted 1 concept(s) for background write" in said(result.stdout)
    assert "applied — derived 1 concept(s): 1 created (1 embedded)" in said(result.stdout)
    assert "session kestrel-issue-412: 44 nodes (22 concepts, 22 interactions)" in said(
        result.stdout
    )
    assert Settings(workspace).wal_path.exists()
    assert Settings(workspace).graph_path.exists()


def test_names_that_look_like_markup_are_printed_verbatim(tmp_path: Path) -> None:
    """Stored names and error messages are plain text, never Rich markup."""
    created = lcg(tmp_path, "assert-entity", "[/x] odd [bold]name[/bold]")
    assert created.returncode == 0, created.stderr
    listed = lcg(tmp_path, "list-entities")
    assert listed.returncode == 0, listed.stderr
    # The table may wrap the cell, but every piece is printed as typed.
    assert "[/x] odd" in listed.stdout
    assert "[bold]name[/bold]" in listed.stdout
    message = refused(lcg(tmp_path, "assert-relationship", "[x]", "R", "y"), 3)
    assert "no entity named '[x]'" in message
    assert "knowledge_add_cross_group_edge" in message
