"""The quality half of the recall benchmark: lambo_recall's evidence recall on REALTALK.

Each conversation is a session (its group): every turn is derived as one `observation`
through lambo_derive (operations.dispatch, the MCP server's dispatch) in time order, each
receipt waited for with lambo_stats until applied, and each question asked through
lambo_recall. The hits' node ids map back to the turns derived into them; the rankings are
scored with bench.search_quality's scoring, beside knowledge_search_passages on the same
turns in the same run (bench.search_quality.lcg_rankings).
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.realtalk import Conversation, Turn, load_realtalk
from bench.recall_common import AGENT, RECALL_TOP_K, RecallOptions, copy_cache
from bench.search_common import episode_uuid, log, require, reset_workspace
from bench.search_quality import (
    HYBRID_DEFAULT,
    HYBRID_DEFAULTS,
    HYBRID_MAX,
    HYBRID_PLAIN,
    HYBRID_RRF,
    TEXT_LEG,
    TEXT_LEG_PLAIN,
    VECTOR_LEG,
    Ranking,
    distinct,
    lcg_rankings,
    quality_tables,
    score_system,
)
from lcg.domain.memory.limits import WRITE_QUEUE_LANE_BOUND
from lcg.domain.memory.text import refused_character_class
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.text import reader as text_reader
from lcg.projections.vectors import catalog

WAIT_MS = 34_000  # lambo_stats's longest wait
IN_FLIGHT = WRITE_QUEUE_LANE_BOUND - 4  # derives sent before the oldest receipt is waited for

RECALL = f"lambo_recall, top_k {RECALL_TOP_K}"
RECALL_FLAT = f"lambo_recall, top_k {RECALL_TOP_K}, traversal_depth 0"
RECALL_20 = "lambo_recall, top_k 20"
CHAINED = f"lambo_recall, top_k {RECALL_TOP_K}; turns chained by depends_on"
CHAINED_FLAT = f"lambo_recall, top_k {RECALL_TOP_K}, traversal_depth 0; turns chained"
# (label, lambo_recall arguments besides agent_id and query)
RECALL_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    (RECALL, {"top_k": RECALL_TOP_K}),
    (RECALL_FLAT, {"top_k": RECALL_TOP_K, "traversal_depth": 0}),
    (RECALL_20, {"top_k": 20}),
)
CONCEPT_TEXT_LEG = "lambo_recall's BM25 leg alone (concepts, depth 50)"
CONCEPT_VECTOR_LEG = "lambo_recall's vector leg alone (concepts, depth 50)"
CHAINED_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    (CHAINED, {"top_k": RECALL_TOP_K}),
    (CHAINED_FLAT, {"top_k": RECALL_TOP_K, "traversal_depth": 0}),
)
SEARCH_ROWS = (
    HYBRID_DEFAULT,
    HYBRID_MAX,
    HYBRID_DEFAULTS,
    HYBRID_RRF,
    TEXT_LEG,
    VECTOR_LEG,
    HYBRID_PLAIN,
    TEXT_LEG_PLAIN,
)
COMPARISONS = (
    (RECALL, HYBRID_DEFAULT),
    (RECALL, HYBRID_MAX),
    (RECALL, HYBRID_DEFAULTS),
    (RECALL, TEXT_LEG),
    (RECALL, VECTOR_LEG),
    (RECALL, HYBRID_PLAIN),
    (RECALL, TEXT_LEG_PLAIN),
    (CONCEPT_TEXT_LEG, TEXT_LEG_PLAIN),
    (CONCEPT_VECTOR_LEG, VECTOR_LEG),
    (RECALL, CONCEPT_TEXT_LEG),
    (RECALL, RECALL_FLAT),
    (CHAINED, RECALL),
    (CHAINED, CHAINED_FLAT),
)


@dataclass
class DeriveInfo:
    """What deriving the turns did, over every conversation."""

    seconds: float = 0.0
    turns: int = 0
    created: int = 0
    merged: int = 0  # turns applied onto an existing concept (a similarity merge)
    cleaned: int = 0  # turns that had refused invisible characters dropped
    citations: int = 0  # chained: turns applied with their depends_on
    uncited: int = 0  # chained: turns whose citation the apply refused (sent again without)
    model_texts: int = 0
    hits: Counter[str] = field(default_factory=Counter)  # hits by the legs that found them
    warnings: int = 0
    ask_ms: list[float] = field(default_factory=list)


def _call(app: App, tool: str, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = operations.dispatch(app, tool, params)["structuredContent"]
    return result


def _wait(app: App, receipt: str) -> dict[str, Any]:
    """The receipt object once the write is settled (lambo_stats with wait_ms)."""
    answer = _call(app, "lambo_stats", {"agent_id": AGENT, "receipt": receipt, "wait_ms": WAIT_MS})
    body: dict[str, Any] = answer["receipt"]
    require(body["state"] in ("applied", "failed"), f"receipt {receipt} not settled: {body}")
    return body


def _applied(body: dict[str, Any], dia_id: str, nodes: dict[str, list[str]]) -> str:
    """The turn joins the turns of the node it was applied to; that node."""
    require(body["state"] == "applied", f"derive of {dia_id}: {body}")
    applied: list[str] = [*body["created"], *body["matched"]]
    require(len(applied) == 1, f"derive of {dia_id}: {len(applied)} concepts")
    nodes.setdefault(applied[0], []).append(dia_id)
    return applied[0]


def visible(body: str) -> str:
    """The body without the invisible characters lambo_derive refuses (a few turns carry
    U+2060, the word joiner); an agent would have to drop them the same way."""
    return "".join(c for c in body if refused_character_class(c) is None)


def _derive(app: App, turn: Turn, cites: str | None) -> str:
    """One turn as one observation (citing the node `cites`); the receipt."""
    concept: dict[str, Any] = {"content": visible(turn.body), "concept_type": "observation"}
    if cites is not None:
        concept["depends_on"] = [cites]
    params = {
        "agent_id": AGENT,
        "concepts": [concept],
        "event_time": turn.time.isoformat().replace("+00:00", "Z"),
    }
    ack = _call(app, "lambo_derive", params)
    require(ack["receipt_state"] != "dropped", f"derive of {turn.dia_id} dropped: {ack}")
    return str(ack["receipt"])


def derive_turns(app: App, conversation: Conversation, info: DeriveInfo) -> dict[str, list[str]]:
    """Every turn as one observation, in time order: node id -> the turns' dia_ids."""
    nodes: dict[str, list[str]] = {}
    waiting: deque[tuple[str, str]] = deque()
    before = sum(len(turns) for turns in nodes.values())
    for turn in conversation.turns:
        info.cleaned += visible(turn.body) != turn.body
        waiting.append((_derive(app, turn, None), turn.dia_id))
        if len(waiting) >= IN_FLIGHT:
            receipt, dia_id = waiting.popleft()
            _applied(_wait(app, receipt), dia_id, nodes)
    while waiting:
        receipt, dia_id = waiting.popleft()
        _applied(_wait(app, receipt), dia_id, nodes)
    info.turns += sum(len(turns) for turns in nodes.values()) - before
    info.created += len(nodes)
    info.merged += len(conversation.turns) - len(nodes)
    return nodes


def derive_chained(app: App, conversation: Conversation, info: DeriveInfo) -> dict[str, list[str]]:
    """The same turns, each citing the previous turn of its REALTALK session in depends_on
    (a reply rests on what it answers), so the graph links neighbouring turns. Each receipt
    is waited for before the next derive, which names the previous node by id. A citation
    the apply refuses (a turn merged into an earlier concept the chain already reaches: a
    dependency loop) is sent again without it."""
    nodes: dict[str, list[str]] = {}
    previous: tuple[str, str] | None = None  # (REALTALK session, node)
    for turn in conversation.turns:
        session = turn.dia_id.split(":")[0]
        cites = previous[1] if previous is not None and previous[0] == session else None
        body = _wait(app, _derive(app, turn, cites))
        if body["state"] == "failed":
            require(cites is not None, f"derive of {turn.dia_id}: {body}")
            info.uncited += 1
            body = _wait(app, _derive(app, turn, None))
        elif cites is not None:
            info.citations += 1
        node = _applied(body, turn.dia_id, nodes)
        previous = (session, node)
    return nodes


def ask(
    app: App,
    conversation: Conversation,
    nodes: dict[str, list[str]],
    args: dict[str, Any],
    info: DeriveInfo | None,
) -> list[Ranking]:
    """lambo_recall per question; a hit's turns in time order, distinct, at most top_k turns
    (a concept that holds two merged turns does not get two places)."""
    depth = int(args["top_k"])
    rankings: list[Ranking] = []
    for question in conversation.questions:
        started = time.perf_counter()
        found = _call(app, "lambo_recall", {"agent_id": AGENT, "query": question.text, **args})
        if info is not None:
            info.ask_ms.append((time.perf_counter() - started) * 1000)
            info.warnings += len(found["warnings"])
            for hit in found["hits"]:
                info.hits["+".join(sorted(hit.get("ranks", {}))) or "none"] += 1
        names = [dia for hit in found["hits"] for dia in nodes.get(hit["node_id"], [])]
        require(
            all(hit["node_id"] in nodes for hit in found["hits"]),
            "lambo_recall returned a concept no turn was derived into",
        )
        rankings.append(list(dict.fromkeys(names))[:depth])
    return rankings


def leg_rankings(
    ws: Workspace, conversation: Conversation, nodes: dict[str, list[str]]
) -> tuple[list[Ranking], list[Ranking]]:
    """lambo_recall's two search legs alone, as recall_concepts calls them (the concept kind,
    the session's group, depth 50), hits mapped to turns: (BM25, vector)."""
    conn = ws.reader()
    session = [conversation.group]
    depth = max(50, RECALL_TOP_K * 4)
    text: list[Ranking] = []
    vector: list[Ranking] = []
    for question in conversation.questions:
        hits = text_reader.search(conn, "concept", question.text, session, depth, ws.text_scorer)
        text.append(distinct([d for hit in hits for d in nodes.get(hit.owner_uuid, [])]))
        found = ws.vectors.search("concept", session, ws.embed_query(question.text), depth)
        entries = catalog.describe(conn, [hit.vec_id for hit in found])
        owners = [entries[hit.vec_id].owner_uuid for hit in found if hit.vec_id in entries]
        vector.append(distinct([d for owner in owners for d in nodes.get(owner, [])]))
    return text, vector


def recall_rankings(
    options: RecallOptions, conversations: Sequence[Conversation], *, chained: bool
) -> tuple[dict[str, list[Ranking]], DeriveInfo]:
    """Derive every conversation into its session, then ask every question (RECALL_RUNS; or
    CHAINED_RUNS with the turns chained by depends_on, in a workspace of their own). Every
    question is asked once all sessions are written, as the search bench asks once every
    conversation is ingested: BM25's statistics are the workspace's, across sessions."""
    name = "recall-quality-chained" if chained else "recall-quality"
    directory = options.cache / name
    reset_workspace(directory)
    if chained:
        copy_cache(options.cache / "recall-quality", directory)
    runs = CHAINED_RUNS if chained else RECALL_RUNS
    info = DeriveInfo()
    nodes: dict[str, dict[str, list[str]]] = {}
    for conversation in conversations:
        settings = Settings(workspace=directory, session=conversation.group)
        with Workspace(settings, command="bench_recall") as ws:
            app = App(ws)
            started = time.perf_counter()
            uncited = info.uncited
            derive = derive_chained if chained else derive_turns
            nodes[conversation.group] = derive(app, conversation, info)
            ws.settle()  # every concept vector indexed
            info.seconds += time.perf_counter() - started
            stats = _call(app, "lambo_stats", {"agent_id": AGENT})
            require(stats["concept_count"] == len(nodes[conversation.group]), f"{stats}")
            failed = stats["write_queue_failed"]
            require(failed == info.uncited - uncited, f"failed writes: {stats}")
            info.model_texts += ws.embedder.texts
            log(
                f"  {name}, {conversation.group}: {len(conversation.turns):,} turns derived "
                f"into {len(nodes[conversation.group]):,} concepts ({info.seconds:.0f} s so far)"
            )
    rankings: dict[str, list[Ranking]] = {label: [] for label, _ in runs}
    if not chained:
        rankings |= {CONCEPT_TEXT_LEG: [], CONCEPT_VECTOR_LEG: []}
    for conversation in conversations:
        settings = Settings(workspace=directory, session=conversation.group)
        with Workspace(settings, command="bench_recall") as ws:
            app = App(ws)
            found = nodes[conversation.group]
            for index, (label, args) in enumerate(runs):
                timed = info if index == 0 else None
                rankings[label] += ask(app, conversation, found, args, timed)
            if not chained:
                text, vector = leg_rankings(ws, conversation, found)
                rankings[CONCEPT_TEXT_LEG] += text
                rankings[CONCEPT_VECTOR_LEG] += vector
    return rankings, info


def run_recall_quality(options: RecallOptions) -> str:
    began = time.perf_counter()
    conversations, stats = load_realtalk(options.data)
    questions = [q for c in conversations for q in c.questions]
    turns = [t for c in conversations for t in c.turns]
    log(f"REALTALK: {len(conversations)} conversations, {len(turns):,} turns, {len(questions)}")
    names: dict[str, str] = {episode_uuid(t.group, t.dia_id): t.dia_id for t in turns}
    log("knowledge_search_passages (bench.search_quality) ...")
    searched, _ = lcg_rankings(options.cache / "realtalk", conversations, names)
    log("lambo_derive every turn, lambo_recall every question ...")
    recalled, info = recall_rankings(options, conversations, chained=False)
    log("again, each turn citing the previous one (depends_on) ...")
    chained, chain = recall_rankings(options, conversations, chained=True)
    rankings = {**recalled, **chained, **{label: searched[label] for label in SEARCH_ROWS}}
    order = [label for label, _ in (*RECALL_RUNS, *CHAINED_RUNS)]
    order += [CONCEPT_TEXT_LEG, CONCEPT_VECTOR_LEG, *SEARCH_ROWS]
    systems = [score_system(label, rankings[label], questions) for label in order]
    wall = time.perf_counter() - began
    asked = sorted(info.ask_ms)
    p50 = asked[len(asked) // 2]
    p95 = asked[int(len(asked) * 0.95)]
    legs = ", ".join(f"{legs} {count:,}" for legs, count in info.hits.most_common())
    chain_legs = ", ".join(f"{legs} {count:,}" for legs, count in chain.hits.most_common())
    header = [
        f"# lambo_recall quality on REALTALK ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"{len(conversations)} conversations, each its own session; {info.turns:,} turns "
        f"derived in time order, one `observation` per lambo_derive call (content = the "
        f"turn's `speaker: clean_text` + image caption, event_time = the turn's date), each "
        f"receipt waited for with lambo_stats until applied: {info.created:,} concepts created, "
        f"{info.merged} turns merged into an earlier concept by similarity, none failed "
        f"({info.cleaned} turns had the invisible U+2060 dropped, which lambo_derive refuses); "
        f"{info.seconds:.0f} s for the derives ({info.model_texts:,} texts through the "
        f"model; 0 = all from the embedding cache). {len(questions)} questions with evidence "
        f"({stats.skipped} of {stats.questions} skipped). Whole run {wall:.0f} s.",
        "",
        "lambo_recall: `{agent_id, query, top_k}` (the tool's other defaults: traversal_depth "
        "2, max_tokens 500), through `operations.dispatch` in process. A hit's node id maps "
        "to the turn(s) derived into it; the first top_k distinct dia_ids are scored with the "
        "search bench's scoring (bench.search_quality.question_scores: R@k, MRR@20). The "
        "knowledge_search_passages rows are bench.search_quality's, run in this process on "
        "the same turns stored as `message` episodes (see `bench_search.py` in "
        "bench/README.md for each row).",
        "",
        f"lambo_recall top_k {RECALL_TOP_K}, per call: p50 {p50:.1f} ms, p95 {p95:.1f} ms (in "
        f"process, warm caches, while the bench ran). Hits by the legs that found them: "
        f"{legs}. Warning lines: {info.warnings}.",
        "",
        "'turns chained': the same turns derived again into a workspace of their own, each "
        "citing the previous turn of its REALTALK session in `depends_on` (by node id, so "
        "each receipt is waited for before the next derive): the memory graph then links "
        "neighbouring turns and lambo_recall's graph expansion (traversal_depth 2, from the 3 "
        f"strongest hits) can add them. {chain.citations:,} citations recorded, "
        f"{chain.uncited} refused by the apply as dependency loops (a turn merged into an "
        f"earlier concept the chain already reaches; sent again without the citation); "
        f"{chain.seconds:.0f} s. Hits by the legs that found them: {chain_legs}.",
        "",
    ]
    tables = quality_tables(systems, questions, COMPARISONS)
    return "\n".join([*header, tables, ""])
