"""What the checks on derivable files cost at open, on a workspace of 100,000 episodes.

    .venv/bin/python -m bench.bench_integrity [--episodes 100000] [--repeats 3]

Fills a group with episodes (bench_wal's 500-byte EpisodeAdded, 1,000 per batch, the hashing
embedder: the vectors' content does not matter here), closes the workspace (FAISS and scorer
files written), then times, best of `--repeats`: `PRAGMA quick_check` and
`PRAGMA integrity_check` on graph.sqlite and embeddings.sqlite, the sha256 of each checkpoint
file, and a whole open of the workspace (which runs the checks it keeps). ADR 0020 quotes it.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

import numpy as np

from bench.bench_wal import append_batches, make_body, open_workspace
from lcg.domain.events import EventCodec
from lcg.domain.ids import GroupId
from lcg.projections.embedding.cache import EmbeddingCache, row_checksum, text_hash
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.wal.store import EventLog


def best(repeats: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def pragma(path: Path, check: str) -> Callable[[], object]:
    def run() -> object:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            rows = conn.execute(f"PRAGMA {check}").fetchall()
        finally:
            conn.close()
        if rows != [("ok",)]:
            raise RuntimeError(f"{path}: {rows[:3]}")
        return rows

    return run


def digest(path: Path) -> Callable[[], object]:
    return lambda: hashlib.sha256(path.read_bytes()).digest()


def filled_cache(path: Path, embedder: HashingEmbedder, count: int) -> list[str]:
    """A cache of `count` distinct texts (random unit vectors: their values do not matter)."""
    texts = [f"cached text number {n}" for n in range(count)]
    cache = EmbeddingCache(path, embedder)
    key, dim = embedder.contract.key, embedder.contract.dim
    vectors = np.random.default_rng(0).standard_normal((count, dim)).astype(np.float32)
    rows = []
    for text, vector in zip(texts, vectors, strict=True):
        digest, blob = text_hash(text), vector.tobytes()
        rows.append((key, digest, blob, row_checksum(key, digest, blob)))
    cache._store(rows)  # filled without running a model
    cache.close()
    return texts


def wal_checks(path: Path, repeats: int) -> list[tuple[str, int, float]]:
    """The WAL check a writer's open runs (ADR 0049): every event against its checksum; and
    once, for a WAL from before checksums, every event decoded and its checksum stored."""
    group = GroupId("bench")

    def timed_check(*, forget: bool) -> tuple[int, float]:
        if forget:  # the WAL as a version before checksums left it
            with closing(sqlite3.connect(path)) as conn:
                conn.execute("DROP TABLE lcg_event_sums")
                conn.commit()
        log = EventLog(path, EventCodec())
        try:
            head = log.head(group)
            start = time.perf_counter()
            if log.check(group, head, seal=forget) is not None:
                raise RuntimeError(f"{path} is damaged")
            return head, time.perf_counter() - start
        finally:
            log.close()

    size = path.stat().st_size
    head, _ = timed_check(forget=False)
    checked = min(timed_check(forget=False)[1] for _ in range(repeats))
    sealed = min(timed_check(forget=True)[1] for _ in range(repeats))
    after = min(timed_check(forget=False)[1] for _ in range(repeats))
    return [
        (f"WAL: {head:,} events checked against their checksums", size, checked),
        (f"WAL from before checksums: {head:,} events decoded and sealed (once)", size, sealed),
        ("WAL: the same check after sealing", size, after),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(argv)
    embedder = HashingEmbedder()
    body, _ = make_body()
    with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
        root = Path(tmp) / "ws"
        ws = open_workspace(root, embedder)
        try:
            append_batches(ws, options.episodes, 1_000, body)
        finally:
            ws.close()
        settings = ws.settings
        rows: list[tuple[str, int, float]] = []
        for path in (settings.graph_path, settings.embeddings_path):
            size = path.stat().st_size
            for check in ("quick_check", "integrity_check"):
                rows.append(
                    (f"{path.name} {check}", size, best(options.repeats, pragma(path, check)))
                )
        for path in [*settings.vectors_dir.rglob("*.faiss"), settings.text_scorer_path]:
            rows.append(
                (f"{path.name} sha256", path.stat().st_size, best(options.repeats, digest(path)))
            )

        rows += wal_checks(settings.wal_path, options.repeats)
        cache_path = Path(tmp) / "embeddings.sqlite"
        texts = filled_cache(cache_path, embedder, options.episodes)
        size = cache_path.stat().st_size
        for check in ("quick_check", "integrity_check"):
            rows.append(
                (
                    f"embedding cache of {len(texts):,} vectors: {check}",
                    size,
                    best(options.repeats, pragma(cache_path, check)),
                )
            )
        cache = EmbeddingCache(cache_path, embedder)
        try:
            seconds = best(options.repeats, lambda: cache.embed(texts))
        finally:
            cache.close()
        rows.append((f"reading {len(texts):,} cached vectors, checksums verified", size, seconds))

        def reopen() -> object:
            open_workspace(root, embedder).close()
            return None

        rows.append(("whole open (lease, checks, loads, syncs)", 0, best(options.repeats, reopen)))
    print(f"{options.episodes:,} episodes, best of {options.repeats}")
    print("| check | file bytes | seconds |")
    print("|---|---:|---:|")
    for name, size, seconds in rows:
        print(f"| {name} | {size:,} | {seconds:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
