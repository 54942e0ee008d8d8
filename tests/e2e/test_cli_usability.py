"""Issue 10 at the console script: messages that work as written, stdin, dates as times."""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from lcg.projections.embedding.port import Embedder
from tests.helpers.console_script import (
    LCG,
    TIMEOUT,
    lcg,
    lcg_in_process,
    lcg_json,
    names,
    refused,
    said,
    seed,
)
from tests.helpers.service_process import clean_env

pytestmark = pytest.mark.slow


def test_issue_10_the_pin_message_command_works_as_written_without_a_terminal(
    tmp_path: Path,
    embedder: Embedder,
) -> None:
    """The pin says `lcg replay --group g`; run as written (no TTY, no --force-clear) it
    resumes at the pin, replays the rest and releases the group."""
    group_names = [f"e{seq}" for seq in range(1, 6)]
    seed(embedder, tmp_path, *(("g", name) for name in group_names))
    pin = ("replay", "--group", "g", "--to-seq", "3", "--force-clear", "--json")
    lcg_json(tmp_path, *pin, run=lcg_in_process)  # the set-up: a group pinned at seq 3
    message = refused(lcg(tmp_path, "assert-entity", "e6", "--group", "g"), 3)
    assert "`lcg replay --group g`" in message
    resumed = lcg(tmp_path, "replay", "--group", "g", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "pinned at seq 3; resuming there" in said(resumed.stderr)
    result = json.loads(resumed.stdout)
    assert (result["from_seq"], result["mutations_replayed"], result["pinned_to"]) == (4, 2, None)
    assert names(tmp_path, "g", run=lcg_in_process) == group_names
    after = lcg_json(tmp_path, "assert-entity", "e6", "--group", "g", "--json", run=lcg_in_process)
    assert after["created"] is True


def test_issue_10_file_dash_reads_stdin_a_missing_file_is_one_line_and_dates_are_times(
    tmp_path: Path,
) -> None:
    env = clean_env()
    piped = subprocess.run(
        [str(LCG), "add-episode", "note", "--file", "-", "--group", "g", "-w", str(tmp_path)],
        input="what the pipe said",
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    read = ("call", "knowledge_get_episodes", '{"group_id": "g"}')
    episodes = lcg_json(tmp_path, *read, run=lcg_in_process)
    assert [e["content"] for e in episodes["episodes"]] == ["what the pipe said"]

    missing = lcg(tmp_path, "add-episode", "note", "--file", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2
    assert said(missing.stderr).startswith("error: --file: must name a readable file")
    assert "Traceback" not in missing.stderr

    for name in ("Ada", "Bob"):
        lcg_json(tmp_path, "assert-entity", name, "--group", "g", "--json", run=lcg_in_process)
    edge = lcg_json(
        tmp_path,
        *("assert-relationship", "Ada", "MET", "Bob", "--group", "g"),
        *("--valid-at", "2025-03-03", "--json"),
    )
    uuids = json.dumps({"uuids": [edge["edge_uuid"]]})
    edges = lcg_json(tmp_path, "call", "knowledge_get_edges_by_uuids", uuids, run=lcg_in_process)
    assert edges["edges"][0]["valid_at"].startswith("2025-03-03")


def test_issue_10_the_readme_recovery_commands_work_as_written_without_a_terminal(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Each command of the README's Recovery block, run as written by a script (no TTY, so
    nothing can be asked), exits 0 and leaves the group hydrated and unpinned at the end; the
    dump's home paths are moved under the test's directory, and the restored copy holds the
    group as the original shows it."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    block = readme.split("### Recovery", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    home = tmp_path / "home"
    commands = [
        shlex.split(line.split("  #", 1)[0].replace("~/", f"{home}/"))
        for line in block.splitlines()
    ]
    assert [command[:2] for command in commands] == [
        ["lcg", "status"],
        ["lcg", "log"],
        ["lcg", "replay"],
        ["lcg", "replay"],
        ["lcg", "call"],
        ["lcg", "call"],
        ["lcg", "dump"],
        ["lcg", "restore"],
        ["lcg", "call"],
        ["lcg", "recover"],
    ]
    workspace = tmp_path / "notes"
    seed(embedder, workspace, *(("liminis", f"e{index}") for index in range(45)))
    for command in commands:
        if "--workspace" in command:  # restore names the workspace it makes
            env = clean_env()
            result = subprocess.run(
                [str(LCG), *command[1:]], capture_output=True, text=True, env=env, check=False
            )
        else:
            result = lcg(workspace, *command[1:])
        assert result.returncode == 0, (command, said(result.stderr))
    wal = lcg_json(workspace, "status", "--json", run=lcg_in_process)["wal_groups"]["liminis"]
    assert (wal["applied_seq"], wal["max_seq"], wal["pinned_to"]) == (45, 45, None)
    copied = lcg_json(home / "notes-copy", "status", "--json", run=lcg_in_process)
    copy = copied["wal_groups"]["liminis"]
    assert copy["applied_seq"] == copy["max_seq"] > 0


def test_issue_10_a_no_at_the_replay_prompt_replays_nothing_and_draws_no_progress(
    tmp_path: Path, embedder: Embedder
) -> None:
    """On a terminal `lcg replay` asks before replacing a non-empty group's rows; a "n"
    leaves the group as it was, exits 3 and never starts the progress bar."""
    seed(embedder, tmp_path, ("g", "Ada"), ("g", "Bob"))
    before = lcg_json(tmp_path, "status", "--json", run=lcg_in_process)["wal_groups"]["g"]
    env = clean_env()
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [str(LCG), "replay", "--group", "g", "--workspace", str(tmp_path)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    try:
        seen = _read_until(leader, b"[y/N]")
        os.write(leader, b"n\n")
        seen += _read_until(leader, None)
        assert process.wait(timeout=TIMEOUT) == 3
    finally:
        process.kill()
        process.wait()
        os.close(leader)
    text = said(seen.decode(errors="replace"))
    assert "left as it was; nothing replayed" in text
    assert "replaying" not in text
    assert b"\x1b[?25l" not in seen  # rich hides the cursor when a progress bar starts
    after = lcg_json(tmp_path, "status", "--json", run=lcg_in_process)["wal_groups"]["g"]
    assert after == before


def _read_until(leader: int, marker: bytes | None) -> bytes:
    """What the terminal shows until `marker` (None: until the process closes it)."""
    seen, deadline = b"", time.monotonic() + TIMEOUT
    while marker is None or marker not in seen:
        assert time.monotonic() < deadline, seen
        ready, _, _ = select.select([leader], [], [], deadline - time.monotonic())
        if not ready:
            continue
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: every writer of the terminal has closed it
            chunk = b""
        if not chunk:
            assert marker is None, seen
            return seen
        seen += chunk
    return seen


@pytest.mark.parametrize("command", [("status",), ("status", "--json"), ("list-entities",)])
def test_issue_14_a_bad_setting_is_one_line_naming_it_for_status_too(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """`lcg status` read the settings outside the error handler and printed a traceback on
    a bad lcg.toml; like every command it now says the file, the section and the rule."""
    tmp_path.joinpath("lcg.toml").write_text("[nope]\nx = 1\n", encoding="utf-8")
    message = refused(lcg(tmp_path, *command), 2)
    assert message.startswith("error: lcg.toml [nope]: unknown section"), message
    assert "Traceback" not in message
