"""`lcg ingest`'s Markdown chunks (issue 26 item 5): headings as context, blocks kept whole,
front matter as attributes, long paragraphs split."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.cli_ingest import plan_file
from lcg.interfaces.markdown_chunks import Section, read_note

NOTE = """---
title: Team notes
date: 2026-11-30
tags: [team, kestrel]
---
# People

Maria Chen leads the Kestrel Scheduler team.

## Stack

Kestrel uses Redis for its queue.

- Redis holds the queue

- Postgres holds the jobs

```sh
# not a heading

kestrel run --queue redis
```

# Places

Maria Chen works in Lisbon.
"""


def test_issue_26_headings_are_the_sections_path_not_its_text() -> None:
    note = read_note(NOTE, 2_000, "team.md")
    assert [s.headings for s in note.sections] == [
        ("People",),
        ("People", "Stack"),
        ("Places",),
    ]
    assert note.sections[0] == Section("Maria Chen leads the Kestrel Scheduler team.", ("People",))
    assert all(not s.text.startswith("#") for s in note.sections)


def test_issue_26_lists_and_code_blocks_stay_whole_in_one_chunk() -> None:
    stack = read_note(NOTE, 60, "team.md").sections[1:4]
    assert [s.text for s in stack] == [
        "Kestrel uses Redis for its queue.",
        "- Redis holds the queue\n\n- Postgres holds the jobs",
        "```sh\n# not a heading\n\nkestrel run --queue redis\n```",
    ]


def test_issue_26_front_matter_is_attributes_and_its_date_the_reference_time() -> None:
    plan = plan_file(Path("notes/team.md"), NOTE, 2_000)
    assert plan.attributes == {
        "title": "Team notes",
        "date": dt.date(2026, 11, 30),
        "tags": ["team", "kestrel"],
    }
    assert plan.reference_time == "2026-11-30T00:00:00+00:00"
    assert [chunk_id for chunk_id, _ in plan.chunks] == [
        "team.md-0001 People",
        "team.md-0002 People > Stack",
        "team.md-0003 Places",
    ]
    assert "title:" not in "".join(text for _, text in plan.chunks)


def test_issue_26_a_long_paragraph_is_split_and_plain_text_keeps_its_rule() -> None:
    long = " ".join(f"Sentence number {i} is here." for i in range(40))
    note = read_note(f"# Log\n\n{long}\n", 200, "log.md")
    assert len(note.sections) > 1
    assert all(len(s.text) <= 200 and s.headings == ("Log",) for s in note.sections)
    plain = plan_file(Path("log.txt"), "# Log\n\nOne.", 200)
    assert plain.chunks == [("log.txt-0001", "# Log\n\nOne.")]
    assert plan_file(Path("a.json"), '{"a": 1}', 200).chunks == [("a.json-0001", '{"a": 1}')]


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("---\ntitle: [unclosed\n---\nBody.", "front matter must be valid YAML"),
        ("---\n- a list\n---\nBody.", "front matter must be a YAML mapping"),
    ],
)
def test_issue_26_bad_front_matter_is_refused_naming_the_file(text: str, rule: str) -> None:
    with pytest.raises(InvalidParams) as raised:
        read_note(text, 2_000, "bad.md")
    assert rule in str(raised.value)
    assert "bad.md" in str(raised.value)


def test_issue_26_a_thematic_break_at_the_top_is_not_front_matter() -> None:
    note = read_note("---\n\nJust text.\n", 2_000, "hr.md")
    assert note.attributes == {}
    assert [s.text for s in note.sections] == ["Just text."]


def test_issue_26_a_heading_is_its_words_and_a_setext_heading_counts() -> None:
    text = "The **Kestrel** [docs](https://example.org) `v2`\n===\n\nBody one.\n\n## Sub\n\nTwo.\n"
    note = read_note(text, 2_000, "h.md")
    assert [s.headings for s in note.sections] == [
        ("The Kestrel docs v2",),
        ("The Kestrel docs v2", "Sub"),
    ]
