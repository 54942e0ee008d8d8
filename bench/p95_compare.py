"""lambo_recall or knowledge_search_passages at 10k/100k, this checkout against another, one run.

    .venv/bin/python -m bench.p95_compare --base ../some-worktree --tool recall \
        [--sizes 10000 100000] [--queries 300] [--repeats 2] [--embedder minilm|hashing] \
        [--seed-cache DIR] [--fill-only PART/PARTS] [--no-build] [--out FILE]

The texts are the latency benches' own: `bench_recall --latency`'s short facts (one
`logic` concept per derive, through the memory write path in bulk) or `bench_search
--latency`'s synthetic passages (`text` episodes, 500 per commit), the first `size` of them.
With MiniLM, the texts of the largest size are first put into one embedding cache here, in
batches (`fill_cache` of the bench, shortest first; `--seed-cache` names a workspace whose
cache is merged in before, so texts another run embedded never go through the model again),
and that cache is copied into each checkout's workspace: neither build runs the model.

Each checkout builds its workspace with its own code (this venv, `bench.checkout`'s way, under
`nice -n 10`, the two builds side by side), then serves it from a worker process of its own
code: the worker reads one query a line, forgets the query embeddings, times the tool's
`operations.dispatch` in-process (query embedding included, as the latency benches time it)
and writes back the milliseconds. The same queries go to both workers in turn, the order
alternating query by query, after 20 warm-up queries each: p50, p95 and this/base. Progress
goes to stderr; the markdown table to stdout and to `--out`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from bench.checkout import checkout_env, where_lcg_is
from bench.latency_report import percentile
from bench.realtalk import DATA, load_realtalk
from bench.recall_common import copy_cache, fill_part, framed
from bench.recall_common import fill_cache as fill_framed
from bench.recall_latency import concept_texts
from bench.search_common import CACHE, RESULTS, log, require
from bench.search_latency import fill_cache as fill_passages
from bench.search_latency import latency_queries, synthetic_passages
from lcg.domain import passages as passage_split

HERE = Path(__file__).resolve().parent.parent
WARM_UP = 20
TOOLS = {"recall": "lambo_recall", "passages": "knowledge_search_passages"}

# Run by each checkout's own code (cwd = its root, so `bench` is its bench).
PRELUDE = """
import sys
from pathlib import Path
from bench.realtalk import load_realtalk
from bench.search_common import reset_workspace
from lcg.domain import passages as passage_split
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
tool, directory, data, size, embedder = sys.argv[1:6]
size = int(size)
if embedder == "hashing":
    from lcg.projections.embedding.hashing import HashingEmbedder
    model = HashingEmbedder()
else:
    model = None  # the workspace's default, MiniLM
settings = (
    Settings(workspace=Path(directory), session=f"recall-{size}")
    if tool == "recall"
    else Settings(workspace=Path(directory))
)
"""

BUILD = (
    PRELUDE
    + """
import time
conversations, _ = load_realtalk(Path(data))
reset_workspace(Path(directory))
started = time.perf_counter()
with Workspace(settings, command="bench_recall", embedder=model) as ws:
    if tool == "recall":
        from bench.recall_latency import CONCEPT_TYPE, Receipts, concept_texts, derive_many
        from lcg.domain.memory.calls import ConceptIn
        texts = concept_texts(conversations, size)
        derive_many(ws, [ConceptIn(text, CONCEPT_TYPE) for text in texts], Receipts(size))
        table, group = "vector_catalog", settings.session
    else:
        from bench.search_common import ingest
        from bench.search_latency import LATENCY_GROUP, latency_items, synthetic_passages
        bodies = [t.body for c in conversations for t in c.turns]
        bodies = [b for b in bodies if len(b) <= passage_split.MAX_PASSAGE]
        texts = synthetic_passages(bodies, size)
        ingest(ws, latency_items(texts, "text"), f"{size:,} passages")
        table, group = "vector_catalog", LATENCY_GROUP
    count = ws.reader().execute(
        f"SELECT COUNT(*) FROM {table} WHERE group_id=?", (group,)
    ).fetchone()[0]
    if count != size:
        raise SystemExit(f"built {count} vectors for {size} texts")
    print(f"built {size:,} in {time.perf_counter() - started:.0f} s, "
          f"{ws.embedder.texts if hasattr(ws.embedder, 'texts') else '?'} texts through the model",
          file=sys.stderr)
"""
)

SERVE = (
    PRELUDE
    + """
import json, os, time
import faiss
from lcg.interfaces import operations
from lcg.interfaces.app import App
out = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # anything printed by a library goes to stderr, never into the answers
faiss.omp_set_num_threads(1)
if tool == "recall":
    from bench.recall_common import AGENT
    name, extra, key = "lambo_recall", {"agent_id": AGENT}, "hits"
else:
    from bench.search_latency import LATENCY_GROUP
    name, key = "knowledge_search_passages", "passages"
    extra = {"num_results": 10, "min_score": 0.0, "group_ids": [LATENCY_GROUP]}
with Workspace(settings, command="bench_recall", embedder=model) as ws:
    app = App(ws)
    out.write("ready\\n")
    out.flush()
    for line in sys.stdin:
        query = json.loads(line)
        ws.forget_query_embeddings()  # every query embedded afresh (repeats are not free)
        started = time.perf_counter_ns()
        answer = operations.dispatch(app, name, {"query": query, **extra})
        ms = (time.perf_counter_ns() - started) / 1e6
        found = answer.get("structuredContent", answer).get(key) or []
        out.write(json.dumps({"ms": ms, "n": len(found)}) + "\\n")
        out.flush()
"""
)


def texts_for(tool: str, data: Path, size: int) -> list[str]:
    """What the model embeds for the first `size` texts: framed concepts, or passages."""
    conversations, _ = load_realtalk(data)
    if tool == "recall":
        return [framed(text) for text in concept_texts(conversations, size)]
    bodies = [t.body for c in conversations for t in c.turns]
    bodies = [body for body in bodies if len(body) <= passage_split.MAX_PASSAGE]
    return synthetic_passages(bodies, size)


def fill(tool: str, data: Path, size: int, directory: Path, seeds: Sequence[Path]) -> int:
    """The embedding cache of `directory` given every text of `size`; texts through the model."""
    for seed in seeds:
        log(f"merging the embedding cache of {seed} into {directory} ...")
        copy_cache(seed, directory)
    texts = texts_for(tool, data, size)
    if tool == "recall":
        return fill_framed(directory, texts, f"{tool} {size:,}")[0]
    return fill_passages(directory, texts)[0]


def fill_only(tool: str, data: Path, size: int, directory: Path, part: int, parts: int) -> None:
    """This process's share of the fill of `directory`'s cache with the texts of `size`: every
    `parts`-th chunk from `part`, beside the other processes' (one cache, SQLite's WAL)."""
    texts = texts_for(tool, data, size)
    label = f"{tool} {size:,}, part {part}/{parts}"
    if tool == "recall":
        fill_framed(directory, texts, label, part=part, parts=parts)
    else:
        fill_passages(directory, texts, part=part, parts=parts)


def build(
    roots: dict[str, Path | None], dirs: dict[str, Path], args: argparse.Namespace, size: int
) -> None:
    """Both checkouts' workspaces, side by side, each by its own code."""
    running = []
    for label, root in roots.items():
        command = ["nice", "-n", "10", sys.executable, "-c", BUILD, args.tool, str(dirs[label])]
        command += [str(args.data), str(size), args.embedder]
        log(f"{label}: building {size:,} {args.tool} ...")
        running.append((label, subprocess.Popen(command, cwd=root or HERE, env=checkout_env(root))))
    for label, process in running:
        require(process.wait() == 0, f"{label}: the build failed ({process.returncode})")


class Worker:
    """One checkout's serving process: a query in, its milliseconds out."""

    def __init__(self, root: Path | None, directory: Path, args: argparse.Namespace, size: int):
        command = [sys.executable, "-c", SERVE, args.tool, str(directory), str(args.data)]
        command += [str(size), args.embedder]
        self.process = subprocess.Popen(
            command,
            cwd=root or HERE,
            env=checkout_env(root),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        require(self._line() == "ready", "a worker did not start")

    def _line(self) -> str:
        stream: IO[str] | None = self.process.stdout
        assert stream is not None
        return stream.readline().strip()

    def ask(self, query: str) -> tuple[float, int]:
        stream = self.process.stdin
        assert stream is not None
        stream.write(json.dumps(query) + "\n")
        stream.flush()
        answer = json.loads(self._line())
        return float(answer["ms"]), int(answer["n"])

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=120)


def measure(
    workers: dict[str, Worker], queries: Sequence[str], repeats: int
) -> tuple[dict[str, list[float]], float]:
    """Timings per checkout, alternating; the share of queries with equal result counts."""
    times: dict[str, list[float]] = {label: [] for label in workers}
    labels = list(workers)
    same = total = 0
    calls = list(queries[:WARM_UP]) + list(queries) * repeats
    for n, query in enumerate(calls):
        order = labels if n % 2 == 0 else labels[::-1]
        counts = {}
        for label in order:
            ms, counts[label] = workers[label].ask(query)
            if n >= WARM_UP:
                times[label].append(ms)
        same += len(set(counts.values())) == 1
        total += 1
        if n % 200 == 0:
            log(f"  {n:,}/{len(calls):,} queries")
    return times, same / total


def commit_of(root: Path | None) -> str:
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        cwd=root or HERE,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def load() -> str:
    return ", ".join(f"{value:.1f}" for value in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", type=Path, required=True, help="the other checkout's root")
    parser.add_argument("--tool", choices=sorted(TOOLS), required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument(
        "--seed-cache",
        type=Path,
        nargs="*",
        default=[],
        help="workspaces whose embedding caches are merged in before the fill",
    )
    parser.add_argument("--no-build", action="store_true", help="reuse the built workspaces")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--fill-only",
        type=fill_part,
        metavar="PART/PARTS",
        help="MiniLM: only fill the embedding cache with the largest size's texts, every"
        " PARTS-th chunk from PART (0-based), so that several processes fill it side by side",
    )
    args = parser.parse_args(argv)
    if args.fill_only is not None:
        part, parts = args.fill_only
        directory = args.cache / f"p95-{args.tool}"
        fill_only(args.tool, args.data, max(args.sizes), directory, part, parts)
        return 0
    began = time.perf_counter()
    roots: dict[str, Path | None] = {"base": args.base.resolve(), "this": None}
    for label, root in roots.items():
        log(f"{label}: lcg from {where_lcg_is(checkout_env(root))}")
    conversations, _ = load_realtalk(args.data)
    queries = latency_queries(conversations, args.queries)
    filled_dir = args.cache / f"p95-{args.tool}"
    if args.embedder == "minilm" and not args.no_build:
        through = fill(args.tool, args.data, max(args.sizes), filled_dir, args.seed_cache)
        log(f"cache filled: {through:,} texts went through the model")
    rows = []
    for size in sorted(args.sizes):
        suffix = "" if args.embedder == "minilm" else f"-{args.embedder}"
        dirs = {label: args.cache / f"p95-{args.tool}-{size}{suffix}-{label}" for label in roots}
        if not args.no_build:
            if args.embedder == "minilm":
                for directory in dirs.values():
                    copy_cache(filled_dir, directory)
            build(roots, dirs, args, size)
        workers = {label: Worker(root, dirs[label], args, size) for label, root in roots.items()}
        before = load()
        try:
            log(f"measuring {TOOLS[args.tool]} at {size:,} ...")
            times, agree = measure(workers, queries, args.repeats)
        finally:
            for worker in workers.values():
                worker.close()
        rows.append((size, times, agree, before, load()))
        log(render(args, roots, rows[-1:], time.perf_counter() - began).splitlines()[-1])
    text = render(args, roots, rows, time.perf_counter() - began)
    print(text)
    out = (
        args.out or RESULTS / f"p95-{args.tool}{'' if args.embedder == 'minilm' else '-hashing'}.md"
    )
    out.write_text(text, encoding="utf-8")
    log(f"wrote {out}")
    return 0


def render(
    args: argparse.Namespace,
    roots: dict[str, Path | None],
    rows: Sequence[tuple[int, dict[str, list[float]], float, str, str]],
    wall: float,
) -> str:
    unit = "concepts" if args.tool == "recall" else "passages"
    lines = [
        f"# {TOOLS[args.tool]} p50/p95, base vs this checkout ({datetime.now(UTC):%Y-%m-%d %H:%M}"
        " UTC)",
        "",
        f"base {commit_of(roots['base'])}, this {commit_of(None)}; embedder {args.embedder}; "
        f"{args.queries} questions x {args.repeats} passes after {WARM_UP} warm-up, the two "
        f"checkouts asked in turn (order alternating); timed in-process around "
        f"`operations.dispatch` (query embedding included); whole run {wall:.0f} s; "
        f"{os.cpu_count()} CPUs, shared.",
        "",
        f"| {unit} | base p50 ms | base p95 ms | this p50 ms | this p95 ms | this/base p50 | "
        "this/base p95 | same result count | load average (1, 5, 15 min) before; after |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for size, times, agree, before, after in rows:
        b50, b95 = percentile(times["base"], 50), percentile(times["base"], 95)
        t50, t95 = percentile(times["this"], 50), percentile(times["this"], 95)
        lines.append(
            f"| {size:,} | {b50:.2f} | {b95:.2f} | {t50:.2f} | {t95:.2f} | "
            f"**{t50 / b50:.2f}x** | **{t95 / b95:.2f}x** | {agree:.2f} | {before}; {after} |"
        )
    return "\n".join([*lines, ""])


if __name__ == "__main__":
    sys.exit(main())
