"""Where the memory jobs plan: in a child process, beside the serving process (issue 13,
ADR 0045).

A canonization cycle or a GC sweep reads a session's rows and decides in pure Python for up
to seconds at 100k concepts. In the serving process that work holds the GIL, and every call
being served (a lambo_recall is Python between its SQLite and FAISS calls) waits for it: the
bench measured recall at 2.3x / 4.9x its idle p50 / p95 while jobs ran back to back. Here the
plan is made by one worker process, shared by every workspace of the process and started on
the first job, which opens the graph file read-only, plans from one read transaction (a
snapshot) and hands the plan back; the serving process only appends it. The decisions are
the same functions on the same rows, wherever they run.

The worker also steps aside for the calls being served: `operations.dispatch` counts them
in a counter shared with it (`serving()`), and between chunks of a plan the worker waits
while any runs (`_Yield`). If the worker cannot be started or dies, the plan is made in this
process (as before), and the worker is tried again on the next job.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sqlite3
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

from lcg.domain.memory.canonization import (
    Cursors,
    CyclePlan,
    Knobs,
    cycle_needs,
    plan_cycle_over,
)
from lcg.domain.memory.gc import GcKnobs, Pause, Sweep, Trigger, no_pause, plan_sweep
from lcg.projections.canonization import columns as canon_columns
from lcg.projections.canonization import measure as canon_measure
from lcg.projections.canonization import state as canon
from lcg.projections.graph import schema

log = logging.getLogger(__name__)

T = TypeVar("T")
Positions = tuple[int | None, int | None]  # the memory and canonization projections'
PARENT_POLL_SECONDS = 0.5
WORKER_NICENESS = 10  # added to the worker's nice value: background work yields the CPU
YIELD_SECONDS = 0.005  # the longest a plan waits, between two chunks, for calls to end


@dataclass(frozen=True, slots=True)
class PlannedSweep:
    """A sweep planned from a snapshot: the plan, the session's GC epoch and the projections'
    positions it was read at (a sweep is appended as planned only while they still hold)."""

    sweep: Sweep
    epoch: int
    positions: Positions


def positions(conn: sqlite3.Connection, session: str) -> Positions:
    """The memory and canonization projections' positions in the session: what a sweep reads
    changes only when one of them moves (None while one is pinned or rebuilding)."""
    return canon.memory_position(conn, session), canon.projection_position(
        conn, "canonization", session
    )


@contextmanager
def _read_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One read transaction: everything read inside it is one snapshot."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")


def plan_cycle(
    conn: sqlite3.Connection,
    session: str,
    knobs: Knobs,
    gc_knobs: GcKnobs,
    cursors: Cursors,
    now: datetime,
    pause: Pause = no_pause,
) -> CyclePlan:
    """Read the session (one snapshot) and plan a cycle: every concept's row (from its kept
    edge counters: no edge is read), then the measures of only the concepts the cycle's
    windows evaluate."""
    with _read_transaction(conn):
        columns = canon_columns.load_cycle_columns(conn, session, gc_knobs, pause)
        rows = columns.rows
        needed = cycle_needs(rows, knobs, cursors)
        measures = canon_columns.cycle_measures(conn, columns, needed, knobs, now)
        evidence = canon_columns.cycle_evidence(conn, columns, knobs)
    return plan_cycle_over(rows, measures, knobs, now, evidence, cursors)


def plan_sweep_over(
    conn: sqlite3.Connection,
    session: str,
    gc_knobs: GcKnobs,
    now: datetime,
    trigger: Trigger,
    pause: Pause = no_pause,
) -> tuple[Sweep, int]:
    """A sweep of what `conn` sees now (the caller holds the transaction) and the epoch."""
    columns = canon_columns.load_columns(conn, session, pause)
    evidence = canon_measure.gc_evidence(conn, session)
    sweep = plan_sweep(columns.facts, evidence, gc_knobs, now, trigger, pause=pause)
    return sweep, columns.clock.epoch


def plan_sweep_snapshot(
    conn: sqlite3.Connection,
    session: str,
    gc_knobs: GcKnobs,
    now: datetime,
    trigger: Trigger,
    pause: Pause = no_pause,
) -> PlannedSweep:
    """A sweep planned from one snapshot, with the positions it was read at."""
    with _read_transaction(conn):
        at = positions(conn, session)
        sweep, epoch = plan_sweep_over(conn, session, gc_knobs, now, trigger, pause)
    return PlannedSweep(sweep, epoch, at)


# -- the worker process ---------------------------------------------------------------------


class _Calls:
    """How many calls the serving process is running now, shared with the worker, which
    steps aside while there are any (`_Yield`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count: Any = None  # a multiprocessing.Value("i") once the worker is started

    def shared(self) -> Any:
        with self._lock:
            if self._count is None:
                self._count = multiprocessing.get_context("spawn").Value("i", 0)
            return self._count

    @contextmanager
    def running(self) -> Iterator[None]:
        count = self._count
        if count is None:  # no worker: nothing to tell
            yield
            return
        with count.get_lock():
            count.value += 1
        try:
            yield
        finally:
            with count.get_lock():
                count.value -= 1


CALLS = _Calls()
_calls_in_worker: Any = None  # the worker's view of CALLS (set by _start_worker)


def serving() -> AbstractContextManager[None]:
    """Around every call the serving process runs (operations.dispatch): while any runs, the
    worker pauses its plan between chunks (`_Yield`)."""
    return CALLS.running()


def calls_seen() -> int:
    """In the worker: the serving process's calls running now, as the worker sees them."""
    return -1 if _calls_in_worker is None else int(_calls_in_worker.value)


class _Yield:
    """The worker's pause between chunks of a plan: wait while the serving process runs a
    call, at most YIELD_SECONDS at a time and never longer in all than the plan has worked,
    so that under calls a plan takes at most twice as long, and always ends."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.waited = 0.0

    def __call__(self) -> None:
        calls = _calls_in_worker
        if calls is None or calls.value <= 0:
            return
        now = time.monotonic()
        budget = (now - self.started - self.waited) - self.waited
        deadline = now + min(YIELD_SECONDS, budget)
        while calls.value > 0 and time.monotonic() < deadline:
            time.sleep(0.0005)
        self.waited += time.monotonic() - now


def _on_file(path: str, plan: Callable[..., T], *args: object) -> T:
    """In the worker: `plan(conn, *args)` on the graph file, read-only, stepping aside for
    the serving process's calls between chunks."""
    conn = schema.connect(path, read_only=True)
    try:
        return plan(conn, *args, pause=_Yield())
    finally:
        conn.close()


def _start_worker(parent: int, calls: Any) -> None:
    """In the worker: step aside while the serving process runs calls (`_Yield`),
    run below its priority (on a machine with few cores a plan then takes the CPU a call
    being served does not want), and exit as soon as the process that started it is gone (a
    SIGKILLed server leaves no planner behind)."""
    global _calls_in_worker  # noqa: PLW0603 (the worker process's one shared counter)
    _calls_in_worker = calls
    try:
        os.nice(WORKER_NICENESS)
    except OSError:  # not permitted here: plan at the same priority
        log.debug("the planning worker keeps its priority", exc_info=True)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(0)

    threading.Thread(target=watch, name="lcg-planner-parent", daemon=True).start()


@contextmanager
def _main_left_out() -> Iterator[None]:
    """While the worker process starts, `__main__` is a blank module, so that `spawn` does not
    run the program's main module again in the worker: a script that uses lcg with no
    `if __name__ == "__main__":` guard would otherwise run a second time there, writes and
    all. The worker needs nothing of `__main__` (it runs functions of this module). Only the
    submit that starts it is covered (the process's start: milliseconds, once)."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


class _Worker:
    """The one planning process of this process (spawned: the serving process has threads,
    which a fork would copy mid-lock), started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def run(self, fn: Callable[..., T], *args: object) -> T:
        with self._lock:
            if self._pool is None:
                pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_start_worker,
                    initargs=(os.getpid(), CALLS.shared()),
                )
                with _main_left_out():  # the pool starts its process within a submit
                    started = pool.submit(os.getpid)
                started.result()
                self._pool = pool
            pool = self._pool
        try:
            return pool.submit(fn, *args).result()
        except BrokenProcessPool:
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            raise


WORKER = _Worker()


class Planner:
    """Plans a session's cycles and sweeps in the worker process when it has the graph
    file's path (a serving workspace), else in this process; the same plan either way."""

    def __init__(
        self,
        path: str | None,
        reader: Callable[[], sqlite3.Connection],
        pause: Pause = no_pause,
    ) -> None:
        self.path = path
        self._reader = reader
        self.pause = pause  # in this process, between chunks of pure-Python work

    def cycle(
        self, session: str, knobs: Knobs, gc_knobs: GcKnobs, cursors: Cursors, now: datetime
    ) -> CyclePlan:
        return self._plan(plan_cycle, session, knobs, gc_knobs, cursors, now)

    def sweep(
        self, session: str, gc_knobs: GcKnobs, now: datetime, trigger: Trigger
    ) -> PlannedSweep:
        return self._plan(plan_sweep_snapshot, session, gc_knobs, now, trigger)

    def _plan(self, plan: Callable[..., T], *args: object) -> T:
        """`plan(conn, *args)` in the worker; in this process when there is no path or the
        worker could not run it. An error of the plan itself (a damaged file) is raised as it
        would be here."""
        if self.path is not None:
            try:
                return cast(T, WORKER.run(_on_file, self.path, plan, *args))
            except (BrokenProcessPool, OSError, RuntimeError) as error:
                log.warning(
                    "the planning worker is unavailable (%s); planning in this process", error
                )
        conn = self._reader()
        try:
            return plan(conn, *args, pause=self.pause)
        finally:
            conn.close()
