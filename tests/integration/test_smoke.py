"""The workspace opens, takes a write, and reads it back."""

from __future__ import annotations

from tests.conftest import Call


def test_assert_entity_then_list_entities_shows_it(call: Call) -> None:
    created = call("knowledge_assert_entity", name="Ada Lovelace", summary="mathematician")
    listed = call("knowledge_list_entities")
    assert listed["count"] == 1
    assert listed["nodes"][0]["uuid"] == created["entity_uuid"]
    assert listed["nodes"][0]["summary"] == "mathematician"
