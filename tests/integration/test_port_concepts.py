"""lcg-jsonl's memory concepts through an import (issue 32, ADR 0089): a session exported and
imported into a fresh workspace holds the same concepts and edges, and its memory answers a
recall the same; a second import writes nothing; bad concept lines are named by line."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json

lcg_json = functools.partial(run_json, run=lcg)


def remember(workspace: Path) -> None:
    """Concepts of four types by two agents: citations, a contradiction, a hierarchy, and an
    action that produces and modifies."""
    for agent, args in (
        ("a1", ("derive", "the lease lasts 45 seconds", "--type", "constraint")),
        (
            "a1",
            ("derive", "the writer renews the lease", "--depends-on", "the lease lasts 45 seconds"),
        ),
        ("a2", ("derive", "the lease lasts 30 seconds", "--against", "the lease lasts 45 seconds")),
        ("a2", ("derive", "the socket answered slowly", "--type", "observation")),
        (
            "a1",
            (
                "record-action",
                "merged PR 52",
                "--produces",
                "lease.py",
                "--modifies",
                "the writer renews the lease",
            ),
        ),
    ):
        done = lcg(workspace, *args, "--session", "liminis", "--agent", agent)
        assert done.returncode == 0, done.stderr
    # a hierarchy (either end created by name); `lcg call` serves the default session
    ack = lcg_json(
        workspace, "call", "lambo_derive",
        json.dumps(
            {
                "agent_id": "a1",
                "concepts": [{"content": "leases", "concept_type": "entity"}],
                "parent_of": [{"parent": "leases", "child": "the writer's lease"}],
            }
        ),
    )  # fmt: skip
    wait = {"agent_id": "a1", "receipt": ack["structuredContent"]["receipt"], "wait_ms": 20000}
    settled = lcg_json(workspace, "call", "lambo_stats", json.dumps(wait))
    assert settled["structuredContent"]["receipt"]["state"].startswith("applied")


def exported(workspace: Path, out: Path) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """The session's concepts (type, content, agent) and edges (kind, source, target) by
    content, as its lcg-jsonl export lists them."""
    lcg_json(
        workspace, "export", "-f", "lcg-jsonl", "--session", "liminis", "-o", str(out), "--json"
    )
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()[1:]]
    concepts = {x["uuid"]: x for x in lines if x["kind"] == "concept"}
    edges: set[tuple[str, ...]] = {
        (x["type"], concepts[x["source"]]["content"], concepts[x["target"]]["content"])
        for x in lines
        if x["kind"] == "concept_edge"
    }
    return {(c["concept_type"], c["content"], c["agent_id"]) for c in concepts.values()}, edges


def recalled(workspace: Path, query: str) -> list[tuple[Any, ...]]:
    answer = lcg_json(
        workspace, "recall", query, "-n", "20", "--session", "liminis", "--agent", "a9", "--json"
    )
    return [(hit["content"], hit.get("concept_type")) for hit in answer["hits"]]


def test_issue_32_concepts_round_trip_through_lcg_jsonl_and_recall_answers_the_same(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    remember(first)
    concepts, edges = exported(first, tmp_path / "first.jsonl")
    assert ("depends_on", "the writer renews the lease", "the lease lasts 45 seconds") in edges
    assert {kind for kind, _, _ in edges} == {
        "depends_on", "contradicts", "produces", "modifies", "parent_of",
    }  # fmt: skip
    report = lcg_json(
        second, "import", str(tmp_path / "first.jsonl"), "-f", "lcg-jsonl",
        "--session", "liminis", "--json",
    )  # fmt: skip
    assert report["concepts"]["created"] == len(concepts)
    assert report["concept_edges"]["created"] == len(edges)
    assert exported(second, tmp_path / "second.jsonl") == (concepts, edges)
    # the same hits, the strongest first (the rest may trade places: recency is a signal,
    # and the copy's concepts were all written within the import)
    for query in ("how long is the lease", "what did PR 52 change", "socket"):
        here, there = recalled(second, query), recalled(first, query)
        assert set(here) == set(there), query
        assert here[0] == there[0], query
    # a second import writes nothing: no event, no mark
    before = lcg_json(second, "log", "-g", "liminis", "--json")["max_seq"]
    again = lcg_json(
        second, "import", str(tmp_path / "first.jsonl"), "-f", "lcg-jsonl",
        "--session", "liminis", "--json",
    )  # fmt: skip
    assert again["concepts"] == {"created": 0, "updated": 0, "unchanged": len(concepts)}
    assert again["concept_edges"] == {"created": 0, "updated": 0, "unchanged": len(edges)}
    assert again["mark"] is None
    assert lcg_json(second, "log", "-g", "liminis", "--json")["max_seq"] == before


def test_issue_32_bad_concept_lines_are_named_and_nothing_is_imported(tmp_path: Path) -> None:
    header = {"format": "lcg-jsonl", "version": 1, "group_id": "liminis"}
    lines = [
        header,
        {
            "kind": "concept",
            "uuid": "c1",
            "content": "ok",
            "concept_type": "logic",
            "agent_id": "a",
        },
        {
            "kind": "concept",
            "uuid": "c1",
            "content": "again",
            "concept_type": "logic",
            "agent_id": "a",
        },
        {"kind": "concept", "uuid": "c2", "content": "x", "concept_type": "idea", "agent_id": "a"},
        {"kind": "concept_edge", "type": "depends_on", "source": "c1", "target": "c9"},
        {"kind": "concept_edge", "type": "likes", "source": "c1", "target": "c1"},
    ]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    done = lcg(tmp_path, "import", str(path), "-f", "lcg-jsonl", "--session", "liminis")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{path}:3: duplicate concept id 'c1': first at {path}:2" in said
    assert f"{path}:4: concept_type must be one of entity, logic" in said
    assert f"{path}:5: concept edge to a missing concept 'c9'" in said
    assert f"{path}:6: concept edge type 'likes'" in said
    assert (
        not (tmp_path / ".lcg" / "wal.sqlite").exists()
        or not lcg_json(tmp_path, "log", "-g", "liminis", "--json")["events"]
    )
