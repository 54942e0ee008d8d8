"""The call ledger's writer (lcg.interfaces.ledger, ADR 0079) on real files: lines land in
order, a failing write and an append after shutdown count as write_failed, a full queue as
channel_full, and the three kinds plus the queue depth add up to every line appended.

Checklist: M-STA-162, M-STA-163.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.ledger import open_ledger
from tests.helpers.service_process import wait_until


def test_lines_land_in_order_in_a_file_created_0600(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    ledger = open_ledger(path, capacity=100)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for n in range(50):
        ledger.append("s", {"n": n})
    ledger.close()
    assert [json.loads(line)["n"] for line in path.read_text().splitlines()] == list(range(50))
    keys = ledger.keys("s", whole_file=True)
    assert keys["ledger_written_lines"] == 50
    assert keys["ledger_dropped_lines"] == 0
    assert keys["ledger_queued_lines"] == 0


def test_m_sta_163_a_failing_write_and_an_append_after_shutdown_are_write_failed() -> None:
    full = Path("/dev/full")  # every write fails with ENOSPC
    if not full.exists():
        pytest.skip("no /dev/full")
    ledger = open_ledger(full, capacity=10)
    ledger.append("s", {"n": 1})
    wait_until(lambda: ledger.keys("s", True)["ledger_queued_lines"] == 0, "the write to fail")
    ledger.close()
    ledger.append("s", {"n": 2})
    keys = ledger.keys("s", whole_file=True)
    assert keys["ledger_written_lines"] == 0
    assert keys["ledger_dropped_write_failed"] == 2
    assert keys["ledger_dropped_channel_full"] == 0
    assert keys["ledger_dropped_lines"] == 2


def test_m_sta_162_the_drop_kinds_sum_to_the_total_and_a_closed_parked_writer_abandons(
    tmp_path: Path,
) -> None:
    """A FIFO with no reader parks the writer: the queue fills (channel_full), and at close
    what is still queued is abandoned (write_failed); every line is accounted for."""
    fifo = tmp_path / "parked.fifo"
    os.mkfifo(fifo, 0o600)
    ledger = open_ledger(fifo, capacity=3)
    for n in range(10):
        ledger.append("a" if n % 2 else "b", {"n": n})
    before = ledger.keys(None, whole_file=True)
    assert before["ledger_written_lines"] == 0
    assert before["ledger_queued_lines"] == 3  # the parked writer holds none of them
    assert before["ledger_dropped_channel_full"] == 7
    ledger.close(wait=0.1)
    after = ledger.keys(None, whole_file=True)
    assert after["ledger_queued_lines"] == 0
    assert after["ledger_dropped_write_failed"] == 3  # abandoned at shutdown
    assert after["ledger_dropped_channel_full"] == 7
    assert after["ledger_dropped_lines"] == 10
    per_session = [ledger.keys(s, whole_file=False) for s in ("a", "b")]
    assert sum(k["ledger_dropped_lines"] for k in per_session) == 10
    assert per_session[0]["ledger_dropped_lines"] == 5


def test_a_path_that_cannot_be_opened_is_refused_naming_the_flag(tmp_path: Path) -> None:
    for bad in (tmp_path / "missing" / "x.jsonl", tmp_path):
        with pytest.raises(InvalidParams) as refused:
            open_ledger(bad, capacity=10)
        assert refused.value.field == "--ledger"
        assert str(bad) in refused.value.message


def test_closing_lets_a_writer_parked_on_a_fifo_go(tmp_path: Path) -> None:
    fifo = tmp_path / "parked.fifo"
    os.mkfifo(fifo, 0o600)
    ledger = open_ledger(fifo, capacity=3)
    ledger.append("s", {"n": 1})
    ledger.close(wait=0.1)
    assert not ledger._writer.is_alive()
