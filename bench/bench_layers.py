"""Layered recall (ADR 0080): lambo_recall over a session and one layer, merged, against a plain
recall of one session holding the same concepts, p50/p95 and their ratio; and whether the
merged recall finds a layer's concept as a plain recall of the layer does.

Sizes are concepts per side: the layered workspace holds N in session `lambo` and N in its
layer `general`; the plain workspace holds the same 2N in one session. Both are built through
the memory write path in bulk (bench.recall_latency.derive_many: accept and apply in the
writer's batches), from the same REALTALK-worded facts, with the same embedding cache filled
before anything is timed. Each workspace is built once per size into a snapshot kept under
.bench-cache (`layers[-hashing]-<N>`, marked with its texts' digest) and copied afresh for each
run, since a measured recall counts its hits as accessed (a write). The queries are REALTALK
questions; each measurement embeds its query (the query cache is cleared), and the two sides
alternate query by query, so the ratio is taken in one run on one box.

    .venv/bin/python -m bench.bench_layers [--sizes 10000] [--queries 200] [--repeats 2]
        [--embedder minilm|hashing] [--fill-only PART/PARTS | --build-only layered|plain]

A large MiniLM size is prepared in steps that can run side by side: the cache fill in several
processes (`--fill-only 0/2` and `--fill-only 1/2`, each every other chunk of the texts, in
their order), then the two snapshots (`--build-only layered` and `--build-only plain`), then
the measurement, which finds the cache filled and both snapshots built.

`--embedder hashing` builds and queries both workspaces with the hashing embedder (no model,
no cache fill), for sizes whose MiniLM fill would take hours on a loaded box: the recall's
work but the hashing embedder's vectors, so its quality column says little. The layer's own
rate (ADR 0088) is set out of the way: the bench measures recall, not the rate.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from bench.latency_report import percentile
from bench.realtalk import DATA, load_realtalk
from bench.recall_common import AGENT, copy_cache, fill_cache, fill_part, framed
from bench.recall_latency import Receipts, concept_texts, derive_many
from bench.search_common import CACHE, RESULTS, log, require, reset_workspace
from bench.search_latency import latency_queries
from lcg.domain.memory.calls import ConceptIn
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.choice import EmbedderName

SESSION, LAYER, PLAIN = "lambo", "general", "plain"
TOP_K = 10
SNAPSHOT_MARKER = "built-from"  # the texts' digest and the build's seconds
UNLIMITED = Tuning().with_values(serve__per_session_rps=100_000, serve__burst=1_000_000)


@dataclass(frozen=True, slots=True)
class Row:
    size: int
    queries: int
    layered_p50: float
    layered_p95: float
    plain_p50: float
    plain_p95: float
    ratio_p50: float
    ratio_p95: float
    found: int  # layer-alone top hits the merged recall also returned
    asked: int  # queries whose layer-alone recall had a hit
    build_seconds: float


def build(
    directory: Path, sessions: Sequence[tuple[str, Sequence[str]]], embedder: EmbedderName
) -> float:
    """The sessions' concepts derived in bulk into one fresh workspace; seconds taken."""
    started = time.perf_counter()
    for session, texts in sessions:
        settings = Settings(workspace=directory, session=session, embedder=embedder)
        ws = Workspace(settings, command="bench").open()
        try:
            concepts = [ConceptIn(text, "logic") for text in texts]
            derive_many(ws, concepts, Receipts(len(texts) + len(session)))
        finally:
            ws.close()
    return time.perf_counter() - started


def snapshot(
    directory: Path | None,
    kept: Path,
    sessions: Sequence[tuple[str, Sequence[str]]],
    embedder: EmbedderName,
    cache: Path | None = None,
) -> float:
    """`directory` as `build` leaves it, copied from the snapshot `kept` when one was built
    before from the same sessions' texts (a measured recall counts its hits as accessed, a
    write, so each run starts from a copy); built there first otherwise. The seconds the
    build took (this run's or the snapshot's). `cache`: the workspace whose embedding cache a
    new snapshot starts from (MiniLM). `directory` None: only the snapshot, nothing copied."""
    digest = hashlib.sha256()
    for session, texts in sessions:
        digest.update(f"{session}\0{embedder}\0".encode())
        for text in texts:
            digest.update(text.encode() + b"\0")
    marker = kept / SNAPSHOT_MARKER
    if not (
        marker.is_file() and marker.read_text(encoding="utf-8").split()[0] == digest.hexdigest()
    ):
        shutil.rmtree(kept, ignore_errors=True)
        if cache is not None:
            copy_cache(cache, kept)
        seconds = build(kept, sessions, embedder)
        marker.write_text(f"{digest.hexdigest()} {seconds:.1f}\n", encoding="utf-8")
    if directory is None:
        return float(marker.read_text(encoding="utf-8").split()[1])
    state = Settings(workspace=directory).state_dir
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(Settings(workspace=kept).state_dir, state)
    return float(marker.read_text(encoding="utf-8").split()[1])


def recall(app: App, query: str, scope: str | None = None) -> dict[str, Any]:
    app.workspace.forget_query_embeddings()  # every measurement embeds its query
    params: dict[str, Any] = {"agent_id": AGENT, "query": query, "top_k": TOP_K}
    if scope is not None:
        params["scope"] = scope
    answer: dict[str, Any] = operations.dispatch(app, "lambo_recall", params)["structuredContent"]
    return answer


def workspaces(
    size: int, data: Path, embedder: EmbedderName, only: str | None = None
) -> tuple[Path, Path, float]:
    """The layered and the plain workspace of `size` concepts per side, copied from their
    snapshots (built first where missing); the seconds the builds took. `only` ("layered"
    or "plain"): build that side's snapshot and copy nothing, so the two sides' builds can
    run side by side in two processes once the embedding cache is filled."""
    conversations, _ = load_realtalk(data)
    texts = concept_texts(conversations, 2 * size)
    suffix = "" if embedder == "minilm" else f"-{embedder}"
    layered_dir, plain_dir = CACHE / f"layers{suffix}", CACHE / f"layers-plain{suffix}"
    if embedder == "minilm":
        if only is None:  # two --build-only processes share the cache: neither resets it
            reset_workspace(layered_dir)  # the embedding cache is kept
        fill_cache(layered_dir, [framed(text) for text in texts], f"layers {size:,}")
    filled = layered_dir if embedder == "minilm" else None
    build_seconds = 0.0
    if only in (None, "layered"):
        build_seconds += snapshot(
            None if only else layered_dir,
            CACHE / f"layers{suffix}-{size}",
            [(SESSION, texts[:size]), (LAYER, texts[size:])],
            embedder,
            filled,
        )
    if only in (None, "plain"):
        build_seconds += snapshot(
            None if only else plain_dir,
            CACHE / f"layers-plain{suffix}-{size}",
            [(PLAIN, texts)],
            embedder,
            filled,
        )
    return layered_dir, plain_dir, build_seconds


def measure(
    size: int, queries: Sequence[str], repeats: int, data: Path, embedder: EmbedderName
) -> Row:
    layered_dir, plain_dir, build_seconds = workspaces(size, data, embedder)
    layered = Workspace(
        Settings(
            workspace=layered_dir,
            session=SESSION,
            layers=(LAYER,),
            embedder=embedder,
            tuning=UNLIMITED,
        ),
        command="bench",
    ).open()
    plain = Workspace(
        Settings(workspace=plain_dir, session=PLAIN, embedder=embedder), command="bench"
    ).open()
    try:
        merged_app = App(layered).for_session(None, (LAYER,))
        plain_app = App(plain)
        for query in queries[:5]:  # warm both (model sessions, page cache)
            recall(merged_app, query)
            recall(plain_app, query)
        merged_ms: list[float] = []
        plain_ms: list[float] = []
        for _ in range(repeats):
            for query in queries:
                for app, out in ((merged_app, merged_ms), (plain_app, plain_ms)):
                    started = time.perf_counter()
                    recall(app, query)
                    out.append((time.perf_counter() - started) * 1000)
        found = asked = 0
        for query in queries:
            alone = recall(merged_app, query, scope=LAYER)["hits"]
            if not alone:
                continue
            asked += 1
            merged = recall(merged_app, query)["hits"]
            found += any(
                h["node_id"] == alone[0]["node_id"] and h["session"] == LAYER for h in merged
            )
        require(len(merged_ms) == len(plain_ms) == repeats * len(queries), "timings missing")
    finally:
        layered.close()
        plain.close()
    p50s = percentile(merged_ms, 50), percentile(plain_ms, 50)
    p95s = percentile(merged_ms, 95), percentile(plain_ms, 95)
    return Row(
        size,
        len(queries),
        p50s[0],
        p95s[0],
        p50s[1],
        p95s[1],
        p50s[0] / p50s[1],
        p95s[0] / p95s[1],
        found,
        asked,
        build_seconds,
    )


def render(rows: Sequence[Row], repeats: int) -> str:
    lines = [
        "| concepts per side | queries x repeats | merged p50 / p95 ms | plain (2N in one"
        " session) p50 / p95 ms | ratio p50 | ratio p95 | layer's top hit also in merged |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.size:,} | {row.queries} x {repeats} | {row.layered_p50:.1f} /"
            f" {row.layered_p95:.1f} | {row.plain_p50:.1f} / {row.plain_p95:.1f} |"
            f" {row.ratio_p50:.2f}x | {row.ratio_p95:.2f}x | {row.found}/{row.asked} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=RESULTS / "layers.md")
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument(
        "--fill-only",
        type=fill_part,
        metavar="PART/PARTS",
        help="MiniLM: only fill the embedding cache, every PARTS-th chunk from PART (0-based),"
        " so that several processes fill it side by side; measure nothing",
    )
    parser.add_argument(
        "--build-only",
        choices=("layered", "plain"),
        help="only build that side's snapshot (after the cache fill), measure nothing",
    )
    args = parser.parse_args(argv)
    embedder = cast(EmbedderName, args.embedder)
    if args.fill_only:
        part, parts = args.fill_only
        conversations, _ = load_realtalk(args.data)
        texts = concept_texts(conversations, 2 * max(args.sizes))
        fill_cache(
            CACHE / "layers",
            [framed(text) for text in texts],
            f"layers {max(args.sizes):,}, part {part}/{parts}",
            part=part,
            parts=parts,
        )
        return 0
    if args.build_only:
        for size in args.sizes:
            seconds = workspaces(size, args.data, embedder, args.build_only)[2]
            log(f"size {size:,} per side, {args.build_only}: built in {seconds:.0f} s")
        return 0
    conversations, _ = load_realtalk(args.data)
    queries = latency_queries(conversations, args.queries)
    rows = []
    for size in args.sizes:
        log(f"size {size:,} per side")
        rows.append(measure(size, queries, args.repeats, args.data, embedder))
        log(f"  built in {rows[-1].build_seconds:.0f} s")
        log(render(rows[-1:], args.repeats).splitlines()[-1])  # kept if a larger size is cut
    text = render(rows, args.repeats)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
