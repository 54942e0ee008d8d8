"""Follower lag on a PostgreSQL log: a writer appends at a steady rate, a follower process
applies what it is told of (issue 28 item 2, ADR 0076).

    .venv/bin/python -m bench.bench_follow [--rate 200] [--seconds 15] [--groups 4]
        [--server URL] [--out bench/results/follow.md]

The writer (this process) appends one 500-byte `EpisodeAdded` at a time through
`PostgresLog`, `--rate` appends a second spread over `--groups` groups, and notes when each
append was sent and when its commit was acknowledged. A follower process on the same machine
notes when each event was applied (`time.monotonic`: one clock for every process of a Linux
boot). Three follower modes take turns on fresh databases, same writer load:

- `raw`: a bare psycopg LISTEN loop noting when each notice arrives (no read, no apply): the
  baseline, what the server's notify path costs by itself;
- `notify`: `LogFollower` woken by notices, reading the group by seq and applying each page to
  a real graph.sqlite with every projection (`ProjectionRunner`), as a node does;
- `poll`: the same follower unable to LISTEN (its connection URL names no database), comparing
  heads every 50 ms: the fallback.

Lag = noted time - the append's acknowledged commit (it can be below 0: a notice is sent at
the commit, before the writer hears the acknowledgement). The table gives p50/p95/max of it per
mode, and the p50 from when the append was sent (always above 0) with its ratio to `raw`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from bench.bench_store import database
from bench.bench_wal import make_body
from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections import registry
from lcg.projections.graph import schema
from lcg.projections.runner import ProjectionRunner, transaction
from lcg.projections.wal.pg_follow import LogFollower
from lcg.projections.wal.postgres import CHANNEL, PostgresLog, parse_notice
from lcg.projections.wal.store import RecordedEvent

NOW = datetime(2026, 12, 5, tzinfo=UTC)
SERVER = os.environ.get("LCG_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
MODES = ("raw", "notify", "poll")


class RunnerSink:
    """A node's projections in a graph.sqlite of its own, noting when each seq was applied."""

    def __init__(self, events: PostgresLog, path: Path) -> None:
        self.runner = ProjectionRunner(schema.connect(str(path)), events, registry.projections())
        self.runner.install()
        self.applied_at: dict[str, dict[int, float]] = {}

    def applied(self, group_id: GroupId) -> int:
        return self.runner.position(group_id).position

    def apply(self, page: list[RecordedEvent]) -> None:
        with transaction(self.runner.conn):
            self.runner.apply(page)
        now = time.monotonic()
        noted = self.applied_at.setdefault(page[0].group_id, {})
        for recorded in page:
            noted.setdefault(recorded.seq, now)


def follow(url: str, mode: str) -> None:
    """The follower process: say `ready`, follow until stdin closes, print what it noted."""
    noted: dict[str, dict[int, float]] = {}
    if mode == "raw":
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            done = threading.Event()

            def wait_for_eof() -> None:
                sys.stdin.read()
                done.set()

            threading.Thread(target=wait_for_eof, daemon=True).start()
            print("ready", flush=True)
            while not done.is_set():
                for notice in conn.notifies(timeout=0.2):
                    parsed = parse_notice(notice.payload)
                    if parsed is not None:
                        noted.setdefault(parsed[0], {}).setdefault(parsed[1], time.monotonic())
    else:
        events = PostgresLog(url, EventCodec())
        with tempfile.TemporaryDirectory() as scratch:
            sink = RunnerSink(events, Path(scratch) / "graph.sqlite")
            listen = url if mode == "notify" else url.rsplit("/", 1)[0] + "/lcg_no_such_db"
            follower = LogFollower(listen, events, sink, poll_seconds=0.05, connect_timeout=1)
            follower.start()
            print("ready", flush=True)
            sys.stdin.read()
            follower.stop()
            noted = sink.applied_at
            sink.runner.conn.close()
        events.close()
    print(json.dumps(noted), flush=True)


Times = dict[str, dict[int, tuple[float, float]]]  # group -> seq -> (sent, acknowledged)


def write(url: str, rate: float, seconds: float, groups: int) -> Times:
    """Append at `rate` a second; when each append was sent and its commit acknowledged."""
    events = PostgresLog(url, EventCodec())
    body, _ = make_body()
    acked: Times = {}
    heads = dict.fromkeys((f"g{n}" for n in range(groups)), 0)
    start = time.monotonic()
    for n in range(round(rate * seconds)):
        pause = start + n / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        group = f"g{n % groups}"
        heads[group] += 1
        seq = heads[group]
        event = EpisodeAdded(
            NOW, EpisodeUuid(f"ep-{n}"), f"e{n}", body, "text", "", NOW, None, None
        )
        sent = time.monotonic()
        events.append([RecordedEvent(GroupId(group), Seq(seq), event)])
        acked.setdefault(group, {})[seq] = (sent, time.monotonic())
    events.close()
    return acked


Lags = tuple[list[float], list[float]]  # from the acknowledgement, from the send (ms)


def run_mode(server: str, mode: str, rate: float, seconds: float, groups: int) -> Lags:
    with database(server) as url:
        PostgresLog(url, EventCodec()).close()  # the tables, before the follower opens
        follower = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_follow", "--follower", mode, "--server", url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert follower.stdout is not None
        assert follower.stdin is not None
        assert follower.stdout.readline().strip() == "ready"
        acked = write(url, rate, seconds, groups)
        time.sleep(1.0)  # the last notices and pages
        follower.stdin.close()
        noted = json.loads(follower.stdout.readline())
        follower.wait()
    from_ack: list[float] = []
    from_send: list[float] = []
    missing = 0
    for group, seqs in acked.items():
        for seq, (sent, at) in seqs.items():
            seen = noted.get(group, {}).get(str(seq))
            if seen is None:
                missing += 1
            else:
                from_ack.append((seen - at) * 1000)
                from_send.append((seen - sent) * 1000)
    if missing:
        print(f"{mode}: {missing} appends never noted", file=sys.stderr)
    return from_ack, from_send


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--server", default=SERVER)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--follower", choices=MODES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.follower:
        follow(args.server, args.follower)
        return
    results = {}
    for mode in MODES:
        print(f"{mode} ...", file=sys.stderr)
        results[mode] = run_mode(args.server, mode, args.rate, args.seconds, args.groups)
    base = statistics.median(results["raw"][1])
    lines = [
        f"{args.rate:g} appends/s for {args.seconds:g} s over {args.groups} groups,"
        f" {round(args.rate * args.seconds)} appends per mode",
        "",
        "| follower | noted | p50 lag (ms) | p95 lag (ms) | max (ms) | p50 from send (ms)"
        " | from send / raw's |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for mode, (from_ack, from_send) in results.items():
        sent50 = statistics.median(from_send)
        lines.append(
            f"| {mode} | {len(from_ack)} | {statistics.median(from_ack):.2f} |"
            f" {percentile(from_ack, 0.95):.2f} | {max(from_ack):.2f} | {sent50:.2f} |"
            f" {sent50 / base:.1f}x |"
        )
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
