"""The quality half of the search benchmark: recall@k and MRR on REALTALK, with baselines."""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.realtalk import CATEGORIES, Conversation, Question, Turn, load_realtalk
from bench.search_common import (
    Item,
    Options,
    episode_uuid,
    ingest,
    log,
    passage_count,
    require,
    reset_workspace,
    stored_counts,
)
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.text import reader as text_reader
from lcg.projections.vectors import catalog
from lcg.queries.fusion import Fusion

KS = (5, 10, 20)
DEPTH = 20  # results asked for per question (num_results)
LEG_DEPTH = max(50, DEPTH * 4)  # what search_passages asks each leg for (its _candidates)
RRF_K = 60
Floats = npt.NDArray[np.float64]

Ranking = list[str]  # dia_ids, best first, distinct


def distinct(names: Sequence[str], depth: int = DEPTH) -> Ranking:
    """The first occurrence of each name (an episode longer than a passage appears per part)."""
    return list(dict.fromkeys(names))[:depth]


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def rrf(rankings: Sequence[Sequence[str]], k: int = RRF_K) -> Ranking:
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, name in enumerate(ranking, start=1):
            scores[name] = scores.get(name, 0.0) + 1.0 / (k + rank)
    return [name for name, _ in sorted(scores.items(), key=lambda item: -item[1])]


def bm25_rankings(
    conversations: Sequence[Conversation], text_of: Callable[[Turn], str], depth: int
) -> list[Ranking] | None:
    """rank-bm25's BM25Okapi per conversation, lowercased word tokens; None if not installed."""
    try:
        module: Any = importlib.import_module("rank_bm25")
    except ImportError:
        return None
    rankings: list[Ranking] = []
    for conversation in conversations:
        names = [turn.dia_id for turn in conversation.turns]
        index = module.BM25Okapi([tokens(text_of(turn)) for turn in conversation.turns])
        for question in conversation.questions:
            scores = np.asarray(index.get_scores(tokens(question.text)), dtype=np.float64)
            order = np.argsort(-scores, kind="stable")[:depth]
            rankings.append([names[i] for i in order])
    return rankings


def hybrid_rankings(
    ws: Workspace, conversations: Sequence[Conversation], *, tool_defaults: bool = False
) -> list[Ranking]:
    """knowledge_search_passages through operations.dispatch, as a client calls it: with
    num_results DEPTH and min_score 0, or (`tool_defaults`) with only the query and the group,
    which is what an agent calling the tool plainly gets (num_results 10, min_score 0.5)."""
    app = App(ws)
    rankings: list[Ranking] = []
    for conversation in conversations:
        for question in conversation.questions:
            params: dict[str, object] = {"query": question.text, "group_ids": [conversation.group]}
            if not tool_defaults:
                params |= {"num_results": DEPTH, "min_score": 0.0}
            result = operations.dispatch(app, "knowledge_search_passages", params)
            found = result["passages"]
            require(
                all(p["group_id"] == conversation.group for p in found),
                "search_passages returned a passage of another group",
            )
            rankings.append(distinct([p["name"] for p in found]))
    return rankings


def text_leg_rankings(
    ws: Workspace, conversations: Sequence[Conversation], names: dict[str, str]
) -> list[Ranking]:
    """lcg's FTS5 leg as search_passages calls it (same function, same depth)."""
    conn = ws.reader()
    rankings: list[Ranking] = []
    for conversation in conversations:
        for question in conversation.questions:
            hits = text_reader.search(
                conn, "passage", question.text, [conversation.group], LEG_DEPTH
            )
            rankings.append(distinct([names[hit.owner_uuid] for hit in hits], LEG_DEPTH))
    return rankings


def vector_leg_rankings(
    ws: Workspace, conversations: Sequence[Conversation], names: dict[str, str]
) -> list[Ranking]:
    """lcg's passage-vector leg as search_passages calls it: FAISS, then the catalog."""
    conn = ws.reader()
    rankings: list[Ranking] = []
    for conversation in conversations:
        for question in conversation.questions:
            query = ws.embedder.embed([question.text])[0]
            hits = ws.vectors.search("passage", [conversation.group], query, LEG_DEPTH)
            entries = catalog.describe(conn, [hit.vec_id for hit in hits])
            owners = [
                entries[hit.vec_id].owner_uuid
                for hit in hits
                if hit.vec_id in entries and entries[hit.vec_id].embedding == catalog.PASSAGE
            ]
            rankings.append(distinct([names[owner] for owner in owners], LEG_DEPTH))
    return rankings


def question_scores(ranking: Ranking, evidence: Sequence[str]) -> tuple[float, ...]:
    """(R@5, R@10, R@20, MRR@20) of one question."""
    wanted = set(evidence)
    recalls = [len(wanted & set(ranking[:k])) / len(wanted) for k in KS]
    first = next((rank for rank, name in enumerate(ranking[:DEPTH], 1) if name in wanted), None)
    return (*recalls, 0.0 if first is None else 1.0 / first)


@dataclass(frozen=True, slots=True)
class System:
    label: str
    scores: Floats  # (questions, 4): R@5, R@10, R@20, MRR


def score_system(label: str, rankings: Sequence[Ranking], questions: Sequence[Question]) -> System:
    require(len(rankings) == len(questions), f"{label}: one ranking per question")
    rows = [question_scores(r, q.evidence) for r, q in zip(rankings, questions, strict=True)]
    return System(label, np.array(rows, dtype=np.float64))


def bootstrap_delta(
    a: Floats, b: Floats, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean of a - b and its paired bootstrap 95% interval over questions."""
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), size=(resamples, len(a)))
    deltas = a[picks].mean(axis=1) - b[picks].mean(axis=1)
    low, high = np.percentile(deltas, [2.5, 97.5])
    return float(a.mean() - b.mean()), float(low), float(high)


def quality_tables(
    systems: Sequence[System], questions: Sequence[Question], comparisons: Sequence[tuple[str, str]]
) -> str:
    categories = np.array([q.category for q in questions])
    lines = [
        "Overall (micro-average over questions; MRR = MRR@20):",
        "",
        "| system | R@5 | R@10 | R@20 | MRR |",
        "|---|---:|---:|---:|---:|",
    ]
    for system in systems:
        means = system.scores.mean(axis=0)
        lines.append(f"| {system.label} | " + " | ".join(f"{m:.3f}" for m in means) + " |")
    lines += ["", "By category:", "", "| system | category | questions | R@5 | R@10 | R@20 | MRR |"]
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    for number, name in CATEGORIES.items():
        mask = categories == number
        for system in systems:
            means = system.scores[mask].mean(axis=0)
            lines.append(
                f"| {system.label} | {number} {name} | {int(mask.sum())} | "
                + " | ".join(f"{m:.3f}" for m in means)
                + " |"
            )
    header = "| R@10 difference | overall [95% CI] | " + " | ".join(
        f"{n} {name}" for n, name in CATEGORIES.items()
    )
    lines += ["", "Paired differences in R@10 (bootstrap over questions, 2,000 resamples):", ""]
    lines += [header + " |", "|---|---:|" + "---:|" * len(CATEGORIES)]
    by_label = {system.label: system for system in systems}
    for left, right in comparisons:
        a, b = by_label[left].scores[:, 1], by_label[right].scores[:, 1]
        delta, low, high = bootstrap_delta(a, b)
        cells = [f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]"]
        for number in CATEGORIES:
            mask = categories == number
            cells.append(f"{a[mask].mean() - b[mask].mean():+.3f}")
        lines.append(f"| {left} - {right} | " + " | ".join(cells))
        lines[-1] += " |"
    return "\n".join(lines)


HYBRID_RRF = "lcg hybrid, rrf"
HYBRID_MAX = "lcg hybrid, max"
HYBRID_DEFAULT = "lcg hybrid, weighted rrf (the default since ADR 0090)"
HYBRID_DEFAULTS = "lcg hybrid, the tool's defaults (num_results 10, min_score 0.5)"
TEXT_LEG = "lcg FTS5 leg alone"
VECTOR_LEG = "lcg vector leg alone"
HYBRID_PLAIN = "lcg hybrid, rrf; turns as `text` (no context)"
TEXT_LEG_PLAIN = "lcg FTS5 leg alone; turns as `text`"
BM25_SAME = "BM25 (rank-bm25), same text"
BM25_README = "BM25 (rank-bm25), README text"
BM25_VECTOR_RRF = "rank-bm25 + lcg vector leg, RRF k=60"
EXTRACTION_ON = "lcg hybrid, rrf; turns through process_chunk (extraction on)"
COMPARISONS = (
    (EXTRACTION_ON, HYBRID_PLAIN),
    (EXTRACTION_ON, HYBRID_RRF),
    (HYBRID_RRF, BM25_SAME),
    (HYBRID_MAX, BM25_SAME),
    (HYBRID_RRF, BM25_VECTOR_RRF),
    (HYBRID_RRF, TEXT_LEG),
    (HYBRID_RRF, VECTOR_LEG),
    (HYBRID_MAX, HYBRID_RRF),
    (HYBRID_DEFAULT, HYBRID_MAX),
    (HYBRID_DEFAULTS, HYBRID_MAX),
    (TEXT_LEG, TEXT_LEG_PLAIN),
    (HYBRID_RRF, HYBRID_PLAIN),
)


@dataclass(frozen=True, slots=True)
class IngestInfo:
    seconds: float
    model_texts: int  # texts run through the model (0: all from the cache)
    passages: int


@dataclass(frozen=True, slots=True)
class GraphInfo:
    """What knowledge_process_chunk wrote for the turns (extraction on)."""

    seconds: float
    entities: int
    edges: int
    mentions: int
    dropped: int  # edges the extractor found with an end naming no entity


def graph_counts(ws: Workspace, groups: Sequence[str]) -> tuple[int, int, int]:
    """Entities (not merged away), edges and mentions stored for the groups."""
    marks = ",".join("?" * len(groups))
    conn = ws.reader()
    counts = [
        conn.execute(
            f"SELECT COUNT(*) FROM {table} WHERE group_id IN ({marks}){extra}", list(groups)
        ).fetchone()[0]
        for table, extra in (
            ("entities", " AND merged_into IS NULL"),
            ("relationships", ""),
            ("mentions", ""),
        )
    ]
    return int(counts[0]), int(counts[1]), int(counts[2])


def extraction_rankings(
    directory: Path, conversations: Sequence[Conversation]
) -> tuple[list[Ranking], GraphInfo]:
    """Each turn through knowledge_process_chunk (the workspace's default extractor, spaCy
    rules), chunk_id = dia_id, in the conversation's group, in time order; then the same
    knowledge_search_passages calls as the other lcg systems."""
    groups = [c.group for c in conversations]
    turns = [t for c in conversations for t in c.turns]
    reset_workspace(directory)  # keeps the embedding cache: the passages embed from it
    with Workspace(fused_by(directory, "rrf")) as ws:
        app = App(ws)
        start = time.perf_counter()
        dropped = 0
        step = max(1, len(turns) // 10)
        for done, turn in enumerate(turns, start=1):
            result = operations.dispatch(
                app,
                "knowledge_process_chunk",
                {
                    "chunk_text": turn.body,
                    "chunk_id": turn.dia_id,
                    "source_file": f"{turn.group}.txt",
                    "group_id": turn.group,
                    "reference_time": turn.time.isoformat(),
                },
            )
            dropped += int(result["edges_dropped_unresolvable"])
            if done % step == 0 or done == len(turns):
                elapsed = time.perf_counter() - start
                log(f"  REALTALK process_chunk: {done:,}/{len(turns):,} turns, {elapsed:.1f} s")
        ws.settle()
        seconds = time.perf_counter() - start
        episodes, _ = stored_counts(ws, groups)
        require(episodes == len(turns), f"extraction: {episodes} episodes, {len(turns)} turns")
        entities, edges, mentions = graph_counts(ws, groups)
        require(entities > 0, "extraction: no entity was written")
        log(f"extraction: {entities:,} entities, {edges:,} edges, {mentions:,} mentions")
        log("lcg hybrid (rrf), extraction on ...")
        rankings = hybrid_rankings(ws, conversations)
    return rankings, GraphInfo(seconds, entities, edges, mentions, dropped)


def fused_by(directory: Path, fusion: Fusion) -> Settings:
    """A workspace's settings whose passage search fuses by `fusion` alone, rrf (k 60, equal
    weights) or max, as before ADR 0090 (`[retrieval] rrf_vector = 0`)."""
    tuning = Tuning()
    values = dict(tuning.values) | {"[retrieval] rrf_vector": 0.0}
    return Settings(
        workspace=directory, search_fusion=fusion, tuning=replace(tuning, values=values)
    )


def lcg_rankings(
    directory: Path, conversations: Sequence[Conversation], names: dict[str, str]
) -> tuple[dict[str, list[Ranking]], IngestInfo]:
    """Every lcg system's rankings: hybrid (rrf, max), each leg alone, and turns as `text`."""
    turns = [t for c in conversations for t in c.turns]
    groups = [c.group for c in conversations]
    # Conversation by conversation, each in time order; chat turns are `message` episodes.
    items = [Item(t.group, t.dia_id, t.body, t.time, "message") for t in turns]
    rankings: dict[str, list[Ranking]] = {}
    reset_workspace(directory)
    with Workspace(fused_by(directory, "rrf")) as ws:
        seconds = ingest(ws, items, "REALTALK ingest")
        episodes, docs = stored_counts(ws, groups)
        require(episodes == len(turns), f"ingest: {episodes} episodes stored, {len(turns)} turns")
        require(ws.vectors.count() == docs, "ingest: vectors != passages")
        info = IngestInfo(seconds, ws.embedder.texts, docs)
        log(f"ingested {episodes:,} turns ({docs:,} passages) in {seconds:.1f} s")
        log("lcg hybrid (rrf), FTS5 leg, vector leg ...")
        rankings[HYBRID_RRF] = hybrid_rankings(ws, conversations)
        rankings[TEXT_LEG] = text_leg_rankings(ws, conversations, names)
        rankings[VECTOR_LEG] = vector_leg_rankings(ws, conversations, names)
    with Workspace(fused_by(directory, "max")) as ws:
        log("lcg hybrid (max) ...")
        rankings[HYBRID_MAX] = hybrid_rankings(ws, conversations)
    with Workspace(Settings(workspace=directory)) as ws:
        log("lcg hybrid (the default fusion) ...")
        rankings[HYBRID_DEFAULT] = hybrid_rankings(ws, conversations)
        rankings[HYBRID_DEFAULTS] = hybrid_rankings(ws, conversations, tool_defaults=True)
    # The same turns as `text` episodes: no neighbour context in the FTS index.
    reset_workspace(directory)
    with Workspace(fused_by(directory, "rrf")) as ws:
        plain = [Item(i.group, i.name, i.body, i.time, "text") for i in items]
        ingest(ws, plain, "REALTALK ingest, source=text")
        log("lcg hybrid (rrf) and FTS5 leg, source=text ...")
        rankings[HYBRID_PLAIN] = hybrid_rankings(ws, conversations)
        rankings[TEXT_LEG_PLAIN] = text_leg_rankings(ws, conversations, names)
    return rankings, info


def run_quality(options: Options) -> str:
    began = time.perf_counter()
    conversations, stats = load_realtalk(options.data)
    if options.limit is not None:
        conversations = conversations[: options.limit]
    questions = [q for c in conversations for q in c.questions]
    turns = [t for c in conversations for t in c.turns]
    log(
        f"REALTALK: {len(conversations)} conversations, {len(turns):,} turns, "
        f"{stats.questions} questions, {stats.strings:,} evidence strings ({stats.malformed} "
        f"malformed), {stats.unmatched} ids dropped, {stats.skipped} questions skipped, "
        f"{len(questions)} kept"
    )
    names: dict[str, str] = {episode_uuid(t.group, t.dia_id): t.dia_id for t in turns}
    rankings, info = lcg_rankings(options.cache / "realtalk", conversations, names)
    graph: GraphInfo | None = None
    if options.extraction:
        rankings[EXTRACTION_ON], graph = extraction_rankings(
            options.cache / "realtalk", conversations
        )
    log("rank-bm25 ...")
    bm25 = bm25_rankings(conversations, lambda t: t.body, LEG_DEPTH)
    bm25_plain = bm25_rankings(conversations, lambda t: t.plain, LEG_DEPTH)
    bm25_note = ""
    if bm25 is None or bm25_plain is None:
        bm25_note = "\nrank-bm25 is not installed: no BM25 baseline in this run.\n"
    else:
        rankings[BM25_SAME] = bm25
        rankings[BM25_README] = bm25_plain
        # The data README's fusion recipe, with lcg's vector leg as the dense side.
        rankings[BM25_VECTOR_RRF] = [
            rrf([b, v]) for b, v in zip(bm25, rankings[VECTOR_LEG], strict=True)
        ]
    order = [HYBRID_DEFAULT, HYBRID_RRF, HYBRID_MAX, HYBRID_DEFAULTS, TEXT_LEG, VECTOR_LEG]
    order += [HYBRID_PLAIN]
    order += [EXTRACTION_ON, TEXT_LEG_PLAIN]
    order += [BM25_SAME, BM25_README, BM25_VECTOR_RRF]
    systems = [
        score_system(label, rankings[label], questions) for label in order if label in rankings
    ]
    split_turns = sum(passage_count(t.body) > 1 for t in turns)
    wall = time.perf_counter() - began
    header = [
        f"# lcg search quality on REALTALK ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{len(conversations)} conversations (one group each), {len(turns):,} turns ingested "
        f"in time order as `message` episodes ({info.passages:,} passages: {split_turns} "
        f"turns are longer than one passage); {len(questions)} questions with evidence "
        f"({stats.skipped} of {stats.questions} skipped; {stats.malformed} of "
        f"{stats.strings:,} evidence strings normalised, {stats.unmatched} ids matching no "
        f"turn dropped). Ingest {info.seconds:.1f} s with {info.model_texts:,} texts run "
        f"through the model (0 = all from the cache). Whole run {wall:.0f} s.",
        "",
        f"Each system ranks turns of the question's conversation; top {DEPTH} distinct dia_ids "
        f"are scored. lcg: `knowledge_search_passages` (num_results {DEPTH}, min_score 0, "
        f"group_ids [conversation]); the legs are the very calls search_passages makes (depth "
        f"{LEG_DEPTH}). 'turns as `text`': the same turns stored with source `text`, which "
        "the text projection indexes without the neighbouring turns' words. 'same text' = "
        "the episode bodies (`speaker: clean_text` + image caption); 'README text' = "
        "`speaker: clean_text` only, as in the data README.",
        "",
    ]
    if options.limit is not None:
        header[2:2] = [f"Smoke run: only the first {options.limit} conversation(s).", ""]
    if graph is not None:
        header += [
            "'extraction on': the same turns each through `knowledge_process_chunk` (the "
            "default spaCy extractor; chunk_id = dia_id, source_file `<group>.txt`, so the "
            "episodes have source `text`, like 'turns as `text`', which is its paired 'off'), "
            f"{graph.seconds:.1f} s: {graph.entities:,} entities, {graph.edges:,} edges, "
            f"{graph.mentions:,} mentions written ({graph.dropped:,} edges dropped, no entity "
            "at an end).",
            "",
        ]
    comparisons = [(a, b) for a, b in COMPARISONS if a in rankings and b in rankings]
    tables = quality_tables(systems, questions, comparisons)
    if graph is not None:
        tables += "\n\n" + extraction_table(systems, questions)
    return "\n".join([*header, tables, ""]) + bm25_note


def extraction_table(systems: Sequence[System], questions: Sequence[Question]) -> str:
    """R@10 with extraction off (turns as `text`) and on, by category, and on - off with its
    paired bootstrap 95% interval within each category."""
    by_label = {system.label: system for system in systems}
    off, on = by_label[HYBRID_PLAIN].scores[:, 1], by_label[EXTRACTION_ON].scores[:, 1]
    categories = np.array([q.category for q in questions])
    lines = [
        "Extraction off vs on (knowledge_search_passages, rrf, source `text` both; R@10; "
        "bootstrap within each category, 2,000 resamples):",
        "",
        "| category | questions | off | on | on - off [95% CI] |",
        "|---|---:|---:|---:|---:|",
    ]
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    for label, mask in masks:
        delta, low, high = bootstrap_delta(on[mask], off[mask])
        lines.append(
            f"| {label} | {int(mask.sum())} | {off[mask].mean():.3f} | {on[mask].mean():.3f} "
            f"| {delta:+.3f} [{low:+.3f}, {high:+.3f}] |"
        )
    return "\n".join(lines)
