"""A serving child for tests/e2e/test_memory_jobs_kill.py: the memory jobs on their schedule,
held in the middle of one job's append until the parent SIGKILLs it.

Run as `python -m tests.helpers.jobs_child --workspace DIR --job cycle|sweep --at wal|graph`
from the repository root. It opens the workspace the parent prepared (same tuning, the hashing
embedder), wraps the WAL's append and starts the scheduler (`start_memory_jobs`: the cycle and
the daemon tick run on their intervals, as in `lcg serve`). The first append that carries the
chosen job's event (`ConceptsCanonized` for a cycle, `GcSwept` for a sweep) prints one JSON
line, `{"job", "at", "seq", "event"}`, and then waits on stdin, which the parent never writes:

- `--at wal`: before the WAL commit. The batch's projection rows are written but uncommitted
  and the WAL holds nothing of it.
- `--at graph`: after the WAL commit, before the projection's. The WAL holds the event; the
  projection does not.

Every other append (the other job's events) goes through untouched. The test code is only the
wrapper: the jobs, the writer, the WAL and the projections are the real ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from lcg.domain.events import ConceptsCanonized, EventCodec, GcSwept
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.wal.store import EventLog, RecordedEvent

JOBS = {"cycle": ConceptsCanonized, "sweep": GcSwept}

# Small sessions promote and sweep at once; the jobs run often, so one is due within a second.
TUNING = Tuning().with_values(
    canonization__min_peer_count=1,
    canonization__edge_min_age_secs=0,
    daemon__gc_interval=1,
    daemon__gc_idle_floor=0,
    daemon__tick_interval_secs=0.05,
    daemon__canonization_eval_interval_secs=0.1,
)


def settings(workspace: Path) -> Settings:
    """The settings the parent prepares the workspace with and the child serves it with."""
    return Settings(workspace=workspace, tuning=TUNING)


def _hold(job: str, at: str, recorded: RecordedEvent) -> None:
    line = {
        "job": job,
        "at": at,
        "seq": recorded.seq,
        "event": EventCodec().encode(recorded.event),
    }
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()
    sys.stdin.readline()  # the parent never writes: it kills this process here
    raise SystemExit("the parent let go instead of killing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--job", choices=sorted(JOBS), required=True)
    parser.add_argument("--at", choices=("wal", "graph"), required=True)
    options = parser.parse_args()
    kind = JOBS[options.job]
    append = EventLog.append

    def held_append(log: EventLog, batch: Sequence[RecordedEvent]) -> None:
        mine = next((r for r in batch if isinstance(r.event, kind)), None)
        if mine is not None and options.at == "wal":
            _hold(options.job, options.at, mine)
        append(log, batch)
        if mine is not None:
            _hold(options.job, options.at, mine)

    EventLog.append = held_append  # type: ignore[method-assign,assignment]
    with Workspace(settings(options.workspace), command="serve", embedder=HashingEmbedder()) as ws:
        ws.start_memory_jobs()
        sys.stdout.write("serving\n")
        sys.stdout.flush()
        threading.Event().wait()  # serve until killed


if __name__ == "__main__":
    main()
