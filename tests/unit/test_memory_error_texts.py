"""What a lambo tool says when the call failed inside (seed 001, M-ERR-022/032): the class of
failure and that the detail was logged, never the detail itself."""

from __future__ import annotations

import pytest
from mcp.types import TextContent

from lcg.interfaces.jsonrpc import error_from_exception
from lcg.interfaces.mcp_server import _memory_error
from lcg.projections.faults import Fenced, StorageFailure


def _text(error: BaseException) -> str:
    result = _memory_error(error_from_exception(error))
    assert result.is_error is True
    (item,) = result.content
    assert isinstance(item, TextContent)
    return item.text


def test_m_err_032_a_handler_fault_is_an_internal_error_with_no_effect_beyond_what_was_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Also M-ERR-003: the full detail of the error is logged server-side."""
    text = _text(RuntimeError("boom in /srv/secret/path.py"))
    assert text == (
        "internal error: the call had no effect beyond anything already written; the detail"
        " was logged"
    )
    assert "boom" in caplog.text  # the detail is in the log, not the answer


def test_m_err_022_a_store_failure_is_a_store_error_whose_detail_was_logged() -> None:
    text = _text(StorageFailure("/srv/ws/graph.sqlite", "write", "database or disk is full"))
    assert text == "store error: the store refused the write; the detail was logged"


def test_m_err_020_021_losing_the_writer_lease_is_a_conflict_whose_detail_was_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The class `conflict` and that the detail was logged; the lease's own state (its name,
    holder, epochs) is not model-facing: only the log has it."""
    text = _text(Fenced("memory:liminis", 3, 4))
    assert text == (
        "conflict: this server lost its single-writer lease, so nothing was written; the"
        " detail was logged"
    )
    for detail in ("memory:liminis", "epoch", "3", "4", "holder"):
        assert detail not in text, detail
    assert "memory:liminis" in caplog.text
    assert "epoch is 3" in caplog.text
