"""Benchmark lambo_derive_image by client vectors against lambo_derive, and recall by
query_vector against recall by text at 10k concepts (issue 33, ADR 0095).

Run from the repository root:

    .venv/bin/python -m bench.bench_images [--calls 100] [--size 10000] [--queries 200]
        [--out bench/results/images.md]

With the bundled MiniLM model, in process (`operations.dispatch`), on fresh workspaces with
`[embedder] accept_client_vectors = true`:

1. Writes: per iteration a one-concept `lambo_derive` of a ~60-byte fact, then
   `lambo_derive_image` with the same text as caption and a vector the client computed (the
   model's embedding of another text, computed before the loop: a client's own model runs on
   its side); each followed by `lambo_stats` with the receipt and `wait_ms` until applied.
   Ack latency and ack -> applied (the wait call's duration), and their ratios image / derive.
2. Recall at `--size` concepts (built through the write path in bulk, as bench_recall does):
   `lambo_recall` by a question's words (the query embedded afresh each time) and by a
   `query_vector` the client computed for the same question (no model on the server), same
   process, interleaved query by query; p50/p95 and the ratio vector / text.

Every run checks it did the work: each write applied with one concept created, every recall
answered with hits, the by-vector recall's first hit the concept the vector was made from.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.memory_transports import fact, percentile
from bench.recall_latency import Receipts, derive_many
from bench.search_common import log, require
from lcg.domain.memory.calls import ConceptIn
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace

RESULTS = Path(__file__).resolve().parent / "results"
AGENT = "bench-images"
WARMUP = 5
WAIT_MS = 34_000


def settings_for(directory: Path) -> Settings:
    """The default settings (MiniLM) with client vectors accepted."""
    accepted = {**Tuning().values, "[embedder] accept_client_vectors": True}
    return dataclasses.replace(Settings(workspace=directory), tuning=Tuning(values=accepted))


def call(app: App, name: str, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = operations.dispatch(app, name, {"agent_id": AGENT, **params})
    return dict(result["structuredContent"])


def applied(app: App, receipt: str) -> dict[str, Any]:
    body: dict[str, Any] = call(app, "lambo_stats", receipt=receipt, wait_ms=WAIT_MS)["receipt"]
    require(body["state"] == "applied", f"not applied: {body}")
    require(body["created_count"] == 1, f"not one concept created: {body}")
    return body


@dataclasses.dataclass
class Writes:
    derive_ack: list[float] = dataclasses.field(default_factory=list)
    derive_apply: list[float] = dataclasses.field(default_factory=list)
    image_ack: list[float] = dataclasses.field(default_factory=list)
    image_apply: list[float] = dataclasses.field(default_factory=list)


def measure_writes(directory: Path, calls: int) -> Writes:
    out = Writes()
    rng = random.Random(7)
    with Workspace(settings_for(directory), command="bench_images") as ws:
        app = App(ws)
        contract = call(app, "lambo_stats")["embedding_contract"]
        others = [fact(rng, 500_000 + i) for i in range(WARMUP + calls)]
        vectors = [[float(v) for v in row] for row in ws.embedder.embed(others)]
        for index in range(WARMUP + calls):
            text = fact(rng, index)
            started = time.perf_counter()
            ack = call(app, "lambo_derive", concepts=[{"content": text, "concept_type": "logic"}])
            acked = time.perf_counter()
            applied(app, ack["receipt"])
            derive_done = time.perf_counter()
            vector = {"values": vectors[index], "contract": contract}
            ack = call(
                app,
                "lambo_derive_image",
                caption=text,
                concept_type="resource",
                image_id=f"i{index}",
                vector=vector,
            )
            image_acked = time.perf_counter()
            applied(app, ack["receipt"])
            image_done = time.perf_counter()
            if index >= WARMUP:
                out.derive_ack.append((acked - started) * 1000)
                out.derive_apply.append((derive_done - acked) * 1000)
                out.image_ack.append((image_acked - derive_done) * 1000)
                out.image_apply.append((image_done - image_acked) * 1000)
        stats = call(app, "lambo_stats")
        require(stats["concept_count"] == 2 * (WARMUP + calls), f"concepts: {stats}")
        require(stats["write_queue_failed"] == 0, f"failed writes: {stats}")
    return out


@dataclasses.dataclass
class Recalls:
    size: int
    build_seconds: float
    by_text: list[float] = dataclasses.field(default_factory=list)
    by_vector: list[float] = dataclasses.field(default_factory=list)
    first_right: int = 0


def measure_recalls(directory: Path, size: int, queries: int) -> Recalls:
    rng = random.Random(11)
    texts = [fact(rng, i) for i in range(size)]
    with Workspace(settings_for(directory), command="bench_images") as ws:
        app = App(ws)
        started = time.perf_counter()
        derive_many(ws, [ConceptIn(text, "logic") for text in texts], Receipts(size))
        out = Recalls(size, time.perf_counter() - started)
        contract = call(app, "lambo_stats")["embedding_contract"]
        picked = random.Random(3).sample(range(size), WARMUP + queries)
        asked = [texts[i] for i in picked]
        # the client's vectors: its own model, on its side (here the same model, beforehand)
        client = [[float(v) for v in row] for row in ws.embedder.embed(asked)]
        for number, (text, vector) in enumerate(zip(asked, client, strict=True)):
            ws.forget_query_embeddings()  # every by-text recall embeds its query
            began = time.perf_counter()
            words = call(app, "lambo_recall", query=text)
            middle = time.perf_counter()
            by = call(app, "lambo_recall", query_vector={"values": vector, "contract": contract})
            ended = time.perf_counter()
            require(bool(words["hits"]) and bool(by["hits"]), f"no hits for {text!r}")
            if number >= WARMUP:
                out.by_text.append((middle - began) * 1000)
                out.by_vector.append((ended - middle) * 1000)
                out.first_right += by["hits"][0]["content"] == text
    return out


def _row(label: str, values: Sequence[float], base: Sequence[float] | None) -> str:
    p50, p95 = percentile(values, 50), percentile(values, 95)
    if base is None:
        return f"| {label} | {p50:.2f} | {p95:.2f} | 1.00 | 1.00 |"
    b50, b95 = percentile(base, 50), percentile(base, 95)
    return f"| {label} | {p50:.2f} | {p95:.2f} | {p50 / b50:.2f} | {p95 / b95:.2f} |"


def report(options: argparse.Namespace, writes: Writes, recalls: Recalls, load: str) -> str:
    lines = [
        "# lambo_derive_image and recall by query_vector",
        "",
        f"`.venv/bin/python -m bench.bench_images --calls {options.calls} --size "
        f"{options.size} --queries {options.queries}`, MiniLM, in process; "
        f"{platform.machine()}, {os.cpu_count()} cores; load average {load}.",
        "",
        f"Writes ({options.calls} timed iterations after {WARMUP} warm-up; ms; ratio to "
        "lambo_derive of the same caption, same run):",
        "",
        "| call | p50 | p95 | ratio p50 | ratio p95 |",
        "|---|---|---|---|---|",
        _row("lambo_derive ack", writes.derive_ack, None),
        _row("lambo_derive_image ack", writes.image_ack, writes.derive_ack),
        _row("lambo_derive ack -> applied", writes.derive_apply, None),
        _row("lambo_derive_image ack -> applied", writes.image_apply, writes.derive_apply),
        "",
        f"Recall at {recalls.size:,} concepts (built in {recalls.build_seconds:.0f} s; "
        f"{len(recalls.by_text)} queries; ms; ratio to recall by text, same run):",
        "",
        "| recall | p50 | p95 | ratio p50 | ratio p95 |",
        "|---|---|---|---|---|",
        _row("by text (query embedded)", recalls.by_text, None),
        _row("by query_vector", recalls.by_vector, recalls.by_text),
        "",
        f"By query_vector, the first hit was the concept the vector was made from in "
        f"{recalls.first_right} of {len(recalls.by_vector)} queries.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="timed write iterations")
    parser.add_argument("--size", type=int, default=10_000, help="concepts for the recalls")
    parser.add_argument("--queries", type=int, default=200, help="timed recalls of each kind")
    parser.add_argument("--out", type=Path, default=RESULTS / "images.md")
    options = parser.parse_args(argv)
    before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-images-") as tmp:
        log("writes: lambo_derive and lambo_derive_image")
        writes = measure_writes(Path(tmp) / "writes", options.calls)
        log(f"recalls at {options.size:,} concepts")
        recalls = measure_recalls(Path(tmp) / "recalls", options.size, options.queries)
    after = os.getloadavg()
    load = f"{before[0]:.2f} before, {after[0]:.2f} after (1 min)"
    text = report(options, writes, recalls, load)
    sys.stdout.write(text)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
