"""`lcg derive` and `lcg stats` across processes: an ack-only write is applied by the next one
(issue 11). The commands themselves are tested in this process:
tests/integration/test_cli_memory.py."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.console_script import lcg_json


def test_issue_11_an_ack_only_write_is_applied_by_the_next_process(tmp_path: Path) -> None:
    acked = lcg_json(tmp_path, "derive", "left pending", "--wait-ms", "0", "--json")
    assert acked["receipt_state"] == "pending"
    asked = lcg_json(
        tmp_path, "stats", "--receipt", acked["receipt"], "--wait-ms", "20000", "--json"
    )
    assert asked["receipt"]["state"] == "applied_after_restart"
