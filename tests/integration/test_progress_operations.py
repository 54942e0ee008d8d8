"""K-PRG-001, A-25: exactly the six long operations report progress through the one sink the
dispatch passes (the socket's frames and MCP's notifications are built from it); any other
tool given a sink reports nothing and behaves as without it."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.conftest import make_call
from tests.integration.test_relation_typing import edge, write_ontology
from tests.integration.test_reprocess_types import stand_in, ws  # noqa: F401 (fixtures)

SIX: dict[str, dict[str, Any]] = {
    "knowledge_rebuild_from_wal": {"group_id": "g1", "force_clear": True},
    "knowledge_canonicalize_relations": {"group_id": "g1"},
    "knowledge_backfill_relation_types": {"group_id": "g1"},
    "knowledge_backfill_summary_embeddings": {"group_id": "g1"},
    "knowledge_reprocess_relation_types": {"group_id": "g1", "scope": "all"},
    "knowledge_reprocess_entity_types": {"group_id": "g1", "scope": "all"},
}
OTHERS: dict[str, dict[str, Any]] = {
    "knowledge_status": {},
    "knowledge_assert_entity": {"name": "Zed", "group_id": "g1"},
    "knowledge_merge_entities": {
        "canonical_name": "Ada",
        "alias_names": ["Zed"],
        "group_id": "g1",
        "dry_run": True,
    },
}


def _story(ws: Workspace) -> App:  # noqa: F811 (the fixture's name)
    write_ontology(ws)
    call = make_call(App(ws))
    for index in range(3):
        edge(call, "RELATED", f"Fact {index}.", target=f"T{index}")
    call("knowledge_assert_entity", name="Ada", group_id="g1", summary="A mathematician.")
    call("knowledge_assert_entity", name="Zed", group_id="g1")
    return App(ws)


@pytest.mark.parametrize("name", list(SIX))
def test_k_prg_001_each_of_the_six_reports_progress(ws: Workspace, name: str) -> None:  # noqa: F811
    app = _story(ws)
    frames: list[tuple[int, int]] = []
    operations.dispatch(app, name, SIX[name], lambda done, total: frames.append((done, total)))
    assert frames, name
    assert all(0 < done <= total for done, total in frames)
    assert frames[-1][0] == frames[-1][1]


@pytest.mark.parametrize("name", list(OTHERS))
def test_a_25_a_sink_given_to_another_tool_gets_nothing(ws: Workspace, name: str) -> None:  # noqa: F811
    app = _story(ws)
    frames: list[tuple[int, int]] = []
    operations.dispatch(app, name, OTHERS[name], lambda done, total: frames.append((done, total)))
    assert frames == []


TYPING_RUNS = [name for name in SIX if "relation" in name or "entity" in name]


@pytest.mark.parametrize("name", TYPING_RUNS)
def test_p_008_each_frame_is_one_step_so_progress_never_exceeds_total_and_ends_at_it(
    ws: Workspace,  # noqa: F811
    name: str,
) -> None:
    """An MCP client's progress counts the frames (P-008): the n-th frame must say n done,
    of a total no smaller, and the last its total (issue 24: reprocess said 4 of 3)."""
    app = _story(ws)
    frames: list[tuple[int, int]] = []
    operations.dispatch(app, name, SIX[name], lambda done, total: frames.append((done, total)))
    assert frames, name
    assert [done for done, _ in frames] == list(range(1, len(frames) + 1)), frames
    assert all(done <= total for done, total in frames), frames
    assert frames[-1][0] == frames[-1][1], frames
