"""ADR 0022: the vector indexes follow writes on their own thread; writes never wait for them.

A write is answered once durable and visible to graph reads and BM25; its vectors arrive when
the follower has embedded them. The follower is held with a gate on the embedding cache, so
each test sees the "not yet" and the "now" states without timing anything.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

import faiss
import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.port import Embedder, Vectors
from lcg.projections.follower import CommitFollower
from tests.conftest import make_call, make_workspace


def hold_the_follower(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """From now on, until the event is set, the follower's embedding waits (searches do not
    use it)."""
    opened = threading.Event()
    embed = EmbeddingCache.embed

    def gated(self: EmbeddingCache, texts: Sequence[str]) -> Vectors:
        if threading.current_thread().name == "lcg-vectors":
            assert opened.wait(30), "the test never opened the gate"
        return embed(self, texts)

    monkeypatch.setattr(EmbeddingCache, "embed", gated)
    return opened


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """While the gate is closed, the follower's embedding waits (searches do not use it)."""
    opened = hold_the_follower(monkeypatch)
    yield opened
    opened.set()


def test_adr_0022_a_write_is_answered_before_its_vectors_and_settle_waits_for_them(
    workspace: Workspace, gate: threading.Event
) -> None:
    call = make_call(App(workspace), settle=False)
    before = workspace.vectors.count()
    added = call("knowledge_add_episode", name="note", episode_body="the launch slipped a week")
    # acknowledged: durable, in the graph and in BM25, while the follower still waits
    assert workspace.log.head("liminis") == 1
    assert call("knowledge_get_episodes")["count"] == 1
    found = call("knowledge_search_passages", query="launch slipped", min_score=0.0)
    assert [p["episode_uuid"] for p in found["passages"]] == [added["episode_uuid"]]
    assert "passage_vector" not in found["passages"][0]["ranks"]
    assert workspace.vectors.count() == before
    assert workspace.settle(timeout=0.05) is False
    gate.set()
    assert workspace.settle(timeout=30) is True
    assert workspace.vectors.count() == before + 1
    assert call("knowledge_status")["vector_pending"] == 0
    found = call("knowledge_search_passages", query="launch slipped", min_score=0.0)
    assert "passage_vector" in found["passages"][0]["ranks"]


def test_adr_0022_close_waits_for_the_follower_and_saves_what_it_embedded(
    settings: Settings, embedder: Embedder, gate: threading.Event
) -> None:
    ws = make_workspace(settings, embedder).open()
    call = make_call(App(ws), settle=False)
    for index in range(3):
        call("knowledge_add_episode", name=f"e{index}", episode_body=f"note number {index}")
    closer = threading.Thread(target=ws.close)
    closer.start()
    closer.join(timeout=0.2)
    assert closer.is_alive(), "close returned while the follower still had writes to embed"
    gate.set()
    closer.join(timeout=30)
    assert not closer.is_alive()
    for path in settings.state_dir.glob("embeddings.sqlite*"):
        path.unlink()  # no cache: only the index files can give the vectors back for free
    with make_workspace(settings, embedder) as again:
        assert again.vectors.count() == 3
        assert again.embedder.calls == 0
        make_call(App(again))("knowledge_rebuild_from_wal", group_id="liminis", force_clear=True)
        assert again.vectors.count() == 3


def test_adr_0022_sync_mode_answers_a_write_with_its_vectors_in_place(
    settings: Settings, embedder: Embedder
) -> None:
    synced = replace(settings, vector_follow="sync")
    with make_workspace(synced, embedder) as ws:
        call = make_call(App(ws), settle=False)
        call("knowledge_add_episode", name="note", episode_body="the launch slipped a week")
        assert ws.vectors.count() == 1
        assert ws.vector_follow_state == (0, None)
    assert Settings.load({"LCG_VECTOR_FOLLOW": "sync"}, settings.workspace).vector_follow == (
        "sync"
    )


def test_adr_0022_a_failed_follow_is_reported_then_mended_by_the_next_commit(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = make_call(App(workspace))
    embed = EmbeddingCache.embed
    failures = [RuntimeError("the model fell over")]

    def once_broken(self: EmbeddingCache, texts: Sequence[str]) -> Vectors:
        if failures and threading.current_thread().name == "lcg-vectors":
            raise failures.pop()
        return embed(self, texts)

    monkeypatch.setattr(EmbeddingCache, "embed", once_broken)
    call("knowledge_add_episode", name="lost", episode_body="the first note")
    status = call("knowledge_status")
    assert status["index_error"] == "VectorIndex: the model fell over"
    assert status["vector_count"] == 0
    call("knowledge_add_episode", name="next", episode_body="the second note")
    status = call("knowledge_status")
    assert status["index_error"] is None
    assert status["vector_count"] == 2  # the lost batch's vector is back too


def test_a_search_from_any_thread_runs_faiss_on_one_openmp_thread(workspace: Workspace) -> None:
    """`omp_set_num_threads` is per thread: a search from a thread other than the one that
    built the index (a socket worker, the intent processor) once ran FAISS on one OpenMP
    thread per core, 2.5-8 ms for a one-vector query of a tiny index on a busy box."""
    call = make_call(App(workspace))
    call("knowledge_add_episode", name="note", episode_body="the launch slipped a week")
    seen: list[int] = []

    def search() -> None:
        call("knowledge_search_passages", query="launch slipped", min_score=0.0)
        seen.append(faiss.omp_get_max_threads())

    thread = threading.Thread(target=search)
    thread.start()
    thread.join()
    assert seen == [1]


@pytest.fixture
def held_until_a_read_waits(
    monkeypatch: pytest.MonkeyPatch, gate: threading.Event
) -> threading.Event:
    """The follower's model is held until a read starts waiting for the vectors it reads."""
    settle = CommitFollower.settle

    def waiting(self: CommitFollower[Any], *args: Any, **kwargs: Any) -> bool:
        gate.set()
        return settle(self, *args, **kwargs)

    monkeypatch.setattr(CommitFollower, "settle", waiting)
    return gate


def test_k_sem_012_a_meaning_search_right_after_a_write_finds_it(
    workspace: Workspace, held_until_a_read_waits: threading.Event
) -> None:
    """Issue 24, item 16: the search waits (bounded) for the vectors of the groups it reads,
    so the entity just asserted is found by its name vector, and no warning is given."""
    call = make_call(App(workspace), settle=False)
    entity = call("knowledge_assert_entity", name="Ada Lovelace", summary="a mathematician")
    assert not held_until_a_read_waits.is_set()  # the write did not wait for its vectors
    found = call("knowledge_find_entities", query="Ada Lovelace", relevance_floor=False)
    assert [node["uuid"] for node in found["nodes"]] == [entity["entity_uuid"]]
    assert "name_vector" in found["nodes"][0]["ranks"]
    assert "warning" not in found


def test_k_sem_012_a_search_whose_vectors_do_not_arrive_in_time_says_so(
    settings: Settings, embedder: Embedder, gate: threading.Event
) -> None:
    """The wait is bounded (LCG_VECTOR_READ_WAIT_MS); past it the search answers from what
    is indexed, with a `warning` object (P-106's shape) saying how many writes are pending;
    the other keys are as always."""
    assert Settings.load({}, settings.workspace).vector_read_wait_ms == 250
    quick = replace(settings, vector_read_wait_ms=20)
    with make_workspace(quick, embedder) as ws:
        call = make_call(App(ws), settle=False)
        call("knowledge_add_episode", name="note", episode_body="the launch slipped a week")
        found = call("knowledge_search_passages", query="launch slipped", min_score=0.0)
        assert set(found) == {"passages", "count", "warning"}
        assert found["count"] == 1  # by words
        warning = found["warning"]
        assert (warning["type"], warning["vector_pending"]) == ("vectors_pending", 1)
        assert warning["waited_ms"] >= 20  # no rate measured yet: the whole bound
        assert warning["message"].startswith("1 acknowledged write(s) of the groups read are not")
        other = call("knowledge_find_entities", query="launch", group_ids=["elsewhere"])
        assert "warning" not in other  # a group with nothing pending does not wait
        gate.set()


@pytest.mark.minilm
def test_a_restart_with_a_vector_backlog_serves_while_the_follower_catches_up(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24, item 2: a workspace whose catalog holds vectors neither indexed nor cached
    (a process killed before its follower caught up) opens at once; health_check is ok and
    says what is pending, calls are answered, and the follower embeds the backlog meanwhile
    (held here until the test has seen all that)."""
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(4):
            call("knowledge_assert_entity", name=f"lighthouse keeper {n}", summary=f"shift {n}")
        catalogued = ws.vectors.count()
    for path in settings.state_dir.glob("embeddings.sqlite*"):
        path.unlink()
    shutil.rmtree(settings.vectors_dir)
    gate = hold_the_follower(monkeypatch)
    service = Service(settings, command="pytest")
    try:
        assert service.start() == "healthy"
        health = service.call("health_check", None)
        assert (health["ok"], health["state"]) == (True, "healthy")
        assert health["vector_pending"] == catalogued
        assert service.call("knowledge_status", {})["vector_pending"] == catalogued
        found = service.call("knowledge_find_entities", {"query": "lighthouse keeper 2"})
        assert found["nodes"][0]["name"] == "lighthouse keeper 2"  # by words meanwhile
        assert found["warning"]["vector_pending"] == catalogued
        gate.set()
        service.call("knowledge_build_indices", {})  # waits for the follower
        assert service.call("health_check", None) == {
            "ok": True,
            "healthy": True,
            "state": "healthy",
        }
        assert service.call("knowledge_status", {})["vector_count"] == catalogued
    finally:
        gate.set()
        service.close()
