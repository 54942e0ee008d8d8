"""lambo_recall's stages (ADR 0068, 0099, 0103), each on vs off, on REALTALK.

    .venv/bin/python -m bench.recall_stages [--out bench/results/recall-stages.md]
        [--no-build] [--systems LABEL ...]

Every turn is derived through lambo_derive as bench_recall --quality does (one session per
conversation, into `.bench-cache/recall-stages`, whose embedding cache is seeded from
`.bench-cache/recall-quality` when that exists), then every question is asked through
lambo_recall (top_k 10, the tool's other defaults, or the system's max_tokens) once per system,
the workspace opened with that system's `[retrieval]` settings. Scored and compared as
bench.search_stages does, and with the evidence the context block shows: the share of the
question's evidence turns whose hit's block is whole in it, compared with the paired bootstrap.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bench.realtalk import Conversation, Question, load_realtalk
from bench.recall_common import AGENT, RECALL_TOP_K, copy_cache
from bench.recall_quality import DeriveInfo, _call, derive_turns
from bench.search_common import RESULTS, log, reset_workspace
from bench.search_quality import Ranking, bootstrap_delta, score_system
from bench.search_stages import Pairs, category_masks, stage_args, stage_report
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace

DEFAULT_BUDGET = 500  # lambo_recall's max_tokens default ([recall] max_tokens)
TIGHT = DEFAULT_BUDGET // 2
OFF_TIGHT = f"off, max_tokens {TIGHT}"
# label -> (the [retrieval] settings it runs with, lambo_recall's max_tokens)
SYSTEMS: dict[str, tuple[dict[str, object], int]] = {
    "off": ({}, DEFAULT_BUDGET),
    "session 0.1": ({"session_weight": 0.1}, DEFAULT_BUDGET),
    "session 0.2": ({"session_weight": 0.2}, DEFAULT_BUDGET),
    "diversify 3": ({"per_session": 3}, DEFAULT_BUDGET),
    "diversify 5": ({"per_session": 5}, DEFAULT_BUDGET),
    "time": ({"time_filter": True}, DEFAULT_BUDGET),
    "speaker 1.0": ({"speaker_weight": 1.0}, DEFAULT_BUDGET),
    "budget pack": ({"budget_pack": True}, DEFAULT_BUDGET),
    OFF_TIGHT: ({}, TIGHT),
    f"budget pack, max_tokens {TIGHT}": ({"budget_pack": True}, TIGHT),
}
# a system at another budget than the default is compared with off at that budget
BASELINES = {label: OFF_TIGHT for label, (_, budget) in SYSTEMS.items() if budget == TIGHT}


def settings_for(directory: Path, group: str, values: dict[str, object]) -> Settings:
    tuning = Tuning()
    merged = dict(tuning.values) | {f"[retrieval] {k}": v for k, v in values.items()}
    return Settings(workspace=directory, session=group, tuning=replace(tuning, values=merged))


@dataclass
class Block:
    """What the context blocks of one system showed, per question in order."""

    recall: list[float] = field(default_factory=list)  # evidence in the block / all evidence
    shown: list[float | None] = field(default_factory=list)  # of the evidence among the hits


def ask_with_budget(
    app: App, conversation: Conversation, nodes: dict[str, list[str]], block: Block, budget: int
) -> list[Ranking]:
    """lambo_recall (top_k RECALL_TOP_K, max_tokens `budget`, the other defaults) per
    question; the hits' turns, and in `block` the evidence the context block shows (a hit is
    shown when its short id is in the block and its block is not the one cut at max_tokens)."""
    rankings: list[Ranking] = []
    for question in conversation.questions:
        found = _call(
            app,
            "lambo_recall",
            {
                "agent_id": AGENT,
                "query": question.text,
                "top_k": RECALL_TOP_K,
                "max_tokens": budget,
            },
        )
        wanted = set(question.evidence)
        in_hits, shown = shown_evidence(found, nodes, wanted)
        block.recall.append(len(shown) / len(wanted))
        block.shown.append(len(shown) / len(in_hits) if in_hits else None)
        names = [dia for hit in found["hits"] for dia in nodes.get(hit["node_id"], [])]
        rankings.append(list(dict.fromkeys(names))[:RECALL_TOP_K])
    return rankings


def shown_evidence(
    found: dict[str, Any], nodes: dict[str, list[str]], wanted: set[str]
) -> tuple[set[str], set[str]]:
    """The evidence turns among a recall's hits (`nodes`: the hits' session's node id ->
    turns), and those of them the context block shows: a hit is shown when its short id is
    in the block and its block is not the one cut at max_tokens."""
    in_hits: set[str] = set()
    shown: set[str] = set()
    for hit in found["hits"]:
        turns = set(nodes.get(hit["node_id"], [])) & wanted
        in_hits |= turns
        if hit["node_id"][:8] in found["context"] and not hit.get("truncated_in_context"):
            shown |= turns
    return in_hits, shown


def block_tables(blocks: dict[str, Block], questions: Sequence[Question], pairs: Pairs) -> str:
    """The evidence each system's context blocks show, and each against its baseline with
    the paired bootstrap 95% interval, per category."""
    masks = category_masks(questions)
    recall = {label: np.array(block.recall) for label, block in blocks.items()}
    lines = [
        "Evidence in the context block: the share of a question's evidence turns whose hit's"
        " block is whole in lambo_recall's context (mean over the questions), and of the"
        " evidence among the hits the share the block shows (mean over the questions with"
        " evidence among the hits):",
        "",
        "| system | max_tokens | "
        + " | ".join(f"in block, {name}" for name, _ in masks)
        + " | questions with evidence in hits | shown of it |",
        "|---|---:|" + "---:|" * (len(masks) + 2),
    ]
    for label, block in blocks.items():
        cells = [f"{recall[label][mask].mean():.3f}" for _, mask in masks]
        among = [value for value in block.shown if value is not None]
        cells += [str(len(among)), f"{sum(among) / max(len(among), 1):.3f}"]
        lines.append(f"| {label} | {SYSTEMS[label][1]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Evidence in the block minus the baseline's, paired bootstrap 95% interval within each"
        " category:",
        "",
        "| system | baseline | " + " | ".join(name for name, _ in masks) + " |",
        "|---|---|" + "---:|" * len(masks),
    ]
    for label, base in pairs:
        cells = []
        for _, mask in masks:
            delta, low, high = bootstrap_delta(recall[label][mask], recall[base][mask])
            cells.append(f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]")
        lines.append(f"| {label} | {base} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _systems_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--systems",
        nargs="+",
        choices=list(SYSTEMS),
        default=list(SYSTEMS),
        metavar="LABEL",
        help="the systems to run (default: all); off, and off at a tighter budget when a"
        " system runs there, are always run",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = stage_args(argv, __doc__ or "", RESULTS / "recall-stages.md", _systems_option)
    chosen = ["off", *(label for label in SYSTEMS if label in args.systems and label != "off")]
    if any(label in BASELINES for label in chosen) and OFF_TIGHT not in chosen:
        chosen.insert(1, OFF_TIGHT)
    began = time.perf_counter()
    conversations, _ = load_realtalk(args.data)
    questions = [q for c in conversations for q in c.questions]
    directory = args.cache / "recall-stages"
    node_map = directory / "bench-nodes.json"  # node id -> turns, kept for --no-build
    nodes: dict[str, dict[str, list[str]]] = {}
    if args.no_build:
        nodes = json.loads(node_map.read_text(encoding="utf-8"))
    else:
        nodes = derive_all(args.cache, directory, conversations, began)
        node_map.write_text(json.dumps(nodes), encoding="utf-8")
    found: dict[str, list[Ranking]] = {label: [] for label in chosen}
    blocks: dict[str, Block] = {label: Block() for label in chosen}
    for conversation in conversations:
        for label in chosen:
            values, budget = SYSTEMS[label]
            with Workspace(settings_for(directory, conversation.group, values)) as ws:
                found[label] += ask_with_budget(
                    App(ws), conversation, nodes[conversation.group], blocks[label], budget
                )
        log(f"  {conversation.group}: asked ({time.perf_counter() - began:.0f} s)")
    systems = [score_system(label, found[label], questions) for label in chosen]
    pairs = [(label, BASELINES.get(label, "off")) for label in chosen if label != "off"]
    pairs = [(label, base) for label, base in pairs if label != base]
    lead = (
        f"{len(questions)} questions; lambo_recall top_k {RECALL_TOP_K} (R@20 = R@10 here), "
        f"max_tokens {DEFAULT_BUDGET} unless the system names another; "
        f"whole run {time.perf_counter() - began:.0f} s."
    )
    report = stage_report(
        "lambo_recall's stages on REALTALK", lead, systems, questions, args.out, pairs
    )
    report += "\n" + block_tables(blocks, questions, pairs) + "\n"
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


def derive_all(
    cache: Path, directory: Path, conversations: Sequence[Conversation], began: float
) -> dict[str, dict[str, list[str]]]:
    """Every conversation derived into its session of a reset workspace: node id -> turns."""
    reset_workspace(directory)
    if (cache / "recall-quality").exists():
        copy_cache(cache / "recall-quality", directory)
    info = DeriveInfo()
    nodes: dict[str, dict[str, list[str]]] = {}
    for conversation in conversations:
        with Workspace(Settings(workspace=directory, session=conversation.group)) as ws:
            nodes[conversation.group] = derive_turns(App(ws), conversation, info)
            ws.settle()
            log(f"  {conversation.group}: derived ({time.perf_counter() - began:.0f} s)")
    return nodes


if __name__ == "__main__":
    sys.exit(main())
