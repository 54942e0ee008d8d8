"""Links in prose in basic-memory notes (issue 32, ADR 0089): every `[[Wiki Link]]` in a
paragraph, in an observation or in a list item that is a sentence becomes a `links_to`
relation, as basic-memory itself reads them; `type [[Target]] (context)` stays an explicit
relation; a link in a code span or written `\\[[x]]` is none.

The note (fixtures/.../port/basic-memory-prose/Espresso.md) is written as basic-memory 0.24.1
writes notes (its front matter, headings and list forms); the relations expected here are the
ones basic-memory 0.24.1's own Markdown plugin found in it: links_to Burr Grinder and Coffee
Bean Origins (the paragraph), links_to Coffee Brewing Methods (the observation), pairs_with
Coffee Bean Origins with its context, links_to Burr Grinder (the sentence in a list), and
nothing for the code span or the escaped link (basic-memory keeps `|beans` in the target; lcg
names the note the link names)."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.integration.test_port_formats import FIXTURES, NOTES, edges

lcg_json = functools.partial(run_json, run=lcg)
PROSE = FIXTURES / "basic-memory-prose"


def test_issue_32_wiki_links_in_prose_become_links_to_relations(tmp_path: Path) -> None:
    report = lcg_json(
        tmp_path, "import", str(NOTES), str(PROSE), "-f", "basic-memory", "-g", "bm", "--json"
    )
    assert report["entities"]["created"] == 4
    # the second link to Burr Grinder is the same relation: written once
    assert report["relations"] == {"created": 7, "updated": 0, "unchanged": 1}
    espresso = {(p, t) for s, p, t in edges(tmp_path, "bm") if s == "Espresso"}
    assert espresso == {
        ("links_to", "Burr Grinder"),
        ("links_to", "Coffee Bean Origins"),
        ("links_to", "Coffee Brewing Methods"),
        ("pairs_with", "Coffee Bean Origins"),
    }
    assert not any(t == "Not A Link" for _, _, t in edges(tmp_path, "bm"))


def test_issue_32_a_prose_link_to_a_missing_note_is_named_by_its_line(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text(
        "---\ntitle: A\ntype: note\n---\n\n# A\n\nSee [[Nowhere]] for more.\n", encoding="utf-8"
    )
    done = lcg(tmp_path, "import", str(folder), "-f", "basic-memory")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert f"{folder / 'a.md'}:8: relation to a missing entity 'Nowhere'" in said
