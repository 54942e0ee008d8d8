"""A fresh workspace replaying its log: from the workspace's SQLite file and from PostgreSQL,
in events/s, in one run (issue 28; docs/adr/0073-the-workspace-on-a-log-store.md).

    .venv/bin/python -m bench.bench_pg_replay [--events 20000] [--repeats 3] [--server URL]
        [--direct]

One log of `--events` episodes (`knowledge_add_episode` in one group, through a workspace on
the SQLite file, then `lcg store copy`'s copy into a database of the bench's own on the
server, identity kept; `--direct`: the same episodes appended to the log by batches, no
tool, for a 100k-event log in seconds); then, repeat by repeat and taking turns, a workspace
directory with no projections is opened on each store and timed until the open returns
(every event applied to graph.sqlite, its FTS5 rows and the text scorer: the catch-up a new
node does; the vector index follows on its own thread and is not in the time), less the time
of opening the same directory again with nothing to replay (the open's fixed cost); and,
apart, the time to read the log's pages alone through the port (decoded, checked against their
sums). Embedding: the hashing embedder. The best repeat of each store is printed, with the
ratio PostgreSQL/SQLite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from lcg.domain.events import EpisodeAdded
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.wal.copy import copy_log
from lcg.projections.wal.opening import open_log, open_url
from lcg.projections.wal.store import RecordedEvent

SERVER = os.environ.get("LCG_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
GROUP = "bench"


def fill(settings: Settings, events: int) -> None:
    with Workspace(settings, embedder=HashingEmbedder(), command="bench fill") as ws:
        app = App(ws)
        for n in range(events):
            params = {
                "name": f"e{n}",
                "episode_body": f"episode {n}: a passage about topic {n % 97} and {n % 13}",
                "group_id": GROUP,
            }
            operations.dispatch(app, "knowledge_add_episode", params)


def fill_direct(settings: Settings, events: int) -> None:
    """The same episodes appended to the log file by batches of 1,000, no projection built:
    a 100k-event log in seconds rather than the tool's hour under load (`--direct`)."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    settings.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_ = open_log(settings.files)
    try:
        for first in range(1, events + 1, 1000):
            log_.append(
                [
                    RecordedEvent(
                        GroupId(GROUP),
                        Seq(n),
                        EpisodeAdded(
                            now,
                            EpisodeUuid(f"ep-{n}"),
                            f"e{n}",
                            f"episode {n}: a passage about topic {n % 97} and {n % 13}",
                            "text",
                            "",
                            now,
                            None,
                            None,
                        ),
                    )
                    for n in range(first, min(first + 1000, events + 1))
                ]
            )
    finally:
        log_.close()


def timed_open(settings: Settings, *, replays: bool = True) -> float:
    """Seconds until the open returns; `replays`: it applied events (else it had none to)."""
    started = time.perf_counter()
    with Workspace(settings, embedder=HashingEmbedder(), command="bench replay") as ws:
        elapsed = time.perf_counter() - started
        assert (ws.caught_up > 0) == replays
    return elapsed


def read_all(settings: Settings) -> float:
    """Seconds to read every page of the group through the port (checked against the sums)."""
    log_ = open_log(settings.files)
    try:
        started = time.perf_counter()
        for _ in log_.read(GroupId(GROUP)):
            pass
        return time.perf_counter() - started
    finally:
        log_.close()


def fresh_node(fresh: Path, source: Settings, url: str | None) -> Settings:
    """A workspace directory with no projections on the server's log, or beside a copy of
    the source's log file (`url` None)."""
    (fresh / ".lcg").mkdir(mode=0o700, parents=True)
    if url is None:
        shutil.copy(source.wal_path, fresh / ".lcg" / "wal.sqlite")
        return Settings(workspace=fresh, embedder="hashing")
    return replace(Settings(workspace=fresh, embedder="hashing"), store_url=url)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--server", default=SERVER)
    parser.add_argument("--direct", action="store_true", help="append, not through the tool")
    args = parser.parse_args(argv)
    name = f"lcg_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(args.server)
    host, port = params.get("host", "127.0.0.1"), params.get("port", 5432)
    url = f"postgresql://{params.get('user', 'postgres')}@{host}:{port}/{name}"
    root = Path(tempfile.mkdtemp(prefix="lcg-bench-replay-"))
    try:
        source = Settings(workspace=root / "source", embedder="hashing")
        started = time.perf_counter()
        (fill_direct if args.direct else fill)(source, args.events)
        print(f"filled {args.events} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        sqlite_log, pg_log = open_log(source.files), open_url(url)
        try:
            copy_log(sqlite_log, pg_log)
        finally:
            sqlite_log.close()
            pg_log.close()
        best: dict[str, float] = {}
        best_read: dict[str, float] = {}
        for repeat in range(args.repeats):
            for store in ("sqlite", "postgresql"):
                settings = fresh_node(
                    root / f"{store}-{repeat}", source, url if store != "sqlite" else None
                )
                seconds = timed_open(settings)
                fixed = timed_open(settings, replays=False)  # the same open, nothing to replay
                rate = args.events / max(seconds - fixed, 1e-6)
                log_rate = args.events / read_all(settings)
                said = f"{seconds:.2f} s (an open with nothing to replay: {fixed:.2f} s)"
                print(f"repeat {repeat} {store}: {said}, {rate:,.0f} ev/s", file=sys.stderr)
                best[store] = max(best.get(store, 0.0), rate)
                best_read[store] = max(best_read.get(store, 0.0), log_rate)
        print("| store | replay into a fresh workspace (ev/s) | the log's pages alone (ev/s) |")
        print("|---|---:|---:|")
        for store, rate in best.items():
            print(f"| {store} | {rate:,.0f} | {best_read[store]:,.0f} |")
        print(f"\nPostgreSQL / SQLite: {best['postgresql'] / best['sqlite']:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        with psycopg.connect(args.server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
