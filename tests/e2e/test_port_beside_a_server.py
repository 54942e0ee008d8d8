"""`lcg import` and `lcg export` beside a running `lcg serve` (issue 32): the import's writes
go through the service holding the workspace (and say so); the export reads the WAL beside
it, at one seq; a progress bar is drawn on a terminal's stderr only."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.console_script import LCG, TIMEOUT, lcg, said
from tests.helpers.service_process import ServiceProcess, clean_env

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parents[2] / "fixtures" / "lcg" / "fixtures" / "data" / "port"
SERVER_FILE = FIXTURES / "mcp-memory-server.jsonl"


def test_issue_32_import_goes_through_the_service_and_export_reads_beside_it(
    tmp_path: Path,
) -> None:
    service = ServiceProcess(tmp_path)
    try:
        assert service.wait_ready()["state"] == "healthy"
        done = lcg(tmp_path, "import", str(SERVER_FILE), "-f", "mcp-memory", "-g", "mem")
        assert done.returncode == 0, done.stderr
        assert "goes through" in said(done.stderr)
        assert "entities: 4 new" in done.stdout
        with service.connect() as client:  # the service made the writes
            nodes = client.result("knowledge_get_nodes_by_group", {"group_ids": ["mem"]})
            assert len(nodes["nodes"]) == 4
        out = tmp_path / "mem.jsonl"
        exported = lcg(tmp_path, "export", "-f", "mcp-memory", "-g", "mem", "-o", str(out))
        assert exported.returncode == 0, exported.stderr
        assert out.read_text(encoding="utf-8").splitlines() == (
            SERVER_FILE.read_text(encoding="utf-8").splitlines()
        )  # the server's own file, line for line, after a trip through lcg
    finally:
        assert service.stop() == 0


def _on_a_terminal(workspace: Path, *args: str) -> tuple[str, bytes]:
    """Run `lcg ARGS` with stderr on a pseudo-terminal: (stdout, what the terminal saw)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(LCG), *args, "--workspace", str(workspace)],
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


def test_issue_32_the_import_progress_bar_is_on_a_terminal_and_off_with_json(
    tmp_path: Path,
) -> None:
    args = ("import", str(SERVER_FILE), "-f", "mcp-memory")
    out, seen = _on_a_terminal(tmp_path, *args, "-g", "a")
    assert b"importing" in seen
    assert "entities: 4 new" in out  # the summary stays on stdout
    out, seen = _on_a_terminal(tmp_path, *args, "-g", "b", "--json")
    assert b"importing" not in seen
    assert json.loads(out)["entities"]["created"] == 4
