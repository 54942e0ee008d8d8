"""Every ADR says under its title whether it stands and when it was added (docs/adr/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ADRS = Path(__file__).resolve().parents[2] / "docs" / "adr"
FILES = sorted(ADRS.glob("[0-9][0-9][0-9][0-9]-*.md"))
STATUS = re.compile(
    r"^Status: (Accepted|Superseded by (?P<by>\d{4})|Amended by (?P<amended>\d{4}(, \d{4})*))"
    r"( \(.+\))?$"
)
DATE = re.compile(r"^Date: \d{4}-\d{2}-\d{2}$")


def _head(path: Path) -> list[str]:
    """The lines between the title and the first section."""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith(f"# {path.name[:4]}. "), f"{path.name}: the title comes first"
    end = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    return lines[1:end]


def test_there_are_adrs_to_check() -> None:
    assert len(FILES) >= 50


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.name[:4])
def test_issue_25_an_adr_has_a_status_and_a_date_line_under_its_title(path: Path) -> None:
    head = _head(path)
    statuses = [line for line in head if line.startswith("Status:")]
    dates = [line for line in head if line.startswith("Date:")]
    assert len(statuses) == 1, f"{path.name}: one Status line under the title (docs/adr/README.md)"
    assert len(dates) == 1, f"{path.name}: one Date line under the title (docs/adr/README.md)"
    assert DATE.match(dates[0]), f"{path.name}: {dates[0]!r} is not Date: YYYY-MM-DD"
    status = STATUS.match(statuses[0])
    assert status, f"{path.name}: {statuses[0]!r} is not Accepted, Amended by or Superseded by"
    numbers = {p.name[:4] for p in FILES}
    for later in re.findall(r"\d{4}", status["by"] or status["amended"] or ""):
        assert later in numbers, f"{path.name}: ADR {later} does not exist"
        assert later > path.name[:4], f"{path.name}: only a later ADR amends or supersedes it"
