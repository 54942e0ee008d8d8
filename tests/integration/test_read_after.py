"""`min_seq` on the read tools (issue 28 item 3, ADR 0076) on one SQLite node: a seq the node
has applied is read at once, a later one is waited for (bounded by `[store] min_seq_wait_ms`)
and refused beyond it, naming `min_seq` and the node's position; bad shapes name the field.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.read_after import NotYetApplied, wait_applied
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_call, make_workspace


def open_app(tmp_path: Path, embedder: Embedder, wait_ms: int) -> Iterator[App]:
    settings = Settings.load({"LCG_STORE_MIN_SEQ_WAIT_MS": str(wait_ms)}, tmp_path)
    with make_workspace(settings, embedder) as ws:
        yield App(ws)


@pytest.fixture
def quick(tmp_path: Path, embedder: Embedder) -> Iterator[App]:
    """A node that waits 0 ms: a seq not applied is refused at once."""
    yield from open_app(tmp_path, embedder, 0)


@pytest.fixture
def patient(tmp_path: Path, embedder: Embedder) -> Iterator[App]:
    """A node that waits up to a minute (the test's bound)."""
    yield from open_app(tmp_path, embedder, 60_000)


def add(app: App, n: int, group: str = "g") -> None:
    make_call(app)("knowledge_add_episode", name=f"e{n}", episode_body=f"b{n}", group_id=group)


def test_the_default_wait_is_two_seconds(tmp_path: Path) -> None:
    assert Settings.load({}, tmp_path).tuning.get_int("store", "min_seq_wait_ms") == 2000


def test_an_applied_seq_is_read_at_once(quick: App) -> None:
    call = make_call(quick)
    add(quick, 1)
    add(quick, 2)
    assert call("knowledge_get_episodes", group_id="g", min_seq=2)["count"] == 2
    assert call("knowledge_get_episodes", group_id="g", min_seq=0)["count"] == 2
    found = call("knowledge_list_entities", group_ids=["g"], min_seq={"g": 1, "other": 0})
    assert found["count"] == 0
    assert call("knowledge_get_nodes_by_group", group_ids=["g"], min_seq=2)["count"] == 0


def test_a_seq_not_applied_is_refused_naming_min_seq_and_the_position(quick: App) -> None:
    add(quick, 1)
    with pytest.raises(NotYetApplied) as refused:
        make_call(quick)("knowledge_get_episodes", group_id="g", min_seq=5)
    message = str(refused.value)
    assert message.startswith("min_seq: this node has applied group 'g' to seq 1, not yet seq 5")
    assert "[store] min_seq_wait_ms" in message
    assert refused.value.field == "min_seq"
    with pytest.raises(NotYetApplied, match="group 'new' to seq 0, not yet seq 1"):
        make_call(quick)("knowledge_search_passages", query="b1", min_seq={"new": 1, "g": 1})


def test_a_read_waits_for_the_write_that_brings_its_seq(patient: App) -> None:
    add(patient, 1)
    answers: list[dict[str, Any]] = []
    reader = threading.Thread(
        target=lambda: answers.append(
            operations.dispatch(patient, "knowledge_get_episodes", {"group_id": "g", "min_seq": 3})
        )
    )
    reader.start()
    add(patient, 2)
    add(patient, 3)
    reader.join()
    assert [e["name"] for e in answers[0]["episodes"]] == ["e3", "e2", "e1"]


@pytest.mark.parametrize(
    "value", [-1, "3", 1.5, True, {}, {"g": -1}, {"g": "1"}, {"": 1}, [1]], ids=repr
)
def test_a_bad_min_seq_names_the_field(quick: App, value: object) -> None:
    with pytest.raises(InvalidParams) as refused:
        operations.dispatch(quick, "knowledge_get_episodes", {"group_id": "g", "min_seq": value})
    assert refused.value.field == "min_seq"
    assert "must be a seq (an integer, 0 or more) or an object {group_id: seq}" in str(
        refused.value
    )


def test_an_integer_needs_the_tool_s_one_group(quick: App) -> None:
    with pytest.raises(InvalidParams, match="an integer is the seq of the tool's one group"):
        operations.dispatch(quick, "knowledge_list_entities", {"min_seq": 1})
    with pytest.raises(InvalidParams, match="give an object"):
        operations.dispatch(
            quick, "knowledge_find_entities", {"query": "x", "group_ids": ["a", "b"], "min_seq": 1}
        )


def test_the_read_tools_publish_min_seq_and_the_writes_do_not() -> None:
    schema = operations.BY_NAME["knowledge_get_episodes"].input_schema()
    published = schema["properties"]["min_seq"]
    assert (published["type"], published["additionalProperties"]["type"]) == ("object", "integer")
    assert list(schema["properties"])[-1] == "min_seq"
    for name in ("knowledge_add_episode", "knowledge_assert_entity", "knowledge_status"):
        assert "min_seq" not in operations.BY_NAME[name].input_schema()["properties"]


def test_wait_applied_gives_up_at_its_bound_only() -> None:
    now = [0.0]
    positions = {"g": 0}

    def sleep(seconds: float) -> None:
        now[0] += seconds
        if now[0] >= 0.5:
            positions["g"] = 4  # applied half a second in

    wait_applied(positions.__getitem__, {"g": 4}, 1000, clock=lambda: now[0], sleep=sleep)
    assert 0.5 <= now[0] < 1.0
    positions["g"] = 0
    now[0] = 0.0
    with pytest.raises(NotYetApplied, match="group 'g' to seq 0, not yet seq 9"):
        wait_applied(lambda _: 0, {"g": 9}, 300, clock=lambda: now[0], sleep=sleep)
    assert now[0] == pytest.approx(0.3)
