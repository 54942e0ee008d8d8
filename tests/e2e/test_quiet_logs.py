"""What a running `lcg serve` logs, and where (ADR 0054): quiet by default, the scheduler's
per-tick lines only at debug, a log file on request, a bad level refused.

A real socket service in a child process; ticks are counted by the service itself
(`lcg_canon_status.daemon_cycles`), so the tests wait on it, never on a clock.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.service_process import (
    DEADLINE,
    LCG,
    ServiceProcess,
    clean_env,
    wait_until,
)

pytestmark = pytest.mark.slow

FAST_TICKS = {"LCG_DAEMON_TICK_INTERVAL_SECS": "0.05"}
TICKS = 4
LAMBO = Path(sys.executable).parent / "lambo"
# apscheduler's INFO lines, one pair per run of a job: the noise issue 25 counted.
TICK_LINES = ("Running job", "executed successfully")


def _served_for_ticks(process: ServiceProcess) -> None:
    """Wait until the service is healthy and its daemon has ticked TICKS times; stop it."""
    try:
        with process.connect() as client:
            assert client.result("health_check")["healthy"] is True, process.log

            def ticked() -> bool:
                frame = client.call("lcg_canon_status", {})
                assert "result" in frame, frame
                return int(frame["result"]["daemon_cycles"]) >= TICKS

            wait_until(ticked, f"{TICKS} daemon ticks")
    finally:
        assert process.stop() == 0, process.own_log


def test_serve_at_the_default_level_logs_start_and_stop_and_nothing_per_tick(
    tmp_path: Path,
) -> None:
    process = ServiceProcess(tmp_path / "ws", env=FAST_TICKS)
    _served_for_ticks(process)
    log = process.own_log
    assert "lcg serve: listening on" in log
    assert "accepting connections" in log
    assert "lcg serve: shutting down" in log
    for line in TICK_LINES:
        assert line not in log


def test_serve_at_debug_shows_every_tick(tmp_path: Path) -> None:
    process = ServiceProcess(tmp_path / "ws", env=FAST_TICKS, args=("--log-level", "debug"))
    _served_for_ticks(process)
    log = process.own_log
    for line in TICK_LINES:
        assert log.count(line) >= TICKS - 1, log


def test_lcg_log_level_is_honoured(tmp_path: Path) -> None:
    process = ServiceProcess(tmp_path / "ws", env={**FAST_TICKS, "LCG_LOG_LEVEL": "DEBUG"})
    _served_for_ticks(process)
    assert process.own_log.count("Running job") >= TICKS - 1, process.own_log


def test_log_file_receives_the_lines_and_the_option_wins_over_the_variable(
    tmp_path: Path,
) -> None:
    log_file = tmp_path / "logs" / "lcg.log"
    log_file.parent.mkdir()
    log_file.write_text("an earlier line\n", encoding="utf-8")
    log_file.chmod(0o600)
    fresh = tmp_path / "logs" / "fresh.log"
    process = ServiceProcess(
        tmp_path / "ws",
        env={**FAST_TICKS, "LCG_LOG_LEVEL": "error"},
        args=("--log-level", "debug", "--log-file", str(log_file)),
    )
    _served_for_ticks(process)
    written = log_file.read_text(encoding="utf-8")
    assert written.startswith("an earlier line\n")  # appended to
    assert "listening on" in written
    assert "shutting down" in written
    assert written.count("Running job") >= TICKS - 1
    assert "listening on" not in process.own_log  # the file, not stderr

    served = ServiceProcess(tmp_path / "ws2", env=FAST_TICKS, args=("--log-file", str(fresh)))
    try:
        served.wait_ready()
    finally:
        assert served.stop() == 0, served.own_log
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert "accepting connections" in fresh.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("command", "env", "named"),
    [
        ((str(LCG), "--log-level", "loud", "tools"), {}, "--log-level"),
        ((str(LCG), "tools", "--log-level=loud"), {}, "--log-level"),
        ((str(LCG), "tools"), {"LCG_LOG_LEVEL": "loud"}, "LCG_LOG_LEVEL"),
        ((str(LAMBO), "serve", "--session", "s", "--log-level", "loud"), {}, "--log-level"),
    ],
)
def test_a_bad_level_is_refused_naming_the_option_and_the_levels(
    command: tuple[str, ...], env: dict[str, str], named: str, tmp_path: Path
) -> None:
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
        env=clean_env(**env),
        timeout=DEADLINE,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"{named}: must be one of debug, info, warning, error" in done.stderr
    assert "'loud'" in done.stderr
    assert done.stdout == ""
