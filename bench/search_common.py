"""Shared by the search benchmark's two halves: paths, logging, workspaces, ingest, Options."""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path

from lcg.commands import handlers
from lcg.domain import passages as passage_split
from lcg.domain.commands import AddEpisode
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.domain.rules import EpisodeSource
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
CACHE = BENCH.parent / ".bench-cache"  # the repository root's .bench-cache/ (git-ignored)
NAMESPACE = uuid.UUID("6f1c2a52-7f0e-4d38-9a55-3f1f0c6a9b10")  # episode uuids: uuid5(NS, key)
INGEST_BATCH = 500


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def require(condition: bool, message: str) -> None:
    """Fail loudly if a run did not do the work it claims to measure."""
    if not condition:
        raise RuntimeError(message)


def reset_workspace(directory: Path) -> None:
    """Delete a bench workspace's WAL, graph and FAISS files, keeping its embedding cache."""
    settings = Settings(workspace=directory)
    keep = settings.embeddings_path.name  # embeddings.sqlite and its -wal / -shm files
    if not settings.state_dir.is_dir():
        return
    for path in settings.state_dir.iterdir():
        if path.name.startswith(keep):
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def episode_uuid(group: str, name: str) -> EpisodeUuid:
    return EpisodeUuid(str(uuid.uuid5(NAMESPACE, f"{group}/{name}")))


@dataclass(frozen=True, slots=True)
class Item:
    """One episode to ingest."""

    group: GroupId
    name: str
    body: str
    time: datetime
    source: EpisodeSource  # "message" (chat turns: indexed with their neighbours' words) or "text"


def ingest(ws: Workspace, items: Sequence[Item], label: str, batch: int = INGEST_BATCH) -> float:
    """Add the items as episodes through Writer.execute_many, `batch` per WAL commit; seconds.

    The vector index follows each commit in the same call (the embedding of new text through
    the cache, then FAISS add), so the time includes embedding.
    """
    start = time.perf_counter()
    step = max(batch, len(items) // 10)
    for offset in range(0, len(items), batch):
        chunk = items[offset : offset + batch]
        now = ws.clock()
        commands = [
            AddEpisode(
                group_id=item.group,
                name=item.name,
                body=item.body,
                source=item.source,
                source_description="REALTALK",
                reference_time=item.time,
                new_uuid=episode_uuid(item.group, item.name),
                now=now,
            )
            for item in chunk
        ]
        outcomes = ws.writer.execute_many(
            [partial(handlers.add_episode, command=command) for command in commands]
        )
        failed = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
        if failed:
            raise failed[0]
        done = offset + len(chunk)
        if done % step < batch or done == len(items):
            elapsed = time.perf_counter() - start
            log(f"  {label}: {done:,}/{len(items):,} episodes, {elapsed:.1f} s")
    ws.settle()  # every passage embedded and indexed before the clock stops (ADR 0022)
    return time.perf_counter() - start


def stored_counts(ws: Workspace, groups: Sequence[str]) -> tuple[int, int]:
    """Episodes and passage documents stored for the groups (graph and FTS rows)."""
    marks = ",".join("?" * len(groups))
    conn = ws.reader()
    episodes = conn.execute(
        f"SELECT COUNT(*) FROM episodes WHERE group_id IN ({marks})", list(groups)
    ).fetchone()[0]
    docs = conn.execute(
        f"SELECT COUNT(*) FROM text_docs WHERE kind='passage' AND group_id IN ({marks})",
        list(groups),
    ).fetchone()[0]
    return int(episodes), int(docs)


def passage_count(body: str) -> int:
    return len(passage_split.split(body))


@dataclass(frozen=True, slots=True)
class Options:
    quality: bool
    latency: bool
    data: Path
    cache: Path
    sizes: tuple[int, ...]
    queries: int
    repeats: int
    num_results: int
    cold_size: int
    source: EpisodeSource
    profile: bool
    quality_out: Path
    latency_out: Path
    profile_out: Path
    extraction: bool = False  # quality: also a workspace built through knowledge_process_chunk
    limit: int | None = None  # quality: only the first `limit` conversations (a smoke run)


def add_stage_flags(parser: argparse.ArgumentParser, stages: str) -> None:
    """`--stages` and `--no-build` of bench_search and bench_recall: run the stage bench
    `stages` (bench.search_stages, bench.recall_stages) with the same --data and --cache."""
    parser.add_argument(
        "--stages",
        action="store_true",
        help=f"each [retrieval] stage on vs off, per category, with paired bootstrap 95%% "
        f"intervals (python -m {stages}: its own workspace and results file)",
    )
    parser.add_argument(
        "--no-build", action="store_true", help="--stages: reuse the stage bench's workspace"
    )


def stage_argv(args: argparse.Namespace) -> list[str]:
    """The stage bench's arguments for what `add_stage_flags`' parser read."""
    return [
        "--data",
        str(args.data),
        "--cache",
        str(args.cache),
        *(["--no-build"] if args.no_build else []),
    ]
