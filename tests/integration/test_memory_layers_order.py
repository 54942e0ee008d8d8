"""Layered sessions: the order writes are applied in, and each layer's own rate (seed 001
"Writing to a layer"; ADRs 0080 and 0088). A real workspace opened by `Service.start`, `lambo`
layered over `general`; the intent processor is the real one, its settles observed through
its listeners (as the --ledger's completion lines are)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import RpcError
from lcg.interfaces.service import Service
from tests.helpers.memory_log import head
from tests.integration.test_memory_layers import QUIET, applied, derive, heads, tool


def open_service(workspace: Path, **tuning: Any) -> Service:
    settings = Settings(
        workspace=workspace,
        session="lambo",
        layers=("general",),
        tuning=QUIET.with_values(**tuning) if tuning else QUIET,
    )
    served = Service(settings, command="pytest")
    assert served.start() == "healthy", served.reason
    return served


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    served = open_service(tmp_path)
    try:
        yield served
    finally:
        served.close()


def settle_order(service: Service, sends: list[tuple[str, str | None]]) -> list[str]:
    """Send each (content, scope) while the processor is held, then let it go: the contents
    in the order their writes were applied (each acked before the next is sent)."""
    workspace = service._workspace
    assert workspace is not None
    processor = workspace.memory_sessions.processor
    settled: list[str] = []
    processor.listeners.append(lambda receipt, state, outcome: settled.append(receipt))
    acks: list[tuple[str, Any]] = []
    with processor.paused():
        for content, scope in sends:
            ack = derive(service, content, scope)
            assert ack["structuredContent"]["receipt_state"] == "pending", ack
            acks.append((content, ack))
    for _, ack in acks:
        applied(service, ack)
    by_receipt = {ack["structuredContent"]["receipt"]: content for content, ack in acks}
    return [by_receipt[receipt] for receipt in settled if receipt in by_receipt]


def lengthen(service: Service, scope: str | None, than: str) -> None:
    """Write to `scope` (None: lambo) until its stream is longer than `than`'s."""
    workspace = service.settings.workspace
    mine = scope or "lambo"
    n = 0
    while head(workspace, mine) <= head(workspace, than) + 2:
        applied(service, derive(service, f"filler fact number {n} of {mine}", scope))
        n += 1


def test_m_lay_006_a_write_to_general_then_one_to_the_project_may_apply_in_either_order(
    service: Service,
) -> None:
    """Each session's intents are applied in its own stream order, and the processor takes
    the sessions' pending intents by their seq in their own streams: with general's stream
    the longer, the project's write sent second is applied first; with the project's the
    longer, general's is. Nothing orders writes to different sessions."""
    lengthen(service, "general", than="lambo")
    order = settle_order(service, [("tags are signed", "general"), ("the tag is pushed", None)])
    assert order == ["the tag is pushed", "tags are signed"]
    lengthen(service, None, than="general")
    order = settle_order(service, [("commits are squashed", "general"), ("CI runs nightly", None)])
    assert order == ["commits are squashed", "CI runs nightly"]


def test_m_lay_007_within_one_session_the_write_order_is_kept(service: Service) -> None:
    """Writes to one session are applied in the order they were acked, whatever is written
    to the other session between them, in both sessions and both stream-length cases."""
    sends: list[tuple[str, str | None]] = [
        ("first project fact", None),
        ("first general ruling", "general"),
        ("second project fact", None),
        ("second general ruling", "general"),
        ("third project fact", None),
    ]
    for longer in ("general", None):
        lengthen(service, longer, than="general" if longer is None else "lambo")
        order = settle_order(service, sends)
        assert [c for c in order if "project" in c] == [c for c, s in sends if s is None]
        assert [c for c in order if "general" in c] == [c for c, s in sends if s == "general"]
        assert sorted(order) == sorted(c for c, _ in sends)


def test_m_rec_251_253_m_lay_023_024_a_scoped_call_draws_on_the_layers_own_rate(
    tmp_path: Path,
) -> None:
    """per_session_rps 0.1 with a burst of 1: one scoped write and one scoped read of general
    pass, the next of each is refused as retryable with nothing written in either session;
    merged recalls and the project's own calls draw on no layer's rate (M-CFG-022)."""
    served = open_service(tmp_path, serve__per_session_rps=0.1, serve__burst=1)
    try:
        applied(served, derive(served, "tags are signed", "general"))  # general's one write
        applied(served, derive(served, "the tag is pushed"))
        before = heads(served)
        for name, params in (
            ("lambo_derive", {"concepts": [{"content": "CI runs", "concept_type": "logic"}]}),
            ("lambo_reserve", {"node_id": "5e6f7a8b-0000-4000-8000-000000000001"}),
        ):
            with pytest.raises(RpcError) as error:
                tool(served, name, scope="general", **params)
            assert re.fullmatch(
                r"scope: layer general is not serving right now \(it is over its rate:"
                r" per_session_rps 0\.1 writes a second, burst 1; the next is free in \d+ s\),"
                r" so nothing was read or written in it; retry shortly, or call without scope"
                r" to act on lambo",
                error.value.message,
            ), error.value.message
            assert (error.value.data or {}).get("kind") == "conflict"
        assert heads(served) == before
        one = tool(served, "lambo_recall", query="tags", scope="general")  # the one read
        assert [h["content"] for h in one["structuredContent"]["hits"]] == ["tags are signed"]
        with pytest.raises(RpcError) as error:
            tool(served, "lambo_inspect", focus="tags are signed", scope="general")
        assert "over its rate: per_session_rps 0.1 reads a second" in error.value.message
        for _ in range(3):  # merged recalls: only the addressed session's rate
            merged = tool(served, "lambo_recall", query="tags signed pushed")
            assert {h["session"] for h in merged["structuredContent"]["hits"]} == {
                "lambo",
                "general",
            }
        for _ in range(3):  # the session's own calls, scoped to it or not
            tool(served, "lambo_recall", query="tags", scope="lambo")
            applied(served, derive(served, "release notes are drafted", "lambo"))
        assert heads(served)[1] == before[1]
    finally:
        served.close()
