"""Shared by bench_recall's two halves: options, the framed texts a derive embeds, cache fill."""

from __future__ import annotations

import argparse
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.search_common import log
from lcg.domain.memory.text import call_text, embedding_text
from lcg.interfaces.config import Settings
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import CountingEmbedder

AGENT = "bench-recall"
RECALL_TOP_K = 10  # the quality half asks lambo_recall for the top_k


@dataclass(frozen=True, slots=True)
class RecallOptions:
    quality: bool
    latency: bool
    data: Path
    cache: Path
    sizes: tuple[int, ...]
    queries: int
    repeats: int
    contradicted: float  # the share of a session's concepts contradicted (latency)
    quality_out: Path
    latency_out: Path


def framed(content: str) -> str:
    """The text a one-concept lambo_derive embeds its concept as (the item, ` — `, the call)."""
    return embedding_text(content, call_text([content]))


def fill_cache(
    directory: Path, texts: Sequence[str], label: str, *, part: int = 0, parts: int = 1
) -> tuple[int, float]:
    """Embed whatever of `texts` the workspace's cache lacks, before anything is timed.

    The same texts the product embeds (the framed concept texts), through the same cache
    class and model, in chunks of 2,000 taken in the texts' own order, so that a fill cut
    short has done a prefix (a smaller size's texts); the model sorts each chunk by length,
    so a batch of 32 is padded to about its own length. `part` of `parts`: this process
    fills every `parts`-th chunk, so that several processes can fill one cache side by side
    (SQLite's WAL takes their commits one at a time). Returns how many texts went through
    the model and the seconds taken.
    """
    settings = Settings(workspace=directory)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    model = CountingEmbedder(MiniLmEmbedder(threads=settings.embed_threads))
    cache = EmbeddingCache(settings.embeddings_path, model)
    ordered = list(dict.fromkeys(texts))
    start = time.perf_counter()
    try:
        chunk = 2_000
        for index, offset in enumerate(range(0, len(ordered), chunk)):
            if index % parts != part:
                continue
            cache.embed(ordered[offset : offset + chunk])  # committed chunk by chunk
            if model.texts:
                rate = model.texts / (time.perf_counter() - start)
                log(
                    f"  {label} cache fill: {min(offset + chunk, len(ordered)):,}/"
                    f"{len(ordered):,} texts, {model.texts:,} through the model ({rate:.1f}/s)"
                )
    finally:
        cache.close()
    return model.texts, time.perf_counter() - start


def fill_part(value: str) -> tuple[int, int]:
    """`--fill-only PART/PARTS` (argparse's type): this process's share of a cache fill that
    several processes run side by side, each every PARTS-th chunk from PART (0-based)."""
    try:
        part, parts = (int(n) for n in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r}: expected PART/PARTS, e.g. 0/2") from None
    if not 0 <= part < parts:
        raise argparse.ArgumentTypeError(f"{value!r}: PART must be 0 .. PARTS - 1")
    return part, parts


def copy_cache(source: Path, target: Path) -> None:
    """Give `target` the embedding cache of `source`: SQLite's backup, or, when it has a cache
    already (an earlier run of a smaller size), the rows it lacks (the rows carry their own
    checksums, so they are copied as they are)."""
    into = Settings(workspace=target).embeddings_path
    if into.exists():
        with sqlite3.connect(str(into)) as dst:
            dst.execute(
                "ATTACH DATABASE ? AS source", (str(Settings(workspace=source).embeddings_path),)
            )
            dst.execute("INSERT OR IGNORE INTO main.embeddings SELECT * FROM source.embeddings")
            dst.commit()
            dst.execute("DETACH DATABASE source")
        return
    into.parent.mkdir(parents=True, exist_ok=True)
    with (
        sqlite3.connect(str(Settings(workspace=source).embeddings_path)) as src,
        sqlite3.connect(str(into)) as dst,
    ):
        src.backup(dst)
    into.chmod(0o600)
