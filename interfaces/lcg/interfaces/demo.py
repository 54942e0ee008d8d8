"""`lcg demo`: a short tour of the main job on the embedded default (SQLite files)."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console

from lcg.client import Memory
from lcg.fixtures import corpus
from lcg.interfaces.config import Settings

GROUP = "demo"
PROJECT_QUESTION = "where does the scheduler keep its job queue?"


def run_demo(settings: Settings, out: Console) -> None:
    """Write a few facts to a fresh group, search them by meaning and by words, replay to an
    earlier seq and back, print status; load a small project corpus and search it; then
    replay a multi-agent transcript through the memory tools (a derive, its receipt, stats).
    Every step is a call of the Python API (lcg.client), as a program of yours would make."""
    transcript = corpus.transcript(corpus.MEMORY)
    with Memory.open(settings.workspace, session=transcript.session) as memory:
        call = memory.call
        out.print(f"workspace: {settings.state_dir}")
        purge(call, GROUP, out)
        written = corpus.write_corpus(call, corpus.knowledge(corpus.DEMO), GROUP)
        for name, uuid in written.entities.items():
            out.print(f"asserted entity {name!r} -> {uuid}")
        memory.settle()  # the vector indexes follow writes on their own thread (ADR 0022)
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
        head = memory.head(GROUP)
        shown = call("knowledge_list_relationships", group_ids=[GROUP])
        out.print(f"{shown['count']} relationships; the group's WAL is at seq {head}")
        for edge in shown["edges"]:
            out.print(f"  - {edge['fact']}")
        earlier = head - 3
        memory.replay(GROUP, to_seq=earlier)
        nodes = call("knowledge_get_nodes_by_group", group_ids=[GROUP])
        edges = call("knowledge_get_edges_by_group", group_ids=[GROUP])
        out.print(
            f"replayed to seq {earlier}: {nodes['count']} entities, {edges['count']} "
            "edges (the group is pinned there)"
        )
        memory.replay(GROUP)
        edges = call("knowledge_get_edges_by_group", group_ids=[GROUP])
        wal = call("knowledge_status")["wal_groups"][GROUP]
        out.print(
            f"replayed to the end: {edges['count']} edges; applied_seq "
            f"{wal['applied_seq']} of {wal['max_seq']} ({wal['hydration_status']})"
        )
        project_tour(call, out, memory.settle)
        memory_tour(call, out, transcript)


def purge(call: corpus.Call, group: str, out: Console) -> None:
    """Delete what an earlier demo left in the group, so every run starts the same."""
    if call("knowledge_get_nodes_by_group", group_ids=[group])["count"]:
        call("knowledge_delete_by_group", group_ids=[group], confirm=True)
        out.print(f"(purged group {group!r} left by an earlier demo)")


def project_tour(call: corpus.Call, out: Console, settle: Callable[[], object]) -> None:
    """The Kestrel project corpus (fixtures/README.md) in its own group, asked one question."""
    project = corpus.knowledge(corpus.PROJECT)
    purge(call, project.group_id, out)
    corpus.write_corpus(call, project)
    settle()
    out.print(
        f"project corpus {project.group_id!r}: {len(project.entities)} entities, "
        f"{len(project.relationships)} relationships, {len(project.episodes)} episodes"
    )
    found = call("knowledge_find_entities", query=PROJECT_QUESTION, group_ids=[project.group_id])
    best = found["nodes"][0]
    out.print(f"find_entities {PROJECT_QUESTION!r} -> {best['name']!r} (ranks {best['ranks']})")


def memory_tour(call: corpus.Call, out: Console, transcript: corpus.Transcript) -> None:
    """The agent-memory tools (seed 001) on the issue-412 transcript, in its own session."""
    if call("lambo_stats", agent_id="demo")["structuredContent"]["node_count"]:
        call("knowledge_delete_by_group", group_ids=[transcript.session], confirm=True)
        out.print(f"(purged session {transcript.session!r} left by an earlier demo)")
    first = transcript.turns[0]
    concepts = [{"content": d.statement, "concept_type": "logic"} for d in first.derives]
    ack = call("lambo_derive", agent_id=first.agent, concepts=concepts)
    out.print(f"lambo_derive as {first.agent!r} ->", highlight=False)
    out.print(ack["text"], highlight=False)
    receipt = ack["structuredContent"]["receipt"]
    settled = call("lambo_stats", agent_id=first.agent, receipt=receipt, wait_ms=20_000)
    out.print(settled["text"].split("\n")[0], highlight=False)
    written = corpus.write_transcript(call, transcript, first_turn=2)
    stats = call("lambo_stats", agent_id=first.agent)["text"].split("\n")
    out.print(
        f"replayed {len(written) + 1} writes of {len(transcript.agents)} agents; lambo_stats:",
        highlight=False,
    )
    for line in (stats[0], stats[-1]):
        out.print(f"  {line}", highlight=False)
