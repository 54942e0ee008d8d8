"""Benchmark lcg's WAL appends and replay, each as a ratio to raw sqlite3 doing the same work.

Run from the repository root:

    /tmp/v0/bin/python bench/bench_wal.py [--events 100000] [--out bench/results/wal.md]

Every lcg number is measured in the same process and run as its raw `sqlite3` baseline, the
two interleaved repeat by repeat: the machines are shared and noisy, so the ratio is the
result and the absolute rates are context. See bench/README.md for what each row measures.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from lcg.commands import handlers
from lcg.domain.commands import AddEpisode
from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.graph.projection import purge_group
from lcg.projections.runner import transaction
from lcg.projections.wal.store import stream_id

GROUP = GroupId("bench")
TOPIC = EpisodeAdded.wire_name
SOURCE_DESCRIPTION = "bench_wal.py"
PAYLOAD_BYTES = 500  # the size the issue names for a knowledge_add_episode write
RESULTS = Path(__file__).resolve().parent / "results"

RAW_WAL_DDL = (
    "CREATE TABLE stored_events (id TEXT, version INTEGER, topic TEXT, state BLOB,"
    " PRIMARY KEY (id, version)) WITHOUT ROWID"
)
RAW_WAL_INSERT = "INSERT INTO stored_events (id, version, topic, state) VALUES (?, ?, ?, ?)"
RAW_REPLAY_SELECT = (
    "SELECT originator_id, originator_version, topic, state FROM stored_events"
    " WHERE originator_id=? ORDER BY originator_version"
)
RAW_EPISODE_INSERT = (
    "INSERT INTO episodes (uuid, group_id, name, content, source, source_description,"
    " reference_time, created_at, chunk_id, source_file, seq) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
)


class SteppingClock:
    """A deterministic clock: one millisecond later at every reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def episode_name(index: int) -> str:
    return f"episode-{index:07d}"


def raw_payload(now: datetime, index: int, body: str) -> dict[str, Any]:
    """What the raw baseline stores: the same fields, in the same shape, as an EpisodeAdded."""
    stamp = now.isoformat()
    return {
        "_v": 1,
        "occurred_at": stamp,
        "episode_uuid": str(uuid.uuid4()),
        "name": episode_name(index),
        "body": body,
        "source": "text",
        "source_description": SOURCE_DESCRIPTION,
        "reference_time": stamp,
        "chunk_id": None,
        "source_file": None,
    }


def make_body(target: int = PAYLOAD_BYTES) -> tuple[str, int]:
    """An episode body whose stored EpisodeAdded payload is about `target` bytes, and that size."""
    now = datetime(2026, 11, 30, 12, 0, 0, 1000, tzinfo=UTC)
    codec = EventCodec()

    def size(body: str) -> int:
        event = EpisodeAdded(
            occurred_at=now,
            episode_uuid=EpisodeUuid(str(uuid.uuid4())),
            name=episode_name(0),
            body=body,
            source="text",
            source_description=SOURCE_DESCRIPTION,
            reference_time=now,
            chunk_id=None,
            source_file=None,
        )
        return len(orjson.dumps(codec.encode(event)))

    words = "the quick brown fox jumps over the lazy dog while ada notes the engine's algorithm "
    body = (words * 20)[: max(1, target - size(""))]
    return body, size(body)


def raw_connect(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection with lcg's journal settings: WAL, synchronous=NORMAL."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def open_workspace(directory: Path) -> Workspace:
    return Workspace(Settings(workspace=directory), command="bench", clock=SteppingClock()).open()


def require(condition: bool, message: str) -> None:
    """Fail loudly if a run did not do the work it claims to time."""
    if not condition:
        raise RuntimeError(message)


def episode_count(ws: Workspace) -> int:
    row = ws.runner.conn.execute("SELECT COUNT(*) FROM episodes WHERE group_id=?", (GROUP,))
    return int(row.fetchone()[0])


# -- a. single appends ------------------------------------------------------------------------


def lcg_single(directory: Path, count: int, body: str) -> float:
    """`count` knowledge_add_episode calls through operations.dispatch, one WAL commit each."""
    ws = open_workspace(directory)
    try:
        app = App(ws)
        start = time.perf_counter()
        for index in range(count):
            operations.dispatch(
                app,
                "knowledge_add_episode",
                {
                    "name": episode_name(index),
                    "episode_body": body,
                    "source_description": SOURCE_DESCRIPTION,
                    "group_id": GROUP,
                },
            )
        elapsed = time.perf_counter() - start
        require(ws.log.head(GROUP) == count, "single appends: WAL head != events written")
        require(episode_count(ws) == count, "single appends: episodes != events written")
    finally:
        ws.close()
    return elapsed


def raw_single(directory: Path, count: int, body: str) -> float:
    """`count` rows, one transaction (one WAL commit) each."""
    conn = raw_connect(directory / "raw-single.sqlite")
    try:
        conn.execute(RAW_WAL_DDL)
        clock = SteppingClock()
        stream = stream_id(GROUP).hex
        start = time.perf_counter()
        for index in range(count):
            state = orjson.dumps(raw_payload(clock(), index, body))
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(RAW_WAL_INSERT, (stream, index + 1, TOPIC, state))
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        rows = conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0]
        require(rows == count, "raw single appends: rows != events written")
    finally:
        conn.close()
    return elapsed


# -- b. batched appends -----------------------------------------------------------------------


def add_episode_commands(
    clock: Callable[[], datetime], first: int, count: int, body: str
) -> list[AddEpisode]:
    """AddEpisode commands as App.add_episode builds them: a uuid4 and a clock reading each."""
    commands: list[AddEpisode] = []
    for index in range(first, first + count):
        now = clock()
        commands.append(
            AddEpisode(
                group_id=GROUP,
                name=episode_name(index),
                body=body,
                source="text",
                source_description=SOURCE_DESCRIPTION,
                reference_time=now,
                new_uuid=EpisodeUuid(str(uuid.uuid4())),
                now=now,
            )
        )
    return commands


def append_batches(ws: Workspace, count: int, batch: int, body: str) -> None:
    """Append `count` episodes through Writer.execute_many, `batch` per WAL commit."""
    first = ws.log.head(GROUP)
    for offset in range(0, count, batch):
        size = min(batch, count - offset)
        commands = add_episode_commands(ws.clock, first + offset, size, body)
        outcomes = ws.writer.execute_many(
            [partial(handlers.add_episode, command=command) for command in commands]
        )
        failed = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
        if failed:
            raise failed[0]


def lcg_batched(directory: Path, count: int, batch: int, body: str) -> float:
    ws = open_workspace(directory)
    try:
        start = time.perf_counter()
        append_batches(ws, count, batch, body)
        elapsed = time.perf_counter() - start
        require(ws.log.head(GROUP) == count, "batched appends: WAL head != events written")
        require(episode_count(ws) == count, "batched appends: episodes != events written")
    finally:
        ws.close()
    return elapsed


def raw_batched(directory: Path, count: int, batch: int, body: str) -> float:
    """`count` rows, `batch` per transaction through executemany."""
    conn = raw_connect(directory / "raw-batched.sqlite")
    try:
        conn.execute(RAW_WAL_DDL)
        clock = SteppingClock()
        stream = stream_id(GROUP).hex
        start = time.perf_counter()
        for offset in range(0, count, batch):
            rows = [
                (stream, index + 1, TOPIC, orjson.dumps(raw_payload(clock(), index, body)))
                for index in range(offset, min(offset + batch, count))
            ]
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(RAW_WAL_INSERT, rows)
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        stored = conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0]
        require(stored == count, "raw batched appends: rows != events written")
    finally:
        conn.close()
    return elapsed


# -- c. full replay ---------------------------------------------------------------------------


def lcg_rebuild(ws: Workspace, count: int) -> float:
    """A full rebuild of the group: reset its projection rows, replay every event."""
    start = time.perf_counter()
    replayed = ws.runner.rebuild(GROUP, from_seq=0)
    elapsed = time.perf_counter() - start
    require(replayed == count, f"replay: {replayed} events replayed, expected {count}")
    require(episode_count(ws) == count, "replay: episodes != events replayed")
    return elapsed


def lcg_rebuild_emptied(ws: Workspace, count: int) -> float:
    """The same rebuild after the group's rows were deleted (untimed): replay cost alone."""
    with transaction(ws.runner.conn) as conn:
        purge_group(conn, GROUP)
    return lcg_rebuild(ws, count)


def graph_episodes_ddl(ws: Workspace) -> list[str]:
    """The CREATE statements of lcg's episodes table and its indexes, as lcg made them."""
    rows = ws.runner.conn.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name='episodes' AND sql IS NOT NULL"
        " ORDER BY type DESC"
    ).fetchall()
    return [str(row[0]) for row in rows]


def raw_replay(wal: Path, target: Path, ddl: Sequence[str], count: int) -> float:
    """Read the stream's rows (id, version, topic, state), decode each state, insert a row each.

    The rows are the very rows lcg replays (its WAL table, read with plain sqlite3); the target
    table has the schema of lcg's episodes table. One transaction, like the rebuild.
    """
    source = sqlite3.connect(f"file:{wal}?mode=ro", uri=True)
    conn = raw_connect(target)
    try:
        for statement in ddl:
            conn.execute(statement)
        stream = stream_id(GROUP).hex
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        for _, version, _topic, state in source.execute(RAW_REPLAY_SELECT, (stream,)):
            data = orjson.loads(state)
            conn.execute(
                RAW_EPISODE_INSERT,
                (
                    data["episode_uuid"],
                    GROUP,
                    data["name"],
                    data["body"],
                    data["source"],
                    data["source_description"],
                    data["reference_time"],
                    data["occurred_at"],
                    data["chunk_id"],
                    data["source_file"],
                    version,
                ),
            )
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        rows = conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        require(rows == count, "raw replay: rows != events read")
    finally:
        source.close()
        conn.close()
    return elapsed


def profile_report(title: str, profiler: cProfile.Profile, top: int = 15) -> str:
    """The top functions of a profile by cumulative and by own time, as text."""
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    out.write(f"# cProfile of {title}\n\n## by cumulative time\n")
    stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(top)
    out.write("\n## by own (total) time\n")
    stats.sort_stats(pstats.SortKey.TIME).print_stats(top)
    return out.getvalue()


def profile_rebuild(ws: Workspace, count: int) -> str:
    """One full rebuild (reset + replay) under cProfile."""
    profiler = cProfile.Profile()
    profiler.enable()
    replayed = ws.runner.rebuild(GROUP, from_seq=0)
    profiler.disable()
    require(replayed == count, "profiled replay: wrong event count")
    return profile_report(f"one full rebuild of {count:,} events", profiler)


def profile_batched(directory: Path, count: int, batch: int, body: str) -> str:
    """Batched appends (as in b) under cProfile, for comparison with the replay."""
    ws = open_workspace(directory)
    try:
        profiler = cProfile.Profile()
        profiler.enable()
        append_batches(ws, count, batch, body)
        profiler.disable()
        require(ws.log.head(GROUP) == count, "profiled appends: wrong event count")
    finally:
        ws.close()
    return profile_report(f"{count:,} batched appends, {batch} per commit", profiler)


# -- reporting --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Measurement:
    """Seconds per repeat for lcg and for its raw baseline, over the same number of events."""

    label: str
    events: int
    lcg: tuple[float, ...]
    raw: tuple[float, ...]

    @property
    def lcg_rate(self) -> float:
        return self.events / min(self.lcg)

    @property
    def raw_rate(self) -> float:
        return self.events / min(self.raw)

    @property
    def ratio(self) -> float:
        """lcg time / raw time, best repeat of each: how many times slower lcg is."""
        return min(self.lcg) / min(self.raw)

    @property
    def paired(self) -> tuple[float, float]:
        """Lowest and highest ratio of the repeats taken side by side."""
        ratios = [lcg / raw for lcg, raw in zip(self.lcg, self.raw, strict=True)]
        return min(ratios), max(ratios)


def render(
    results: Sequence[Measurement], payload: int, repeats: int, wall: float, note: str
) -> str:
    lines = [
        "| benchmark | events | lcg events/s | raw sqlite3 events/s | lcg/raw time "
        "| paired range |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        low, high = r.paired
        lines.append(
            f"| {r.label} | {r.events:,} | {r.lcg_rate:,.0f} | {r.raw_rate:,.0f} "
            f"| **{r.ratio:.2f}x** | {low:.2f}-{high:.2f}x |"
        )
    header = [
        f"# lcg WAL benchmark ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs; "
        f"payload ~{payload} bytes; best of {repeats} repeats, lcg and raw interleaved; "
        f"whole run {wall:.0f} s.",
        "",
        "lcg/raw time = lcg seconds / raw sqlite3 seconds for the same events (best repeat "
        "of each); paired range = the ratio repeat by repeat.",
        "",
    ]
    return "\n".join([*header, *lines, "", note, ""])


# -- main -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    events: int
    single: int
    batched: int
    batch: int
    fill_batch: int
    repeats: int
    out: Path
    profile_out: Path | None


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=100_000, help="events replayed (c)")
    parser.add_argument("--single", type=int, default=2_000, help="single appends (a)")
    parser.add_argument("--batched", type=int, default=20_000, help="batched appends (b)")
    parser.add_argument("--batch", type=int, default=100, help="events per commit (b)")
    parser.add_argument("--fill-batch", type=int, default=1_000, help="events per commit (c)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats per measurement")
    parser.add_argument("--out", type=Path, default=RESULTS / "wal.md")
    parser.add_argument(
        "--profile-out", type=Path, default=RESULTS / "replay-profile.txt", help="cProfile text"
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled runs")
    args = parser.parse_args(argv)
    return Options(
        events=args.events,
        single=args.single,
        batched=args.batched,
        batch=args.batch,
        fill_batch=args.fill_batch,
        repeats=args.repeats,
        out=args.out,
        profile_out=None if args.no_profile else args.profile_out,
    )


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_single(options: Options, body: str) -> Measurement:
    lcg: list[float] = []
    raw: list[float] = []
    for repeat in range(options.repeats):
        with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
            raw.append(raw_single(Path(tmp), options.single, body))
        with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
            lcg.append(lcg_single(Path(tmp), options.single, body))
        log(f"a. single appends, repeat {repeat + 1}: lcg {lcg[-1]:.2f} s, raw {raw[-1]:.2f} s")
    return Measurement("a. single appends (1 commit each)", options.single, tuple(lcg), tuple(raw))


def bench_batched(options: Options, body: str) -> Measurement:
    lcg: list[float] = []
    raw: list[float] = []
    for repeat in range(options.repeats):
        with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
            raw.append(raw_batched(Path(tmp), options.batched, options.batch, body))
        with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
            lcg.append(lcg_batched(Path(tmp), options.batched, options.batch, body))
        log(f"b. batched appends, repeat {repeat + 1}: lcg {lcg[-1]:.2f} s, raw {raw[-1]:.2f} s")
    label = f"b. batched appends ({options.batch} per commit)"
    return Measurement(label, options.batched, tuple(lcg), tuple(raw))


def bench_replay(options: Options, body: str) -> tuple[list[Measurement], str | None]:
    count = options.events
    full: list[float] = []
    emptied: list[float] = []
    raw: list[float] = []
    profile = None
    with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
        root = Path(tmp)
        ws = open_workspace(root / "ws")
        try:
            start = time.perf_counter()
            append_batches(ws, count, options.fill_batch, body)
            log(f"c. filled {count:,} events in {time.perf_counter() - start:.1f} s")
            ddl = graph_episodes_ddl(ws)
            for repeat in range(options.repeats):
                target = root / f"raw-replay-{repeat}.sqlite"
                raw.append(raw_replay(ws.settings.wal_path, target, ddl, count))
                full.append(lcg_rebuild(ws, count))
                emptied.append(lcg_rebuild_emptied(ws, count))
                log(
                    f"c. replay, repeat {repeat + 1}: lcg full {full[-1]:.2f} s, "
                    f"lcg emptied {emptied[-1]:.2f} s, raw {raw[-1]:.2f} s"
                )
            if options.profile_out is not None:
                profile = profile_rebuild(ws, count)
        finally:
            ws.close()
        if profile is not None:
            appends = profile_batched(root / "profiled", options.batched, options.batch, body)
            profile = f"{profile}\n\n{appends}"
    results = [
        Measurement("c. full rebuild (reset + replay)", count, tuple(full), tuple(raw)),
        Measurement("c'. rebuild of an emptied group", count, tuple(emptied), tuple(raw)),
    ]
    return results, profile


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    began = time.perf_counter()
    body, payload = make_body()
    log(f"payload: {payload} bytes per EpisodeAdded")
    results = [bench_single(options, body), bench_batched(options, body)]
    replay, profile = bench_replay(options, body)
    results.extend(replay)
    wall = time.perf_counter() - began
    note = (
        "Baselines: (a, b) raw sqlite3 table (id, version, topic, state) WITHOUT ROWID, WAL, "
        "synchronous=NORMAL, one orjson payload per row; (c) plain sqlite3 reading the same "
        "rows from lcg's WAL, orjson-decoding each state and inserting one row per event into "
        "a table with lcg's episodes schema, in one transaction."
    )
    report = render(results, payload, options.repeats, wall, note)
    print(report)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(report, encoding="utf-8")
    log(f"wrote {options.out}")
    if profile is not None and options.profile_out is not None:
        options.profile_out.parent.mkdir(parents=True, exist_ok=True)
        options.profile_out.write_text(profile, encoding="utf-8")
        log(f"wrote {options.profile_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
