"""`lcg` on a PostgreSQL log whose server cannot be reached (issue 28, Faults; ADR 0073): the
real console script exits with the storage error's code, the message names the store by
`postgresql://user@host:port/db`, the URL's password is never shown, and no WAL file is made
in the workspace in its stead. ("Down" is a closed port: the shared server is never stopped.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

from lcg.interfaces.exit_codes import EXIT_STORAGE
from tests.helpers.console_script import LCG, TIMEOUT
from tests.helpers.service_process import clean_env

SECRET = "pw-never-shown-815"  # noqa: S105 (a made-up one, to be looked for)
URL = f"postgresql://lcg:{SECRET}@127.0.0.1:1/lcg?connect_timeout=2"


def test_lcg_on_an_unreachable_store_is_a_storage_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / ".lcg").mkdir(mode=0o700)
    done = subprocess.run(
        [str(LCG), "status", "--workspace", str(tmp_path)],
        env=clean_env(LCG_STORE_URL=URL),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == EXIT_STORAGE, done.stderr
    assert "postgresql://lcg@127.0.0.1:1/lcg" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert not (tmp_path / ".lcg" / "wal.sqlite").exists()
