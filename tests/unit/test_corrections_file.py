"""The corrections file's format (domain.corrections, P-125): well-formed entries become typed
corrections; every problem names the correction and the field."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.domain.corrections import EdgeRef, EntityRef, parse


def test_p_125_every_action_reads_into_a_typed_correction() -> None:
    parsed = parse(
        {
            "version": 1,
            "corrections": [
                {"id": "m", "action": "merge", "canonical": "Ada", "aliases": ["A", {"uuid": "u"}]},
                {"id": "r", "action": "rename", "entity": {"uuid": "u"}, "name": " New "},
                {"id": "t", "action": "retype", "entity": "Ada", "labels": ["P", "P", "Q"]},
                {
                    "id": "s",
                    "action": "set_summary",
                    "entity": "Ada",
                    "summary": "",
                    "group_id": "g",
                },
                {
                    "id": "d",
                    "action": "delete_edge",
                    "edge": {"source": "A", "predicate": "P", "target": "B"},
                },
            ],
        }
    )
    assert parsed.issues == []
    merge, rename, retype, summary, delete = parsed.corrections
    assert merge.aliases == (EntityRef(name="A"), EntityRef(uuid="u"))
    assert (rename.entity, rename.name) == (EntityRef(uuid="u"), "New")
    assert retype.labels == ("P", "Q")
    assert (summary.group_id, summary.summary) == ("g", "")
    assert delete.edge == EdgeRef(
        source=EntityRef(name="A"), predicate="P", target=EntityRef(name="B")
    )


@pytest.mark.parametrize(
    ("entry", "correction", "field"),
    [
        ({"action": "rename"}, "corrections[0]", "id"),
        ({"id": "bad id", "action": "rename"}, "bad id", "id"),
        ({"id": "x", "action": "fly"}, "x", "action"),
        ({"id": "x", "action": "merge", "canonical": "A", "aliases": []}, "x", "aliases"),
        ({"id": "x", "action": "merge", "canonical": "A", "aliases": [3]}, "x", "aliases[0]"),
        ({"id": "x", "action": "rename", "entity": "A"}, "x", "name"),
        ({"id": "x", "action": "retype", "entity": "A", "labels": [" "]}, "x", "labels"),
        ({"id": "x", "action": "set_summary", "entity": {"uuid": "u", "name": "n"}}, "x", "entity"),
        ({"id": "x", "action": "delete_edge", "edge": {"source": "A"}}, "x", "edge"),
        (
            {"id": "x", "action": "rename", "entity": "A", "name": "B", "group_id": "-g"},
            "x",
            "group_id",
        ),
        ({"id": "x", "action": "rename", "entity": "A", "name": "B", "colour": 1}, "x", "colour"),
        ("just text", "corrections[0]", "corrections"),
    ],
)
def test_p_125_a_malformed_entry_is_an_issue_naming_its_correction_and_field(
    entry: Any, correction: str, field: str
) -> None:
    parsed = parse({"corrections": [entry]})
    assert parsed.corrections == []
    assert parsed.total == 1
    [issue] = parsed.issues
    assert (issue["correction"], issue["field"]) == (correction, field)
    assert issue["message"]


def test_p_125_the_files_own_problems_have_no_correction() -> None:
    assert parse(None).issues == []  # an empty file: nothing to correct
    for data, field in (
        ([], "corrections"),
        ({"corrections": {}}, "corrections"),
        ({"corrections": [], "version": 2}, "version"),
        ({"corrections": [], "extra": 1}, "extra"),
    ):
        [issue] = parse(data).issues
        assert (issue["correction"], issue["field"]) == (None, field)


def test_p_125_ids_are_unique_in_the_file() -> None:
    entry = {"id": "x", "action": "rename", "entity": "A", "name": "B"}
    parsed = parse({"corrections": [entry, entry]})
    assert len(parsed.corrections) == 1
    [issue] = parsed.issues
    assert (issue["correction"], issue["field"]) == ("x", "id")
