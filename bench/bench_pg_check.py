"""The check at open on a PostgreSQL log: the whole log vs what earlier opens did not check
(issue 28; docs/adr/0085-nodes-on-one-postgresql-log.md).

    .venv/bin/python -m bench.bench_pg_check [--events 100000] [--new 1000] [--repeats 3]
        [--server URL]

One group of `--events` episodes appended to a database of the bench's own (batches of 1,000,
checksums stored as every append stores them); then, repeat by repeat and in one run,
`graph_file.check_the_log` as a workspace's open calls it, for a node whose projections
applied every event: with no record of an earlier check (every event read and compared: what
each open did before), with a record of all but the last `--new` events, and with a record of
all of them. The best repeat of each is printed, with its ratio to the full check.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import psycopg
from psycopg.conninfo import conninfo_to_dict

from lcg.commands.graph_file import CHECKED_FILE, check_the_log, record_checked
from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.layout import WorkspaceFiles
from lcg.projections.runner import ProjectionRunner
from lcg.projections.wal.postgres import PostgresLog
from lcg.projections.wal.store import RecordedEvent

SERVER = os.environ.get("LCG_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
GROUP = GroupId("bench")


def fill(events: PostgresLog, count: int) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    for first in range(1, count + 1, 1000):
        batch = [
            RecordedEvent(
                GROUP,
                Seq(seq),
                EpisodeAdded(
                    now,
                    EpisodeUuid(f"e{seq}"),
                    f"e{seq}",
                    f"passage {seq}",
                    "text",
                    "",
                    now,
                    None,
                    None,
                ),
            )
            for seq in range(first, min(first + 1000, count + 1))
        ]
        events.append(batch)


def timed(events: PostgresLog, files: WorkspaceFiles, applied: int, recorded: int | None) -> float:
    """Seconds of one check at open, with `recorded` seqs checked before (None: no record)."""
    path = files.state_dir / CHECKED_FILE
    path.unlink(missing_ok=True)
    if recorded is not None:
        record_checked(files, events.identity, {GROUP: recorded})
    position = SimpleNamespace(position=applied)
    runner = cast(ProjectionRunner, SimpleNamespace(positions=lambda: {GROUP: position}))
    started = time.perf_counter()
    damaged = check_the_log(events, runner, files)
    elapsed = time.perf_counter() - started
    assert damaged == {}, damaged
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--server", default=SERVER)
    args = parser.parse_args(argv)
    name = f"lcg_bench_check_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params: dict[str, Any] = conninfo_to_dict(args.server)
    host, port = params.get("host", "127.0.0.1"), params.get("port", 5432)
    url = f"postgresql://{params.get('user', 'postgres')}@{host}:{port}/{name}"
    print(f"load average at start: {os.getloadavg()}", flush=True)
    try:
        events = PostgresLog(url, EventCodec())
        try:
            started = time.perf_counter()
            fill(events, args.events)
            print(f"appended {args.events} events in {time.perf_counter() - started:.1f} s")
            with tempfile.TemporaryDirectory(prefix="lcg-bench-check-") as tmp:
                files = WorkspaceFiles(Path(tmp), "normal", url)
                files.state_dir.mkdir(mode=0o700)
                cases = {
                    "no record: every event (before)": None,
                    f"all but the last {args.new} recorded": args.events - args.new,
                    "all recorded (a reopen)": args.events,
                }
                best: dict[str, float] = {}
                for _ in range(args.repeats):
                    for label, recorded in cases.items():
                        seconds = timed(events, files, args.events, recorded)
                        best[label] = min(best.get(label, float("inf")), seconds)
        finally:
            events.close()
    finally:
        with psycopg.connect(args.server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    full = next(iter(best.values()))
    print(f"| check at open, {args.events:,} events | best of {args.repeats} | vs every event |")
    print("|---|---:|---:|")
    for label, seconds in best.items():
        print(f"| {label} | {seconds * 1000:,.1f} ms | {seconds / full:.3f}x |")
    print(f"load average at end: {os.getloadavg()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
