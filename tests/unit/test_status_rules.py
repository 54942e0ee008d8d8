"""The hydration rule of knowledge_status (P-103), a pure function."""

from __future__ import annotations

import pytest

from lcg.queries.status import hydration_status


@pytest.mark.parametrize(
    ("applied", "max_seq", "expected"),
    [
        (None, None, "not_applicable"),
        (0, 0, "not_applicable"),
        (None, 3, "wal_ahead"),
        (2, 3, "wal_ahead"),
        (3, 3, "hydrated"),
    ],
)
def test_p_103_hydration_status_rule(
    applied: int | None, max_seq: int | None, expected: str
) -> None:
    assert hydration_status(applied, max_seq) == expected
