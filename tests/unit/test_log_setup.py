"""The one logging set-up (ADR 0054): which level wins, where records go, what a job logs."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from lcg.commands.memory_schedule import _cycle_outcome, _logged, _sweep_outcome
from lcg.domain.errors import InvalidParams
from lcg.domain.memory.canonization import Cause, Status, Transition
from lcg.domain.memory.evidence import ConceptId
from lcg.domain.memory.gc import Collection, CollectReason, Sweep, Trigger
from lcg.interfaces import log_setup

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """`configure` changes the process's loggers: put them back after the test."""
    root, lcg = logging.getLogger(), logging.getLogger("lcg")
    handlers, root_level, lcg_level = list(root.handlers), root.level, lcg.level
    yield
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(root_level)
    lcg.setLevel(lcg_level)


def test_the_option_wins_over_the_variable_which_wins_over_the_default() -> None:
    env = {"LCG_LOG_LEVEL": "error"}
    assert log_setup.choose_level("debug", env, serving=True) == logging.DEBUG
    assert log_setup.choose_level(None, env, serving=True) == logging.ERROR
    assert log_setup.choose_level(None, {}, serving=True) == logging.INFO
    assert log_setup.choose_level(None, {"LCG_LOG_LEVEL": " "}, serving=False) == logging.WARNING
    assert log_setup.choose_level(" Warning ", {}, serving=True) == logging.WARNING


def test_a_bad_level_names_where_it_came_from_and_the_levels() -> None:
    with pytest.raises(InvalidParams, match=r"^--log-level: must be one of debug, info, warn"):
        log_setup.choose_level("verbose", {}, serving=True)
    with pytest.raises(InvalidParams, match=r"^LCG_LOG_LEVEL: must be one of .*'5'"):
        log_setup.choose_level(None, {"LCG_LOG_LEVEL": "5"}, serving=True)


def test_log_options_anywhere_before_a_double_dash_go_first() -> None:
    args = ["serve", "--log-level", "debug", "--socket", "s", "--log-file=f", "--", "--log-level"]
    assert log_setup.split_log_options(args) == (
        ["--log-level", "debug", "--log-file=f"],
        ["serve", "--socket", "s", "--", "--log-level"],
    )


@pytest.mark.usefixtures("restored_logging")
def test_libraries_log_warnings_only_unless_the_level_is_debug(tmp_path: Path) -> None:
    log_file = tmp_path / "lcg.log"
    log_setup.configure(logging.INFO, log_file, serving=True)
    logging.getLogger("apscheduler.executors.default").info("a tick ran")
    logging.getLogger("apscheduler.scheduler").warning("a run was missed")
    logging.getLogger("lcg.serve").info("listening")
    logging.getLogger("lcg.serve").debug("a detail")
    log_setup.configure(logging.DEBUG, log_file, serving=True)  # replaces the first handler
    logging.getLogger("apscheduler.executors.default").info("another tick ran")
    logging.getLogger("lcg.serve").debug("another detail")
    written = log_file.read_text(encoding="utf-8")
    assert "a tick ran" not in written
    assert "a run was missed" in written
    assert "INFO lcg.serve: listening" in written
    assert "a detail\n" not in written
    assert "another tick ran" in written
    assert "another detail" in written
    assert written.count("listening") == 1  # one handler, not two


def _hop(node: str, source: Status, target: Status) -> Transition:
    return Transition(ConceptId(node), source, target, None, Cause.PROMOTION, NOW)


def test_a_job_logs_what_it_did_and_nothing_when_it_did_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hops = (
        _hop("a", Status.CANDIDATE, Status.VENERABLE),
        _hop("b", Status.CANDIDATE, Status.VENERABLE),
        _hop("c", Status.VENERABLE, Status.CANONICAL),
    )
    results: list[tuple[Transition, ...]] = [(), hops]
    cycle = _logged(
        lambda: results.pop(0), "canonization cycle", lambda h: f"{len(h)} moved" if h else None
    )
    with caplog.at_level(logging.DEBUG, logger="lcg"):
        cycle()
        assert caplog.records == []
        cycle()
    [record] = caplog.records
    assert (record.levelno, record.getMessage()) == (logging.INFO, "3 moved")


def test_the_cycle_and_sweep_lines_say_what_moved_and_what_was_collected() -> None:

    hops = (
        _hop("a", Status.CANDIDATE, Status.VENERABLE),
        _hop("b", Status.CANONICAL, Status.VENERABLE),
        _hop("c", Status.CANDIDATE, Status.VENERABLE),
    )
    assert _cycle_outcome("s", ()) is None
    assert _cycle_outcome("s", hops) == (
        "canonization cycle of session 's': 3 concept(s) moved "
        "(2 Candidate -> Venerable, 1 Canonical -> Venerable)"
    )
    sweep = Sweep(
        trigger=Trigger.MUTATIONS,
        collected=(Collection(ConceptId("x"), CollectReason.ORPHAN),),
        deferred=(ConceptId("y"),),
        collection_cap=10,
        resources_spared=(),
        protected={},
        bumps=(),
        pending_bumps=(),
        canonical_count=0,
        canonical_over_budget=False,
    )
    assert _sweep_outcome("s", None) is None
    assert _sweep_outcome("s", sweep) == (
        "gc sweep of session 's' (mutations): 1 collected, 1 deferred"
    )


@pytest.mark.usefixtures("restored_logging")
def test_stderr_lines_keep_the_serve_prefix_and_other_commands_get_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log_setup.configure(logging.INFO, None, serving=True)
    logging.getLogger("lcg.serve").info("listening on %s", "s.sock")
    assert capsys.readouterr() == ("", "lcg serve: listening on s.sock\n")
    log_setup.configure(logging.WARNING, None, serving=False)
    logging.getLogger("lcg.serve").info("not shown")
    full = OSError("No space left on device")
    logging.getLogger("lcg.workspace").error("a close step failed", exc_info=full)
    assert capsys.readouterr() == ("", "a close step failed\n")
