"""The memory jobs' planning worker (ADR 0045) beside a program that uses lcg as a library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.service_process import clean_env

pytestmark = pytest.mark.slow

SCRIPT = """\
import os, sys
from pathlib import Path
with Path(sys.argv[1]).open("a") as marker:  # module level, no __main__ guard
    marker.write(f"{os.getpid()}\\n")
from lcg.commands.job_planner import WORKER
print(WORKER.run(os.getpid) != os.getpid())
"""


def test_adr_0045_a_script_without_a_main_guard_runs_once_beside_the_worker(
    tmp_path: Path,
) -> None:
    """`spawn` would run the program's main module again in the worker; the worker starts
    with it left out, so a script's module-level code (its writes) runs once."""
    script, marker = tmp_path / "script.py", tmp_path / "ran.txt"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(marker)],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"  # planned in another process
    assert len(marker.read_text(encoding="utf-8").splitlines()) == 1
