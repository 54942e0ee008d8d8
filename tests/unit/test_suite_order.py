"""The suite's own order under xdist (tests/conftest.py): the slowest tests start first, one at
the head of each worker's worksteal chunk, and no test is dropped or run twice."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import START_FIRST, deal_first, worksteal_chunks


def test_the_worksteal_chunks_cover_every_test_once() -> None:
    for count in (0, 1, 3, 4, 5, 17, 3339):
        for workers in (1, 2, 4):
            sizes = worksteal_chunks(count, workers)
            assert len(sizes) == workers
            assert sum(sizes) == count
            assert max(sizes) - min(sizes) <= 1


def test_the_first_tests_head_each_workers_chunk_in_turn() -> None:
    first = ["s0", "s1", "s2", "s3", "s4"]
    rest = [f"t{n}" for n in range(15)]
    dealt = deal_first(first, rest, 4)
    assert sorted(dealt) == sorted(first + rest)
    heads = []
    start = 0
    for size in worksteal_chunks(len(dealt), 4):
        heads.append(dealt[start : start + 2])
        start += size
    assert [head[0] for head in heads] == ["s0", "s1", "s2", "s3"]
    assert heads[0][1] == "s4"
    assert [item for item in dealt if item.startswith("t")] == rest  # the rest keep their order


def test_more_first_tests_than_a_chunk_holds_drop_nothing() -> None:
    first = [f"s{n}" for n in range(9)]
    rest = ["t0", "t1"]
    dealt = deal_first(first, rest, 4)
    assert sorted(dealt) == sorted(first + rest)
    assert len(dealt) == len(set(dealt)) == 11


def test_every_start_first_entry_names_a_test_file_that_exists() -> None:
    root = Path(__file__).resolve().parents[2]
    for prefix in START_FIRST:
        path, _, name = prefix.partition("::")
        text = (root / path).read_text(encoding="utf-8")
        assert f"def {name}" in text, prefix
