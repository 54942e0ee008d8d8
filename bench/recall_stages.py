"""lambo_recall's stages (ADR 0068), each on vs off, on REALTALK.

    .venv/bin/python -m bench.recall_stages [--out bench/results/recall-stages.md]

Every turn is derived through lambo_derive as bench_recall --quality does (one session per
conversation, into `.bench-cache/recall-stages`, whose embedding cache is seeded from
`.bench-cache/recall-quality` when that exists), then every question is asked through
lambo_recall (top_k 10, the tool's other defaults) once per system, the workspace opened
with that system's `[retrieval]` settings. Scored and compared as bench.search_stages does.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.realtalk import Conversation, load_realtalk
from bench.recall_common import AGENT, RECALL_TOP_K, copy_cache
from bench.recall_quality import DeriveInfo, _call, derive_turns
from bench.search_common import RESULTS, log, reset_workspace
from bench.search_quality import Ranking, score_system
from bench.search_stages import stage_args, stage_report
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace

# label -> the [retrieval] settings it runs with
SYSTEMS: dict[str, dict[str, object]] = {
    "off": {},
    "session 0.1": {"session_weight": 0.1},
    "session 0.2": {"session_weight": 0.2},
    "diversify 3": {"per_session": 3},
    "diversify 5": {"per_session": 5},
    "time": {"time_filter": True},
}


def settings_for(directory: Path, group: str, values: dict[str, object]) -> Settings:
    tuning = Tuning()
    merged = dict(tuning.values) | {f"[retrieval] {k}": v for k, v in values.items()}
    return Settings(workspace=directory, session=group, tuning=replace(tuning, values=merged))


def ask_with_budget(
    app: App, conversation: Conversation, nodes: dict[str, list[str]], budget: list[float]
) -> list[Ranking]:
    """lambo_recall (top_k RECALL_TOP_K, the other defaults: max_tokens 500) per question;
    the hits' turns, and in `budget` the share of the evidence among the hits that the
    context block shows (a hit is shown when its short id is in the block and its block is
    not the one cut at max_tokens)."""
    rankings: list[Ranking] = []
    for question in conversation.questions:
        found = _call(
            app,
            "lambo_recall",
            {"agent_id": AGENT, "query": question.text, "top_k": RECALL_TOP_K},
        )
        in_hits, shown = shown_evidence(found, nodes, set(question.evidence))
        if in_hits:
            budget.append(len(shown) / len(in_hits))
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


def main(argv: Sequence[str] | None = None) -> int:
    args = stage_args(argv, __doc__ or "", RESULTS / "recall-stages.md")
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
    found: dict[str, list[Ranking]] = {label: [] for label in SYSTEMS}
    budgets: dict[str, list[float]] = {label: [] for label in SYSTEMS}
    for conversation in conversations:
        for label, values in SYSTEMS.items():
            with Workspace(settings_for(directory, conversation.group, values)) as ws:
                found[label] += ask_with_budget(
                    App(ws), conversation, nodes[conversation.group], budgets[label]
                )
        log(f"  {conversation.group}: asked ({time.perf_counter() - began:.0f} s)")
    systems = [score_system(label, found[label], questions) for label in SYSTEMS]
    lead = (
        f"{len(questions)} questions; lambo_recall top_k {RECALL_TOP_K} (R@20 = R@10 here); "
        f"whole run {time.perf_counter() - began:.0f} s."
    )
    budget = [
        "Share of the evidence among the hits that the default-budget context block "
        "(max_tokens 500) shows, mean over the questions with evidence among the hits:",
        "",
        "| system | questions | shown |",
        "|---|---:|---:|",
        *(
            f"| {label} | {len(b)} | {sum(b) / max(len(b), 1):.3f} |"
            for label, b in budgets.items()
        ),
        "",
    ]
    report = stage_report("lambo_recall's stages on REALTALK", lead, systems, questions, args.out)
    report += "\n" + "\n".join(budget)
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
