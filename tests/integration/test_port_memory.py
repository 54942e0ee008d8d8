"""An import streams its input (issue 32, ADR 0083): a file ten times longer does not take
ten times the memory. A behaviour test of streaming, not a timing test: `lcg import` runs in
a fresh process on a 1,000-line and a 10,000-line mcp-memory file of 4 KiB lines (about 4
and 40 MiB), and the peak resident size may grow by the entity names the import keeps (tens
of bytes a line), never by the lines themselves. The runs are dry (passes 1 and 2: every
line read, parsed and checked, the plan made); the writes of pass 3 read the input through
the same streaming reader, one record at a time.

Slow for a test (two processes that import lcg, about 4 s each on a quiet machine): the
bound can only be seen across a process's whole life.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PEAK = """
import resource, sys
from lcg.interfaces.cli import main
sys.argv = ["lcg", "import", sys.argv[1], "-f", "mcp-memory", "-g", "g", "--dry-run",
            "--json", "--workspace", sys.argv[2]]
try:
    main()
except SystemExit as exit:
    assert not exit.code, exit.code
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, file=sys.stderr)
"""
LINE_BYTES = 4096


def memory_file(path: Path, lines: int) -> int:
    observations = ["o" * (LINE_BYTES // 10 - 12) + f"{i:02d}" for i in range(10)]
    with path.open("w", encoding="utf-8") as out:
        for i in range(lines):
            item = {"type": "entity", "name": f"e{i}", "entityType": "t"}
            out.write(json.dumps({**item, "observations": observations}) + "\n")
    return path.stat().st_size


def peak_rss(path: Path, workspace: Path) -> int:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}
    done = subprocess.run(
        [sys.executable, "-c", PEAK, str(path), str(workspace)],
        capture_output=True,
        text=True,
        env={**env, "LCG_EMBEDDER": "hashing"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["entities"]["created"] == int(path.stem)
    return int(done.stderr.strip().splitlines()[-1])


def test_issue_32_import_memory_stays_bounded_as_the_file_grows(tmp_path: Path) -> None:
    small_bytes = memory_file(tmp_path / "1000.jsonl", 1000)
    large_bytes = memory_file(tmp_path / "10000.jsonl", 10000)
    assert large_bytes - small_bytes > 30 * 2**20
    small = peak_rss(tmp_path / "1000.jsonl", tmp_path / "a")
    large = peak_rss(tmp_path / "10000.jsonl", tmp_path / "b")
    # measured: 62.5 and 64.1 MiB (1.6 MiB more for 35 MiB more input); holding the lines
    # would add 35 MiB or more
    assert large - small < (large_bytes - small_bytes) / 4, (small, large)
