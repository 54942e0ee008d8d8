"""`lcg ingest`'s progress bar (issue 26 item 5): drawn on stderr when it is a terminal, never
with --json; stdout keeps the report either way."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.console_script import LCG, TIMEOUT
from tests.helpers.service_process import clean_env

pytestmark = pytest.mark.slow

HIDE_CURSOR = b"\x1b[?25l"  # rich hides the cursor when a progress bar starts


def _ingest_on_a_terminal(workspace: Path, *args: str) -> tuple[str, bytes]:
    """Run `lcg ingest ARGS` with stderr on a pseudo-terminal: (stdout, what the terminal saw)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(LCG), "ingest", *args, "--workspace", str(workspace)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=clean_env(TERM="xterm"),
    )
    os.close(follower)
    seen, deadline = b"", time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # EIO: the process closed the terminal
                    chunk = b""
                if not chunk:
                    break
                seen += chunk
            elif process.poll() is not None:
                break
        assert process.stdout is not None
        out = process.stdout.read().decode()
        assert process.wait(timeout=TIMEOUT) == 0, seen
    finally:
        process.kill()
        process.wait()
        os.close(leader)
    return out, seen


def test_issue_26_the_progress_bar_is_on_a_terminal_and_off_with_json(tmp_path: Path) -> None:
    notes = []
    for index in range(3):
        note = tmp_path / f"note-{index}.md"
        note.write_text(f"# Note {index}\n\nMira Okafor joined Tallow Systems.\n", "utf-8")
        notes.append(str(note))
    out, seen = _ingest_on_a_terminal(tmp_path / "a", *notes)
    assert HIDE_CURSOR in seen
    assert b"ingesting" in seen
    assert out.count("1 chunk(s)") == 3
    out, seen = _ingest_on_a_terminal(tmp_path / "b", *notes, "--json")
    assert HIDE_CURSOR not in seen
    assert b"ingesting" not in seen
    assert [f["chunks"] for f in json.loads(out)["files"]] == [1, 1, 1]
