"""The latency half of the search benchmark: ingest rate and search p50/p95 against baselines."""

from __future__ import annotations

import cProfile
import io
import pstats
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

from bench.latency_report import TARGET_P95_MS, IngestRow, LatencyResult, Timings, render_latency
from bench.realtalk import Conversation, load_realtalk
from bench.search_common import (
    Item,
    Options,
    episode_uuid,
    ingest,
    log,
    require,
    reset_workspace,
    stored_counts,
)
from lcg.domain import passages as passage_split
from lcg.domain.ids import GroupId
from lcg.domain.rules import EpisodeSource
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import CountingEmbedder
from lcg.projections.text import reader as text_reader
from lcg.projections.text.tables import TOKENIZER
from lcg.projections.vectors import catalog

LATENCY_GROUP = GroupId("bench-latency")


def synthetic_passages(bodies: Sequence[str], count: int, seed: int = 7) -> list[str]:
    """`count` distinct passages of 1-3 REALTALK turns each, at most one passage long."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        text = "\n".join(rng.choice(bodies) for _ in range(rng.randint(1, 3)))
        if len(text) > passage_split.MAX_PASSAGE or text in seen:
            continue
        seen.add(text)
        out.append(text)
    return out


def latency_items(texts: Sequence[str], source: EpisodeSource) -> list[Item]:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Item(LATENCY_GROUP, f"p{index:06d}", text, base + timedelta(seconds=index), source)
        for index, text in enumerate(texts)
    ]


def timed_ingest(directory: Path, items: Sequence[Item], run: str) -> tuple[IngestRow, Workspace]:
    """Reset the workspace (keeping its cache), ingest; the workspace is left open."""
    reset_workspace(directory)
    ws = Workspace(Settings(workspace=directory)).open()
    try:
        seconds = ingest(ws, items, f"{len(items):,} {run}")
        episodes, docs = stored_counts(ws, [LATENCY_GROUP])
        require(episodes == len(items) == docs, "latency ingest: episodes/passages stored")
        require(ws.vectors.count() == docs, "latency ingest: vectors != passages")
    except BaseException:
        ws.close()
        raise
    return IngestRow(len(items), run, ws.embedder.texts, seconds), ws


def fill_cache(
    directory: Path, texts: Sequence[str], *, part: int = 0, parts: int = 1
) -> tuple[int, float]:
    """Embed whatever of `texts` the workspace's cache lacks (untimed by the tables).

    The texts go to the model shortest first, so each batch of 32 is padded to about its own
    length (in arrival order a batch is padded to its longest text: 2.4x slower here).
    `part` of `parts`: this process fills every `parts`-th chunk of 2,000, as
    `recall_common.fill_cache` does, so that several processes fill one cache side by side.
    Returns how many texts went through the model, and the seconds taken.
    """
    settings = Settings(workspace=directory)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    model = CountingEmbedder(MiniLmEmbedder(threads=settings.embed_threads))
    cache = EmbeddingCache(settings.embeddings_path, model)
    # What the vector catalog embeds: the passages of each body (stripped, split if long).
    pieces = dict.fromkeys(piece for text in texts for piece in passage_split.split(text))
    ordered = sorted(pieces, key=len)
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
                    f"  cache fill: {min(offset + chunk, len(ordered)):,}/{len(ordered):,} "
                    f"texts, {model.texts:,} through the model ({rate:.1f}/s)"
                )
    finally:
        cache.close()
    return model.texts, time.perf_counter() - start


class Baselines:
    """Raw FAISS IndexFlatIP and a raw FTS5 table over the same passages, built in `tmp`."""

    def __init__(self, ws: Workspace, texts: Sequence[str], tmp: Path) -> None:
        vectors = ws.vectors.cache.embed(list(texts))  # all cached after the ingest
        self.flat = faiss.IndexFlatIP(vectors.shape[1])
        self.flat.add(np.ascontiguousarray(vectors))
        self.fts = sqlite3.connect(str(tmp / f"fts-{len(texts)}.sqlite"), isolation_level=None)
        self.fts.execute("PRAGMA journal_mode=WAL")
        self.fts.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, tokenize='{TOKENIZER}')")
        self.fts.execute("BEGIN")
        self.fts.executemany(
            "INSERT INTO t (rowid, content) VALUES (?, ?)", enumerate(texts, start=1)
        )
        self.fts.execute("COMMIT")

    def close(self) -> None:
        self.fts.close()

    def faiss_ids(self, query: npt.NDArray[np.float32], k: int) -> list[int]:
        _, ids = self.flat.search(query.reshape(1, -1), k)
        return [int(i) for i in ids[0] if i >= 0]

    def fts_ids(self, query: str, k: int) -> list[int]:
        expression = text_reader.match_expression(query)
        if expression is None:
            return []
        rows = self.fts.execute(
            "SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?", (expression, k)
        ).fetchall()
        return [int(row[0]) - 1 for row in rows]


def measure_search(
    ws: Workspace, texts: Sequence[str], queries: Sequence[str], options: Options, tmp: Path
) -> LatencyResult:
    """p50/p95 of lcg's search and of each baseline, interleaved query by query."""
    app = App(ws)
    conn = ws.reader()
    k = max(50, options.num_results * 4)  # the leg depth search_passages uses
    index_of = {f"p{i:06d}": i for i in range(len(texts))}
    owner_index: dict[str, int] = {
        episode_uuid(LATENCY_GROUP, name): i for name, i in index_of.items()
    }
    base = Baselines(ws, texts, tmp)
    vectors = ws.embedder.embed(list(queries))  # precomputed query vectors for raw FAISS
    params = {
        "num_results": options.num_results,
        "min_score": 0.0,
        "group_ids": [LATENCY_GROUP],
    }

    def lcg(i: int) -> object:
        ws.forget_query_embeddings()  # every query asked as the first time (repeats are free)
        return operations.dispatch(
            app, "knowledge_search_passages", {"query": queries[i], **params}
        )

    def embed(i: int) -> object:
        return ws.embedder.embed([queries[i]])

    def raw_faiss(i: int) -> object:
        return base.faiss_ids(vectors[i], k)

    def raw_fts(i: int) -> object:
        return base.fts_ids(queries[i], k)

    def vector_leg(i: int) -> object:
        hits = ws.vectors.search("passage", [LATENCY_GROUP], vectors[i], k)
        return catalog.describe(conn, [hit.vec_id for hit in hits])

    def text_leg(i: int) -> object:
        return text_reader.search(conn, "passage", queries[i], [LATENCY_GROUP], k, ws.text_scorer)

    def text_leg_fts5(i: int) -> object:
        return text_reader.search(conn, "passage", queries[i], [LATENCY_GROUP], k)

    calls: list[tuple[Timings, Callable[[int], object]]] = [
        (Timings("lcg `knowledge_search_passages` (embedding included)"), lcg),
        (Timings("query embedding alone (MiniLM int8, 1 thread)"), embed),
        (Timings(f"raw FAISS `IndexFlatIP`, k={k}, precomputed query vector"), raw_faiss),
        (Timings(f"raw FTS5 bm25, same MATCH, LIMIT {k}"), raw_fts),
        (Timings("lcg vector leg: `vectors.search` + `catalog.describe`"), vector_leg),
        (Timings("lcg BM25 leg: `text.search`, in-memory scorer (default)"), text_leg),
        (
            Timings("lcg BM25 leg: `text.search`, FTS5 `bm25()` (LCG_BM25_ENGINE=fts5)"),
            text_leg_fts5,
        ),
    ]
    try:
        agreement = check_agreement(ws, base, queries, vectors, k, owner_index)
        for i in range(min(20, len(queries))):  # warm-up: page caches, model session
            for _, call in calls:
                call(i)
        for repeat in range(options.repeats):
            for i in range(len(queries)):
                shift = (i + repeat) % len(calls)  # rotate the order query by query
                for timings, call in calls[shift:] + calls[:shift]:
                    start = time.perf_counter_ns()
                    call(i)
                    timings.ms.append((time.perf_counter_ns() - start) / 1e6)
            log(f"  {len(texts):,} passages: search repeat {repeat + 1}/{options.repeats} done")
    finally:
        base.close()
    rows = [timings for timings, _ in calls]
    summed = Timings("sum of the three raw baselines, per query (embed + FAISS + FTS5)")
    summed.ms = [a + b + c for a, b, c in zip(rows[1].ms, rows[2].ms, rows[3].ms, strict=True)]
    rows.insert(4, summed)
    stages = ws.settings.tuning.stages
    fusion = (
        f"rrf k {stages.rrf_k}, vector x{stages.rrf_vector}"
        if stages.rrf_vector > 0
        else ws.settings.search_fusion
    )
    return LatencyResult(len(texts), len(queries), options.repeats, rows, agreement, fusion)


def check_agreement(
    ws: Workspace,
    base: Baselines,
    queries: Sequence[str],
    vectors: npt.NDArray[np.float32],
    k: int,
    owner_index: dict[str, int],
) -> dict[str, float]:
    """Top-10 overlap of each raw baseline with the lcg leg it stands for (same work done)."""
    conn = ws.reader()
    vector_overlap: list[float] = []
    text_overlap: list[float] = []
    engine_overlap: list[float] = []
    for i, query in enumerate(queries[:50]):
        hits = ws.vectors.search("passage", [LATENCY_GROUP], vectors[i], k)
        entries = catalog.describe(conn, [hit.vec_id for hit in hits])
        lcg_vec = [owner_index[entries[h.vec_id].owner_uuid] for h in hits][:10]
        raw_vec = base.faiss_ids(vectors[i], k)[:10]
        vector_overlap.append(len(set(lcg_vec) & set(raw_vec)) / max(1, len(raw_vec)))
        text_hits = text_reader.search(conn, "passage", query, [LATENCY_GROUP], k, ws.text_scorer)
        lcg_text = [owner_index[h.owner_uuid] for h in text_hits][:10]
        raw_text = base.fts_ids(query, k)[:10]
        text_overlap.append(len(set(lcg_text) & set(raw_text)) / max(1, len(raw_text)))
        fts5_hits = text_reader.search(conn, "passage", query, [LATENCY_GROUP], k)
        lcg_fts5 = [owner_index[h.owner_uuid] for h in fts5_hits][:10]
        engine_overlap.append(len(set(lcg_text) & set(lcg_fts5)) / max(1, len(lcg_fts5)))
    agreement = {
        "vector": float(np.mean(vector_overlap)),
        "text": float(np.mean(text_overlap)),
        "engines": float(np.mean(engine_overlap)),
    }
    require(agreement["vector"] > 0.9, f"raw FAISS disagrees with lcg's vector leg: {agreement}")
    return agreement


def profile_search(ws: Workspace, queries: Sequence[str], options: Options) -> str:
    """cProfile of 50 knowledge_search_passages calls (the first 50 queries)."""
    app = App(ws)
    params = {"num_results": options.num_results, "min_score": 0.0, "group_ids": [LATENCY_GROUP]}
    profiler = cProfile.Profile()
    profiler.enable()
    for query in queries[:50]:
        operations.dispatch(app, "knowledge_search_passages", {"query": query, **params})
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    out.write(f"# cProfile of {min(50, len(queries))} knowledge_search_passages calls")
    out.write(f" ({ws.vectors.count():,} passages)\n\n## by cumulative time\n")
    stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(30)
    out.write("\n## by own (total) time\n")
    stats.sort_stats(pstats.SortKey.TIME).print_stats(20)
    return out.getvalue()


def latency_queries(conversations: Sequence[Conversation], count: int) -> list[str]:
    texts = list(dict.fromkeys(q.text for c in conversations for q in c.questions))
    random.Random(3).shuffle(texts)
    require(len(texts) >= count, f"only {len(texts)} distinct questions")
    return texts[:count]


def cold_sample(items: Sequence[Item], tmp: Path) -> list[IngestRow]:
    """The product's ingest with an empty cache (model included), then again with it warm."""
    directory = tmp / "cold"
    cold, ws = timed_ingest(directory, items, "cold cache: fresh workspace, model included")
    ws.close()
    require(cold.model_texts >= len(items), "cold ingest did not run the model")
    warm, ws = timed_ingest(directory, items, "warm cache: the same workspace, re-ingested")
    ws.close()
    shutil.rmtree(directory)
    return [cold, warm]


def run_latency(options: Options) -> tuple[str, str | None]:
    began = time.perf_counter()
    conversations, _ = load_realtalk(options.data)
    bodies = [t.body for c in conversations for t in c.turns]
    bodies = [body for body in bodies if len(body) <= passage_split.MAX_PASSAGE]
    queries = latency_queries(conversations, options.queries)
    sizes = sorted(options.sizes)
    log(f"building {max(sizes):,} synthetic passages ...")
    texts = synthetic_passages(bodies, max(sizes))
    directory = options.cache / "latency"
    log(f"filling the bench embedding cache in {directory} (the first run only) ...")
    filled = fill_cache(directory, texts)
    results: list[LatencyResult] = []
    profile: str | None = None
    with tempfile.TemporaryDirectory(prefix="lcg-bench-") as tmp:
        log(f"cold-cache ingest of {options.cold_size:,} passages (a fresh cache) ...")
        # Other texts than the sizes' (a second draw), so this never reads the bench cache.
        sample = synthetic_passages(bodies, max(sizes) + options.cold_size)[max(sizes) :]
        ingest_rows = cold_sample(latency_items(sample, options.source), Path(tmp))
        for size in sizes:
            items = latency_items(texts[:size], options.source)
            row, ws = timed_ingest(directory, items, "warm cache")
            try:
                ingest_rows.append(row)
                log(f"measuring search at {size:,} passages ...")
                results.append(measure_search(ws, texts[:size], queries, options, Path(tmp)))
                lcg_p95 = results[-1].rows[0].p95
                if size == max(sizes) and (options.profile or lcg_p95 > TARGET_P95_MS):
                    log("profiling 50 searches ...")
                    profile = profile_search(ws, queries, options)
            finally:
                ws.close()
    wall = time.perf_counter() - began
    return render_latency(ingest_rows, results, options, wall, filled), profile
