"""The log's two stores side by side: appends (single, batched) and replay, in events/s.

    .venv/bin/python -m bench.bench_store [--single 1000] [--batched 20000] [--batch 100]
        [--replay 50000] [--repeats 2] [--server URL] [--out bench/results/store.md]

Every row appends the same 500-byte `EpisodeAdded` (bench_wal's payload) to one group through
the `LogStore` port, in one process, interleaved repeat by repeat; the table gives the best
repeat. Rows: SQLite (`EventLog`, `LCG_DURABILITY` normal and full); PostgreSQL (`PostgresLog`)
with the table lock its appends take, and without it; and eventsourcing's own
`PostgresApplicationRecorder.insert_events` (its pipeline, lock and NOTIFY, no checksums or
group rows) on the same table. A last line has `--writers` threads appending at once, each
with its own PostgresLog, with and without the lock. Replay reads every page of a group of
`--replay` events, decoded and checked against their sums, as a catch-up does. The server
is `--server` (default LCG_BENCH_POSTGRES, else the trust-auth server on 127.0.0.1); the
bench makes its own database and drops it. ADR 0071 quotes the results.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import orjson
import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore

from bench.bench_wal import make_body
from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId, Seq
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.postgres import PostgresLog
from lcg.projections.wal.store import EventLog, RecordedEvent, stream_id

GROUP = GroupId("bench")
NOW = datetime(2026, 12, 5, tzinfo=UTC)
SERVER = os.environ.get("LCG_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


@dataclass
class Row:
    name: str
    single: float | None = None
    batched: float | None = None
    replay: float | None = None


def episodes(first: int, count: int, body: str) -> list[RecordedEvent]:
    return [
        RecordedEvent(
            GROUP,
            Seq(seq),
            EpisodeAdded(
                NOW, EpisodeUuid(str(uuid.uuid4())), f"e{seq}", body, "text", "", NOW, None, None
            ),
        )
        for seq in range(first, first + count)
    ]


@contextmanager
def database(server: str) -> Iterator[str]:
    """A database of the bench's own on the server, dropped at the end."""
    name = f"lcg_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = psycopg.conninfo.conninfo_to_dict(server)
    user = params.get("user", "postgres")
    url = f"postgresql://{user}@{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}/{name}"
    try:
        yield url
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def empty(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


class Library:
    """eventsourcing's recorder as is, on the table PostgresLog made."""

    def __init__(self, url: str) -> None:
        PostgresLog(url, EventCodec()).close()
        info = psycopg.conninfo.conninfo_to_dict(url)
        self.datastore = PostgresDatastore(
            str(info["dbname"]), str(info["host"]), str(info["port"]), str(info["user"]), ""
        )
        self.recorder = PostgresApplicationRecorder(self.datastore)
        self.codec = EventCodec()

    def append(self, batch: list[RecordedEvent]) -> None:
        encode = self.codec.encode
        self.recorder.insert_events(
            [
                StoredEvent(
                    stream_id(r.group_id), r.seq, r.event.wire_name, orjson.dumps(encode(r.event))
                )
                for r in batch
            ]
        )

    def close(self) -> None:
        self.datastore.close()


Appender = LogStore | Library


def timed(
    append: Callable[[list[RecordedEvent]], None], batches: list[list[RecordedEvent]]
) -> float:
    count = sum(len(batch) for batch in batches)
    start = time.perf_counter()
    for batch in batches:
        append(batch)
    return count / (time.perf_counter() - start)


def measure(
    open_store: Callable[[], Appender], args: argparse.Namespace, body: str, row: Row
) -> None:
    """One repeat of the row's appends (and replay, for a LogStore), keeping the best."""
    store = open_store()
    try:
        singles = [[event] for event in episodes(1, args.single, body)]
        single = timed(store.append, singles)
        first = args.single + 1
        batched_events = episodes(first, args.batched, body)
        batches = [
            batched_events[i : i + args.batch] for i in range(0, len(batched_events), args.batch)
        ]
        batched = timed(store.append, batches)
        row.single = max(row.single or 0.0, single)
        row.batched = max(row.batched or 0.0, batched)
        if isinstance(store, Library):
            return
        following = first + args.batched
        while following <= args.replay:  # untimed: the group grows to --replay events
            count = min(1000, args.replay - following + 1)
            store.append(episodes(following, count, body))
            following += count
        start = time.perf_counter()
        read = sum(len(page) for page in store.read(GROUP))
        rate = read / (time.perf_counter() - start)
        if read != store.head(GROUP):
            raise RuntimeError(f"{row.name}: read {read} of {store.head(GROUP)} events")
        row.replay = max(row.replay or 0.0, rate)
    finally:
        store.close()


def concurrent(url: str, lock: bool, writers: int, count: int, body: str) -> float:
    """Events/s of `writers` threads, each with its own PostgresLog (own connections), each
    appending `count` single events to its own group at once."""
    empty(url)
    logs = [PostgresLog(url, EventCodec(), lock_table=lock) for _ in range(writers)]

    def work(index: int) -> None:
        group = GroupId(f"w{index}")
        for seq in range(1, count + 1):
            (event,) = episodes(seq, 1, body)
            logs[index].append([RecordedEvent(group, event.seq, event.event)])

    threads = [threading.Thread(target=work, args=(index,)) for index in range(writers)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    heads = [log.head(f"w{index}") for index, log in enumerate(logs)]
    for log in logs:
        log.close()
    if heads != [count] * writers:
        raise RuntimeError(f"concurrent writers stored {heads}, not {count} each")
    return writers * count / elapsed


def table(rows: list[Row], args: argparse.Namespace) -> str:
    def rate(value: float | None) -> str:
        return "" if value is None else f"{value:,.0f}"

    lines = [
        f"| store | single appends ({args.single:,}, ev/s) | batched appends ({args.batched:,},"
        f" {args.batch} per commit, ev/s) | replay ({args.replay:,} events, ev/s) |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r.name} | {rate(r.single)} | {rate(r.batched)} | {rate(r.replay)} |" for r in rows
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--single", type=int, default=1000)
    parser.add_argument("--batched", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--replay", type=int, default=50000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--writer-events", type=int, default=250)
    parser.add_argument("--server", default=SERVER)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    body, _ = make_body()
    with tempfile.TemporaryDirectory() as tmp, database(args.server) as url:
        counter = iter(range(1_000_000))

        def sqlite(durability: str) -> Callable[[], Appender]:
            def open_store() -> Appender:
                path = Path(tmp) / f"wal-{next(counter)}.sqlite"
                return EventLog(
                    path, EventCodec(), durability="full" if durability == "full" else "normal"
                )

            return open_store

        def postgres(lock: bool) -> Callable[[], Appender]:
            def open_store() -> Appender:
                empty(url)
                return PostgresLog(url, EventCodec(), lock_table=lock)

            return open_store

        def library() -> Appender:
            empty(url)
            return Library(url)

        setups: list[tuple[Row, Callable[[], Appender]]] = [
            (Row("SQLite, durability normal"), sqlite("normal")),
            (Row("SQLite, durability full"), sqlite("full")),
            (Row("PostgreSQL, PostgresLog (table lock)"), postgres(True)),
            (Row("PostgreSQL, PostgresLog without the lock"), postgres(False)),
            (Row("PostgreSQL, eventsourcing's insert_events"), library),
        ]
        together = {True: 0.0, False: 0.0}
        for repeat in range(args.repeats):
            for row, open_store in setups:
                print(f"repeat {repeat + 1}: {row.name}", file=sys.stderr)
                measure(open_store, args, body, row)
            for lock in (True, False):
                rate = concurrent(url, lock, args.writers, args.writer_events, body)
                together[lock] = max(together[lock], rate)
    text = table([row for row, _ in setups], args) + (
        f"\n{args.writers} writers at once, each its own PostgresLog and group, "
        f"{args.writer_events:,} single appends each (ev/s, all together): "
        f"with the table lock {together[True]:,.0f}, without it {together[False]:,.0f}\n"
    )
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
