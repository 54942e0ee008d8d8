"""`attributes` as an object for the faces people read (issue 26 item 6, ADR 0092)."""

from __future__ import annotations

import copy

from lcg.interfaces.attribute_rows import attributes_object, with_attribute_objects


def test_p_110_json_text_is_read_back_as_the_object_it_holds() -> None:
    assert attributes_object('{"role":"lead","n":[1,2],"x":{"y":null}}') == {
        "role": "lead",
        "n": [1, 2],
        "x": {"y": None},
    }
    assert attributes_object(b'{"k":1}') == {"k": 1}
    assert attributes_object({"k": 1}) == {"k": 1}


def test_k_ast_011_what_is_not_an_object_reads_as_the_empty_object() -> None:
    for value in ("", "{}", "[1,2]", '"x"', "3", "null", "{bad", None, 3, [1]):
        assert attributes_object(value) == {}, value


def test_nodes_and_edges_rows_get_objects_and_nothing_else_changes() -> None:
    result = {
        "nodes": [{"uuid": "a", "attributes": '{"k":1}'}, {"uuid": "b"}],
        "edges": [{"uuid": "e", "attributes": "{}"}],
        "passages": [{"attributes": '{"k":1}'}],
        "count": 2,
    }
    before = copy.deepcopy(result)
    shown = with_attribute_objects(result)
    assert shown == {
        "nodes": [{"uuid": "a", "attributes": {"k": 1}}, {"uuid": "b"}],
        "edges": [{"uuid": "e", "attributes": {}}],
        "passages": [{"attributes": '{"k":1}'}],
        "count": 2,
    }
    assert result == before  # the tool's result is left as it was
    assert with_attribute_objects({"count": 0}) == {"count": 0}
