"""Benchmark lcg's passage search: REALTALK retrieval quality, and latency at 10k and 100k.

Run from the repository root:

    /tmp/v0/bin/python bench/bench_search.py --quality    # recall@k / MRR on REALTALK
    /tmp/v0/bin/python bench/bench_search.py --latency    # ingest rate, p50/p95 search latency

Both parts compare lcg with baselines run in the same process on the same data: for quality,
plain BM25 (rank-bm25) and each of lcg's two legs alone; for latency, raw FAISS, raw FTS5 and
the query embedding alone, as ratios (the machines are shared and noisy). The REALTALK data is
read from ../shared/data/realtalk (never copied). Embeddings are cached in workspaces under
/tmp/lcg-bench-cache/ so repeated runs do not re-run the model. See bench/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import io
import json
import os
import platform
import pstats
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from lcg.commands import handlers
from lcg.domain import passages as passage_split
from lcg.domain.commands import AddEpisode
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import CountingEmbedder
from lcg.projections.text import reader as text_reader
from lcg.projections.text.projection import TOKENIZER
from lcg.projections.vectors import catalog

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results"
DATA = BENCH.parent.parent / "shared" / "data" / "realtalk"
CACHE = Path(tempfile.gettempdir()) / "lcg-bench-cache"  # /tmp/lcg-bench-cache here
NAMESPACE = uuid.UUID("6f1c2a52-7f0e-4d38-9a55-3f1f0c6a9b10")  # episode uuids: uuid5(NS, key)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "inference"}
KS = (5, 10, 20)
DEPTH = 20  # results asked for per question (num_results)
LEG_DEPTH = max(50, DEPTH * 4)  # what search_passages asks each leg for (its _candidates)
RRF_K = 60
INGEST_BATCH = 500
TARGET_P95_MS = 25.0
LATENCY_GROUP = GroupId("bench-latency")
Floats = npt.NDArray[np.float64]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def require(condition: bool, message: str) -> None:
    """Fail loudly if a run did not do the work it claims to measure."""
    if not condition:
        raise RuntimeError(message)


# -- REALTALK ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    group: GroupId
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    time: datetime

    @property
    def plain(self) -> str:
        """The data README's text of a turn: `speaker: clean_text`."""
        return f"{self.speaker}: {self.text}"

    @property
    def body(self) -> str:
        """What is stored as the episode body: the plain text and the shared image's caption."""
        return self.plain if not self.caption else f"{self.plain}\n[image: {self.caption}]"


@dataclass(frozen=True, slots=True)
class Question:
    group: GroupId
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    group: GroupId
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass
class EvidenceStats:
    questions: int = 0
    strings: int = 0
    malformed: int = 0
    unmatched: int = 0  # normalised ids that name no turn (dropped)
    skipped: int = 0  # questions left without evidence


_CLEAN_ID = re.compile(r"D\d+:\d+")
_SEMICOLON_ID = re.compile(r"D(\d+);(\d+)")  # "D17;39": a semicolon typed for the colon
_SPACED_D = re.compile(r"D\s+(?=\d)")  # "D 2:18"
# An id with an optional D ("23:29"), optionally a range to a second id ("D12:3-D12:5").
_ID_OR_RANGE = re.compile(r"D?(\d+):(\d+)(?:\s*-\s*D?(\d+):(\d+))?")


def normalise_evidence(raw: str) -> list[str]:
    """Evidence ids from one evidence string, as the data README asks.

    Handles ranges within a session ("D12:3-D12:5"), lists ("D5:12;D5:16", "D13:4. D14:4",
    "D13:45:D20:19"), a missing D ("23:29"), "D 2:18", "D17;39" and trailing dots. Strings with
    no session:turn pair ("D58", "D:56", "") give nothing.
    """
    text = raw.strip()
    semicolon = _SEMICOLON_ID.fullmatch(text)
    if semicolon:
        return [f"D{int(semicolon[1])}:{int(semicolon[2])}"]
    text = _SPACED_D.sub("D", text)
    ids: list[str] = []
    for match in _ID_OR_RANGE.finditer(text):
        session, turn = int(match[1]), int(match[2])
        if match[3] is None:
            ids.append(f"D{session}:{turn}")
        elif int(match[3]) == session and int(match[4]) >= turn:
            ids.extend(f"D{session}:{t}" for t in range(turn, int(match[4]) + 1))
        else:  # a range across sessions: keep its ends
            ids.extend((f"D{session}:{turn}", f"D{int(match[3])}:{int(match[4])}"))
    return list(dict.fromkeys(ids))


def group_of(path: Path) -> GroupId:
    return GroupId(f"realtalk-{path.stem.lower()}")  # e.g. realtalk-chat_1_emi_elise


def load_realtalk(directory: Path) -> tuple[list[Conversation], EvidenceStats]:
    """Every conversation (turns in time order) with its questions that keep some evidence."""
    stats = EvidenceStats()
    conversations: list[Conversation] = []
    files = sorted(directory.glob("Chat_*.json"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    require(bool(files), f"no Chat_*.json under {directory}")
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        group = group_of(path)
        turns: list[Turn] = []
        for key, value in data.items():
            if not re.fullmatch(r"session_\d+", key):
                continue
            for raw in value:
                turns.append(
                    Turn(
                        group=group,
                        dia_id=raw["dia_id"],
                        speaker=raw["speaker"],
                        text=raw["clean_text"],
                        caption=raw.get("blip_caption") or None,
                        time=datetime.strptime(raw["date_time"], "%d.%m.%Y, %H:%M:%S").replace(
                            tzinfo=UTC
                        ),
                    )
                )

        def position(turn: Turn) -> tuple[datetime, int, int]:
            session, number = turn.dia_id[1:].split(":")
            return turn.time, int(session), int(number)

        turns.sort(key=position)
        known = {turn.dia_id for turn in turns}
        questions: list[Question] = []
        for qa in data["qa"]:
            stats.questions += 1
            ids: list[str] = []
            for raw_id in qa["evidence"]:
                stats.strings += 1
                stats.malformed += _CLEAN_ID.fullmatch(raw_id) is None
                ids.extend(normalise_evidence(raw_id))
            ids = list(dict.fromkeys(ids))
            kept = tuple(i for i in ids if i in known)
            stats.unmatched += len(ids) - len(kept)
            if not kept:
                stats.skipped += 1
                continue
            questions.append(Question(group, qa["question"], int(qa["category"]), kept))
        conversations.append(Conversation(group, tuple(turns), tuple(questions)))
    return conversations, stats


# -- workspaces -------------------------------------------------------------------------------


def reset_workspace(directory: Path) -> None:
    """Delete a bench workspace's WAL, graph and FAISS files, keeping its embedding cache."""
    settings = Settings(workspace=directory)
    keep = settings.embeddings_path.name  # embeddings.sqlite and its -wal / -shm files
    if not settings.state_dir.is_dir():
        return
    for path in settings.state_dir.iterdir():
        if path.name.startswith(keep):
            continue
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def episode_uuid(group: str, name: str) -> EpisodeUuid:
    return EpisodeUuid(str(uuid.uuid5(NAMESPACE, f"{group}/{name}")))


@dataclass(frozen=True, slots=True)
class Item:
    """One episode to ingest."""

    group: GroupId
    name: str
    body: str
    time: datetime
    source: str  # "message" (chat turns: indexed with their neighbours' words) or "text"


def ingest(ws: Workspace, items: Sequence[Item], label: str, batch: int = INGEST_BATCH) -> float:
    """Add the items as episodes through Writer.execute_many, `batch` per WAL commit; seconds.

    The vector index follows each commit in the same call (the embedding of new text through
    the cache, then FAISS add), so the time includes embedding.
    """
    start = time.perf_counter()
    step = max(batch, len(items) // 10)
    for offset in range(0, len(items), batch):
        chunk = items[offset : offset + batch]
        now = ws.clock()
        commands = [
            AddEpisode(
                group_id=item.group,
                name=item.name,
                body=item.body,
                source=item.source,
                source_description="REALTALK",
                reference_time=item.time,
                new_uuid=episode_uuid(item.group, item.name),
                now=now,
            )
            for item in chunk
        ]
        outcomes = ws.writer.execute_many(
            [partial(handlers.add_episode, command=command) for command in commands]
        )
        failed = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
        if failed:
            raise failed[0]
        done = offset + len(chunk)
        if done % step < batch or done == len(items):
            elapsed = time.perf_counter() - start
            log(f"  {label}: {done:,}/{len(items):,} episodes, {elapsed:.1f} s")
    return time.perf_counter() - start


def stored_counts(ws: Workspace, groups: Sequence[str]) -> tuple[int, int]:
    """Episodes and passage documents stored for the groups (graph and FTS rows)."""
    marks = ",".join("?" * len(groups))
    conn = ws.reader()
    episodes = conn.execute(
        f"SELECT COUNT(*) FROM episodes WHERE group_id IN ({marks})", list(groups)
    ).fetchone()[0]
    docs = conn.execute(
        f"SELECT COUNT(*) FROM text_docs WHERE kind='passage' AND group_id IN ({marks})",
        list(groups),
    ).fetchone()[0]
    return int(episodes), int(docs)


def passage_count(body: str) -> int:
    return len(passage_split.split(body))


# -- quality ----------------------------------------------------------------------------------

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


def hybrid_rankings(ws: Workspace, conversations: Sequence[Conversation]) -> list[Ranking]:
    """knowledge_search_passages through operations.dispatch, as a client calls it."""
    app = App(ws)
    rankings: list[Ranking] = []
    for conversation in conversations:
        for question in conversation.questions:
            result = operations.dispatch(
                app,
                "knowledge_search_passages",
                {
                    "query": question.text,
                    "num_results": DEPTH,
                    "min_score": 0.0,
                    "group_ids": [conversation.group],
                },
            )
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
                if hit.vec_id in entries and entries[hit.vec_id].kind == catalog.PASSAGE
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
TEXT_LEG = "lcg FTS5 leg alone"
VECTOR_LEG = "lcg vector leg alone"
HYBRID_PLAIN = "lcg hybrid, rrf; turns as `text` (no context)"
TEXT_LEG_PLAIN = "lcg FTS5 leg alone; turns as `text`"
BM25_SAME = "BM25 (rank-bm25), same text"
BM25_README = "BM25 (rank-bm25), README text"
BM25_VECTOR_RRF = "rank-bm25 + lcg vector leg, RRF k=60"
COMPARISONS = (
    (HYBRID_RRF, BM25_SAME),
    (HYBRID_MAX, BM25_SAME),
    (HYBRID_RRF, BM25_VECTOR_RRF),
    (HYBRID_RRF, TEXT_LEG),
    (HYBRID_RRF, VECTOR_LEG),
    (HYBRID_MAX, HYBRID_RRF),
    (TEXT_LEG, TEXT_LEG_PLAIN),
    (HYBRID_RRF, HYBRID_PLAIN),
)


@dataclass(frozen=True, slots=True)
class IngestInfo:
    seconds: float
    model_texts: int  # texts run through the model (0: all from the cache)
    passages: int


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
    with Workspace(Settings(workspace=directory, search_fusion="rrf")) as ws:
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
    with Workspace(Settings(workspace=directory, search_fusion="max")) as ws:
        log("lcg hybrid (max) ...")
        rankings[HYBRID_MAX] = hybrid_rankings(ws, conversations)
    # The same turns as `text` episodes: no neighbour context in the FTS index.
    reset_workspace(directory)
    with Workspace(Settings(workspace=directory, search_fusion="rrf")) as ws:
        plain = [Item(i.group, i.name, i.body, i.time, "text") for i in items]
        ingest(ws, plain, "REALTALK ingest, source=text")
        log("lcg hybrid (rrf) and FTS5 leg, source=text ...")
        rankings[HYBRID_PLAIN] = hybrid_rankings(ws, conversations)
        rankings[TEXT_LEG_PLAIN] = text_leg_rankings(ws, conversations, names)
    return rankings, info


def run_quality(options: Options) -> str:
    began = time.perf_counter()
    conversations, stats = load_realtalk(options.data)
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
    order = [HYBRID_RRF, HYBRID_MAX, TEXT_LEG, VECTOR_LEG, HYBRID_PLAIN, TEXT_LEG_PLAIN]
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
    comparisons = [(a, b) for a, b in COMPARISONS if a in rankings and b in rankings]
    tables = quality_tables(systems, questions, comparisons)
    return "\n".join([*header, tables, ""]) + bm25_note


# -- latency ----------------------------------------------------------------------------------


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


def latency_items(texts: Sequence[str], source: str) -> list[Item]:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Item(LATENCY_GROUP, f"p{index:06d}", text, base + timedelta(seconds=index), source)
        for index, text in enumerate(texts)
    ]


@dataclass(frozen=True, slots=True)
class IngestRow:
    passages: int
    run: str
    model_texts: int
    seconds: float


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


def fill_cache(directory: Path, texts: Sequence[str]) -> tuple[int, float]:
    """Embed whatever of `texts` the workspace's cache lacks (untimed by the tables).

    The texts go to the model shortest first, so each batch of 32 is padded to about its own
    length (in arrival order a batch is padded to its longest text: 2.4x slower here).
    Returns how many texts went through the model, and the seconds taken.
    """
    settings = Settings(workspace=directory)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    model = CountingEmbedder(MiniLmEmbedder(threads=settings.embed_threads))
    cache = EmbeddingCache(settings.embeddings_path, model)
    # What the vector catalog embeds: the passages of each body (stripped, split if long).
    parts = dict.fromkeys(part for text in texts for part in passage_split.split(text))
    ordered = sorted(parts, key=len)
    start = time.perf_counter()
    try:
        chunk = 2_000
        for offset in range(0, len(ordered), chunk):
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


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


@dataclass
class Timings:
    label: str
    ms: list[float] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return percentile(self.ms, 50)

    @property
    def p95(self) -> float:
        return percentile(self.ms, 95)


@dataclass(frozen=True, slots=True)
class LatencyResult:
    passages: int
    queries: int
    repeats: int
    rows: list[Timings]
    agreement: dict[str, float]
    fusion: str


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
        return text_reader.search(conn, "passage", queries[i], [LATENCY_GROUP], k)

    calls: list[tuple[Timings, Callable[[int], object]]] = [
        (Timings("lcg `knowledge_search_passages` (embedding included)"), lcg),
        (Timings("query embedding alone (MiniLM int8, 1 thread)"), embed),
        (Timings(f"raw FAISS `IndexFlatIP`, k={k}, precomputed query vector"), raw_faiss),
        (Timings(f"raw FTS5 bm25, same MATCH, LIMIT {k}"), raw_fts),
        (Timings("lcg vector leg: `vectors.search` + `catalog.describe`"), vector_leg),
        (Timings("lcg FTS5 leg: `text.search`"), text_leg),
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
    fusion = ws.settings.search_fusion
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
    for i, query in enumerate(queries[:50]):
        hits = ws.vectors.search("passage", [LATENCY_GROUP], vectors[i], k)
        entries = catalog.describe(conn, [hit.vec_id for hit in hits])
        lcg_vec = [owner_index[entries[h.vec_id].owner_uuid] for h in hits][:10]
        raw_vec = base.faiss_ids(vectors[i], k)[:10]
        vector_overlap.append(len(set(lcg_vec) & set(raw_vec)) / max(1, len(raw_vec)))
        text_hits = text_reader.search(conn, "passage", query, [LATENCY_GROUP], k)
        lcg_text = [owner_index[h.owner_uuid] for h in text_hits][:10]
        raw_text = base.fts_ids(query, k)[:10]
        text_overlap.append(len(set(lcg_text) & set(raw_text)) / max(1, len(raw_text)))
    agreement = {
        "vector": float(np.mean(vector_overlap)),
        "text": float(np.mean(text_overlap)),
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


def render_latency(
    ingest_rows: Sequence[IngestRow],
    results: Sequence[LatencyResult],
    options: Options,
    wall: float,
    filled: tuple[int, float],
) -> str:
    lines = [
        f"# lcg search latency ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"faiss {faiss.__version__}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs (shared); FAISS and onnxruntime on 1 thread; "
        f"whole run {wall:.0f} s.",
        "",
        "Passages: 1-3 REALTALK turns each, distinct, one group, added as "
        f"`{options.source}` episodes through `Writer.execute_many` ({INGEST_BATCH} per "
        "commit)."
        + (
            " As `message` episodes each passage is also indexed with its neighbours' text"
            " (FTS column `context`), which the raw FTS5 baseline does not have."
            if options.source == "message"
            else ""
        ),
        "",
        "## Ingest",
        "",
        "| passages | embedding cache | texts through the model | seconds | passages/s |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in ingest_rows:
        lines.append(
            f"| {row.passages:,} | {row.run} | {row.model_texts:,} | {row.seconds:.1f} "
            f"| {row.passages / row.seconds:,.0f} |"
        )
    cold, warm = ingest_rows[0], ingest_rows[1]
    model_s = (cold.seconds - warm.seconds) / cold.passages  # model seconds per passage
    for row in ingest_rows[2:]:
        estimate = row.seconds + row.passages * model_s
        lines.append(
            f"| {row.passages:,} | model included, **estimated**: the warm row + "
            f"{model_s * 1000:.0f} ms x passages (cold - warm of the {cold.passages:,} rows) "
            f"| ({row.passages:,}) | {estimate:,.0f} | {row.passages / estimate:,.0f} |"
        )
    model_texts, fill_seconds = filled
    if model_texts:
        lines += [
            "",
            f"This run first filled the bench cache: {model_texts:,} texts through the model "
            f"(`EmbeddingCache.embed`, shortest first, chunks of 2,000) in {fill_seconds:.0f} s, "
            f"{model_texts / fill_seconds:,.1f} texts/s.",
        ]
    for result in results:
        lcg = result.rows[0]
        lines += [
            "",
            f"## Search, {result.passages:,} passages",
            "",
            f"{result.queries} REALTALK questions x {result.repeats} repeats = {len(lcg.ms):,} "
            f"timed calls per row, interleaved (order rotated per query); num_results "
            f"{options.num_results}, min_score 0, fusion `{result.fusion}` (the default). "
            f"Top-10 agreement with lcg's legs (50 "
            f"queries): raw FAISS {result.agreement['vector']:.2f}, raw FTS5 "
            f"{result.agreement['text']:.2f}.",
            "",
            "| measurement | p50 ms | p95 ms | lcg / this, p50 | lcg / this, p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for timings in result.rows:
            ratio50 = lcg.p50 / timings.p50 if timings.p50 else float("nan")
            ratio95 = lcg.p95 / timings.p95 if timings.p95 else float("nan")
            ratios = "" if timings is lcg else f"**{ratio50:.2f}x** | **{ratio95:.2f}x**"
            lines.append(
                f"| {timings.label} | {timings.p50:.2f} | {timings.p95:.2f} | "
                + (ratios or "- | -")
                + " |"
            )
        verdict = "meets" if lcg.p95 < TARGET_P95_MS else "misses"
        lines += [
            "",
            f"lcg p95 {lcg.p95:.1f} ms {verdict} the {TARGET_P95_MS:.0f} ms target "
            f"(p50 {lcg.p50:.1f} ms, max {max(lcg.ms):.1f} ms).",
        ]
    return "\n".join([*lines, ""])


# -- main -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Options:
    quality: bool
    latency: bool
    data: Path
    cache: Path
    sizes: tuple[int, ...]
    queries: int
    repeats: int
    num_results: int
    cold_size: int
    source: str
    profile: bool
    quality_out: Path
    latency_out: Path
    profile_out: Path


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quality", action="store_true", help="REALTALK recall / MRR")
    parser.add_argument("--latency", action="store_true", help="ingest rate, search p50/p95")
    parser.add_argument("--data", type=Path, default=DATA, help="the REALTALK directory")
    parser.add_argument("--cache", type=Path, default=CACHE, help="bench workspaces (cached)")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000], help="passages (latency)"
    )
    parser.add_argument("--queries", type=int, default=300, help="distinct questions timed")
    parser.add_argument("--repeats", type=int, default=2, help="passes over the queries")
    parser.add_argument("--num-results", type=int, default=10, help="num_results (latency)")
    parser.add_argument(
        "--cold-size", type=int, default=1_000, help="passages ingested with an empty cache"
    )
    parser.add_argument(
        "--source",
        choices=["text", "message"],
        default="text",
        help="episode source of the latency passages (message: indexed with neighbours)",
    )
    parser.add_argument("--profile", action="store_true", help="always profile 50 searches")
    parser.add_argument("--quality-out", type=Path, default=RESULTS / "search-quality.md")
    parser.add_argument("--latency-out", type=Path, default=RESULTS / "search-latency.md")
    parser.add_argument("--profile-out", type=Path, default=RESULTS / "search-profile.txt")
    args = parser.parse_args(argv)
    if not (args.quality or args.latency):
        parser.error("choose --quality, --latency or both")
    return Options(
        quality=args.quality,
        latency=args.latency,
        data=args.data,
        cache=args.cache,
        sizes=tuple(args.sizes),
        queries=args.queries,
        repeats=args.repeats,
        num_results=args.num_results,
        cold_size=args.cold_size,
        source=args.source,
        profile=args.profile,
        quality_out=args.quality_out,
        latency_out=args.latency_out,
        profile_out=args.profile_out,
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    log(f"wrote {path}")


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    options.cache.mkdir(parents=True, exist_ok=True)
    faiss.omp_set_num_threads(1)  # two OpenMP threads make single queries far slower here
    if options.quality:
        report = run_quality(options)
        print(report)
        write(options.quality_out, report)
    if options.latency:
        report, profile = run_latency(options)
        print(report)
        write(options.latency_out, report)
        if profile is not None:
            write(options.profile_out, profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
