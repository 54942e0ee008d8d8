"""The sweep's reasons as they are written: a collection's reason goes into the sweep event
(`{"node_id", "reason"}`, canonization.md §8's clauses), a protection's into the sweep's plan."""

from __future__ import annotations

from lcg.domain.memory.gc import CollectReason, KeptReason


def test_the_collect_reasons_have_their_wire_names() -> None:
    assert [r.value for r in CollectReason] == ["orphan", "disconnected", "under_bar", "cascade"]


def test_the_kept_reasons_have_their_wire_names() -> None:
    assert [r.value for r in KeptReason] == [
        "status",
        "root_goal",
        "contradicts_venerable_or_canonical",
        "shown_correction",
    ]
