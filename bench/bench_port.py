"""Benchmark `lcg import` of an mcp-memory file and `lcg export` of the group it made (issue 32).

Run from the repository root:

    .venv/bin/python -m bench.bench_port [--lines 100000] [--out bench/results/port.md]

A JSONL file in the MCP memory server's shape is generated: `--lines` lines, half entities
(two observations each) and half relations between them (one event each: `--lines` events).
Then, each as a child process of this code with LCG_EMBEDDER=hashing (the embedding model's
cost is bench_wal's subject, not this one) in a `tempfile.TemporaryDirectory` workspace:

- baseline: `lcg ingest`-free plain writes: this code's child opens a workspace and sends the
  same entities and relations through `operations.dispatch` one by one (what the import does
  after its checks, without reading the file or planning);
- `lcg import FILE --format mcp-memory` (read, check, plan, mark, writes), then the same
  import again (nothing to write: the content keys hold it all);
- `lcg dump` of the group (knowledge_dump_wal: the baseline of a whole-group snapshot), and
  `lcg export --format lcg-jsonl` and `--format mcp-memory`.

Wall time and the child's peak RSS (`os.wait4`) are reported; ratios are against the baseline
of the same run. The numbers of a loaded box: compare the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

LCG = Path(sys.executable).parent / "lcg"
GROUP = "bench"
BASELINE = """
import json, sys
from pathlib import Path
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
import os
settings = Settings.load(os.environ, Path.cwd(), Path(sys.argv[1]))
with Workspace(settings, command="bench") as ws:
    app = App(ws, operator=True)
    for line in open(sys.argv[2], encoding="utf-8"):
        item = json.loads(line)
        if item["type"] == "entity":
            operations.dispatch(app, "knowledge_assert_entity", {
                "name": item["name"], "labels": [item["entityType"]],
                "summary": "\\n".join(item["observations"]),
                "attributes": {"observations": item["observations"]}, "group_id": sys.argv[3]})
        else:
            operations.dispatch(app, "knowledge_assert_relationship", {
                "source_name": item["from"], "target_name": item["to"],
                "predicate": item["relationType"], "group_id": sys.argv[3]})
"""


def make_file(path: Path, lines: int) -> None:
    entities = lines // 2
    with path.open("w", encoding="utf-8") as out:
        for i in range(entities):
            line = {
                "type": "entity",
                "name": f"entity {i}",
                "entityType": ("person", "project", "place")[i % 3],
                "observations": [f"observation {i} one", f"observation {i} two"],
            }
            out.write(json.dumps(line) + "\n")
        for i in range(lines - entities):
            line = {
                "type": "relation",
                "from": f"entity {i % entities}",
                "to": f"entity {(i * 7 + 1) % entities}",
                "relationType": ("knows", "works_on", "lives_in")[i % 3],
            }
            out.write(json.dumps(line) + "\n")


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(seconds, peak RSS MiB, stdout) of one child process; it must exit 0."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None
    assert child.stderr is not None
    out, errors = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}: {errors.decode()}")
    return seconds, usage.ru_maxrss / 1024, out.decode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LCG_")}
    env["LCG_EMBEDDER"] = "hashing"
    rows: list[tuple[str, float, float, str]] = []
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        source = base / "memory.jsonl"
        make_file(source, args.lines)
        sys.stderr.write(f"file: {source.stat().st_size / 2**20:.1f} MiB\n")
        plain, imported = base / "plain", base / "imported"
        plain.mkdir()
        imported.mkdir()
        baseline = [sys.executable, "-c", BASELINE, str(plain), str(source), GROUP]
        runs = [
            ("baseline: the same writes, dispatched in one process", baseline),
            (
                "lcg import (check, plan, mark, writes)",
                [
                    str(LCG),
                    "import",
                    str(source),
                    "-f",
                    "mcp-memory",
                    "-g",
                    GROUP,
                    "--json",
                    "-w",
                    str(imported),
                ],
            ),
            (
                "lcg import again (nothing to write)",
                [
                    str(LCG),
                    "import",
                    str(source),
                    "-f",
                    "mcp-memory",
                    "-g",
                    GROUP,
                    "--json",
                    "-w",
                    str(imported),
                ],
            ),
            (
                "baseline: lcg dump of the group",
                [str(LCG), "dump", str(base / "dump"), "-g", GROUP, "--json", "-w", str(imported)],
            ),
            (
                "lcg export --format lcg-jsonl",
                [
                    str(LCG),
                    "export",
                    "-f",
                    "lcg-jsonl",
                    "-g",
                    GROUP,
                    "-o",
                    str(base / "g.jsonl"),
                    "--json",
                    "-w",
                    str(imported),
                ],
            ),
            (
                "lcg export --format mcp-memory",
                [
                    str(LCG),
                    "export",
                    "-f",
                    "mcp-memory",
                    "-g",
                    GROUP,
                    "-o",
                    str(base / "m.jsonl"),
                    "--json",
                    "-w",
                    str(imported),
                ],
            ),
        ]
        for label, argv in runs:
            sys.stderr.write(f"{label} ...\n")
            seconds, rss, out = timed(argv, env)
            rows.append((label, seconds, rss, out))
    table = render(rows, args.lines)
    sys.stdout.write(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")


def render(rows: list[tuple[str, float, float, str]], lines: int) -> str:
    write_base, dump_base = rows[0][1], rows[3][1]
    out = [
        f"{datetime.now(UTC):%Y-%m-%d}, {platform.machine()}, Python "
        f"{platform.python_version()}, {lines:,} mcp-memory lines ({lines:,} events)",
        "",
        "| run | seconds | events/s | peak RSS MiB | vs baseline |",
        "|---|---|---|---|---|",
    ]
    for index, (label, seconds, rss, _) in enumerate(rows):
        base = write_base if index < 3 else dump_base
        rate = f"{lines / seconds:,.0f}" if index in (0, 1) else ""
        out.append(f"| {label} | {seconds:.1f} | {rate} | {rss:.0f} | {seconds / base:.2f}x |")
    second = json.loads(rows[2][3])
    out.append("")
    out.append(
        f"The second import wrote nothing: entities {second['entities']}, "
        f"relations {second['relations']}, mark {second['mark']}."
    )
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
