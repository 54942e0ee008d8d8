"""Held-out-style quality of a layered recall (issue 30, ADR 0080) on REALTALK: does a recall
from a project session layered over a layer find the layer's evidence as well as a plain
recall of the layer does?

    .venv/bin/python -m bench.layers_quality [--out bench/results/layers-quality.md] [--no-build]

Every REALTALK turn is derived through lambo_derive under MiniLM as bench_recall --quality
does (bench.recall_stages.derive_all: one session per conversation, into
`.bench-cache/layers-quality`, its embedding cache seeded from `.bench-cache/recall-quality`
when that exists). Conversation i's session is then the LAYER, and a PROJECT session is
layered over it, two ways: conversation i+1's session (cyclically; a project of the same genre
and size, nine of the ten sharing a speaker with the layer, whose hits compete for every
question), `project-notes`, about 150 facts of a software project unrelated to REALTALK
(this repository's settings and ADR titles, derived in bulk by bench_layers.build), and
`project-new`, a new project holding the first 3 of those notes (fewer than top_k / 2). Every
question of conversation i is asked through lambo_recall

- layered: from the project session, no scope (the merged recall), top_k 10, 15 and 20;
- scoped: from the layered project session with `scope` = the layer (the layer's plain recall
  through the layered endpoint), top_k 10, 15 and 20;
- plain: from the layer's own session opened without layers, top_k 10 and 20.

Every layered system is asked under each `[serve] layer_merge` (rank, relevance: ADR 0107).
Direction B swaps the roles: conversation i's own session, layered over conversation i+1's,
is asked conversation i's questions (top_k 10 and 20, each merge), the evidence now in the
session and a layer hit never scoring; its baseline is conversation i's plain recall.

A project hit holds its place in the ranking but is never evidence (it is named by its
session and node id). Scored with bench.search_quality's scoring (R@5/R@10/R@20/MRR@20); the
differences are paired bootstrap 95% intervals over questions, per category. Also counted:
how many of the layer's own top-k hits (and of the evidence among them) the merged answer at
the same top_k keeps, and how much of the evidence of the layer's own top 10 it keeps.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.bench_layers import UNLIMITED, build
from bench.realtalk import CATEGORIES, Conversation, Question, load_realtalk
from bench.recall_common import AGENT
from bench.recall_quality import _call
from bench.recall_stages import derive_all, shown_evidence
from bench.search_common import BENCH, RESULTS, log, require
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

NOTES = "project-notes"  # the session of project_notes
NEW, NEW_NOTES = "project-new", 3  # a new project's session: the first few notes
NEXT = "the next conversation"
# what the project session layered over the layer holds
VARIANTS = (NEXT, "project notes", f"a new project ({NEW_NOTES} notes)")
MERGES = ("rank", "relevance")  # [serve] layer_merge (ADR 0107)
LAYERED = "layered over {variant}, by {merge}, top_k {k}"
# direction B: the evidence in the project session (conversation i), the layer conversation i+1
SWAPPED = "the conversation's session layered over the next, by {merge}, top_k {k}"
SWAPPED_K = (10, 20)
SCOPED = "scope = the layer, top_k {k}"
PLAIN = "the layer's session unlayered, top_k {k}"
LAYERED_K = (10, 15, 20)
SCOPED_K = (10, 15, 20)
PLAIN_K = (10, 20)
BASE_K = 10  # the layer's own answer whose evidence the deeper merged answers must keep
WIDE_K, WIDE_TOKENS = 20, 1000  # a merged recall as deep as two layer answers, twice the budget
WIDE = f"layered over {{variant}}, by {{merge}}, top_k {WIDE_K}, max_tokens {WIDE_TOKENS}"


@dataclass
class Kept:
    """Per variant and layered top_k k: what the merged answers kept of the layer's own."""

    nodes: int = 0  # the layer's own top-k hits also in the merged top-k
    nodes_of: int = 0
    evidence: int = 0  # evidence turns among the layer's own top-k hits the merged top-k keeps
    evidence_of: int = 0
    base: int = 0  # evidence turns among the layer's own top-BASE_K hits the merged top-k keeps
    base_of: int = 0
    layer_hits: int = 0  # hits from the layer in the merged answers
    project_hits: int = 0
    absorbed: int = 0  # of the layer's own top-k, hits shown as the project's copy (`also`)


@dataclass
class Shown:
    """What a system's context blocks show of the evidence."""

    shares: list[float] = field(default_factory=list)  # of the evidence among the hits
    read: list[float] = field(default_factory=list)  # of all the evidence, every question


def recall(
    app: App, query: str, top_k: int, scope: str | None = None, max_tokens: int | None = None
) -> dict[str, Any]:
    params: dict[str, Any] = {"agent_id": AGENT, "query": query, "top_k": top_k}
    if scope is not None:
        params["scope"] = scope
    if max_tokens is not None:
        params["max_tokens"] = max_tokens
    return _call(app, "lambo_recall", params)


def ranking(found: dict[str, Any], nodes: Nodes, own: str, layer: str, depth: int) -> Ranking:
    """The hits' turns in answer order, distinct, at most `depth`; a hit of a session other
    than the layer is named `<session>/<node id>`, so it holds its place and never scores."""
    names: list[str] = []
    for hit in found["hits"]:
        session = hit.get("session", own)
        if session != layer:
            names.append(f"{session}/{hit['node_id']}")
            continue
        turns = nodes[layer].get(hit["node_id"])
        require(turns is not None, f"a hit of {layer} that no turn was derived into")
        names += turns or []
    return distinct(names, depth)


def project_notes(root: Path) -> list[str]:
    """A software project's own memory, a few hundred facts unrelated to REALTALK: each setting
    of docs/settings.md (key, default, meaning) and each ADR's title."""
    notes: list[str] = []
    for line in (root / "docs" / "settings.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip().replace("`", "") for cell in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            notes.append(f"Setting {cells[0]} defaults to {cells[2]}: {cells[4]}.")
    for path in sorted((root / "docs" / "adr").glob("[0-9]*.md")):
        title = path.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").replace("`", "")
        notes.append(f"ADR {title}")
    return list(dict.fromkeys(notes))


def build_notes(directory: Path, session: str, texts: Sequence[str]) -> str:
    """A notes session of the workspace, derived in bulk (bench_layers.build) once per set of
    texts (a marker keeps their digest); the build's seconds, or that it was kept."""
    digest = hashlib.sha256("\0".join(texts).encode()).hexdigest()
    marker = directory / f"bench-{session}.txt"
    if marker.is_file() and marker.read_text(encoding="utf-8").split()[0] == digest:
        return f"kept ({marker.read_text(encoding='utf-8').split()[1]} s)"
    seconds = build(directory, [(session, texts)], "minilm")
    marker.write_text(f"{digest} {seconds:.0f}\n", encoding="utf-8")
    return f"{seconds:.0f} s"


def layer_nodes(found: dict[str, Any], layer: str, own: str) -> list[str]:
    return [h["node_id"] for h in found["hits"] if h.get("session", own) == layer]


def evidence_of(answer: dict[str, Any], nodes: dict[str, list[str]], wanted: set[str]) -> set[str]:
    """The layer's nodes among the answer's hits that hold an evidence turn."""
    return {h["node_id"] for h in answer["hits"] if set(nodes.get(h["node_id"], ())) & wanted}


def note_shown(
    into: Shown, found: dict[str, Any], nodes: dict[str, list[str]], wanted: set[str]
) -> None:
    in_hits, shown = shown_evidence(found, nodes, wanted)
    if in_hits:
        into.shares.append(len(shown) / len(in_hits))
    into.read.append(len(shown) / len(wanted))


def ask_layer(
    directory: Path,
    conversation: Conversation,
    projects: dict[str, str],
    nodes: Nodes,
    found: dict[str, list[Ranking]],
    kept: dict[tuple[str, str, int], Kept],
    shown: dict[str, Shown],
) -> None:
    """Every question of `conversation` (the layer): from its own unlayered session, then from
    each variant's project session layered over it, merged by each [serve] layer_merge (the
    first variant also asks it scoped)."""
    layer = conversation.group
    with Workspace(Settings(workspace=directory, session=layer), command="bench") as ws:
        app = App(ws)
        for question in conversation.questions:
            for k in PLAIN_K:
                answer = recall(app, question.text, k)
                found[PLAIN.format(k=k)].append(ranking(answer, nodes, layer, layer, k))
    own: list[dict[int, dict[str, Any]]] = []  # per question, the layer's own answer per top_k
    for merge, (variant, project) in ((m, v) for m in MERGES for v in projects.items()):
        tuning = UNLIMITED.with_values(serve__layer_merge=merge)
        settings = Settings(workspace=directory, session=project, layers=(layer,), tuning=tuning)
        first = variant == VARIANTS[0] and merge == MERGES[0]
        with Workspace(settings, command="bench") as ws:
            app = App(ws).for_session(None, (layer,))
            for index, question in enumerate(conversation.questions):
                if first:
                    own.append({k: recall(app, question.text, k, scope=layer) for k in SCOPED_K})
                wanted = set(question.evidence)
                if first:
                    for k in SCOPED_K:
                        label = SCOPED.format(k=k)
                        found[label].append(ranking(own[index][k], nodes, layer, layer, k))
                        note_shown(shown[label], own[index][k], nodes[layer], wanted)
                base = evidence_of(own[index][BASE_K], nodes[layer], wanted)
                for k in LAYERED_K:
                    merged = recall(app, question.text, k)
                    label = LAYERED.format(variant=variant, merge=merge, k=k)
                    found[label].append(ranking(merged, nodes, project, layer, k))
                    note_shown(shown[label], merged, nodes[layer], wanted)
                    if k == WIDE_K:
                        wide = recall(app, question.text, k, max_tokens=WIDE_TOKENS)
                        wide_label = WIDE.format(variant=variant, merge=merge)
                        note_shown(shown[wide_label], wide, nodes[layer], wanted)
                    alone = own[index][k]
                    own_nodes = layer_nodes(alone, layer, layer)
                    in_merged = set(layer_nodes(merged, layer, project))
                    project_text = {
                        h["content"] for h in merged["hits"] if h.get("session", project) != layer
                    }
                    tally = kept[merge, variant, k]
                    tally.nodes += len(set(own_nodes) & in_merged)
                    tally.nodes_of += len(own_nodes)
                    own_evidence = evidence_of(alone, nodes[layer], wanted)
                    tally.evidence += len(own_evidence & in_merged)
                    tally.evidence_of += len(own_evidence)
                    tally.base += len(base & in_merged)
                    tally.base_of += len(base)
                    tally.layer_hits += len(in_merged)
                    tally.project_hits += len(merged["hits"]) - len(in_merged)
                    tally.absorbed += sum(
                        h["node_id"] not in in_merged and h["content"] in project_text
                        for h in alone["hits"]
                    )


def ask_swapped(
    directory: Path,
    conversation: Conversation,
    layer: str,
    nodes: Nodes,
    found: dict[str, list[Ranking]],
) -> None:
    """Direction B: every question of `conversation` from its own session layered over
    `layer` (another conversation), by each [serve] layer_merge; the evidence is the
    session's own, a layer hit holds its place and never scores."""
    own = conversation.group
    for merge in MERGES:
        tuning = UNLIMITED.with_values(serve__layer_merge=merge)
        settings = Settings(workspace=directory, session=own, layers=(layer,), tuning=tuning)
        with Workspace(settings, command="bench") as ws:
            app = App(ws).for_session(None, (layer,))
            for question in conversation.questions:
                for k in SWAPPED_K:
                    answer = recall(app, question.text, k)
                    found[SWAPPED.format(merge=merge, k=k)].append(
                        ranking(answer, nodes, own, own, k)
                    )


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


def kept_table(kept: dict[tuple[str, str, int], Kept], questions: int) -> str:
    lines = [
        "| merge | project session | merged top_k k | layer's own top k hits kept"
        f" | evidence among them kept | evidence among the layer's own top {BASE_K} kept"
        " | layer hits per answer |"
        " project hits per answer | layer hits shown as the project's copy |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (merge, variant, k), t in kept.items():
        lines.append(
            f"| {merge} | {variant} | {k}"
            f" | {t.nodes:,}/{t.nodes_of:,} ({t.nodes / max(t.nodes_of, 1):.3f})"
            f" | {t.evidence:,}/{t.evidence_of:,} ({t.evidence / max(t.evidence_of, 1):.3f})"
            f" | {t.base:,}/{t.base_of:,} ({t.base / max(t.base_of, 1):.3f})"
            f" | {t.layer_hits / questions:.2f} | {t.project_hits / questions:.2f}"
            f" | {t.absorbed} |"
        )
    return "\n".join(lines)


def shown_table(shown: dict[str, Shown], questions: Sequence[Question]) -> str:
    """Per system: the share of the evidence among its hits its context block shows, and the
    share of all the evidence it shows (every question), overall and per category, with the
    difference from the layer's own top_k BASE_K answer (paired bootstrap 95% interval)."""
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    base = np.array(shown[SCOPED.format(k=BASE_K)].read)
    lines = [
        "What the context block (max_tokens 500 unless named) shows. 'Of the hits': the share "
        "of the evidence among the hits that the block shows (a hit is shown when its short id "
        "is in the block and its block is not the one cut), mean over the questions with "
        "evidence among the hits. 'Read': the share of all a question's evidence the block "
        f"shows, mean over every question; its difference from scope = the layer, top_k "
        f"{BASE_K} with a paired bootstrap 95% interval.",
        "",
        "| system | questions | of the hits | "
        + " | ".join(f"read, {label}" for label, _ in masks)
        + " | read - the layer's own, all |",
        "|---|---:|---:|" + "---:|" * len(masks) + "---:|",
    ]
    for label, into in shown.items():
        if not into.read:
            continue
        read = np.array(into.read)
        delta, low, high = bootstrap_delta(read, base)
        lines.append(
            f"| {label} | {len(into.shares)} | {sum(into.shares) / len(into.shares):.3f} | "
            + " | ".join(f"{read[mask].mean():.3f}" for _, mask in masks)
            + f" | {delta:+.3f} [{low:+.3f}, {high:+.3f}] |"
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
    built = "reused (--no-build)"
    if args.no_build:
        nodes: Nodes = json.loads(node_map.read_text(encoding="utf-8"))
    else:
        nodes = derive_all(args.cache, directory, conversations, began)
        node_map.write_text(json.dumps(nodes), encoding="utf-8")
        built = f"{time.perf_counter() - began:.0f} s"
    notes = project_notes(BENCH.parent)
    notes_built = build_notes(directory, NOTES, notes)
    build_notes(directory, NEW, notes[:NEW_NOTES])
    log(f"built: turns {built}, {len(notes)} project notes {notes_built}")
    labels = [
        LAYERED.format(variant=v, merge=m, k=k) for m in MERGES for v in VARIANTS for k in LAYERED_K
    ]
    labels += [SCOPED.format(k=k) for k in SCOPED_K] + [PLAIN.format(k=k) for k in PLAIN_K]
    labels += [SWAPPED.format(merge=m, k=k) for m in MERGES for k in SWAPPED_K]
    found: dict[str, list[Ranking]] = {label: [] for label in labels}
    kept = {(m, v, k): Kept() for m in MERGES for v in VARIANTS for k in LAYERED_K}
    shown = {label: Shown() for label in labels}
    shown |= {WIDE.format(variant=v, merge=m): Shown() for m in MERGES for v in VARIANTS}
    asked = time.perf_counter()
    for index, conversation in enumerate(conversations):
        after = conversations[(index + 1) % len(conversations)].group
        projects = {NEXT: after, VARIANTS[1]: NOTES, VARIANTS[2]: NEW}
        ask_layer(directory, conversation, projects, nodes, found, kept, shown)
        ask_swapped(directory, conversation, after, nodes, found)
        log(f"  {conversation.group} (next: {after}): asked ({time.perf_counter() - began:.0f} s)")
    systems = {label: score_system(label, found[label], questions) for label in labels}
    s10, s20 = SCOPED.format(k=10), SCOPED.format(k=20)
    comparisons: list[tuple[str, str]] = []
    for merge in MERGES:
        for variant in VARIANTS:
            l10, l15, l20 = (LAYERED.format(variant=variant, merge=merge, k=k) for k in LAYERED_K)
            comparisons += [(l10, s10), (l15, s10), (l20, s10), (l20, s20)]
    for variant in VARIANTS:  # relevance against rank, the same top_k
        for k in (10, 20):
            by = {m: LAYERED.format(variant=variant, merge=m, k=k) for m in MERGES}
            comparisons.append((by["relevance"], by["rank"]))
    comparisons += [(s10, PLAIN.format(k=10)), (s20, PLAIN.format(k=20))]
    for k in SWAPPED_K:  # direction B against the evidence session's own recall, and each other
        by = {m: SWAPPED.format(merge=m, k=k) for m in MERGES}
        plain = PLAIN.format(k=k)
        comparisons += [
            (by["rank"], plain),
            (by["relevance"], plain),
            (by["relevance"], by["rank"]),
        ]
    load_end = os.getloadavg()
    report = "\n".join(
        [
            f"# A layered recall against the layer's own recall on REALTALK "
            f"({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
            "",
            f"{len(questions)} questions; {len(conversations)} conversations, each its own "
            f"session derived turn by turn through lambo_derive (MiniLM); conversation i is the "
            f"layer; the project session layered over it is conversation i+1 (cyclically) or "
            f"`{NOTES}` ({len(notes)} facts of this repository's docs) or `{NEW}` (the first "
            f"{NEW_NOTES} of them). Build: turns {built}, "
            f"notes {notes_built}; asking {time.perf_counter() - asked:.0f} s; load average "
            f"{load_start[0]:.1f} at the start, {load_end[0]:.1f} at the end.",
            "",
            quality_tables(list(systems.values()), questions, comparisons),
            "",
            "Paired differences, bootstrap 95% interval over questions (2,000 resamples), "
            "per category:",
            "",
            delta_table(systems, questions, comparisons),
            "",
            f"What the merged answers keep of the layer's own answers (scope = the layer, the "
            f"same top_k), summed over the {len(questions)} questions:",
            "",
            kept_table(kept, len(questions)),
            "",
            shown_table(shown, questions),
            "",
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
