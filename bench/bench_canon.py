"""Benchmark the memory jobs (issue 13): a canonization cycle, a GC sweep, the daemon tick, and
lambo_recall latency while the jobs run.

Run from the repository root:

    .venv/bin/python -m bench.bench_canon [--sizes 10000 100000] [--ticks 200] [--cycles 4]
        [--recall-size 10000] [--recall-per-write 2] [--queries 60] [--rounds 3] [--before DIR]
        [--out bench/results/canon.md] [--profile-out bench/results/canon-profile.txt]

Per size, on a fresh workspace (`tempfile`), a session of that many concepts is appended as
synthetic lambo_derive outcomes (`bench.canon_session`, no vectors), then, in order:

1. three `sweep()` calls, each followed by daemon ticks until its survivor bumps are drained
   (so every concept reaches gc_survived 3 and Stage 1 has work): each sweep timed whole and
   in pieces (snapshot load `load_columns`, gc_evidence, plan_sweep, the append: the rest of the
   writer batch), the drain ticks timed one by one;
2. `--ticks` daemon ticks with nothing due (p50 / p95);
3. `--cycles` back-to-back `run_cycle()` calls, each timed whole and in pieces (snapshot load
   `load_cycle_columns` less its scores; measures: the daemon scores, `cycle_needs`,
   `cycle_measures` and `cycle_evidence`, plan `plan_cycle_over`, the append), hops and events
   appended counted;
   then one more cycle under cProfile (the largest size's goes to `--profile-out`) and one
   under tracemalloc (peak of Python allocations during the cycle; ru_maxrss before/after);
4. writes worth `gc_interval` mutations appended, then one tick: the mutation trigger fires
   and the tick sweeps (timed whole and in pieces).

The pieces are timed by wrapping the functions the job calls (module attributes, restored
afterwards), inside the real `run_cycle()` / `sweep()` / `tick()` calls.

With `--before DIR` (a checkout of an earlier commit), `bench/canon_pieces.py` runs in child
processes right before step 3, alternately with DIR's code and this checkout's, `--rounds`
times each, on the same snapshot: a cycle's and a sweep's planning pieces, dry (nothing
appended). Before/after ratios are paired round by round.

Recall (`--recall-size`, 0 to skip): the workspace `--cache` (default `.bench-cache/canon-recall`
at the repository root, git-ignored; reset every run but for its embedding cache, so a re-run
does not run the model), a session of `--recall-per-write` concepts per write whose concepts
carry their framed embedding texts (the vector follower embeds them with the bundled MiniLM
through the embedding cache, as after real derives; two concepts per write keeps the framed
texts ~140 characters, so 10k embed in minutes rather than the hour 530-character texts take
here), then `--rounds` rounds of: `--queries` lambo_recall calls with the jobs idle, then the
same queries while a background thread runs `run_cycle()` and `sweep()` back to back.
`ws.forget_query_embeddings()` before each recall.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.canon_report import (
    SPAN,
    JobRun,
    RecallResult,
    SizeResult,
    no_machine_paths,
    report,
)
from bench.canon_session import SessionBuilder, query
from bench.search_common import CACHE, reset_workspace
from lcg.commands import job_planner
from lcg.commands.job_planner import WORKER, Planner
from lcg.commands.memory_jobs import MemoryJobs
from lcg.domain.ids import GroupId
from lcg.domain.memory.gc import Trigger
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.canonization import columns, measure
from lcg.projections.canonization import state as canon
from lcg.projections.embedding.minilm import MiniLmEmbedder

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def require(condition: bool, message: str) -> None:
    if not condition:
        raise RuntimeError(message)


# -- timing the pieces of a job -----------------------------------------------------------------


@dataclass
class Pieces:
    spent: dict[str, float] = field(default_factory=dict)

    def add(self, label: str, seconds: float) -> None:
        self.spent[label] = self.spent.get(label, 0.0) + seconds


@contextmanager
def timed(pieces: Pieces, targets: list[tuple[Any, str, str]]) -> Iterator[None]:
    """Wrap `getattr(owner, name)` so its calls add to `pieces[label]`; restored on exit."""
    saved: list[tuple[Any, str, Any]] = []
    for owner, name, label in targets:
        original = getattr(owner, name)

        def wrapper(
            *args: Any, _original: Any = original, _label: str = label, **kwargs: Any
        ) -> Any:
            started = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                pieces.add(_label, time.perf_counter() - started)

        saved.append((owner, name, original))
        setattr(owner, name, wrapper)
    try:
        yield
    finally:
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)


def _sweep_targets(jobs: MemoryJobs) -> list[tuple[Any, str, str]]:
    return [
        (columns, "load_columns", "load"),
        (measure, "gc_evidence", "facts"),
        (job_planner, "plan_sweep", "plan"),
        (jobs.writer, "execute", "batch"),
    ]


def _cycle_targets(jobs: MemoryJobs) -> list[tuple[Any, str, str]]:
    return [
        (columns, "load_cycle_columns", "load"),
        (columns, "degree_score_column", "scores"),
        (job_planner, "cycle_needs", "session_stats"),
        (columns, "cycle_measures", "session_stats"),
        (columns, "cycle_evidence", "session_stats"),
        (job_planner, "plan_cycle_over", "plan"),
        (jobs.writer, "execute", "append"),
    ]


def run_sweep(ws: Workspace, jobs: MemoryJobs, session: GroupId) -> JobRun:
    pieces = Pieces()
    head = ws.log.head(session)
    gc.collect()
    with timed(pieces, _sweep_targets(jobs)):
        started = time.perf_counter()
        swept = jobs.sweep(Trigger.MUTATIONS)
        wall = time.perf_counter() - started
    return JobRun(wall, _sweep_pieces(pieces), ws.log.head(session) - head, len(swept.collected))


def _sweep_pieces(pieces: Pieces) -> dict[str, float]:
    spent = dict(pieces.spent)
    # the plan is made from a snapshot before the writer's batch (ADR 0045); the batch is the
    # append (it plans again only when a write came between, which nothing here does)
    spent["append"] = spent.pop("batch", 0.0)
    return spent


def run_cycle(ws: Workspace, jobs: MemoryJobs, session: GroupId) -> JobRun:
    pieces = Pieces()
    head = ws.log.head(session)
    gc.collect()
    with timed(pieces, _cycle_targets(jobs)):
        started = time.perf_counter()
        hops = jobs.run_cycle()
        wall = time.perf_counter() - started
    return JobRun(wall, _cycle_pieces(pieces), ws.log.head(session) - head, len(hops))


def _cycle_pieces(pieces: Pieces) -> dict[str, float]:
    """The scores run inside `load_cycle_columns`: counted with the measures, not the load."""
    spent = dict(pieces.spent)
    scores = spent.pop("scores", 0.0)
    spent["load"] = spent.get("load", 0.0) - scores
    spent["session_stats"] = spent.get("session_stats", 0.0) + scores
    return spent


def drain(jobs: MemoryJobs) -> list[float]:
    """Tick until the pending survivor bumps are applied; each tick's seconds."""
    spent: list[float] = []
    while jobs.pending_bumps:
        started = time.perf_counter()
        require(jobs.tick() is None, "a draining tick swept")
        spent.append(time.perf_counter() - started)
    return spent


# -- one size -----------------------------------------------------------------------------------


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _concepts(ws: Workspace, session: str) -> int:
    row = (
        ws.reader()
        .execute(
            "SELECT COUNT(*) FROM memory_nodes WHERE group_id=? AND node_kind='concept'", (session,)
        )
        .fetchone()
    )
    return int(row[0])


def _pieces_child(graph: Path, session: str, tree: Path | None, now: datetime) -> dict[str, Any]:
    command = [sys.executable, str(BENCH / "canon_pieces.py"), "--graph", str(graph)]
    command += ["--session", session, "--now", now.isoformat()]
    if tree is not None:
        command += ["--tree", str(tree)]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def measure_size(size: int, options: argparse.Namespace, model: MiniLmEmbedder) -> SizeResult:
    out = SizeResult(size)
    with tempfile.TemporaryDirectory(prefix="bench-canon-") as tmp:
        settings = Settings(workspace=Path(tmp))
        session = GroupId(settings.session)
        with Workspace(settings, command="bench", embedder=model) as ws:
            jobs = ws.memory.jobs_or_fail()
            worker_path = jobs.planner.path
            # The pieces are timed by wrapping this process's functions: plan here, as the
            # jobs did before ADR 0045; `_where` then times the worker against this process.
            jobs.planner.path = None
            builder = SessionBuilder(ws.writer, session, random.Random(size))
            now = datetime.now(UTC)
            log(f"{size:,}: building the session")
            started = time.perf_counter()
            builder.add(size, now - SPAN, now - timedelta(hours=1))
            out.build_s = time.perf_counter() - started
            out.writes, out.edges = builder.writes, builder.edges
            require(_concepts(ws, session) == size, "the session does not hold its concepts")
            _sweeps_and_ticks(ws, jobs, session, options, out)
            if options.before is not None:
                pieces_now = datetime.now(UTC)  # one clock: both versions' decisions compare
                for round_ in range(options.rounds):  # who goes first alternates
                    log(f"{size:,}: pieces, before and after, round {round_ + 1}")
                    for tree in (options.before, None)[:: 1 if round_ % 2 == 0 else -1]:
                        result = _pieces_child(settings.graph_path, session, tree, pieces_now)
                        (out.after if tree is None else out.before).append(result)
            for number in range(options.cycles):
                log(f"{size:,}: cycle {number + 1}")
                out.cycles.append(run_cycle(ws, jobs, session))
            log(f"{size:,}: planning in the worker process and in this process")
            _where(jobs, worker_path, session, options, out)
            log(f"{size:,}: a cycle under cProfile, one under tracemalloc")
            _profiled_cycles(jobs, out)
            log(f"{size:,}: writes worth gc_interval mutations, then a tick that sweeps")
            _trigger(ws, jobs, session, builder, out)
    return out


def _sweeps_and_ticks(
    ws: Workspace,
    jobs: MemoryJobs,
    session: GroupId,
    options: argparse.Namespace,
    out: SizeResult,
) -> None:
    for number in range(3):
        log(f"{out.size:,}: sweep {number + 1} and its drain")
        out.sweeps.append(run_sweep(ws, jobs, session))
        out.drain_ticks += drain(jobs)
    log(f"{out.size:,}: {options.ticks} idle ticks")
    for _ in range(options.ticks):
        started = time.perf_counter()
        require(jobs.tick() is None, "an idle tick swept")
        out.idle_ticks.append(time.perf_counter() - started)
    out.concepts_at_cycle = _concepts(ws, session)
    states = canon.node_states(ws.reader(), session)
    out.survived_3 = sum(1 for s in states.values() if s.gc_survived >= 3)
    require(out.survived_3 == out.concepts_at_cycle, "not every concept survived 3")


def _where(
    jobs: MemoryJobs,
    worker_path: str | None,
    session: GroupId,
    options: argparse.Namespace,
    out: SizeResult,
) -> None:
    """A cycle's plan and a sweep's plan (nothing appended) made by the planning worker and
    by this process, alternately, `--rounds` times, on the same snapshot (ADR 0045)."""
    require(worker_path is not None, "the workspace gave the jobs no graph path")
    here = Planner(None, jobs.planner._reader, jobs.planner.pause)
    worker = Planner(worker_path, jobs.planner._reader)
    now = datetime.now(UTC)
    started = time.perf_counter()
    WORKER.run(os.getpid)  # the spawn, timed once
    out.worker_start_s = time.perf_counter() - started

    def timed_plans(planner: Planner) -> tuple[float, float]:
        started = time.perf_counter()
        planner.cycle(session, jobs.knobs, jobs.gc_knobs, jobs.cursors, now)
        cycle = time.perf_counter() - started
        started = time.perf_counter()
        planner.sweep(session, jobs.gc_knobs, now, Trigger.MUTATIONS)
        return cycle, time.perf_counter() - started

    for round_ in range(options.rounds):
        order = (here, worker) if round_ % 2 == 0 else (worker, here)
        spent = {id(planner): timed_plans(planner) for planner in order}
        out.where.append((*spent[id(here)], *spent[id(worker)]))


def _profiled_cycles(jobs: MemoryJobs, out: SizeResult) -> None:
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.runcall(jobs.run_cycle)
    out.profiled_s = time.perf_counter() - started
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(45)
    out.profile = text.getvalue()
    gc.collect()
    rss_before = _maxrss_mb()
    tracemalloc.start()
    started = time.perf_counter()
    jobs.run_cycle()
    out.traced_s = time.perf_counter() - started
    out.traced_peak_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    out.maxrss_mb = (rss_before, _maxrss_mb())


def _trigger(
    ws: Workspace, jobs: MemoryJobs, session: GroupId, builder: SessionBuilder, out: SizeResult
) -> None:
    """Writes worth the mutation trigger (5 minutes old), then one tick, timed."""
    clock = canon.clock(ws.reader(), session)
    due = jobs.gc_knobs.gc_interval - (clock.epoch - clock.last_gc_epoch)
    mutations = builder.mutations
    recent = datetime.now(UTC) - timedelta(minutes=5)
    while builder.mutations - mutations < due:
        builder.add(10, recent, recent)
    out.trigger_mutations = builder.mutations - mutations
    pieces = Pieces()
    head = ws.log.head(session)
    with timed(pieces, _sweep_targets(jobs)):
        started = time.perf_counter()
        swept = jobs.tick()
        wall = time.perf_counter() - started
    require(swept is not None, "the trigger did not fire")
    assert swept is not None
    out.trigger_tick = JobRun(
        wall, _sweep_pieces(pieces), ws.log.head(session) - head, len(swept.collected)
    )


# -- recall while the jobs run ------------------------------------------------------------------


def measure_recall(options: argparse.Namespace, model: MiniLmEmbedder) -> RecallResult:
    out = RecallResult(options.recall_size)
    rng = random.Random(7)
    queries = [query(rng) for _ in range(options.queries)]
    reset_workspace(options.cache)  # keeps its embedding cache: a re-run does not run the model
    settings = Settings(workspace=options.cache)
    session = GroupId(settings.session)
    with Workspace(settings, command="bench", embedder=model) as ws:
        app = App(ws)
        jobs = ws.memory.jobs_or_fail()
        builder = SessionBuilder(ws.writer, session, random.Random(1), vectors=True)
        now = datetime.now(UTC)
        log(f"recall: building {options.recall_size:,} concepts with embedding texts")
        started = time.perf_counter()
        builder.add(
            options.recall_size, now - SPAN, now - timedelta(hours=1), options.recall_per_write
        )
        out.build_s = time.perf_counter() - started
        started = time.perf_counter()
        require(ws.settle(3600), "the vector follower did not catch up")
        out.embed_s = time.perf_counter() - started
        out.vectors = _vectors(ws, session)
        require(out.vectors >= options.recall_size, "concepts without vectors")
        require(ws.vector_follow_state == (0, None), "the vector follower is behind or failed")
        concepts_before = _concepts(ws, session)

        def recall(text: str) -> float:
            ws.forget_query_embeddings()
            started = time.perf_counter()
            result = operations.dispatch(app, "lambo_recall", {"agent_id": "bench", "query": text})
            spent = (time.perf_counter() - started) * 1000
            require(bool(result["structuredContent"]["hits"]), f"no hits for {text!r}")
            return spent

        def block() -> list[float]:
            return [recall(text) for text in queries]

        for text in queries[:10]:  # warm-up
            recall(text)
        for round_ in range(options.rounds):
            log(f"recall: round {round_ + 1}, jobs idle")
            out.idle.append(block())
            log(f"recall: round {round_ + 1}, cycles and sweeps back to back, in the worker")
            spent, done = _while_jobs_run(jobs, block)
            out.busy.append(spent)
            out.jobs_done.append(done)
            log(f"recall: round {round_ + 1}, cycles and sweeps back to back, in this process")
            path, jobs.planner.path = jobs.planner.path, None
            try:
                spent, done = _while_jobs_run(jobs, block)
            finally:
                jobs.planner.path = path
            out.busy_here.append(spent)
            out.jobs_done_here.append(done)
        out.concepts = (concepts_before, _concepts(ws, session))
    return out


def _vectors(ws: Workspace, session: str) -> int:
    row = (
        ws.reader()
        .execute(
            "SELECT COUNT(*) FROM vector_catalog WHERE group_id=?"
            " AND embedding='concept_embedding'",
            (session,),
        )
        .fetchone()
    )
    return int(row[0])


def _while_jobs_run(
    jobs: MemoryJobs, body: Callable[[], list[float]]
) -> tuple[list[float], tuple[int, int]]:
    """`body()` while a thread runs cycles and sweeps back to back; (its result, the cycles
    and sweeps the thread ran)."""
    stop = threading.Event()
    counts = [0, 0]
    errors: list[Exception] = []

    def busy() -> None:
        try:
            while not stop.is_set():
                jobs.run_cycle()
                counts[0] += 1
                if stop.is_set():
                    break
                jobs.sweep(Trigger.MUTATIONS)
                counts[1] += 1
        except Exception as error:
            errors.append(error)  # raised again on the bench's thread
            raise

    thread = threading.Thread(target=busy, name="bench-jobs")
    thread.start()
    time.sleep(0.2)  # the first cycle under way
    try:
        spent = body()
    finally:
        stop.set()
        thread.join()
    if errors:
        raise errors[0]
    jobs.pending_bumps = ()  # the next block starts with the jobs idle
    return spent, (counts[0], counts[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--ticks", type=int, default=200, help="idle ticks timed per size")
    parser.add_argument("--cycles", type=int, default=4, help="timed cycles per size")
    parser.add_argument("--recall-size", type=int, default=10_000, help="0: no recall part")
    parser.add_argument(
        "--recall-per-write", type=int, default=2, help="concepts per write, recall session"
    )
    parser.add_argument("--queries", type=int, default=60, help="recalls per block")
    parser.add_argument("--rounds", type=int, default=3, help="recall rounds; pieces rounds")
    parser.add_argument("--before", type=Path, help="a checkout to compare planning pieces with")
    parser.add_argument(
        "--cache", type=Path, default=CACHE / "canon-recall", help="the recall workspace"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "canon.md")
    parser.add_argument("--profile-out", type=Path, default=RESULTS / "canon-profile.txt")
    options = parser.parse_args()
    model = MiniLmEmbedder(threads=Settings(Path(".")).embed_threads)
    model.embed(["warm up"])
    wall = time.perf_counter()
    sizes = [measure_size(size, options, model) for size in options.sizes]
    recall = measure_recall(options, model) if options.recall_size else None
    text = report(options, sizes, recall, time.perf_counter() - wall)
    sys.stdout.write(text)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text, encoding="utf-8")
    if not sizes:
        return
    largest = max(sizes, key=lambda r: r.size)
    options.profile_out.write_text(
        f"One run_cycle() under cProfile, {largest.concepts_at_cycle:,} concepts "
        f"({largest.profiled_s:.2f} s with the profiler)\n\n" + no_machine_paths(largest.profile),
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
