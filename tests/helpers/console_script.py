"""Driving the `lcg` console script as a subprocess (or its command in this process), and
reading what it left behind."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from lcg.interfaces import log_setup, operations
from lcg.interfaces.app import App
from lcg.interfaces.cli_app import cli
from lcg.interfaces.config import Settings
from lcg.interfaces.serve import with_serve_default
from lcg.projections.embedding.port import Embedder
from tests.conftest import EMBEDDER, make_workspace
from tests.helpers.service_process import clean_env

LCG = Path(sys.executable).parent / "lcg"
TIMEOUT = 60.0

Rows = list[tuple[Any, ...]]


def lcg(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `lcg ARGS --workspace WORKSPACE` with stdin not a TTY and no LCG_* variables."""
    return run([str(LCG), *args, "--workspace", str(workspace)])


def run(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = TIMEOUT,
) -> subprocess.CompletedProcess[str]:
    """Run `argv` with stdin not a TTY, capturing its text output; `env`: by default the
    test's without LCG_* variables (clean_env)."""
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=clean_env() if env is None else env,
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


def lcg_in_process(
    workspace: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`lcg ARGS --workspace WORKSPACE` run in this process (typer's CliRunner), for a test
    whose subject is the command rather than the process: the console script's argument
    handling (log options, serve flags), its exit code and its two streams, with no LCG_*
    variable but the test's embedder and `env`'s. What only a process has stays with `lcg`:
    the umask, logging set up before the command, a TTY or not, a kill, the console script."""
    log_options, rest = log_setup.split_log_options([*args, "--workspace", str(workspace)])
    unset: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith("LCG_") and k != EMBEDDER
    }
    result = CliRunner().invoke(
        cli, [*log_options, *with_serve_default(rest)], env={**unset, **(env or {})}
    )
    return subprocess.CompletedProcess(
        [str(LCG), *args], result.exit_code, result.stdout, result.stderr
    )


Run = Callable[..., subprocess.CompletedProcess[str]]


def lcg_json(workspace: Path, *args: str, run: Run = lcg) -> dict[str, Any]:
    """Run a command that prints JSON (pass `--json` where the command needs it); exit 0."""
    result = run(workspace, *args)
    assert result.returncode == 0, f"lcg {' '.join(args)} exited {result.returncode}:\n" + (
        result.stderr
    )
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def said(text: str) -> str:
    """The text with every run of whitespace (rich's line wrapping included) as one space."""
    return " ".join(text.split())


def refused(result: subprocess.CompletedProcess[str], code: int) -> str:
    """Assert the exit code and an empty stdout; return the collapsed stderr."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    return said(result.stderr)


def seed(model: Embedder, workspace: Path, *entities: tuple[str, str]) -> None:
    """Assert `(group, name)` entities in order, in-process, one WAL event each, embedded with
    the embedder the console script runs with in this test (the `embedder` fixture's, which
    LCG_EMBEDDER names: so its vectors are the ones `lcg` would have made)."""
    with make_workspace(Settings(workspace), model, command="pytest seed") as ws:
        app = App(ws)
        for group, name in entities:
            params = {"name": name, "summary": f"{name} of {group}", "group_id": group}
            operations.dispatch(app, "knowledge_assert_entity", params)


def status(workspace: Path, run: Run = lcg) -> dict[str, Any]:
    """`lcg status --json` without the WAL's file size (SQLite files grow and shrink)."""
    result = lcg_json(workspace, "status", "--json", run=run)
    del result["wal"]["byte_size"]
    return result


def graph_rows(workspace: Path) -> tuple[Rows, Rows]:
    """Entity rows with their SQLite rowids, and the projection positions.

    A replay deletes and re-inserts a group's rows, which gives them new rowids, so equal
    rowids show that nothing was replayed, not only that a replay reproduced the same rows.
    """
    conn = sqlite3.connect(Settings(workspace).graph_path)
    try:
        entities = conn.execute(
            "SELECT rowid, uuid, group_id, name, summary, seq FROM entities ORDER BY rowid"
        ).fetchall()
        positions = conn.execute(
            "SELECT projection, group_id, position, pinned_to FROM projection_positions"
            " ORDER BY projection, group_id"
        ).fetchall()
    finally:
        conn.close()
    return entities, positions


def names(workspace: Path, group: str, run: Run = lcg) -> list[str]:
    listed = lcg_json(workspace, "list-entities", "--group", group, "--json", run=run)
    assert listed["count"] == len(listed["nodes"])
    return [node["name"] for node in listed["nodes"]]
