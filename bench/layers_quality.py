"""Held-out-style quality of a layered recall (issue 30, ADR 0080) on REALTALK: does a recall
from a project session layered over a layer find the layer's evidence as well as a plain
recall of the layer does?

    .venv/bin/python -m bench.layers_quality [--out bench/results/layers-quality.md] [--no-build]

Every REALTALK turn is derived through lambo_derive under MiniLM as bench_recall --quality
does (bench.recall_stages.derive_all: one session per conversation, into
`.bench-cache/layers-quality`, its embedding cache seeded from `.bench-cache/recall-quality`
when that exists). Conversation i's session is then the LAYER, and conversation i+1's session
(cyclically) the PROJECT session layered over it: a project of the same genre and size whose
own hits compete with the layer's for every question. Every question of conversation i is
asked through lambo_recall

- layered: from the project session, no scope (the merged recall), top_k 10, 15 and 20;
- scoped: from the same layered project session with `scope` = the layer (the layer's plain
  recall through the layered endpoint), top_k 10 and 20;
- plain: from the layer's own session opened without layers, top_k 10 and 20.

A project hit occupies its place in the ranking but is never evidence (its turns are named
with their session). Scored with bench.search_quality's scoring (R@5/R@10/R@20/MRR@20); the
differences are paired bootstrap 95% intervals over questions, per category. Also counted:
how many of the layer's own top-10 hits (and of the evidence among them) the merged answer
keeps.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_layers import UNLIMITED
from bench.realtalk import CATEGORIES, Conversation, Question, load_realtalk
from bench.recall_common import AGENT
from bench.recall_quality import _call
from bench.recall_stages import derive_all
from bench.search_common import RESULTS, log, require
from bench.search_quality import (
    Ranking,
    System,
    bootstrap_delta,
    distinct,
    quality_tables,
    score_system,
)
from bench.search_stages import stage_args
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace

Nodes = dict[str, dict[str, list[str]]]  # session -> node id -> the turns derived into it

LAYERED = "layered (project + layer), top_k {k}"
SCOPED = "scope = the layer, top_k {k}"
PLAIN = "the layer's session unlayered, top_k {k}"
LAYERED_K = (10, 15, 20)
SCOPED_K = (10, 20)
BASE_K = 10  # the layer's own answer whose hits the merged answers are checked against


@dataclass
class Kept:
    """Per layered top_k: what the merged answers kept of the layer's own top-BASE_K."""

    nodes: int = 0  # the layer's own top-BASE_K hits also in the merged answer
    nodes_of: int = 0
    evidence: int = 0  # evidence turns among those hits also found by the merged answer
    evidence_of: int = 0
    layer_hits: int = 0  # hits from the layer in the merged answers
    project_hits: int = 0
    absorbed: int = 0  # of the layer's own top-BASE_K, hits shown as the project's copy


def recall(app: App, query: str, top_k: int, scope: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"agent_id": AGENT, "query": query, "top_k": top_k}
    if scope is not None:
        params["scope"] = scope
    return _call(app, "lambo_recall", params)


def ranking(found: dict[str, Any], nodes: Nodes, own: str, layer: str, depth: int) -> Ranking:
    """The hits' turns in answer order, distinct, at most `depth`; a turn of a session other
    than the layer is named `<session>/<dia_id>`, so it holds its place and never scores."""
    names: list[str] = []
    for hit in found["hits"]:
        session = hit.get("session", own)
        turns = nodes[session].get(hit["node_id"])
        require(turns is not None, f"a hit of {session} that no turn was derived into")
        names += [d if session == layer else f"{session}/{d}" for d in turns or []]
    return distinct(names, depth)


def layer_nodes(found: dict[str, Any], layer: str, own: str) -> list[str]:
    return [h["node_id"] for h in found["hits"] if h.get("session", own) == layer]


def ask_pair(
    directory: Path,
    conversation: Conversation,
    project: str,
    nodes: Nodes,
    found: dict[str, list[Ranking]],
    kept: dict[int, Kept],
) -> None:
    """Every question of `conversation` (the layer) from `project` layered over it, scoped
    to it, and from its own unlayered session."""
    layer = conversation.group
    evidence_nodes = {  # layer node -> its turns
        node: set(turns) for node, turns in nodes[layer].items()
    }
    settings = Settings(workspace=directory, session=project, layers=(layer,), tuning=UNLIMITED)
    with Workspace(settings, command="bench") as ws:
        app = App(ws).for_session(None, (layer,))
        for question in conversation.questions:
            wanted = set(question.evidence)
            alone = recall(app, question.text, BASE_K, scope=layer)
            own_nodes = layer_nodes(alone, layer, layer)
            own_text = {h["node_id"]: h["content"] for h in alone["hits"]}
            own_evidence = {n for n in own_nodes if evidence_nodes[n] & wanted}
            for k in SCOPED_K:
                answer = alone if k == BASE_K else recall(app, question.text, k, scope=layer)
                found[SCOPED.format(k=k)].append(ranking(answer, nodes, layer, layer, k))
            for k in LAYERED_K:
                merged = recall(app, question.text, k)
                found[LAYERED.format(k=k)].append(ranking(merged, nodes, project, layer, k))
                in_merged = set(layer_nodes(merged, layer, project))
                tally = kept[k]
                tally.nodes += len(set(own_nodes) & in_merged)
                tally.nodes_of += len(own_nodes)
                tally.evidence += len(own_evidence & in_merged)
                tally.evidence_of += len(own_evidence)
                tally.layer_hits += len(in_merged)
                tally.project_hits += len(merged["hits"]) - len(in_merged)
                project_text = {
                    h["content"] for h in merged["hits"] if h.get("session", project) != layer
                }
                tally.absorbed += sum(
                    n not in in_merged and own_text[n] in project_text for n in own_nodes
                )
    with Workspace(Settings(workspace=directory, session=layer), command="bench") as ws:
        app = App(ws)
        for question in conversation.questions:
            for k in SCOPED_K:
                answer = recall(app, question.text, k)
                found[PLAIN.format(k=k)].append(ranking(answer, nodes, layer, layer, k))


def delta_table(
    systems: dict[str, System],
    questions: Sequence[Question],
    comparisons: Sequence[tuple[str, str]],
) -> str:
    """a - b in R@5, R@10 and R@20, paired bootstrap 95% interval, overall and per category."""
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    lines = [
        "| a - b | metric | " + " | ".join(label for label, _ in masks) + " |",
        "|---|---|" + "---:|" * len(masks),
    ]
    for left, right in comparisons:
        for column, metric in ((0, "R@5"), (1, "R@10"), (2, "R@20")):
            cells = []
            for _, mask in masks:
                a = systems[left].scores[mask, column]
                b = systems[right].scores[mask, column]
                delta, low, high = bootstrap_delta(a, b)
                cells.append(f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]")
            lines.append(f"| {left} - {right} | {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def kept_table(kept: dict[int, Kept], questions: int) -> str:
    lines = [
        f"| merged top_k | layer's own top {BASE_K} hits kept | evidence among them kept |"
        " layer hits per answer | project hits per answer | shown as the project's copy |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for k, t in kept.items():
        lines.append(
            f"| {k} | {t.nodes:,}/{t.nodes_of:,} ({t.nodes / max(t.nodes_of, 1):.3f}) |"
            f" {t.evidence:,}/{t.evidence_of:,} ({t.evidence / max(t.evidence_of, 1):.3f}) |"
            f" {t.layer_hits / questions:.2f} | {t.project_hits / questions:.2f} | {t.absorbed} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = stage_args(argv, __doc__ or "", RESULTS / "layers-quality.md")
    began = time.perf_counter()
    load_start = os.getloadavg()
    conversations, _ = load_realtalk(args.data)
    questions = [q for c in conversations for q in c.questions]
    directory = args.cache / "layers-quality"
    node_map = directory / "bench-nodes.json"  # session -> node id -> turns, for --no-build
    build = "reused (--no-build)"
    if args.no_build:
        nodes: Nodes = json.loads(node_map.read_text(encoding="utf-8"))
    else:
        nodes = derive_all(args.cache, directory, conversations, began)
        node_map.write_text(json.dumps(nodes), encoding="utf-8")
        build = f"{time.perf_counter() - began:.0f} s"
        log(f"built in {build}, load {os.getloadavg()[0]:.1f}")
    labels = [LAYERED.format(k=k) for k in LAYERED_K]
    labels += [SCOPED.format(k=k) for k in SCOPED_K] + [PLAIN.format(k=k) for k in SCOPED_K]
    found: dict[str, list[Ranking]] = {label: [] for label in labels}
    kept = {k: Kept() for k in LAYERED_K}
    asked = time.perf_counter()
    for index, conversation in enumerate(conversations):
        project = conversations[(index + 1) % len(conversations)].group
        ask_pair(directory, conversation, project, nodes, found, kept)
        log(f"  {conversation.group} over {project}: asked ({time.perf_counter() - began:.0f} s)")
    systems = {label: score_system(label, found[label], questions) for label in labels}
    l10, l15, l20 = (LAYERED.format(k=k) for k in LAYERED_K)
    s10, s20 = (SCOPED.format(k=k) for k in SCOPED_K)
    p10, p20 = (PLAIN.format(k=k) for k in SCOPED_K)
    comparisons = [(l10, s10), (l15, s10), (l20, s10), (l20, s20), (s10, p10), (s20, p20)]
    load_end = os.getloadavg()
    report = "\n".join(
        [
            f"# A layered recall against the layer's own recall on REALTALK "
            f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
            "",
            f"{len(questions)} questions; {len(conversations)} conversations, each its own "
            f"session derived turn by turn through lambo_derive (MiniLM); conversation i is the "
            f"layer, conversation i+1 (cyclically) the project session layered over it. Build "
            f"{build}; asking {time.perf_counter() - asked:.0f} s; load average "
            f"{load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end.",
            "",
            quality_tables(list(systems.values()), questions, comparisons),
            "",
            "Paired differences, bootstrap 95% interval over questions (2,000 resamples), "
            "per category:",
            "",
            delta_table(systems, questions, comparisons),
            "",
            f"What the merged answers keep of the layer's own top {BASE_K} (scope = the layer, "
            f"top_k {BASE_K}), summed over the {len(questions)} questions:",
            "",
            kept_table(kept, len(questions)),
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
