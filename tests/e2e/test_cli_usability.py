"""Issue 10 at the console script: messages that work as written, stdin, dates as times."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from lcg.projections.embedding.minilm import MiniLmEmbedder
from tests.helpers.console_script import LCG, TIMEOUT, lcg, lcg_json, names, refused, said, seed

pytestmark = pytest.mark.slow


def test_issue_10_the_pin_message_command_works_as_written_without_a_terminal(
    tmp_path: Path,
    minilm: MiniLmEmbedder,
) -> None:
    """The pin says `lcg replay --group g`; run as written (no TTY, no --force-clear) it
    resumes at the pin, replays the rest and releases the group."""
    group_names = [f"e{seq}" for seq in range(1, 6)]
    seed(minilm, tmp_path, *(("g", name) for name in group_names))
    lcg_json(tmp_path, "replay", "--group", "g", "--to-seq", "3", "--force-clear", "--json")
    message = refused(lcg(tmp_path, "assert-entity", "e6", "--group", "g"), 3)
    assert "`lcg replay --group g`" in message
    resumed = lcg(tmp_path, "replay", "--group", "g", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert "pinned at seq 3; resuming there" in said(resumed.stderr)
    result = json.loads(resumed.stdout)
    assert (result["from_seq"], result["mutations_replayed"], result["pinned_to"]) == (4, 2, None)
    assert names(tmp_path, "g") == group_names
    assert lcg_json(tmp_path, "assert-entity", "e6", "--group", "g", "--json")["created"] is True


def test_issue_10_file_dash_reads_stdin_a_missing_file_is_one_line_and_dates_are_times(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}
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
    episodes = lcg_json(tmp_path, "call", "knowledge_get_episodes", '{"group_id": "g"}')
    assert [e["content"] for e in episodes["episodes"]] == ["what the pipe said"]

    missing = lcg(tmp_path, "add-episode", "note", "--file", str(tmp_path / "nope.txt"))
    assert missing.returncode == 2
    assert said(missing.stderr).startswith("error: --file: must name a readable file")
    assert "Traceback" not in missing.stderr

    for name in ("Ada", "Bob"):
        lcg_json(tmp_path, "assert-entity", name, "--group", "g", "--json")
    edge = lcg_json(
        tmp_path,
        *("assert-relationship", "Ada", "MET", "Bob", "--group", "g"),
        *("--valid-at", "2025-03-03", "--json"),
    )
    edges = lcg_json(
        tmp_path, "call", "knowledge_get_edges_by_uuids", json.dumps({"uuids": [edge["edge_uuid"]]})
    )
    assert edges["edges"][0]["valid_at"].startswith("2025-03-03")
