"""`lcg demo`: a short tour of the main job on the embedded default (SQLite files)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace

GROUP = "demo"


def run_demo(settings: Settings, out: Console) -> None:
    """Write a few facts to a fresh group, search them by meaning and by words, replay to an
    earlier seq and back, print status."""
    with Workspace(settings, command="lcg demo") as ws:
        app = App(ws)

        def call(operation: str, **params: Any) -> dict[str, Any]:
            return operations.dispatch(app, operation, params)

        out.print(f"workspace: {settings.state_dir}")
        if call("knowledge_get_nodes_by_group", group_ids=[GROUP])["count"]:
            call("knowledge_delete_by_group", group_ids=[GROUP], confirm=True)
            out.print(f"(purged group {GROUP!r} left by an earlier demo)")
        for name, summary in (
            ("Ada Lovelace", "Mathematician; wrote the first published algorithm."),
            ("Analytical Engine", "Babbage's proposed general-purpose mechanical computer."),
            ("Charles Babbage", "Designer of the Analytical Engine."),
        ):
            result = call(
                "knowledge_assert_entity",
                name=name,
                summary=summary,
                labels=["Person"] if "Engine" not in name else ["Machine"],
                group_id=GROUP,
            )
            out.print(f"asserted entity {name!r} -> {result['entity_uuid']}")
        call(
            "knowledge_assert_relationship",
            source_name="Ada Lovelace",
            predicate="WROTE_NOTES_ON",
            target_name="Analytical Engine",
            group_id=GROUP,
        )
        call(
            "knowledge_assert_relationship",
            source_name="Charles Babbage",
            predicate="DESIGNED",
            target_name="Analytical Engine",
            group_id=GROUP,
        )
        call(
            "knowledge_add_episode",
            name="note-1",
            group_id=GROUP,
            episode_body="Ada Lovelace's notes describe an algorithm for the Engine.",
        )
        question = "who wrote the first program for a machine?"
        found = call("knowledge_find_entities", query=question, group_ids=[GROUP])
        best = found["nodes"][0]
        out.print(f"find_entities {question!r} -> {best['name']!r} (ranks {best['ranks']})")
        passage = call(
            "knowledge_search_passages",
            query="instructions for the computer",
            group_ids=[GROUP],
            min_score=0.0,
        )["passages"][0]
        out.print(f"search_passages -> {passage['content']!r} (ranks {passage['ranks']})")
        head = ws.log.head(GROUP)
        shown = call("knowledge_list_relationships", group_ids=[GROUP])
        out.print(f"{shown['count']} relationships; the group's WAL is at seq {head}")
        for edge in shown["edges"]:
            out.print(f"  - {edge['fact']}")
        earlier = head - 3
        call("knowledge_rebuild_from_wal", group_id=GROUP, to_seq=earlier, force_clear=True)
        nodes = call("knowledge_get_nodes_by_group", group_ids=[GROUP])
        edges = call("knowledge_get_edges_by_group", group_ids=[GROUP])
        out.print(
            f"replayed to seq {earlier}: {nodes['count']} entities, {edges['count']} "
            "edges (the group is pinned there)"
        )
        call("knowledge_rebuild_from_wal", group_id=GROUP, force_clear=True)
        edges = call("knowledge_get_edges_by_group", group_ids=[GROUP])
        wal = call("knowledge_status")["wal_groups"][GROUP]
        out.print(
            f"replayed to the end: {edges['count']} edges; applied_seq "
            f"{wal['applied_seq']} of {wal['max_seq']} ({wal['hydration_status']})"
        )
