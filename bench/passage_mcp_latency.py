"""A passage query over MCP stdio, this checkout against another one, interleaved in one run.

    .venv/bin/python -m bench.passage_mcp_latency --base ../some-worktree [--queries 300]

Each checkout ingests the REALTALK turns as `message` episodes into its own workspace (its
own code, this venv, `bench.checkout`'s way; the embedding cache of `.bench-cache/realtalk`
is copied in first when there is one, so no text goes through the model twice), then serves
it with `lcg serve --mcp-stdio`. The same `knowledge_search_passages` calls (the question,
group_ids [its conversation], the tool's other defaults) go to each server in turn, the order
alternating query by query, timed at the SDK client: p50, p95 and the ratio this/base.
Progress goes to stderr; the markdown table to stdout.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from bench.checkout import checkout_env, where_lcg_is
from bench.memory_transports import percentile, structured_calls
from bench.realtalk import DATA, load_realtalk
from bench.search_common import CACHE, log
from bench.socket_service import LCG

HERE = Path(__file__).resolve().parent.parent
WARM_UP = 20

# Run by each checkout's own code (cwd = its root, so `bench` is its bench).
BUILD = """
import sys
from pathlib import Path
from bench.realtalk import load_realtalk
from bench.search_common import Item, ingest, reset_workspace
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.interfaces import operations
from lcg.interfaces.app import App
directory, data, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
conversations, _ = load_realtalk(data)
turns = [t for c in conversations for t in c.turns]
items = [Item(t.group, t.dia_id, t.body, t.time, "message") for t in turns]
reset_workspace(directory)
with Workspace(Settings(workspace=directory)) as ws:
    if how == "message":
        ingest(ws, items, "ingest")
    else:  # each turn through knowledge_process_chunk: entities and mentions (spaCy)
        app = App(ws)
        for n, t in enumerate(turns):
            operations.dispatch(app, "knowledge_process_chunk", {
                "chunk_text": t.body, "chunk_id": t.dia_id, "source_file": f"{t.group}.txt",
                "group_id": t.group, "reference_time": t.time.isoformat()})
            if n % 1000 == 0:
                print(f"  process_chunk {n:,}/{len(turns):,}", file=sys.stderr)
        ws.settle()
"""


def build(root: Path | None, directory: Path, data: Path, cache: Path, how: str) -> None:
    """Ingest REALTALK into `directory` with the code of `root` (None: this checkout)."""
    seed = cache / "realtalk" / ".lcg" / "embeddings.sqlite"
    target = directory / ".lcg" / "embeddings.sqlite"
    if seed.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(seed, target)
    subprocess.run(
        [sys.executable, "-c", BUILD, str(directory), str(data), how],
        cwd=root or HERE,
        env=checkout_env(root),
        check=True,
    )


@asynccontextmanager
async def served(root: Path | None, directory: Path) -> AsyncIterator[Any]:
    args = ["serve", "--mcp-stdio", "--workspace", str(directory)]
    params = StdioServerParameters(command=str(LCG), args=args, env=checkout_env(root))
    async with Client(params, read_timeout_seconds=60) as client:
        yield structured_calls(client)


async def measure(
    roots: dict[str, Path | None], dirs: dict[str, Path], calls: Sequence[dict[str, Any]]
) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {label: [] for label in roots}
    async with AsyncExitStack() as stack:
        call = {
            label: await stack.enter_async_context(served(root, dirs[label]))
            for label, root in roots.items()
        }
        labels = list(roots)
        for n, params in enumerate(calls):
            order = labels if n % 2 == 0 else labels[::-1]
            for label in order:
                started = time.perf_counter()
                result = await call[label]("knowledge_search_passages", params)
                elapsed = (time.perf_counter() - started) * 1000
                if n >= WARM_UP:
                    times[label].append(elapsed)
                if not result["passages"]:
                    log(f"{label}: no passage for {params['query']!r}")
            if n % 100 == 0:
                log(f"  {n:,}/{len(calls):,} queries")
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--no-build", action="store_true", help="reuse the built workspaces")
    parser.add_argument(
        "--extraction",
        action="store_true",
        help="each turn through knowledge_process_chunk (entities, mentions: the graph hop)",
    )
    args = parser.parse_args(argv)
    roots: dict[str, Path | None] = {"base": args.base.resolve(), "this": None}
    how = "chunk" if args.extraction else "message"
    dirs = {label: args.cache / f"mcp-latency-{how}-{label}" for label in roots}
    for label, root in roots.items():
        log(f"{label}: lcg from {where_lcg_is(checkout_env(root))}")
        if not args.no_build:
            build(root, dirs[label], args.data, args.cache, how)
    conversations, _ = load_realtalk(args.data)
    questions = [q for c in conversations for q in c.questions]
    chosen = random.Random(7).sample(questions, min(args.queries, len(questions)))
    calls = [{"query": q.text, "group_ids": [q.group]} for q in chosen]
    calls = calls[:WARM_UP] + calls * args.repeats
    times = anyio.run(measure, roots, dirs, calls)
    p50 = {label: percentile(values, 50) for label, values in times.items()}
    p95 = {label: percentile(values, 95) for label, values in times.items()}
    print("| checkout | calls | p50 ms | p95 ms |\n|---|---:|---:|---:|")
    for label in roots:
        print(f"| {label} | {len(times[label])} | {p50[label]:.1f} | {p95[label]:.1f} |")
    print(
        f"| this / base | | {p50['this'] / p50['base']:.2f}x | {p95['this'] / p95['base']:.2f}x |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
