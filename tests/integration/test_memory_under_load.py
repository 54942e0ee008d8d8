"""Issue 24, item 1: memory writes are applied while other groups' knowledge writes keep the
vector follower busy, and a write dropped at the lane bound is an error the agent sees.

The model is made slow with a handshake instead of a clock: the follower's embedding of a
knowledge text waits until the test has queued the next knowledge write, so the follower is
never idle and always has another group's work queued (what 8 clients writing knowledge
faster than the model embeds look like to it). Before ADR 0047 the intent processor waited
for the follower to have nothing queued at all, and no memory write was ever applied.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import anyio
import pytest
from mcp import Client

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.jsonrpc import JsonObject
from lcg.interfaces.mcp_server import LcgMcpServer
from lcg.interfaces.scopes import Visibility, parse_scopes
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.port import Vectors

AGENT = "agent-a"
LOAD = "knowledge-load"  # what the knowledge writes say: the texts the slow model holds up


class SlowModel:
    """The follower's embedding of a knowledge text waits for `step`; `open` lets all pass."""

    def __init__(self) -> None:
        self.at_gate = threading.Event()
        self._step = threading.Event()
        self._open = threading.Event()

    def wait(self) -> None:
        if self._open.is_set():
            return
        self.at_gate.set()
        assert self._step.wait(30) or self._open.is_set(), "the test never stepped the model"
        self._step.clear()

    def step(self) -> None:
        self._step.set()

    def open(self) -> None:
        self._open.set()
        self._step.set()


@pytest.fixture
def slow_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowModel]:
    model = SlowModel()
    embed = EmbeddingCache.embed

    def slow(self: EmbeddingCache, texts: Sequence[str]) -> Vectors:
        if threading.current_thread().name == "lcg-vectors" and any(LOAD in t for t in texts):
            model.wait()
        return embed(self, texts)

    monkeypatch.setattr(EmbeddingCache, "embed", slow)
    yield model
    model.open()


class KnowledgeLoad:
    """A client writing episodes to another group, one more each time the model finishes
    one, so the follower always has a knowledge write queued behind the one it embeds."""

    def __init__(self, app: App, model: SlowModel) -> None:
        self.app, self.model = app, model
        self.written = 0
        self.failure: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> KnowledgeLoad:
        self._write()
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self.model.open()
        self.model.at_gate.set()  # wakes the writer, which sees the stop
        self._thread.join(30)

    def wait_written(self, count: int, timeout: float) -> bool:
        """Wait until the load has written `count` episodes (the follower has been kept busy
        that long); False if it did not within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while self.written < count and self.failure is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return self.written >= count

    def _write(self) -> None:
        operations.dispatch(
            self.app,
            "knowledge_add_episode",
            {
                "name": f"n{self.written}",
                "episode_body": f"{LOAD} {self.written}",
                "group_id": "other",
            },
        )
        self.written += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.model.at_gate.wait(30):
                self.failure = "the follower never embedded the knowledge writes"
                return
            self.model.at_gate.clear()
            if self._stop.is_set():
                return
            self._write()  # queued behind the batch the model holds
            self.model.step()


def call(app: App, name: str, /, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = operations.dispatch(app, name, params)
    return result


def derive_observation(app: App, content: str) -> dict[str, Any]:
    """Derive one observation and wait (lambo_stats wait_ms) for its receipt to settle."""
    ack = call(
        app,
        "lambo_derive",
        agent_id=AGENT,
        concepts=[{"content": content, "concept_type": "observation"}],
    )
    receipt = ack["structuredContent"]["receipt"]
    answer = call(app, "lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=10_000)
    body: dict[str, Any] = answer["structuredContent"]["receipt"]
    return body


def test_memory_writes_are_applied_while_other_groups_knowledge_keeps_the_follower_busy(
    workspace: Workspace, slow_model: SlowModel
) -> None:
    app = App(workspace)
    with KnowledgeLoad(app, slow_model) as load:
        # the premise: the follower has had knowledge writes queued behind each other a while
        assert load.wait_written(3, timeout=30), load.failure or "the load never got going"
        first = derive_observation(app, "the build cache is cold on a fresh runner")
        assert first["state"] == "applied", first
        # an observation never matches by key: only the first one's vector can merge it
        again = derive_observation(app, "the build cache is cold on a fresh runner")
        assert again["state"] == "applied", again
        assert (again["semantic_merged"], again["created_count"]) == (1, 0), again
        pending, _ = workspace.vector_follow_state
        assert pending > 0, "the knowledge writes were not kept queued"
        assert load.failure is None, load.failure
    assert workspace.settle(timeout=30)


def test_m_der_094_m_sta_124_a_dropped_write_says_nothing_was_written_and_when_to_retry(
    workspace: Workspace,
) -> None:
    """The seed's ack shape (receipt_state dropped, the summary), not an error (M-DER-094),
    saying when to send it again (ADR 0047)."""
    app = App(workspace)
    with workspace.memory.processor.paused():  # nothing settles: the lane fills
        for n in range(64):
            call(
                app,
                "lambo_derive",
                agent_id=AGENT,
                concepts=[{"content": f"fact {n}", "concept_type": "logic"}],
            )
        dropped = call(
            app,
            "lambo_derive",
            agent_id=AGENT,
            concepts=[{"content": "one too many", "concept_type": "logic"}],
        )
        over_mcp = anyio.run(_derive_over_mcp, app)
    assert "isError" not in dropped
    content = dropped["structuredContent"]
    assert content["receipt_state"] == "dropped"
    assert content["summary"] == "dropped 1 concept(s); never attempted, nothing was written"
    assert content["retry_after_ms"] > 0
    assert "nothing was written" in dropped["text"]
    assert f"send it again in about {content['retry_after_ms']} ms" in dropped["text"]
    assert over_mcp.is_error is False
    assert over_mcp.structured_content["receipt_state"] == "dropped"
    assert "nothing was written" in over_mcp.content[0].text


class _InProcess:
    """The MCP server's backend calling this test's workspace directly."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def call(self, method: str, params: JsonObject, on_progress: object = None) -> JsonObject:
        result: JsonObject = await anyio.to_thread.run_sync(
            operations.dispatch, self.app, method, params
        )
        return result


async def _derive_over_mcp(app: App) -> Any:
    server = LcgMcpServer(_InProcess(app), Visibility(parse_scopes("memory")), session="liminis")
    async with Client(server.server) as client:
        return await client.call_tool(
            "lambo_derive",
            {"agent_id": AGENT, "concepts": [{"content": "over mcp", "concept_type": "logic"}]},
        )
