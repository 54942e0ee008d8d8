"""Count the layer crossings of one call of each memory read tool: the hops of its trace.

Run from the repository root:

    .venv/bin/python -m bench.bench_hops [--base DIR]

A small session is written (a ruling, two concepts citing it, a contradiction of it), then
each tool is called once to warm up and once under a profiler on the calling thread. Every
call whose caller and callee are functions of different layers (domain, commands, queries,
projections, interfaces: the folder a function's file is in) is counted, by pair: `out of
interfaces` is how often the tool left the interfaces layer (and came back), `functions` how
many distinct functions it called there. The intent processor's and the followers' threads
are not traced.

`--base DIR` counts again on the code of another checkout (DIR holds its domain/,
commands/, ... folders) through this interpreter's environment: the before of a before/after.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from bench.checkout import checkout_env, where_lcg_is

LAYER = re.compile(r"/lcg/(domain|commands|queries|projections|interfaces)/(.*)\.py$")
AGENT = "bench-hops"
RULING = "user schema owns the account table"


def _layer(path: str) -> tuple[str, str] | None:
    found = LAYER.search(path.replace("\\", "/"))
    return None if found is None else (found.group(1), found.group(2))


def crossings(run: Callable[[], object]) -> tuple[Counter[str], Counter[str]]:
    """(calls by `caller->callee` layer pair, calls by pair and callee function) of `run`."""
    pairs: Counter[str] = Counter()
    functions: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee = _layer(frame.f_code.co_filename)
        caller = _layer(frame.f_back.f_code.co_filename)
        if callee is None or caller is None or caller[0] == callee[0]:
            return
        pair = f"{caller[0]}->{callee[0]}"
        pairs[pair] += 1
        functions[f"{pair} {callee[1]}.{frame.f_code.co_name}"] += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return pairs, functions


def measure() -> dict[str, dict[str, Any]]:
    """Each tool's crossings on this interpreter's lcg (run in a child for another checkout)."""
    from lcg.interfaces import operations
    from lcg.interfaces.app import App
    from lcg.interfaces.config import Settings
    from lcg.interfaces.workspace import Workspace
    from lcg.projections.embedding.hashing import HashingEmbedder

    def concept(content: str, kind: str = "logic", **refs: list[str]) -> dict[str, Any]:
        return {"content": content, "concept_type": kind, **refs}

    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(workspace=Path(directory))
        with Workspace(settings, embedder=HashingEmbedder(), command="bench_hops") as ws:
            app = App(ws)

            def call(name: str, **params: Any) -> dict[str, Any]:
                result: dict[str, Any] = operations.dispatch(app, name, params)
                return result

            def derive(agent: str, *concepts: dict[str, Any]) -> None:
                ack = call("lambo_derive", agent_id=agent, concepts=list(concepts))
                receipt = ack["structuredContent"]["receipt"]
                call("lambo_stats", agent_id=agent, receipt=receipt, wait_ms=10_000)

            derive(AGENT, concept(RULING, "entity"))
            derive(
                AGENT,
                concept("logins read the account table", depends_on=[RULING]),
                concept("exports read the account table", depends_on=[RULING]),
            )
            derive("agent-b", concept("accounts moved to tenants", "observation", against=[RULING]))
            ws.settle()
            calls: dict[str, dict[str, Any]] = {
                "lambo_recall": {"query": "account table"},
                "lambo_recall, dependency question": {"query": f"what depends on {RULING}?"},
                "lambo_inspect": {"focus": RULING},
                "lambo_stale": {},
                "lambo_saints": {},
            }
            found: dict[str, dict[str, Any]] = {}
            for label, params in calls.items():
                tool = label.split(",")[0]
                call(tool, agent_id=AGENT, **params)  # warm: first-call imports and caches
                pairs, functions = crossings(lambda: call(tool, agent_id=AGENT, **params))  # noqa: B023
                found[label] = {
                    "out of interfaces": sum(
                        n for pair, n in pairs.items() if pair.startswith("interfaces->")
                    ),
                    "functions": sum(1 for f in functions if f.startswith("interfaces->")),
                    "pairs": dict(sorted(pairs.items())),
                }
            return found


def table(columns: dict[str, dict[str, dict[str, Any]]]) -> str:
    names = list(columns)
    header = "| tool | " + " | ".join(f"{n}: out of interfaces (functions)" for n in names)
    lines = [header + " |", "|---" + "|---:" * len(names) + "|"]
    for label in next(iter(columns.values())):
        cells = [
            f"{columns[n][label]['out of interfaces']} ({columns[n][label]['functions']})"
            for n in names
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    for name in names:
        lines.append("")
        lines.append(f"{name}, calls by layer pair:")
        for label, row in columns[name].items():
            pairs = ", ".join(f"{pair} {n}" for pair, n in row["pairs"].items())
            lines.append(f"- {label}: {pairs}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, help="another checkout, counted first (before)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure()))
        return 0
    columns: dict[str, dict[str, dict[str, Any]]] = {}
    if args.base is not None:
        env = checkout_env(args.base.resolve())
        sys.stderr.write(f"base: lcg.interfaces.cli is {where_lcg_is(env)}\n")
        child = [sys.executable, "-m", "bench.bench_hops", "--child"]
        done = subprocess.run(child, env=env, capture_output=True, text=True, check=True)
        columns["base"] = json.loads(done.stdout)
    columns["this checkout"] = measure()
    print(table(columns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
