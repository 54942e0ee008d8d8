"""lcg.client.Memory (issue 26 item 4): the same calls give the same answers and the same
errors in this process (`Memory.open`) and through a real `lcg serve` (`Memory.connect`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lcg.client import Entity, Fact, Memory, Passage, ToolError
from tests.helpers.service_process import ServiceProcess

NOTE = "Maria Chen leads the Kestrel scheduler team. The job queue lives in Redis."


def _write(memory: Memory) -> str:
    episode = memory.add("team note", NOTE, group="kestrel")
    memory.add_entity(
        "Maria Chen", summary="leads Kestrel", attributes={"role": "lead"}, group="kestrel"
    )
    memory.add_entity("Kestrel", summary="the job scheduler", labels=["Product"], group="kestrel")
    memory.add_fact("Maria Chen", "LEADS", "Kestrel", attributes={"since": 2024}, group="kestrel")
    return episode


def _answers(memory: Memory) -> dict[str, Any]:
    """What a reader sees, without the ids and times each write mints."""
    passages = memory.search("where does the job queue live", groups=["kestrel"])
    entities = memory.search("Kestrel", what="entities", groups=["kestrel"])
    facts = memory.search("who leads", what="facts")
    return {
        "passages": [(p.name, p.content) for p in passages],
        "entities": sorted((e.name, e.summary, e.labels, str(e.attributes)) for e in entities),
        "facts": [(f.fact, f.predicate, f.group_id, f.attributes) for f in facts],
        "head": memory.head("kestrel"),
        "episodes": memory.call("knowledge_get_episodes", group_id="kestrel")["count"],
    }


def _refusals(memory: Memory) -> list[tuple[str, str, str | None, str]]:
    """Five refusals as (tool, kind, field, message)."""
    seen = []
    attempts: list[Callable[[], object]] = [
        lambda: memory.call("knowledge_assert_entity", group_id="kestrel"),
        lambda: memory.call("knowledge_wal_mark_delete", name="never", group_id="kestrel"),
        lambda: memory.search(" "),
        lambda: memory.search("job queue", groups=["kestrel"], min_seq={"kestrel": 10**6}),
        lambda: memory.recall("job queue", min_seq={"kestrel": -1}),
    ]
    for attempt in attempts:
        with pytest.raises(ToolError) as refused:
            attempt()
        error = refused.value
        seen.append((error.tool, error.kind, error.field, error.message))
    return seen


@pytest.mark.slow
def test_open_and_connect_give_the_same_answers_and_the_same_errors(tmp_path: Path) -> None:
    (tmp_path / "lcg.toml").write_text("[store]\nmin_seq_wait_ms = 100\n", encoding="utf-8")
    with Memory.open(tmp_path) as local:
        assert local.via == "process"
        episode = _write(local)
        assert local.written == {"kestrel": 4}  # the four writes' last seq (ADR 0086)
        here = _answers(local)
        local_refusals = _refusals(local)
    assert here["passages"] == [("team note", NOTE)]
    assert here["entities"] == [  # attributes as written, not JSON text (issue 26, ADR 0092)
        ("Kestrel", "the job scheduler", ("Product",), "{}"),
        ("Maria Chen", "leads Kestrel", ("Entity",), "{'role': 'lead'}"),
    ]
    assert here["facts"][0] == ("Maria Chen LEADS Kestrel", "LEADS", "kestrel", {"since": 2024})
    assert (here["head"], here["episodes"]) == (4, 1)
    assert local_refusals[0] == (
        "knowledge_assert_entity",
        "invalid_params",
        "name",
        "name: is required",
    )
    assert local_refusals[1][:2] == ("knowledge_wal_mark_delete", "not_found")
    assert local_refusals[2][:3] == ("knowledge_search_passages", "invalid_params", "query")
    too_far, malformed = local_refusals[3:]
    assert too_far[:3] == ("knowledge_search_passages", "conflict", "min_seq")
    assert "applied group 'kestrel' to seq 4" in too_far[3]
    assert malformed[:3] == ("lambo_recall", "invalid_params", "min_seq")

    service = ServiceProcess(tmp_path)
    try:
        assert service.wait_ready()["state"] == "healthy"
        with Memory.connect(workspace=tmp_path) as remote:
            assert remote.via == "socket"
            assert remote.settle()  # knowledge_status's vector_pending reaches 0
            assert _answers(remote) == here
            assert _refusals(remote) == local_refusals
        with Memory.connect(socket=tmp_path / ".lcg" / "service.sock") as remote:
            assert remote.written == {}  # reads write nothing
            remote.call("knowledge_delete_episode", episode_uuid=episode)
            assert remote.written == {"kestrel": 5}  # from the socket's `written` member
            assert remote.call("knowledge_get_episodes", group_id="kestrel")["count"] == 0
            assert remote.search("job queue", groups=["kestrel"], min_seq=remote.written) == []
        with Memory.open(tmp_path) as beside:  # the service holds it: through its socket
            assert beside.via == "socket"
            assert beside.search("job queue", groups=["kestrel"]) == []
        with Memory.open(tmp_path, session="elsewhere") as other:  # the service serves liminis
            with pytest.raises(ToolError) as scoped:
                other.recall("job queue")
            assert (scoped.value.tool, scoped.value.field) == ("lambo_recall", "scope")
    finally:
        assert service.stop() == 0

    with Memory.open(tmp_path) as reopened:  # the service's writes are in the workspace
        assert reopened.via == "process"
        assert reopened.call("knowledge_get_episodes", group_id="kestrel")["count"] == 0


def test_replay_goes_to_a_seq_and_back(tmp_path: Path) -> None:
    with Memory.open(tmp_path) as memory:
        _write(memory)
        head = memory.head("kestrel")
        earlier = memory.replay("kestrel", to_seq=head - 1)
        assert (earlier["pinned_to"], earlier["mutations_replayed"]) == (head - 1, head - 1)
        assert memory.search("LEADS", what="facts", groups=["kestrel"]) == []
        with pytest.raises(ToolError) as pinned:
            memory.add_entity("Grace", group="kestrel")
        assert (pinned.value.kind, pinned.value.field) == ("conflict", "group_id")
        back = memory.replay("kestrel")
        assert (back["pinned_to"], back["mutations_replayed"]) == (None, head)
        (fact,) = memory.search("LEADS", what="facts", groups=["kestrel"])
        assert isinstance(fact, Fact)
        assert fact.fact == "Maria Chen LEADS Kestrel"


def test_derive_waits_for_its_receipt_and_recall_returns_the_context_block(tmp_path: Path) -> None:
    with Memory.open(tmp_path, session="agents", agent_id="planner") as memory:
        written = memory.derive("The job queue lives in Redis", "Kestrel schedules the jobs")
        assert written["agent_id"] == "planner"
        assert written["outcome"]["state"] == "applied"
        assert written["outcome"]["created_count"] == 2
        acked = memory.derive("Redis runs on port 6379", wait_ms=0)
        assert "outcome" not in acked
        recalled = memory.recall("where is the job queue?", top_k=2)
        assert recalled.context.startswith("The job queue lives in Redis [Logic]")
        assert recalled.hits[0]["content"] == "The job queue lives in Redis"
        assert len(recalled.hits) <= 2
        assert memory.call("lambo_stats", agent_id="planner")["structuredContent"]["session"] == (
            "agents"
        )


def test_search_types_and_a_bad_session_or_no_service_raise_tool_error(tmp_path: Path) -> None:
    with Memory.open(tmp_path) as memory:
        _write(memory)
        (passage,) = memory.search("Redis", groups=["kestrel"])
        assert isinstance(passage, Passage)
        entities = memory.search("Maria Chen", what="entities", limit=1)
        assert len(entities) == 1
        assert isinstance(entities[0], Entity)
        assert entities[0].attributes == {"role": "lead"}
        with pytest.raises(ToolError) as floor:
            memory.search("Redis", what="facts", min_score=0.2)  # type: ignore[call-overload]
        assert (floor.value.kind, floor.value.field) == ("invalid_params", "min_score")
        strict = memory.search("the weather in Lisbon", min_score=1.0)
        assert strict == []
    with pytest.raises(ToolError) as bad:
        Memory.open(tmp_path, session="has spaces")
    assert (bad.value.tool, bad.value.kind, bad.value.field) == (
        "open",
        "invalid_params",
        "session",
    )
    with pytest.raises(ToolError) as none:
        Memory.connect(workspace=tmp_path)
    assert none.value.kind == "unavailable"
    assert "start one with `lcg serve`" in none.value.message


def test_a_closed_memory_releases_the_workspace(tmp_path: Path) -> None:
    first = Memory.open(tmp_path)
    first.add("a", "first note")
    first.close()
    with Memory.open(tmp_path) as second:  # the one-writer lease was released
        assert second.via == "process"
        assert second.call("knowledge_get_episodes", group_id="liminis")["count"] == 1


def test_m_rsc_001_002_derive_and_record_action_take_repo_scope(tmp_path: Path) -> None:
    """Memory.derive and Memory.record_action send repo_scope: README.md in two repositories
    is two concepts; an action under one scope names that repository's file."""
    widgets, gadgets = "github.com/acme/widgets", "github.com/acme/gadgets"
    with Memory.open(tmp_path, session="agents", agent_id="planner") as memory:
        for repo in (widgets, gadgets):
            made = memory.derive("README.md", concept_type="resource", repo_scope=repo)
            assert made["outcome"]["created_count"] == 1, made
        acted = memory.record_action(
            "edited the readme", modifies=["README.md:3"], depends_on=["docs/"], repo_scope=widgets
        )
        assert acted["outcome"]["state"] == "applied"
        assert acted["outcome"]["created_count"] == 2  # the action and widgets' docs/
        plain = memory.record_action("ran the tests", produces=["report.xml"], wait_ms=0)
        assert "outcome" not in plain
        assert plain["receipt_state"] == "pending"
        recalled = memory.recall("README.md", top_k=5)
        repos = sorted(h["repo_scope"] for h in recalled.hits if h["content"] == "README.md")
        assert repos == [gadgets, widgets]
        assert f'README.md [Resource, repo "{widgets}"]' in recalled.context
        with pytest.raises(ToolError) as refused:
            memory.record_action("x", modifies=["a.md"], repo_scope=" ")
        assert (refused.value.kind, refused.value.field) == ("invalid_params", "repo_scope")


def _photo(memory: Memory, seed: int) -> dict[str, Any]:
    """A client's vector of a photo under the session's embedding contract (lambo_stats)."""
    stats = memory.call("lambo_stats", agent_id=memory.agent_id)["structuredContent"]
    contract = stats["embedding_contract"]
    values = [float((i * seed) % 13 - 6) for i in range(contract["dim"])]
    return {"values": values, "contract": contract}


@pytest.mark.slow
def test_m_img_053_derive_image_waits_for_its_receipt_in_process_and_through_a_service(
    tmp_path: Path,
) -> None:
    off, on = tmp_path / "off", tmp_path / "on"
    with Memory.open(off) as memory:
        memory.derive("the shop sells clothes")  # the workspace exists: lambo_stats answers
        with pytest.raises(ToolError) as refused:
            memory.derive_image("a photo", vector=_photo(memory, 5))
        assert (refused.value.tool, refused.value.field) == ("lambo_derive_image", "vector")
        assert "[embedder] accept_client_vectors = true" in refused.value.message
    on.mkdir()
    (on / "lcg.toml").write_text("[embedder]\naccept_client_vectors = true\n", encoding="utf-8")
    with Memory.open(on, agent_id="cataloguer") as memory:
        memory.derive("the shop sells clothes")
        saree = _photo(memory, 5)
        written = memory.derive_image("red silk saree", vector=saree, image_id="saree1")
        assert written["agent_id"] == "cataloguer"
        assert (written["outcome"]["state"], written["outcome"]["created_count"]) == ("applied", 1)
        again = memory.derive_image("red silk saree", vector=saree, image_id="saree1")
        assert again["outcome"]["created_count"] == 0  # the same caption and id: one concept
        assert memory.recall(query_vector=saree).hits[0]["content"] == (
            "red silk saree [image:saree1]"
        )
    service = ServiceProcess(on)
    try:
        assert service.wait_ready()["state"] == "healthy"
        with Memory.connect(workspace=on, agent_id="cataloguer") as memory:
            kurta = _photo(memory, 7)
            written = memory.derive_image("blue kurta", vector=kurta, concept_type="entity")
            assert written["outcome"]["state"] == "applied"
            hits = memory.recall(query_vector=kurta).hits
            assert hits[0]["content"].startswith("blue kurta [image:")
            assert hits[0]["concept_type"] == "Entity"
    finally:
        assert service.stop() == 0
