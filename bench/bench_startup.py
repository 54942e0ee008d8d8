"""Benchmark how long `lcg` commands take to start, against `python -c "import typer"`.

Run from the repository root:

    .venv/bin/python -m bench.bench_startup [--runs 15] [--base DIR]

Each command runs `--runs` times in a fresh interpreter (a hyperfine-like loop: one warm-up
run, then the median wall time): `lcg --version`, `lcg tools`, `lcg describe
knowledge_status`, and `lcg call knowledge_status` through a socket service (`lcg serve`)
the bench starts on a fresh workspace and waits healthy for. The reference is
`python -c "import typer"`; each row gives its ratio to it (issue 25's aims: --version <= 2x,
tools <= 3x, a call through the socket <= 4x), and the heavy libraries the command loaded. A
one-command typer app is timed too: the floor any typer command starts from.

`--base DIR` runs the same commands a second time, on the code of another checkout (DIR
holds its domain/, commands/, ... folders) through this interpreter's environment, with
PYTHONPATH pointing at DIR's folders: the before of a before/after in one run. Each command is
`python -c "from lcg.interfaces.cli import main; ..."` in both columns, as the console script
does, so that both columns pay the same.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench import socket_service
from bench.checkout import checkout_env, where_lcg_is

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "faiss", "onnxruntime", "spacy", "sqlite_utils")
LCG = Path(sys.executable).parent / "lcg"

# The console script's body, then a line on stderr naming the heavy libraries loaded.
RUN_LCG = """
import sys
from lcg.interfaces.cli import main
sys.argv = ["lcg", *sys.argv[1:]]
try:
    main()
finally:
    heavy = sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY_NAMES))
    sys.stderr.write("HEAVY " + ",".join(heavy) + "\\n")
""".replace("HEAVY_NAMES", repr(HEAVY))


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    """Wall seconds of one run, and the heavy libraries it reported loading."""
    start = time.perf_counter()
    done = subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr}")
    heavy = [line[6:] for line in done.stderr.splitlines() if line.startswith("HEAVY ")]
    return elapsed, heavy[-1] if heavy else ""


def median_of(argv: list[str], env: dict[str, str], cwd: Path, runs: int) -> tuple[float, str]:
    timed(argv, env, cwd)  # warm-up: the file cache, .pyc files
    samples = [timed(argv, env, cwd) for _ in range(runs)]
    return statistics.median(seconds for seconds, _ in samples), samples[-1][1]


def start_service(workspace: Path) -> subprocess.Popen[bytes]:
    """`lcg serve` (this checkout's) on `workspace`, once it answers healthy."""
    return socket_service.start_service(workspace, checkout_env(ROOT))


# The floor typer sets: an app of one command with no parameter, run (typer's invocation
# imports pydantic and click's machinery, which `import typer` does not).
ONE_COMMAND_APP = """
import typer
app = typer.Typer(add_completion=False)
@app.command()
def hello() -> None:
    print("hello")
app()
"""


def commands(workspace: Path) -> dict[str, list[str]]:
    lcg = [sys.executable, "-c", RUN_LCG]
    return {
        'python -c "import typer"': [sys.executable, "-c", "import typer"],
        "a one-command typer app": [sys.executable, "-c", ONE_COMMAND_APP],
        "lcg --version": [*lcg, "--version"],
        "lcg tools": [*lcg, "tools"],
        "lcg describe knowledge_status": [*lcg, "describe", "knowledge_status"],
        "lcg call knowledge_status (socket)": [
            *lcg,
            "call",
            "knowledge_status",
            "--workspace",
            str(workspace),
        ],
    }


def measure(code: Path, workspace: Path, runs: int) -> dict[str, tuple[float, str]]:
    env = checkout_env(code)
    sys.stderr.write(f"{code}: lcg.interfaces.cli is {where_lcg_is(env)}\n")
    return {
        name: median_of(argv, env, workspace, runs) for name, argv in commands(workspace).items()
    }


AIMS = {"lcg --version": 2.0, "lcg tools": 3.0, "lcg call knowledge_status (socket)": 4.0}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--base", type=Path, help="another checkout: the 'before' column")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        proc = start_service(workspace)
        try:
            columns = {"this checkout": measure(ROOT, workspace, args.runs)}
            if args.base is not None:
                columns = {"before": measure(args.base.resolve(), workspace, args.runs), **columns}
        finally:
            proc.terminate()
            proc.wait(60)
    print(f"median of {args.runs} runs; load average {os.getloadavg()[0]:.2f}")
    header = " | ".join(f"{name}: median, x typer, heavy modules" for name in columns)
    print(f"| command | {header} | aim |")
    print("|---|" + "---|" * len(columns) + "---|")
    for command in commands(workspace):
        cells = []
        for results in columns.values():
            seconds, heavy = results[command]
            ratio = seconds / results['python -c "import typer"'][0]
            cells.append(f"{seconds * 1000:.0f} ms, {ratio:.1f}x, {heavy or 'none'}")
        aim = f"<= {AIMS[command]:.0f}x" if command in AIMS else ""
        print(f"| {command} | {' | '.join(cells)} | {aim} |")
    print(json.dumps({name: {k: v[0] for k, v in r.items()} for name, r in columns.items()}))


if __name__ == "__main__":
    main()
