"""Benchmark `lcg replay` through the CLI against raw sqlite3 + FTS5 doing the same inserts.

Run from the repository root:

    .venv/bin/python -m bench.bench_replay_cli [--events 6000] [--repeats 5]
        [--base DIR] [--out bench/results/replay-cli.md]

A workspace is filled the way a user fills it: `lcg serve` runs as a child process and one
client sends `knowledge_add_episode`, `knowledge_assert_entity` and
`knowledge_assert_relationship` in turn over the socket (`--events` in all), then the service
stops. Then, repeat by repeat, interleaved: `lcg --version` (start-up) and `lcg replay --group
bench --force-clear --json` (a full rebuild of the group: open, replay, the derived indexes
brought in line, close) as child processes of this code, and the same of `--base` (another
checkout of lcg run with this venv, its folders first on PYTHONPATH: the code before a change),
and the raw baseline (bench/replay_raw.py) replaying the same WAL rows into fresh tables in
this process. Reported per side: the best repeat's replay minus the best start-up, over the
best raw replay, and the range of the repeat-by-repeat ratios. Every replay must leave the same
projection rows (a digest of the graph, text and catalog tables, ids aside) and as many FAISS
vectors as catalog rows. Workspaces live in `tempfile.TemporaryDirectory`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench import replay_raw
from bench.checkout import checkout_env, where_lcg_is
from bench.socket_service import Client, start_service
from lcg.interfaces.config import Settings

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
LCG = Path(sys.executable).parent / "lcg"
GROUP = "bench"
STARTS = 3  # `lcg --version` runs per repeat: start-up varies by 0.1 s from run to run
# what a replay leaves, ids aside (vec_ids grow with every replay: AUTOINCREMENT)
DIGESTED = (
    "SELECT uuid, group_id, name, content, source, reference_time, seq FROM episodes ORDER BY seq",
    "SELECT uuid, name, name_key, labels, summary, attributes, seq FROM entities ORDER BY seq",
    "SELECT uuid, source_uuid, target_uuid, name, fact, seq FROM relationships ORDER BY seq",
    "SELECT doc_id, kind, owner_uuid, part, seq FROM text_docs ORDER BY doc_id",
    "SELECT rowid, content, context FROM fts_passages ORDER BY rowid",
    "SELECT rowid, name, summary FROM fts_entities ORDER BY rowid",
    "SELECT rowid, name, fact FROM fts_edges ORDER BY rowid",
    "SELECT embedding, owner_uuid, part, text, seq FROM vector_catalog ORDER BY vec_id",
)


@dataclass(frozen=True, slots=True)
class Side:
    """One checkout of lcg, run as `python <venv>/bin/lcg` with its folders on PYTHONPATH."""

    label: str
    root: Path

    def env(self) -> dict[str, str]:
        env = checkout_env(self.root)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user runs it: bytecode cached
        return env

    def run(self, *args: str) -> float:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, str(LCG), *args],
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            check=True,
        )
        return time.perf_counter() - started

    def check_code(self) -> None:
        """The side's own code is what runs (PYTHONPATH before the venv's editable install)."""
        found = where_lcg_is(self.env())
        if not Path(found).resolve().is_relative_to(self.root.resolve()):
            raise RuntimeError(f"{self.label}: runs {found}, not the code under {self.root}")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fill(workspace: Path, events: int, side: Side) -> None:
    """`events` writes through `lcg serve`: an episode, an entity, a relationship to the
    previous entity (the first entity's partner is a lone entity), in turn."""
    proc = start_service(workspace, side.env(), (sys.executable, str(LCG)))
    try:
        client = Client(Settings(workspace).socket_path)
        writes = [
            ("knowledge_add_episode", _episode),
            ("knowledge_assert_entity", _entity),
            ("knowledge_assert_relationship", _relationship),
        ]
        for index in range(events):
            method, params = writes[index % 3]
            client.call(method, {**params(index // 3), "group_id": GROUP})
        head = client.call("knowledge_status", {})["wal_groups"][GROUP]["max_seq"]
        client.close()
        if head != events:
            raise RuntimeError(f"fill: the WAL holds {head} events, not {events}")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(300)  # the follower's backlog is embedded before the service exits


def _episode(i: int) -> dict[str, Any]:
    body = f"Note {i}: release {i % 97} of the runner cache was rolled back after alert {i}."
    return {"name": f"note {i}", "episode_body": body}


def _entity(i: int) -> dict[str, Any]:
    return {"name": f"Entity {i}", "summary": f"entity {i} of the bench", "labels": ["Thing"]}


def _relationship(i: int) -> dict[str, Any]:
    target = f"Entity {i - 1}" if i else "Entity 0"
    fact = f"Entity {i} follows {target}"
    return {
        "source_name": f"Entity {i}",
        "target_name": target,
        "predicate": "FOLLOWS",
        "fact": fact,
    }


def digest(graph: Path) -> tuple[str, int]:
    """A digest of what the replay left (ids aside), and its catalog rows."""
    conn = sqlite3.connect(f"file:{graph}?mode=ro", uri=True)
    try:
        hasher = hashlib.sha256()
        for query in DIGESTED:
            for row in conn.execute(query):
                hasher.update(orjson.dumps(list(row)))
        catalog = int(conn.execute("SELECT COUNT(*) FROM vector_catalog").fetchone()[0])
    finally:
        conn.close()
    return hasher.hexdigest(), catalog


def faiss_vectors(settings: Settings) -> int:
    """Vectors in the group's FAISS files, as the replay's close left them."""
    from lcg.projections.embedding.minilm import CONTRACT  # untimed: loads faiss
    from lcg.projections.vectors import files

    total = 0
    for path in settings.vectors_dir.rglob("*.faiss"):
        now = datetime.now(UTC)
        index = files.load(path, generation(settings.graph_path), CONTRACT.dim, now).index
        if index is None:
            raise RuntimeError(f"{path}: not a vector index of this graph")
        total += int(index.ntotal)
    return total


def generation(graph: Path) -> str:
    conn = sqlite3.connect(f"file:{graph}?mode=ro", uri=True)
    try:
        return str(conn.execute("SELECT value FROM text_meta WHERE key='generation'").fetchone()[0])
    finally:
        conn.close()


@dataclass
class Times:
    version: list[float]
    replay: list[float]

    def net(self, repeat: int) -> float:
        return self.replay[repeat] - self.version[repeat]


def measure(args: argparse.Namespace) -> str:
    sides = [Side("after (this checkout)", ROOT)]
    if args.base is not None:
        sides.insert(0, Side(f"before ({args.base.name})", args.base))
    for side in sides:
        side.check_code()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "ws"
        settings = Settings(workspace)
        say(f"filling {args.events} events through lcg serve ...")
        started = time.perf_counter()
        fill(workspace, args.events, sides[-1])
        say(f"filled in {time.perf_counter() - started:.1f} s")
        ddl = replay_raw.read_model_ddl(settings.graph_path)
        replay = ["replay", "--group", GROUP, "--force-clear", "--json"]
        replay += ["--workspace", str(workspace)]
        times = {side.label: Times([], []) for side in sides}
        raw: list[float] = []
        expected: tuple[str, int] | None = None
        for side in sides:  # warm-up: bytecode written, files in the page cache
            side.run("--version")
            side.run(*replay)
        for repeat in range(args.repeats):
            for side in sides:
                times[side.label].version.append(min(side.run("--version") for _ in range(STARTS)))
                times[side.label].replay.append(side.run(*replay))
                seen = digest(settings.graph_path)
                expected = expected or seen
                if seen != expected:
                    raise RuntimeError(f"{side.label}: the replay left other rows than before")
                vectors = faiss_vectors(settings)
                if vectors != seen[1]:
                    raise RuntimeError(f"{side.label}: {vectors} vectors for {seen[1]} rows")
            target = Path(tmp) / f"raw-{repeat}.sqlite"
            seconds, catalog = replay_raw.replay(settings.wal_path, target, GROUP, ddl)
            if expected is None or catalog != expected[1]:
                raise RuntimeError("raw replay: other catalog rows than lcg's")
            raw.append(seconds)
            say(
                f"repeat {repeat + 1}: raw {seconds:.3f} s, "
                + ", ".join(
                    f"{label} {t.replay[-1]:.2f} - {t.version[-1]:.2f} s"
                    for label, t in times.items()
                )
            )
    return report(args, times, raw)


def report(args: argparse.Namespace, times: dict[str, Times], raw: list[float]) -> str:
    best_raw = min(raw)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"`lcg replay` of {args.events:,} socket-written events (episodes, entities,"
        f" relationships in turn) vs raw sqlite3 + FTS5, {datetime.now(UTC):%Y-%m-%d},"
        f" Python {platform.python_version()}, SQLite {sqlite3.sqlite_version},"
        f" {args.repeats} repeats, load average at the end {load}.",
        "",
        "| code | `lcg --version` s | `lcg replay` s | replay - start-up s | raw s"
        " | **lcg/raw** | paired range |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, t in times.items():
        net = min(t.replay) - min(t.version)
        paired = [t.net(i) / raw[i] for i in range(len(raw))]
        lines.append(
            f"| {label} | {min(t.version):.2f} | {min(t.replay):.2f} | {net:.3f} |"
            f" {best_raw:.3f} | **{net / best_raw:.1f}x** |"
            f" {min(paired):.1f}-{max(paired):.1f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=6_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--base", type=Path, default=None, help="a checkout of the code before")
    parser.add_argument("--out", type=Path, default=RESULTS / "replay-cli.md")
    args = parser.parse_args(argv)
    table = measure(args)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
