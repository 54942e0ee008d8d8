"""Benchmark `knowledge_status` as the number of groups grows, against raw sqlite3.

Run from the repository root:

    .venv/bin/python -m bench.bench_status [--groups 10 1000 4000] [--repeats 5]

Each size gets a fresh workspace holding one episode per group (written in batches, untimed).
lcg: `operations.dispatch(app, "knowledge_status", {})`, the whole tool (counts, every
group's WAL head, applied seq, hydration and pin). Raw sqlite3, the same run: the same
numbers read with plain sqlite3 from lcg's two files, one statement per table (the WAL
heads through `lcg_groups`, every position row, the three counts). Best of `--repeats`.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.bench_wal import open_workspace, require
from lcg.commands import handlers
from lcg.domain.commands import AddEpisode
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder

BATCH = 500


def fill(ws: Workspace, groups: int) -> None:
    now = datetime(2026, 12, 1, tzinfo=UTC)
    commands = [
        AddEpisode(
            GroupId(f"g{i:05d}"), "e", "one episode", "text", "", now, EpisodeUuid(f"u{i}"), now
        )
        for i in range(groups)
    ]
    for start in range(0, groups, BATCH):
        chunk = commands[start : start + BATCH]
        ws.writer.execute_many([partial(handlers.add_episode, command=c) for c in chunk])


def raw_status(directory: Path) -> int:
    """The same numbers as knowledge_status, one plain statement per table."""
    wal = sqlite3.connect(directory / ".lcg" / "wal.sqlite")
    graph = sqlite3.connect(directory / ".lcg" / "graph.sqlite")
    try:
        heads = dict(
            wal.execute(
                "SELECT g.group_id, (SELECT MAX(e.originator_version) FROM stored_events e"
                " WHERE e.originator_id = g.stream_id) FROM lcg_groups g"
            ).fetchall()
        )
        positions: dict[str, list[int]] = {}
        for group, position in graph.execute("SELECT group_id, position FROM projection_positions"):
            positions.setdefault(group, []).append(position)
        graph.execute(
            "SELECT (SELECT COUNT(*) FROM entities), (SELECT COUNT(*) FROM relationships),"
            " (SELECT COUNT(*) FROM episodes)"
        ).fetchone()
        return sum(1 for group in heads if min(positions.get(group, [0])) == heads[group])
    finally:
        wal.close()
        graph.close()


def best(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(groups: int, repeats: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        ws = open_workspace(directory, HashingEmbedder())
        try:
            fill(ws, groups)
            app = App(ws)
            status = operations.dispatch(app, "knowledge_status", {})
            require(len(status["wal_groups"]) == groups, "status did not see every group")
            require(raw_status(directory) == groups, "raw baseline did not see every group")
            lcg = best(lambda: operations.dispatch(app, "knowledge_status", {}), repeats)
            raw = best(lambda: raw_status(directory), repeats)
        finally:
            ws.close()
    return lcg, raw


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[10, 1_000, 4_000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print("| groups | lcg knowledge_status | raw sqlite3, same numbers | lcg/raw |")
    print("|---:|---:|---:|---:|")
    for groups in args.groups:
        lcg, raw = measure(groups, args.repeats)
        print(f"| {groups:,} | {lcg * 1000:.1f} ms | {raw * 1000:.1f} ms | {lcg / raw:.1f}x |")


if __name__ == "__main__":
    main()
