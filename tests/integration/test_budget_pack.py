"""[retrieval] budget_pack through lambo_recall itself (issue 31 "rank for the budget", ADR
0103): the same story written into two workspaces with the same node ids, one with the stage
off (the default) and one with it on, and the same recalls asked of both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_workspace
from tests.integration.test_memory_layers import QUIET, applied, tool
from tests.integration.test_memory_layers import derive as layer_derive
from tests.integration.test_memory_reads_pinned import counter_ids
from tests.integration.test_memory_writes import AGENT, call, concept, derive, settled

SHORT_FIRST = "Miso the cat sleeps on the piano"
LONG = "Miso the cat naps by the warm window, Miso the cat dreams. " * 10
SHORT_SECOND = "Miso the cat came from the shelter"
SHORT_THIRD = "Miso the cat eats fish"
STORY = (SHORT_FIRST, LONG, SHORT_SECOND, SHORT_THIRD)
QUERY = "Miso the cat on the piano"


def _open(path: Path, embedder: Embedder, **retrieval: object) -> Workspace:
    tuning = Tuning().with_values(**{f"retrieval__{k}": v for k, v in retrieval.items()})
    return make_workspace(
        Settings(workspace=path, tuning=tuning), embedder, memory_ids=counter_ids()
    )


@pytest.fixture
def both(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[App, App]]:
    """(stage off, stage on), each holding STORY derived one concept a write, in order."""
    with (
        _open(tmp_path / "off", embedder) as off,
        _open(tmp_path / "on", embedder, budget_pack=True) as on,
    ):
        apps = (App(off), App(on))
        for app in apps:
            for text in STORY:
                settled(app, derive(app, concept(text, "observation")))
            app.workspace.settle()
        yield apps


def _recall(app: App, **params: Any) -> dict[str, Any]:
    answer: dict[str, Any] = call(app, "lambo_recall", agent_id=AGENT, query=QUERY, **params)
    app.workspace.memory.flush_accesses(0)
    return answer


def _contents(answer: dict[str, Any]) -> list[str]:
    return [hit["content"] for hit in answer["structuredContent"]["hits"]]


def _budget(answer: dict[str, Any], *texts: str) -> int:
    """The max_tokens that holds exactly the blocks of `texts` (as the answer rendered them)."""
    blocks = answer["structuredContent"]["context"].split("\n\n")
    kept = [block for block in blocks if any(block.startswith(text) for text in texts)]
    assert len(kept) == len(texts)
    return -(-2 * len("\n\n".join(kept).encode("utf-8")) // 7)


def test_issue_31_budget_pack_off_and_on_answer_alike_when_every_block_fits(
    both: tuple[App, App],
) -> None:
    off, on = both
    assert _recall(off, top_k=10) == _recall(on, top_k=10)  # text and structuredContent


def test_issue_31_budget_pack_shows_two_short_hits_a_long_one_crowded_out(
    both: tuple[App, App],
) -> None:
    """Off, the long concept ranked second stops the block at it (M-REC-061);
    on, the hits that fit go first and the long one after them: the same hits, in the
    order whose blocks the context holds (M-REC-056), within max_tokens (M-REC-072)."""
    off, on = both
    whole = _recall(off, top_k=10)
    order = _contents(whole)
    assert order.index(LONG) == 1, order  # the story's premise: two short ones rank after it
    shorts = [text for text in order if text != LONG]
    budget = _budget(whole, *shorts)
    plain = _recall(off, top_k=10, max_tokens=budget)
    packed = _recall(on, top_k=10, max_tokens=budget)
    assert _contents(plain) == order
    plain_blocks = plain["structuredContent"]["context"].split("\n\n")
    assert [block.split(" [")[0] for block in plain_blocks] == [order[0]]  # off: stops at LONG
    assert _contents(packed) == [*shorts, LONG]
    blocks = packed["structuredContent"]["context"].split("\n\n")
    assert [block.split(" [")[0] for block in blocks] == shorts
    assert -(-2 * len(packed["structuredContent"]["context"].encode("utf-8")) // 7) <= budget
    assert not any("truncated_in_context" in hit for hit in packed["structuredContent"]["hits"])
    assert sorted(packed["structuredContent"]["warnings"]) == sorted(
        plain["structuredContent"]["warnings"]
    )


def test_m_rec_240_budget_pack_ranks_a_layered_recall_under_its_one_budget(
    tmp_path: Path,
) -> None:
    """A session layered over `general` merges both under one max_tokens (M-REC-240): with
    budget_pack on, the long hit that stops the merged block moves after the short hits of
    both sessions, which then all show. Merged rank by rank (`[serve] layer_merge = "rank"`),
    the long project hit lands before a short layer hit, which the stage then moves past it."""
    tuning = QUIET.with_values(retrieval__budget_pack=True, serve__layer_merge="rank")
    settings = Settings(workspace=tmp_path, session="lambo", layers=("general",), tuning=tuning)
    service = Service(settings, command="pytest")
    assert service.start() == "healthy", service.reason
    try:
        story = (
            (SHORT_FIRST, "general"),
            (LONG, None),
            (SHORT_SECOND, None),
            (SHORT_THIRD, "general"),
        )
        for text, scope in story:
            applied(service, layer_derive(service, text, scope))
        whole = tool(service, "lambo_recall", query=QUERY, top_k=10)
        order = _contents(whole)
        shorts = [text for text in order if text != LONG]
        assert order.index(LONG) < len(order) - 1, order  # the premise: a short hit after it
        budget = _budget(whole, *shorts)
        plain = _contents(whole)[: order.index(LONG)]  # what a block stopping at LONG shows
        packed = tool(service, "lambo_recall", query=QUERY, top_k=10, max_tokens=budget)
        assert _contents(packed) == [*shorts, LONG]
        blocks = packed["structuredContent"]["context"].split("\n\n")
        assert [block.split(" [")[0] for block in blocks] == shorts
        assert len(shorts) > len(plain)
        sessions = {hit["content"]: hit["session"] for hit in packed["structuredContent"]["hits"]}
        assert sessions[SHORT_FIRST] == "general"
    finally:
        service.close()
