"""Benchmark lcg's WAL appends and replay, each as a ratio to raw sqlite3 doing the same work.

Run from the repository root:

    .venv/bin/python -m bench.bench_wal [--events 100000] [--out bench/results/wal.md]

Every lcg number is measured in the same process and run as its raw `sqlite3` baseline, the
two interleaved repeat by repeat: the machines are shared and noisy, so the ratio is the
result and the absolute rates are context. The baselines (bench/wal_raw.py) write the same
rows lcg's projections write (episodes, FTS5, vector catalog) and, for appends, embed with
the same model object and add to FAISS. See bench/README.md for what each row measures.
"""

from __future__ import annotations

import cProfile
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

import orjson

from bench import wal_raw
from bench.wal_report import Measurement, Options, parse_args, profile_report, render
from lcg.commands import handlers
from lcg.domain.commands import AddEpisode
from lcg.domain.events import EpisodeAdded, EventCodec
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import Embedder
from lcg.projections.graph import schema
from lcg.projections.runner import transaction
from lcg.projections.vectors import catalog

GROUP = GroupId("bench")
SOURCE_DESCRIPTION = "bench_wal.py"
PAYLOAD_BYTES = 500  # the size the issue names for a knowledge_add_episode write


class SteppingClock:
    """A deterministic clock: one millisecond later at every reading."""

    def __init__(self) -> None:
        self.now = datetime(2026, 11, 30, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


def episode_name(index: int) -> str:
    return f"episode-{index:07d}"


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


def open_workspace(directory: Path, embedder: Embedder) -> Workspace:
    return Workspace(
        Settings(workspace=directory), command="bench", clock=SteppingClock(), embedder=embedder
    ).open()


def require(condition: bool, message: str) -> None:
    """Fail loudly if a run did not do the work it claims to time."""
    if not condition:
        raise RuntimeError(message)


def episode_count(ws: Workspace) -> int:
    row = ws.runner.conn.execute("SELECT COUNT(*) FROM episodes WHERE group_id=?", (GROUP,))
    return int(row.fetchone()[0])


@dataclass(frozen=True, slots=True)
class Work:
    """What every measurement shares: the body, the one model object, lcg's read-model DDL."""

    body: str
    embedder: Embedder
    ddl: tuple[str, ...]

    @property
    def raw_spec(self) -> tuple[str, str, str, tuple[str, ...]]:
        return (GROUP, self.body, SOURCE_DESCRIPTION, self.ddl)


def read_model_ddl() -> tuple[str, ...]:
    """lcg's DDL of the episodes and vector_catalog tables, from lcg's own install code."""
    conn = sqlite3.connect(":memory:")
    try:
        schema.install(conn)
        catalog.install(conn)
        return tuple(wal_raw.read_model_ddl(conn))
    finally:
        conn.close()


# -- a. single appends ------------------------------------------------------------------------


def lcg_single(directory: Path, count: int, work: Work) -> float:
    """`count` knowledge_add_episode calls through operations.dispatch, one WAL commit each."""
    ws = open_workspace(directory, work.embedder)
    try:
        app = App(ws)
        start = time.perf_counter()
        for index in range(count):
            operations.dispatch(
                app,
                "knowledge_add_episode",
                {
                    "name": episode_name(index),
                    "episode_body": work.body,
                    "source_description": SOURCE_DESCRIPTION,
                    "group_id": GROUP,
                },
            )
        ws.settle()  # the same work as the baseline: every passage embedded and indexed
        elapsed = time.perf_counter() - start
        require(ws.log.head(GROUP) == count, "single appends: WAL head != events written")
        require(episode_count(ws) == count, "single appends: episodes != events written")
        require(ws.vectors.count() == count, "single appends: vectors != events written")
    finally:
        ws.close()
    return elapsed


def raw_appends(directory: Path, count: int, batch: int, work: Work) -> float:
    return wal_raw.appends(
        directory, work.raw_spec, SteppingClock(), episode_name, count, batch, work.embedder
    )


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


def lcg_batched(directory: Path, count: int, batch: int, work: Work) -> float:
    ws = open_workspace(directory, work.embedder)
    try:
        start = time.perf_counter()
        append_batches(ws, count, batch, work.body)
        ws.settle()  # the same work as the baseline: every passage embedded and indexed
        elapsed = time.perf_counter() - start
        require(ws.log.head(GROUP) == count, "batched appends: WAL head != events written")
        require(episode_count(ws) == count, "batched appends: episodes != events written")
        require(ws.vectors.count() == count, "batched appends: vectors != events written")
    finally:
        ws.close()
    return elapsed


# -- c. full replay ---------------------------------------------------------------------------


def lcg_rebuild(ws: Workspace, count: int) -> float:
    """A full rebuild of the group: reset its projection rows, replay every event."""
    start = time.perf_counter()
    replayed = ws.runner.rebuild(GROUP, from_seq=0)
    elapsed = time.perf_counter() - start
    require(replayed == count, f"replay: {replayed} events replayed, expected {count}")
    require(episode_count(ws) == count, "replay: episodes != events replayed")
    fts = ws.runner.conn.execute("SELECT COUNT(*) FROM fts_passages").fetchone()[0]
    require(fts == count, "replay: FTS5 rows != events replayed")
    return elapsed


def lcg_rebuild_emptied(ws: Workspace, count: int) -> float:
    """The same rebuild after the group's rows were deleted (untimed): replay cost alone."""
    with transaction(ws.runner.conn) as conn:
        for projection in ws.runner.projections:
            projection.reset(conn, GROUP)
    return lcg_rebuild(ws, count)


def profile_rebuild(ws: Workspace, count: int) -> str:
    """One full rebuild (reset + replay) under cProfile."""
    profiler = cProfile.Profile()
    profiler.enable()
    replayed = ws.runner.rebuild(GROUP, from_seq=0)
    profiler.disable()
    require(replayed == count, "profiled replay: wrong event count")
    return profile_report(f"one full rebuild of {count:,} events", profiler)


def profile_batched(directory: Path, count: int, batch: int, work: Work) -> str:
    """Batched appends (as in b) under cProfile, for comparison with the replay."""
    ws = open_workspace(directory, work.embedder)
    try:
        profiler = cProfile.Profile()
        profiler.enable()
        append_batches(ws, count, batch, work.body)
        profiler.disable()
        require(ws.log.head(GROUP) == count, "profiled appends: wrong event count")
    finally:
        ws.close()
    return profile_report(f"{count:,} batched appends, {batch} per commit", profiler)


def profile_single(directory: Path, count: int, work: Work) -> str:
    """Single appends (as in a) under cProfile."""
    ws = open_workspace(directory, work.embedder)
    try:
        app = App(ws)
        params = {"episode_body": work.body, "source_description": SOURCE_DESCRIPTION}
        profiler = cProfile.Profile()
        profiler.enable()
        for index in range(count):
            operations.dispatch(
                app,
                "knowledge_add_episode",
                {**params, "name": episode_name(index), "group_id": GROUP},
            )
        profiler.disable()
        require(ws.log.head(GROUP) == count, "profiled single appends: wrong event count")
    finally:
        ws.close()
    return profile_report(f"{count:,} single appends through operations.dispatch", profiler)


# -- main -------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_appends(options: Options, work: Work, batch: int) -> Measurement:
    """Rows a (batch 1, through dispatch) or b (through execute_many), interleaved with raw."""
    count = options.single if batch == 1 else options.batched
    row = "a. single appends" if batch == 1 else "b. batched appends"
    lcg: list[float] = []
    raw: list[float] = []
    for repeat in range(options.repeats):
        with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
            raw.append(raw_appends(Path(tmp), count, batch, work))
        with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
            if batch == 1:
                lcg.append(lcg_single(Path(tmp), count, work))
            else:
                lcg.append(lcg_batched(Path(tmp), count, batch, work))
        log(f"{row}, repeat {repeat + 1}: lcg {lcg[-1]:.2f} s, raw {raw[-1]:.2f} s")
    label = f"{row} ({'1 commit each' if batch == 1 else f'{batch} per commit'})"
    return Measurement(label, count, tuple(lcg), tuple(raw))


def bench_replay(options: Options, work: Work) -> tuple[list[Measurement], str | None]:
    count = options.events
    full: list[float] = []
    emptied: list[float] = []
    raw: list[float] = []
    profile = None
    with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
        root = Path(tmp)
        ws = open_workspace(root / "ws", work.embedder)
        try:
            start = time.perf_counter()
            append_batches(ws, count, options.fill_batch, work.body)
            log(f"c. filled {count:,} events in {time.perf_counter() - start:.1f} s")
            for repeat in range(options.repeats):
                target = root / f"raw-replay-{repeat}.sqlite"
                raw.append(wal_raw.replay(ws.settings.wal_path, target, GROUP, work.ddl, count))
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
            appends = profile_batched(root / "profiled", options.batched, options.batch, work)
            single = profile_single(root / "profiled-single", options.single, work)
            profile = f"{profile}\n\n{appends}\n\n{single}"
    results = [
        Measurement("c. full rebuild (reset + replay)", count, tuple(full), tuple(raw)),
        Measurement("c'. rebuild of an emptied group", count, tuple(emptied), tuple(raw)),
    ]
    return results, profile


NOTE = (
    "Both sides write the WAL row in one file and the read-model rows in another. lcg: "
    "the graph `episodes` row, the text projection's FTS5 row (+ text_docs, text_changes) "
    "and the `vector_catalog` row; after each commit (a, b) the in-memory BM25 scorer and the "
    "FAISS index follow (the passage embedded through lcg's embedding cache: the model runs "
    "once for the repeated body). Raw sqlite3 (bench/wal_raw.py): (a, b) WAL row(s) committed, "
    "then `episodes` + FTS5 (same table, columns, tokenizer) + `vector_catalog` rows with lcg's "
    "DDL committed, then the passage embedded with the same model object through an in-memory "
    "memo and added to a FAISS IndexIDMap2(IndexFlatIP); (c) the same rows read from lcg's WAL "
    "with plain sqlite3, orjson-decoded, and the three read-model rows inserted with "
    "`executemany` per page of 5,000, in one transaction (no reset)."
)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    began = time.perf_counter()
    body, payload = make_body()
    log(f"payload: {payload} bytes per EpisodeAdded")
    work = Work(body, MiniLmEmbedder(threads=1), read_model_ddl())
    work.embedder.embed([body])  # load the model before anything is timed
    results = [bench_appends(options, work, 1), bench_appends(options, work, options.batch)]
    replay, profile = bench_replay(options, work)
    results.extend(replay)
    wall = time.perf_counter() - began
    report = render(results, payload, options.repeats, wall, NOTE)
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
