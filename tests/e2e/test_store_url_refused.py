"""`lcg` refuses to start on LCG_STORE_URL (ADR 0067): the real console script, exit 2, the
message naming the variable, nothing created, the URL's password never shown."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers.console_script import LCG, TIMEOUT
from tests.helpers.service_process import clean_env

SECRET = "pw-never-shown-815"  # noqa: S105 (a made-up one, to be looked for)
URL = f"postgresql://lcg:{SECRET}@db.example:5432/lcg"


def test_lcg_refuses_to_start_on_a_store_url_and_writes_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(LCG), "status", "--workspace", str(tmp_path)],
        env=clean_env(LCG_STORE_URL=URL),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert "LCG_STORE_URL: the PostgreSQL log is not wired into the workspace yet" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert not (tmp_path / ".lcg").exists()
