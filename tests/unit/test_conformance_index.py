"""docs/conformance.md is what `python -m tests.conformance_index` writes from the tests now.

A test named after a checklist id (or citing one in its docstring) that is added, renamed or
removed without the index being regenerated fails here, so the index stays true.
"""

from __future__ import annotations

from pathlib import Path

from tests import conformance_index
from tests.conformance_index import INDEX, ITEMS, ids_in_name, parse_citations

REGENERATE = f"{INDEX} is stale; regenerate it: {conformance_index.COMMAND}"


def test_issue_25_the_committed_conformance_index_is_what_the_generator_writes() -> None:
    committed = (conformance_index.ROOT / INDEX).read_text(encoding="utf-8")
    assert committed == conformance_index.render(), REGENERATE


def test_ids_in_a_tests_name_with_continuations_and_several_families() -> None:
    assert ids_in_name("test_k_xg_013_014_k_sta_007_binds") == ["K-XG-013", "K-XG-014", "K-STA-007"]
    assert ids_in_name("test_issue_10_p_110_k_sem_004_x") == ["P-110", "K-SEM-004"]
    assert ids_in_name("test_m_instr_004_recall_first") == ["M-INSTR-004"]
    assert ids_in_name("test_a_12_blocks_and_oq_16") == ["A-12", "OQ-16"]
    assert ids_in_name("test_k_inv_mission_tool_coverage_all_43_tools") == []
    assert ids_in_name("test_rebuild_to_seq_excludes_later_events") == []
    assert ids_in_name("test_k_rt_001_to_003_026_x") == [
        "K-RT-001",
        "K-RT-002",
        "K-RT-003",
        "K-RT-026",
    ]
    assert ids_in_name("test_k_wal_016_to_seq_is_inclusive") == ["K-WAL-016"]


def test_citations_expand_ranges_lists_and_repeated_prefixes() -> None:
    known = {f"K-DBM-{n:03d}" for n in range(1, 23)} - {"K-DBM-012"}
    assert parse_citations("K-DBM-005..007/011..014/021", known) == [
        "K-DBM-005",
        "K-DBM-006",
        "K-DBM-007",
        "K-DBM-011",
        "K-DBM-013",  # a range keeps only the ids the checklists hold
        "K-DBM-014",
        "K-DBM-021",
    ]
    assert parse_citations("(P-009..P-011), M-REC-063, 064 and OQ-16/OQ-22") == [
        "P-009",
        "P-010",
        "P-011",
        "M-REC-063",
        "M-REC-064",
        "OQ-16",
        "OQ-22",
    ]
    assert parse_citations("P-008, 12 tools; K-SRC; ADR-0033; M-REC-190..") == [
        "P-008",
        "M-REC-190",
    ]
    # a family of shorter numbers after a comma is a list of ids, not a count
    assert parse_citations("K-RT-027, P-128, A-02, A-21") == ["K-RT-027", "P-128", "A-02", "A-21"]


def _repository(root: Path) -> None:
    (root / "docs").mkdir()
    (root / ITEMS).write_text(
        "K-WAL\tWAL administration\n"
        "K-WAL-035\tThe WAL is the source of truth.\n"
        "K-WAL-036\tA mark names a seq.\n"
        "M-INS-020\tInspect shows the type.\n",
        encoding="utf-8",
    )
    (root / "tests").mkdir()
    (root / "tests" / "test_wal.py").write_text(
        '"""WAL tests."""\n\n\ndef test_k_wal_035_the_wal_is_the_truth() -> None:\n'
        '    """Also K-WAL-036."""\n',
        encoding="utf-8",
    )
    (root / "README.md").write_text("We follow M-INS-020.\n", encoding="utf-8")


def test_issue_25_a_test_named_after_a_new_id_makes_the_index_stale_until_regenerated(
    tmp_path: Path,
) -> None:
    _repository(tmp_path)
    conformance_index.write(tmp_path)
    page = (tmp_path / INDEX).read_text(encoding="utf-8")
    assert "## K-WAL: WAL administration" in page
    assert (
        "- **K-WAL-035** The WAL is the source of truth. — "
        "`tests/test_wal.py::test_k_wal_035_the_wal_is_the_truth`" in page
    )
    assert "- **K-WAL-036** A mark names a seq. — *`tests/test_wal.py::test_k_wal_035" in page
    assert "- **M-INS-020** Inspect shows the type. — cited in README.md" in page
    assert not conformance_index.is_stale(tmp_path)
    with (tmp_path / "tests" / "test_wal.py").open("a", encoding="utf-8") as tests:
        tests.write("\n\ndef test_m_ins_020_inspect_shows_the_type() -> None:\n    pass\n")
    assert conformance_index.is_stale(tmp_path), "a new test naming an id must need a rewrite"
    conformance_index.write(tmp_path)
    assert not conformance_index.is_stale(tmp_path)
    assert "test_m_ins_020_inspect_shows_the_type`" in (tmp_path / INDEX).read_text("utf-8")


def test_issue_25_an_item_left_with_a_reason_is_listed_with_it_until_a_test_proves_it(
    tmp_path: Path,
) -> None:
    _repository(tmp_path)
    assert conformance_index.accounting(tmp_path) == (["M-INS-020"], [])
    (tmp_path / conformance_index.LEFT).write_text(
        "M-INS-020\tNo inspect here.\n", encoding="utf-8"
    )
    assert conformance_index.accounting(tmp_path) == ([], [])
    page = conformance_index.render(tmp_path)
    assert "- **M-INS-020** Inspect shows the type. — *No inspect here.*" in page
    assert "cited in README.md" not in page  # left with its reason, not listed as unproven
    with (tmp_path / "tests" / "test_wal.py").open("a", encoding="utf-8") as tests:
        tests.write("\n\ndef test_m_ins_020_inspect_shows_the_type() -> None:\n    pass\n")
    assert conformance_index.accounting(tmp_path) == ([], ["M-INS-020"])


def test_an_item_is_summarised_in_one_line_from_its_first_sentence() -> None:
    summary = conformance_index.summarize(
        "**MCP progress mapping.** Each frame becomes one `notifications/progress`. "
        "`progress` goes up by 1 per frame. **[upstream]**"
    )
    assert summary == "MCP progress mapping: Each frame becomes one `notifications/progress`."
    long = conformance_index.summarize("word " * 80 + "(§intro)")
    assert len(long) <= conformance_index.STATEMENT_CHARS + 2
    assert long.endswith(" …")
    assert "§" not in long


def test_issue_25_every_checklist_item_is_proven_by_a_test_or_left_with_a_reason() -> None:
    """docs/conformance-left.tsv says why each item no test proves is left (it cannot apply
    here, or is not built); an item a test comes to prove leaves that file."""
    unaccounted, both = conformance_index.accounting()
    assert unaccounted == [], f"no test proves these, and {conformance_index.LEFT} says nothing"
    assert both == [], f"a test proves these: take them out of {conformance_index.LEFT}"
