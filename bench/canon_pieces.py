"""One round of a canonization cycle's and a sweep's planning pieces, dry (nothing appended),
on a session an open bench workspace holds; prints JSON. Run by bench_canon as a child
process, once with this checkout's code and once with `--tree` (another checkout, e.g. the
commit before a change), so both are timed in the same run on the same snapshot:

    python bench/canon_pieces.py --graph GRAPH --session SESSION [--tree DIR]

Only functions both versions have are called: `measure.load`, `measure.session_stats`,
`plan_cycle_with_cursors`, `measure.gc_facts`, `measure.gc_evidence`, `plan_sweep`.
"""

from __future__ import annotations

import argparse
import gc
import json
import sqlite3
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

LAYERS = ("domain", "commands", "projections", "queries", "interfaces", "fixtures")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=Path, required=True)
    parser.add_argument("--session", required=True)
    parser.add_argument("--tree", type=Path, help="import lcg from this checkout instead")
    options = parser.parse_args()
    if options.tree is not None:  # ahead of the editable install's finder (after PathFinder)
        sys.path[:0] = [str(options.tree / layer) for layer in LAYERS]
    from lcg.domain.memory.canonization import Cursors, Knobs, plan_cycle_with_cursors
    from lcg.domain.memory.gc import GcKnobs, Trigger, plan_sweep
    from lcg.projections.canonization import measure

    knobs, gc_knobs = Knobs(), GcKnobs()
    now = datetime.now(UTC)
    conn = sqlite3.connect(f"file:{options.graph}?mode=ro", uri=True)
    out: dict[str, Any] = {"file": measure.__file__}
    gc.collect()
    started = time.perf_counter()
    snap = measure.load(conn, options.session)
    loaded = time.perf_counter()
    stats = measure.session_stats(conn, snap, knobs, gc_knobs, now, Cursors())
    measured = time.perf_counter()
    plan = plan_cycle_with_cursors(stats, knobs, now)
    planned = time.perf_counter()
    out["cycle"] = {
        "load": loaded - started,
        "session_stats": measured - loaded,
        "plan": planned - measured,
        "total": planned - started,
        "hops": len(plan.transitions),
    }
    del snap, stats, plan
    gc.collect()
    started = time.perf_counter()
    snap = measure.load(conn, options.session)
    loaded = time.perf_counter()
    facts = measure.gc_facts(snap)
    evidence = measure.gc_evidence(conn, options.session)
    measured = time.perf_counter()
    sweep = plan_sweep(facts, evidence, gc_knobs, now, Trigger.MUTATIONS)
    planned = time.perf_counter()
    out["sweep"] = {
        "load": loaded - started,
        "facts": measured - loaded,
        "plan": planned - measured,
        "total": planned - started,
        "collected": len(sweep.collected),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
