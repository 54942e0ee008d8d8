"""Benchmark the write queue's startup probe (ADR 0101) against the writes it estimates.

Run from the repository root:

    .venv/bin/python -m bench.bench_probe [--derives 20] [--repeats 3]

With the bundled MiniLM model (a Workspace's default embedder), per repeat on a fresh
workspace: start serving (`start_memory_jobs`, which starts the probe) and time how long
until the probe has finished (the model's load included: from then on `lambo_stats` carries
its figures); read its serial and four-wide figures from `lambo_stats`.
Then `--derives` derives of two distinct ~340-byte concepts each, one after another, each
waited for, and `lambo_stats`'s observed serial rate and `write_queue_probe_optimism`; then as
many derives of one ~60-byte concept, and the optimism again. The baseline is the model alone
embedding the probe's two framed texts in one call in this process (median of 20), as writes
per second. Prints a markdown table and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lcg.commands.memory_probe import probe_texts
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.minilm import MiniLmEmbedder

AGENT = "bench"
FILLER = (
    "the nightly export retries each failed upload with a growing pause and writes a line per "
    "attempt to the job log, so an operator can tell a slow bucket from a revoked credential; "
    "after the third failure the export stops, marks the batch for tomorrow and pages the "
    "on-call engineer with the bucket name, the last error and the number of rows still owed"
)


def stats(app: App, **params: Any) -> dict[str, Any]:
    answer = operations.dispatch(app, "lambo_stats", {"agent_id": AGENT, **params})
    body: dict[str, Any] = answer["structuredContent"]
    return body


def derive_all(app: App, contents: list[list[str]]) -> None:
    for concepts in contents:
        ack = operations.dispatch(
            app,
            "lambo_derive",
            {
                "agent_id": AGENT,
                "concepts": [{"content": c, "concept_type": "logic"} for c in concepts],
            },
        )
        receipt = ack["structuredContent"]["receipt"]
        outcome = stats(app, receipt=receipt, wait_ms=30_000)["receipt"]
        assert outcome["state"] == "applied", outcome


def long_concept(n: int, side: str) -> str:
    return f"{side} {n}: {FILLER}"[:340]


def one_repeat(derives: int) -> dict[str, float | None]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        Workspace(Settings(Path(tmp)), command="bench_probe") as ws,
    ):
        app = App(ws)
        began = time.monotonic()
        ws.start_memory_jobs()
        assert ws.memory.processor.probed(timeout=60.0)
        to_probe = time.monotonic() - began
        fresh = stats(app)
        assert fresh["write_queue_bound_source"] == "probe", fresh
        derive_all(
            app, [[long_concept(n, "first"), long_concept(n, "second")] for n in range(derives)]
        )
        two = stats(app)
        derive_all(app, [[f"short fact number {n} about the export job"] for n in range(derives)])
        # the observed rate is the median of the last 64 applies: by now mostly the short ones
        short = stats(app)
        return {
            "to_probe_s": to_probe,
            "probe_serial": fresh["write_queue_probe_serial_items_per_sec"],
            "probe_wide": fresh["write_queue_items_per_sec"],
            "observed_two": two["write_queue_serial_items_per_sec"],
            "optimism_two": two["write_queue_probe_optimism"],
            "observed_short": short["write_queue_serial_items_per_sec"],
            "optimism_short": short["write_queue_probe_optimism"],
        }


def baseline() -> float:
    model = MiniLmEmbedder()
    texts = probe_texts()
    model.embed(texts)
    runs = []
    for _ in range(20):
        began = time.monotonic()
        model.embed(texts)
        runs.append(time.monotonic() - began)
    return 1 / statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--derives", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    raw = baseline()
    print(
        "| repeat | start to probe s | probe serial w/s | probe/raw model | four-wide w/s "
        "| observed (2 x 340 B) w/s | optimism | observed (1 x 60 B) w/s | optimism |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in range(args.repeats):
        row = one_repeat(args.derives)
        serial = row["probe_serial"] or 0.0
        print(
            f"| {n + 1} | {row['to_probe_s']:.2f} | {serial:.1f} | {serial / raw:.2f}x "
            f"| {row['probe_wide']} | {row['observed_two']} | {row['optimism_two']} "
            f"| {row['observed_short']} | {row['optimism_short']} |"
        )
    print(f"\nraw model (probe texts, one call, in process): {raw:.1f} writes/s")
    print(
        f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
        f"at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
