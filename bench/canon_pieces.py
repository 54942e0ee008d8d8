"""One round of a canonization cycle's and a sweep's planning pieces, dry (nothing appended),
on a session an open bench workspace holds; prints JSON. Run by bench_canon as a child
process, once with this checkout's code and once with `--tree` (another checkout, e.g. the
commit before a change), so both are timed in the same run on the same snapshot:

    python bench/canon_pieces.py --graph GRAPH --session SESSION [--tree DIR] [--now ISO]

The pieces are the ones `MemoryJobs` calls in that checkout: `measure.load`,
`measure.session_stats`, `plan_cycle_with_cursors`, `measure.gc_facts` before the columnar read
existed, `measure.load_columns`, `cycle_rows` + `cycle_needs` + `cycle_measures` +
`cycle_evidence`, `plan_cycle_over` after it, and `measure.load_cycle_columns` (the kept
counters: its scores counted with the measures) in place of `load_columns` + `cycle_rows` since
ADR 0040; `measure.gc_evidence` and `plan_sweep` in all. The columnar read is in `columns` since
issue 25 split it out of `measure`.
Each result carries a digest of the decisions (the plan's transitions and cursors, the sweep),
so the two checkouts can be seen to decide the same.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LAYERS = ("domain", "commands", "projections", "queries", "interfaces", "fixtures")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=Path, required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--tree", type=Path, help="import lcg from this checkout instead")
    parser.add_argument(
        "--now", type=datetime.fromisoformat, default=datetime.now(UTC), help="the jobs' clock"
    )
    options = parser.parse_args()
    if options.tree is not None:  # ahead of the editable install's finder (after PathFinder)
        sys.path[:0] = [str(options.tree / layer) for layer in LAYERS]
    from lcg.projections.canonization import measure

    conn = sqlite3.connect(f"file:{options.graph}?mode=ro", uri=True)
    out: dict[str, Any] = {"file": measure.__file__}
    out["cycle"] = _cycle(conn, options.session, options.now)
    gc.collect()
    out["sweep"] = _sweep(conn, options.session, options.now)
    print(json.dumps(out))


def _columnar_read() -> Any:
    """The module of the jobs' columnar read: `columns` since issue 25 split it out of
    `measure`, `measure` in a checkout before that."""
    import importlib

    try:
        return importlib.import_module("lcg.projections.canonization.columns")
    except ImportError:
        return importlib.import_module("lcg.projections.canonization.measure")


def _cycle(conn: sqlite3.Connection, session: str, now: datetime) -> dict[str, Any]:
    from lcg.domain.memory.canonization import Cursors, Knobs, plan_cycle_with_cursors
    from lcg.domain.memory.gc import GcKnobs
    from lcg.projections.canonization import measure

    knobs, gc_knobs = Knobs(), GcKnobs()
    read = _columnar_read()
    columnar = hasattr(read, "load_columns")
    kept = hasattr(read, "load_cycle_columns")
    gc.collect()
    started = time.perf_counter()
    if kept:  # the kept counters (ADR 0040): the scores run inside the load
        from lcg.domain.memory.canonization import cycle_needs, plan_cycle_over

        spent = [0.0]
        score = getattr(read, "degree_score_column")  # noqa: B009

        def timed_score(*args: Any) -> Any:
            begun = time.perf_counter()
            try:
                return score(*args)
            finally:
                spent[0] += time.perf_counter() - begun

        setattr(read, "degree_score_column", timed_score)  # noqa: B010 (a bench's timer)
        conn.execute("BEGIN")
        kept_columns = read.load_cycle_columns(conn, session, gc_knobs)
        loaded = time.perf_counter() - spent[0]
        setattr(read, "degree_score_column", score)  # noqa: B010
        rows = kept_columns.rows
        needed = cycle_needs(rows, knobs, Cursors())
        measures = read.cycle_measures(conn, kept_columns, needed, knobs, now)
        evidence = read.cycle_evidence(conn, kept_columns, knobs)
        conn.execute("COMMIT")
        measured = time.perf_counter()
        plan = plan_cycle_over(rows, measures, knobs, now, evidence, Cursors())
    elif columnar:
        from lcg.domain.memory.canonization import cycle_needs, plan_cycle_over

        conn.execute("BEGIN")
        columns = read.load_columns(conn, session)
        loaded = time.perf_counter()
        rows = read.cycle_rows(columns, gc_knobs)
        needed = cycle_needs(rows, knobs, Cursors())
        measures = read.cycle_measures(conn, columns, needed, knobs, now)
        evidence = read.cycle_evidence(conn, columns, knobs)
        conn.execute("COMMIT")
        measured = time.perf_counter()
        plan = plan_cycle_over(rows, measures, knobs, now, evidence, Cursors())
    else:
        snap = measure.load(conn, session)
        loaded = time.perf_counter()
        stats = measure.session_stats(conn, snap, knobs, gc_knobs, now, Cursors())
        measured = time.perf_counter()
        plan = plan_cycle_with_cursors(stats, knobs, now)
    planned = time.perf_counter()
    return {
        "load": loaded - started,
        "session_stats": measured - loaded,
        "plan": planned - measured,
        "total": planned - started,
        "hops": len(plan.transitions),
        "digest": _digest(repr(plan)),
    }


def _sweep(conn: sqlite3.Connection, session: str, now: datetime) -> dict[str, Any]:
    from lcg.domain.memory.gc import GcKnobs, Trigger, plan_sweep
    from lcg.projections.canonization import measure

    read = _columnar_read()
    columnar = hasattr(read, "load_columns")
    started = time.perf_counter()
    if columnar:
        facts: Any = read.load_columns(conn, session).facts
        loaded = time.perf_counter()
    else:
        snap = measure.load(conn, session)
        loaded = time.perf_counter()
        facts = measure.gc_facts(snap)
    sweep_evidence = measure.gc_evidence(conn, session)
    measured = time.perf_counter()
    sweep = plan_sweep(facts, sweep_evidence, GcKnobs(), now, Trigger.MUTATIONS)
    planned = time.perf_counter()
    return {
        "load": loaded - started,
        "facts": measured - loaded,
        "plan": planned - measured,
        "total": planned - started,
        "collected": len(sweep.collected),
        "digest": _digest(repr(sweep)),
    }


if __name__ == "__main__":
    main()
