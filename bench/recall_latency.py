"""The latency half of the recall benchmark: lambo_recall p50/p95 at 10k and 100k concepts.

A session is built through the memory write path in bulk (`build_session`): each concept is a
one-concept derive, accepted (`accept_derive`, the intent) and applied (`apply_write`, the
outcome) in the writer's batches, 500 derives per commit, so the memory projection, the
concept FTS rows, the BM25 scorer and the concept FAISS index are the ones lambo_derive
writes. Left out of the bulk path: the intent processor's thread and its near-duplicate
search (the texts are distinct by canonical key, so that search would merge nothing).
"""

from __future__ import annotations

import os
import platform
import random
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from bench.latency_report import Timings
from bench.realtalk import Conversation, load_realtalk
from bench.recall_common import AGENT, RecallOptions, copy_cache, fill_cache, framed
from bench.search_common import log, require, reset_workspace
from bench.search_latency import latency_queries
from lcg.commands import memory as memory_commands
from lcg.commands import memory_apply
from lcg.commands.memory_apply import Prepared
from lcg.commands.writer import WriteContext
from lcg.domain.ids import GroupId
from lcg.domain.memory.calls import ConceptIn, Derive
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.limits import TOP_K_DEFAULT, TRAVERSAL_DEPTH_DEFAULT
from lcg.domain.memory.receipts import ReceiptId
from lcg.domain.memory.records import WriteOutcome
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.tools.search import search_context
from lcg.interfaces.workspace import Workspace
from lcg.projections.memory import state
from lcg.queries import recall
from lcg.queries.fusion import Fusion

CONCEPT_TYPE = "logic"  # matched by key, so a later derive of the same text names the node
BUILD_BATCH = 500  # derives per writer batch (one WAL commit)
CLOCK_SKIP = timedelta(seconds=120)  # past the 60 s age floor of contradictions
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def concept_texts(conversations: Sequence[Conversation], count: int, seed: int = 11) -> list[str]:
    """`count` short facts with REALTALK's vocabulary, distinct by canonical key.

    Each is one sentence of a turn (15-90 characters) with its speaker and a day of 2024,
    `Emi, 14 Mar: I went hiking with my sister.` (about 65 bytes, a fact's size): ten
    thousand distinct sentences, so a 100k session holds each about ten times with other
    days, as a long-lived memory repeats its topics.
    """
    pool = list(
        dict.fromkeys(
            (turn.speaker, sentence.strip())
            for conversation in conversations
            for turn in conversation.turns
            for sentence in _SENTENCE.split(turn.text)
            if 15 <= len(sentence.strip()) <= 90
        )
    )
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    keys: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        speaker, sentence = rng.choice(pool)
        day = start + timedelta(days=rng.randrange(366))
        text = f"{speaker}, {day:%d %b}: {sentence}"
        key = canonical_key(text)
        if key in keys:
            continue
        keys.add(key)
        out.append(text)
    return out


def fill(options: RecallOptions) -> tuple[int, float]:
    conversations, _ = load_realtalk(options.data)
    texts = concept_texts(conversations, max(options.sizes))
    return fill_cache(options.cache / "recall-latency", [framed(t) for t in texts], "latency")


class Clock:
    """The workspace clock: the real clock plus `skip` (moved past the age floor)."""

    def __init__(self) -> None:
        self.skip = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.skip


def _derive(
    ctx: WriteContext,
    *,
    session: GroupId,
    concept: ConceptIn,
    receipt: str,
    new_id: Callable[[], str],
    now: datetime,
) -> dict[str, Any]:
    """One one-concept lambo_derive, accepted and applied in the same batch."""
    call = Derive(session, AGENT, (concept,), (), None, receipt, now)
    memory_commands.accept_derive(ctx, call)
    row = state.write(ctx.conn, receipt)
    require(row is not None and row.state == "pending", f"intent {receipt} not stored")
    assert row is not None
    prepared = Prepared(embedding_texts=memory_apply.texts_to_embed(row))
    _, outcome = memory_apply.apply_write(ctx, row, prepared, new_id, now, after_restart=False)
    require(isinstance(outcome, WriteOutcome), f"derive refused: {outcome}")
    assert isinstance(outcome, WriteOutcome)
    return outcome.to_wire()


class Receipts:
    """Receipt ids in the product's format (a build's own epoch)."""

    def __init__(self, seed: int) -> None:
        self.epoch = random.Random(seed).getrandbits(64)
        self.seq = 0

    def __call__(self) -> str:
        self.seq += 1
        return ReceiptId(self.epoch, int(time.time() * 1000), self.seq).format()


def derive_many(ws: Workspace, concepts: Sequence[ConceptIn], receipts: Receipts) -> list[Any]:
    """The concepts as one-concept derives, BUILD_BATCH per writer batch; their outcomes."""
    session = GroupId(ws.settings.session)
    outcomes: list[Any] = []
    step = max(BUILD_BATCH, len(concepts) // 10)
    started = time.perf_counter()
    with ws.memory.processor.paused():
        for offset in range(0, len(concepts), BUILD_BATCH):
            now = ws.clock()
            handlers = [
                partial(
                    _derive,
                    session=session,
                    concept=concept,
                    receipt=receipts(),
                    new_id=ws.memory_ids,
                    now=now,
                )
                for concept in concepts[offset : offset + BUILD_BATCH]
            ]
            done = ws.writer.execute_many(handlers)
            failed = [outcome for outcome in done if isinstance(outcome, Exception)]
            if failed:
                raise failed[0]
            outcomes.extend(done)
            if len(outcomes) % step < BUILD_BATCH or len(outcomes) == len(concepts):
                log(
                    f"    {ws.settings.session}: {len(outcomes):,}/{len(concepts):,} derives, "
                    f"{time.perf_counter() - started:.1f} s"
                )
    ws.settle()  # every concept vector indexed
    return outcomes


@dataclass
class Session:
    ws: Workspace
    clock: Clock
    nodes: list[str]
    seconds: float  # the bulk build, vectors included
    contradicted: int = 0
    contradict_seconds: float = 0.0


def build_session(directory: Path, name: str, texts: Sequence[str]) -> Session:
    reset_workspace(directory)
    clock = Clock()
    settings = Settings(workspace=directory, session=name)
    ws = Workspace(settings, command="bench_recall", clock=clock).open()
    try:
        started = time.perf_counter()
        concepts = [ConceptIn(text, CONCEPT_TYPE) for text in texts]
        outcomes = derive_many(ws, concepts, Receipts(len(texts)))
        seconds = time.perf_counter() - started
        nodes = [str(outcome["created"][0]) for outcome in outcomes if outcome["created"]]
        require(len(nodes) == len(texts), f"{name}: {len(nodes)} concepts for {len(texts)} texts")
        counted = state.counts(ws.reader(), name)["concept_count"]
        require(counted == len(texts), f"{name}: {counted} concepts stored")
        concept_vectors = (
            ws.reader()
            .execute("SELECT COUNT(*) FROM vector_catalog WHERE group_id=?", (name,))
            .fetchone()[0]
        )
        require(concept_vectors == len(texts), f"{name}: {concept_vectors} concept vectors")
    except BaseException:
        ws.close()
        raise
    return Session(ws, clock, nodes, seconds)


def contradict(session: Session, texts: Sequence[str], share: float) -> None:
    """`share` of the concepts contradicted: a derive of another concept's text (matched by
    key, so the concepts stay the same) with `against` the target's id; then the clock moves
    past the 60 s age floor, so recall shows the ⚠ lines and the contradicting concepts."""
    count = int(len(texts) * share)
    picked = random.Random(5).sample(range(len(texts)), 2 * count)
    targets, sources = picked[:count], picked[count:]
    concepts = [
        ConceptIn(texts[source], CONCEPT_TYPE, (), (session.nodes[target],))
        for source, target in zip(sources, targets, strict=True)
    ]
    started = time.perf_counter()
    outcomes = derive_many(session.ws, concepts, Receipts(len(texts) + 1))
    session.contradict_seconds = time.perf_counter() - started
    for outcome, source in zip(outcomes, sources, strict=True):
        require(
            outcome["matched"] == [session.nodes[source]] and not outcome["created"],
            f"a contradicting derive did not match its concept: {outcome['summary']}",
        )
    session.contradicted = count
    session.clock.skip = CLOCK_SKIP


@dataclass
class Measured:
    size: int
    rows: list[Timings]
    build_seconds: float
    contradicted: int
    contradict_seconds: float
    warning_lines: list[int] = field(default_factory=list)  # per contradicted-session query
    hits: list[int] = field(default_factory=list)


def _recall(app: App, query: str) -> dict[str, Any]:
    app.workspace.forget_query_embeddings()  # every measurement embeds its query
    result: dict[str, Any] = operations.dispatch(
        app, "lambo_recall", {"agent_id": AGENT, "query": query}
    )["structuredContent"]
    return result


def measure(
    plain: Session, contradicted: Session, queries: Sequence[str], repeats: int
) -> Measured:
    """lambo_recall on both sessions and the baselines, interleaved query by query."""
    apps = App(plain.ws), App(contradicted.ws)
    fusion: Fusion = "rrf" if plain.ws.settings.search_fusion == "rrf" else "max"
    vectors = plain.ws.embedder.embed(list(queries))
    precomputed = {query: vectors[i] for i, query in enumerate(queries)}
    # The core's context answers the query vector from a table: no model, whatever the order.
    contexts = [replace(search_context(app), embed_query=precomputed.__getitem__) for app in apps]
    result = Measured(
        len(plain.nodes),
        [],
        plain.seconds,
        contradicted.contradicted,
        contradicted.contradict_seconds,
    )

    def core(which: int) -> Callable[[int], object]:
        session = (plain, contradicted)[which].ws.settings.session

        def call(i: int) -> object:
            return recall.recall_concepts(
                contexts[which],
                session,
                queries[i],
                TOP_K_DEFAULT,
                TRAVERSAL_DEPTH_DEFAULT,
                fusion,
            )

        return call

    def plain_recall(i: int) -> object:
        return _recall(apps[0], queries[i])

    def contradicted_recall(i: int) -> object:
        found = _recall(apps[1], queries[i])
        if recording:
            result.warning_lines.append(len(found["warnings"]))
            result.hits.append(len(found["hits"]))
        return found

    def embed(i: int) -> object:
        return plain.ws.embedder.embed([queries[i]])

    calls: list[tuple[Timings, Callable[[int], object]]] = [
        (Timings("lambo_recall, no contradiction (query embedding included)"), plain_recall),
        (
            Timings(
                f"lambo_recall, {contradicted.contradicted:,} concepts contradicted "
                "(query embedding included)"
            ),
            contradicted_recall,
        ),
        (Timings("query embedding alone (MiniLM int8, 1 thread)"), embed),
        (Timings("retrieval core alone, no contradiction (query vector precomputed)"), core(0)),
        (Timings("retrieval core alone, contradicted session (query vector precomputed)"), core(1)),
    ]
    recording = False
    for i in range(min(20, len(queries))):  # warm-up: page caches, model session
        for _, call in calls:
            call(i)
    recording = True
    for repeat in range(repeats):
        for i in range(len(queries)):
            shift = (i + repeat) % len(calls)  # rotate the order query by query
            for timings, call in calls[shift:] + calls[:shift]:
                start = time.perf_counter_ns()
                call(i)
                timings.ms.append((time.perf_counter_ns() - start) / 1e6)
        log(f"  {len(plain.nodes):,} concepts: repeat {repeat + 1}/{repeats} done")
    result.rows = [timings for timings, _ in calls]
    return result


TARGET_P95_MS = 30.0  # the aim at 100k concepts


def render(
    results: Sequence[Measured], options: RecallOptions, filled: tuple[int, float], wall: float
) -> str:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    lines = [
        f"# lambo_recall latency ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"faiss {faiss.__version__}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs (shared; load average {load} at the end); FAISS and "
        f"onnxruntime on 1 thread; whole run {wall:.0f} s.",
        "",
        "Sessions: short facts with REALTALK's vocabulary (`Emi, 14 Mar: I went hiking with "
        "my sister.`: a turn's sentence of 15-90 characters, its speaker and a day; distinct "
        f"by canonical key), `{CONCEPT_TYPE}` concepts, one per derive, written through the "
        f"memory write path in bulk: `accept_derive` (the intent) and `apply_write` (the "
        f"outcome) per derive, {BUILD_BATCH} derives per writer batch, so the memory "
        "projection, the concept FTS rows, the BM25 scorer and the concept vectors (embedded "
        "by the vector follower through the embedding cache; IVF-Flat above 20,000 vectors, "
        "as the product does) are the ones lambo_derive writes. Not run: the intent "
        "processor's thread and its near-duplicate search (distinct texts). Two workspaces "
        "per size are built the same way and open side by side in this process; in the "
        f"second, {options.contradicted:.0%} of the concepts are then contradicted: a derive "
        "of another concept's text (matched by key: the concepts stay the same) with "
        "`against` the target's id, and the workspace clock moved "
        f"{CLOCK_SKIP.seconds} s ahead, past the 60 s age floor, so recall shows each "
        "contradicted hit's warning line and its contradicting concept.",
        "",
        f"Queries: {options.queries} distinct REALTALK questions x {options.repeats} passes; "
        "lambo_recall `{agent_id, query}` (defaults: top_k 5, traversal_depth 2, max_tokens "
        "500) through `operations.dispatch`, after `Workspace.forget_query_embeddings()`, so "
        "every call embeds its query. The five rows are interleaved query by query (order "
        "rotated). The retrieval core is `lcg.queries.recall.recall_concepts` alone (legs, "
        "fusion, graph expansion) with the query vector precomputed; the rest of lambo_recall is "
        "the embedding, the evidence reads and warning rules, and the context rendering.",
    ]
    model_texts, fill_seconds = filled
    if model_texts:
        lines += [
            "",
            f"This run first filled the bench cache: {model_texts:,} framed texts through the "
            f"model in {fill_seconds:.0f} s ({model_texts / fill_seconds:,.1f} texts/s).",
        ]
    for result in results:
        base = result.rows[0]
        lines += [
            "",
            f"## {result.size:,} concepts",
            "",
            f"Build: {result.build_seconds:.1f} s per session "
            f"({result.size / result.build_seconds:,.0f} derives/s, vectors included); "
            f"{result.contradicted:,} contradicting derives in "
            f"{result.contradict_seconds:.1f} s. In the contradicted session a recall showed "
            f"{np.mean(result.warning_lines):.2f} warning lines on average "
            f"({np.mean([w > 0 for w in result.warning_lines]):.0%} of calls had one) and "
            f"{np.mean(result.hits):.2f} hits (top_k 5 plus contradicting companions).",
            "",
            "| measurement | p50 ms | p95 ms | / no contradiction, p50 | / no contradiction, p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for timings in result.rows:
            cells = (
                "- | -"
                if timings is base
                else f"**{timings.p50 / base.p50:.2f}x** | **{timings.p95 / base.p95:.2f}x**"
            )
            lines.append(f"| {timings.label} | {timings.p50:.2f} | {timings.p95:.2f} | {cells} |")
        verdict = "meets" if base.p95 <= TARGET_P95_MS else "misses"
        lines += [
            "",
            f"lambo_recall p95 {base.p95:.1f} ms without contradictions, "
            f"{result.rows[1].p95:.1f} ms with them: {verdict} the {TARGET_P95_MS:.0f} ms aim "
            f"without (max {max(base.ms):.1f} ms).",
        ]
    return "\n".join([*lines, ""])


def run_recall_latency(options: RecallOptions) -> str:
    began = time.perf_counter()
    conversations, _ = load_realtalk(options.data)
    queries = latency_queries(conversations, options.queries)
    sizes = sorted(options.sizes)
    texts = concept_texts(conversations, max(sizes))
    plain_dir = options.cache / "recall-latency"
    contradicted_dir = options.cache / "recall-latency-contradicted"
    log(f"filling the bench embedding cache in {plain_dir} (the first run only) ...")
    filled = fill_cache(plain_dir, [framed(text) for text in texts], "latency")
    copy_cache(plain_dir, contradicted_dir)
    fill_cache(contradicted_dir, [framed(text) for text in texts], "latency, second workspace")
    results: list[Measured] = []
    for size in sizes:
        name = f"recall-{size}"
        log(f"building two sessions of {size:,} concepts ...")
        plain = build_session(plain_dir, name, texts[:size])
        try:
            contradicted = build_session(contradicted_dir, name, texts[:size])
            try:
                log(f"contradicting {options.contradicted:.0%} of {size:,} concepts ...")
                contradict(contradicted, texts[:size], options.contradicted)
                log(f"measuring lambo_recall at {size:,} concepts ...")
                results.append(measure(plain, contradicted, queries, options.repeats))
            finally:
                contradicted.ws.close()
        finally:
            plain.ws.close()
    return render(results, options, filled, time.perf_counter() - began)
