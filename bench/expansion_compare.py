"""Query expansion and neighbour propagation for passage search, from leg dumps (issue 31).

    .venv/bin/python -m bench.expansion_compare [--no-build] [--out bench/results/expansion.md]

Uses bench.search_stages' workspace (`.bench-cache/stages`, the REALTALK turns as `message`
episodes). Once per question it dumps, as `search_passages` reads them: the BM25 leg
(`search.text_leg`, depth 80), the question's MiniLM vector, and the BM25 legs of the
expansion queries below; once per conversation its passages' vectors (through the workspace's
embedding cache) and dia_ids. Every technique is then computed from the dump
(`.bench-cache/fusion/expansion-minilm.pkl`), on top of today's default fusion (rrf k 60,
vector x0.25, ADR 0090), which is also the baseline every row is compared with:

- prf m t l (RM3-style pseudo-relevance feedback on the BM25 leg): the t words that weigh most
  in the default ranking's first m passages (tf / length x idf within the conversation, each
  passage weighted by its fused score; no query word, stop word, word under 3 letters or word
  in more than 10% of the conversation's passages) are searched by BM25 on their own; the BM25
  leg becomes (1 - l) x its bm25 share + l x the expansion's bm25 share (BM25 adds over words,
  so this is the query with the expansion words weighted l against 1 - l).
- rocchio m b: the vector leg's query becomes q + b x the mean of the default ranking's first m
  passages' vectors; its best 80 passages are the new vector leg.
- neighbours g: each candidate's fused score + g x the best fused score of the turn before or
  after it in the same session (D<session>:<turn>).
- mmr l: maximal marginal relevance over the default ranking's first 50 (l x fused score over
  the best - (1 - l) x the highest cosine with a passage already chosen), for questions whose
  evidence is several different turns.
- speaker b: a turn whose speaker ("Name: ...", `lcg.queries.stages.speaker_of`) the question
  names scores (1 + b) x its fused score, unless it names every speaker (`[retrieval]
  speaker_weight`); speaker vector d: the vector leg restricted to the named speaker's turns.
- prf+rocchio: the two tuned families together (each with its own tuned setting).

bench.expansion_more measures the rest from the same dump (the date in the embedded text, the
speaker stage through `search_passages`, on lambo_recall's legs and with e5's vector leg).

Each family is tuned by R@10 on the tuning half (conversations 1, 3, 5, 7, 9) and reported on
the held-out half and all 706 questions, every row against the default with its paired
bootstrap 95% interval per category.
"""

from __future__ import annotations

import argparse
import importlib
import math
import pickle
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
import numpy.typing as npt

from bench.fusion_compare import load_dump, passage_rows
from bench.realtalk import CATEGORIES, DATA, Question, load_realtalk
from bench.search_common import CACHE, RESULTS, log
from bench.search_quality import DEPTH, LEG_DEPTH, System, bootstrap_delta, score_system
from bench.search_stages import build
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.text.reader import STOP_WORDS
from lcg.queries import reads, search
from lcg.queries.stages import named_speakers, speaker_of

Matrix = npt.NDArray[np.float32]
Leg = list[tuple[int, float]]  # passage index, score; best first
K, W = 60, 0.25  # today's default fusion (ADR 0090)
FEEDBACK = [(m, t) for m in (3, 5, 10) for t in (5, 10, 20)]  # (passages, words) of prf
_WORD = re.compile(r"\w+")
_TURN = re.compile(r"^D(\d+):(\d+)$")


@dataclass(frozen=True, slots=True)
class Conv:
    names: list[str]  # each passage's dia_id
    matrix: Matrix  # each passage's vector
    neighbours: list[tuple[int, ...]]  # each passage's neighbours in its session
    speakers: list[str]  # each passage's speaker (a chat turn's "Name: ..."), lowercased


@dataclass(frozen=True, slots=True)
class QLegs:
    conv: int
    question: str
    text: Leg  # the BM25 leg, raw bm25
    query: Matrix  # the question's vector
    expanded: dict[tuple[int, int], Leg]  # (m, t) -> the expansion words' BM25 leg


@dataclass(frozen=True, slots=True)
class ExpansionDump:
    questions: list[Question]
    convs: list[Conv]
    legs: list[QLegs]


def neighbours_of(names: Sequence[str]) -> list[tuple[int, ...]]:
    """Each passage's passages of the turn before and after it in the same session (and the
    other parts of its own turn)."""
    by_turn: dict[tuple[int, int], list[int]] = {}
    for i, name in enumerate(names):
        found = _TURN.match(name)
        if found:
            by_turn.setdefault((int(found[1]), int(found[2])), []).append(i)
    result: list[tuple[int, ...]] = []
    for i, name in enumerate(names):
        found = _TURN.match(name)
        if not found:
            result.append(())
            continue
        session, turn = int(found[1]), int(found[2])
        near = [j for t in (turn - 1, turn, turn + 1) for j in by_turn.get((session, t), [])]
        result.append(tuple(j for j in near if j != i))
    return result


def rrf_scores(text: Leg, vector: Leg, k: float = K, w: float = W) -> dict[int, float]:
    scores: dict[int, float] = {}
    for rank, (i, _) in enumerate(text, start=1):
        scores[i] = scores.get(i, 0.0) + 1.0 / (k + rank)
    for rank, (i, _) in enumerate(vector, start=1):
        scores[i] = scores.get(i, 0.0) + w / (k + rank)
    return scores


def ranked(scores: dict[int, float]) -> list[int]:
    return [i for i, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def vector_leg(cosine: npt.NDArray[np.float32]) -> Leg:
    order = np.argsort(-cosine, kind="stable")[:LEG_DEPTH]
    return [(int(i), float(cosine[i])) for i in order]


def default_scores(conv: Conv, q: QLegs) -> dict[int, float]:
    return rrf_scores(q.text, vector_leg(conv.matrix @ q.query))


def feedback_words(texts: Sequence[str], weights: Sequence[float], query: str, df: Counter[str],
                   n: int, count: int) -> list[str]:  # fmt: skip
    """The `count` words that weigh most in the feedback passages (RM3's relevance model,
    with idf): sum over passages of weight x tf / length, x log(n / df)."""
    asked = {w.lower() for w in _WORD.findall(query)}
    weight: dict[str, float] = {}
    for text, w in zip(texts, weights, strict=True):
        words = [x.lower() for x in _WORD.findall(text)]
        if not words:
            continue
        for word, tf in Counter(words).items():
            if word in asked or word in STOP_WORDS or len(word) < 3 or word.isdigit():
                continue
            if df[word] > 0.1 * n:
                continue
            weight[word] = weight.get(word, 0.0) + w * tf / len(words) * math.log(n / df[word])
    return sorted(weight, key=lambda word: (-weight[word], word))[:count]


def dump_legs(ws: Workspace) -> ExpansionDump:
    conversations, _ = load_realtalk(DATA)
    started = time.perf_counter()
    log(f"vectors settled {ws.settle(3600)} in {time.perf_counter() - started:.0f} s")
    ctx = reads.search_context(App(ws).reads)
    conn = ws.reader()
    questions: list[Question] = []
    convs: list[Conv] = []
    legs: list[QLegs] = []
    for c, conversation in enumerate(conversations):
        rows = passage_rows(conn, conversation.group)
        keys = {(str(r[0]), int(r[1])): i for i, r in enumerate(rows)}
        texts = [str(r[2]) for r in rows]
        names = [str(r[3]) for r in rows]
        matrix = np.asarray(ws.embed_texts(texts), dtype=np.float32)
        conv = Conv(names, matrix, neighbours_of(names), [speaker_of(t) or "" for t in texts])
        convs.append(conv)
        df: Counter[str] = Counter()
        for text in texts:
            df.update({w.lower() for w in _WORD.findall(text)})

        def leg(
            query: str, group: str = conversation.group, keys: dict[tuple[str, int], int] = keys
        ) -> Leg:
            hits = search.text_leg(ctx, "passage", query, [group], LEG_DEPTH)()
            return [(keys[(h.owner_uuid, h.part)], h.score) for h in hits]

        for question in conversation.questions:
            query = np.asarray(ws.embedder.embed([question.text])[0], dtype=np.float32)
            base = QLegs(c, question.text, leg(question.text), query, {})
            first = ranked(default_scores(conv, base))
            scores = default_scores(conv, base)
            expanded: dict[tuple[int, int], Leg] = {}
            for m, t in FEEDBACK:
                top = first[:m]
                words = feedback_words(
                    [texts[i] for i in top], [scores[i] for i in top], question.text, df,
                    len(texts), t,
                )  # fmt: skip
                expanded[(m, t)] = leg(" ".join(words)) if words else []
            questions.append(question)
            legs.append(QLegs(c, question.text, base.text, query, expanded))
        log(f"{conversation.group}: {len(texts)} passages, {len(conversation.questions)} questions")
    return ExpansionDump(questions, convs, legs)


# A technique: (conversation, question's legs) -> passage indexes, best first
Technique = Callable[[Conv, QLegs], list[int]]


def default(conv: Conv, q: QLegs) -> list[int]:
    return ranked(default_scores(conv, q))


def _share(leg: Leg) -> dict[int, float]:
    top = leg[0][1] if leg and leg[0][1] > 0 else 1.0
    return {i: max(0.0, s / top) for i, s in leg}


def prf_leg(q: QLegs, m: int, t: int, lam: float) -> Leg:
    original, extra = _share(q.text), _share(q.expanded[(m, t)])
    scores = {
        i: (1 - lam) * original.get(i, 0.0) + lam * extra.get(i, 0.0)
        for i in original.keys() | extra.keys()
    }
    return [(i, scores[i]) for i in ranked(scores)][:LEG_DEPTH]


def rocchio_leg(conv: Conv, q: QLegs, m: int, b: float) -> Leg:
    top = default(conv, q)[:m]
    query = q.query + b * conv.matrix[top].mean(axis=0)
    return vector_leg(conv.matrix @ query)


def prf(m: int, t: int, lam: float) -> Technique:
    def technique(conv: Conv, q: QLegs) -> list[int]:
        return ranked(rrf_scores(prf_leg(q, m, t, lam), vector_leg(conv.matrix @ q.query)))

    return technique


def rocchio(m: int, b: float) -> Technique:
    def technique(conv: Conv, q: QLegs) -> list[int]:
        return ranked(rrf_scores(q.text, rocchio_leg(conv, q, m, b)))

    return technique


def neighbours(g: float) -> Technique:
    def technique(conv: Conv, q: QLegs) -> list[int]:
        scores = default_scores(conv, q)
        lifted = dict(scores)
        for i, score in scores.items():
            for j in conv.neighbours[i]:
                lifted[j] = max(lifted.get(j, 0.0), scores.get(j, 0.0) + g * score)
        return ranked(lifted)

    return technique


def mmr(lam: float, pool: int = 50) -> Technique:
    """Maximal marginal relevance over the default ranking's first `pool`: each next passage
    maximises lam x its fused score (over the best) - (1 - lam) x its highest cosine with the
    passages already chosen; the first DEPTH chosen so, the rest as before."""

    def technique(conv: Conv, q: QLegs) -> list[int]:
        scores = default_scores(conv, q)
        order = ranked(scores)
        head = order[:pool]
        if not head:
            return order
        top = scores[head[0]] or 1.0
        vectors = conv.matrix[head]
        sims = vectors @ vectors.T
        chosen: list[int] = []
        left = list(range(len(head)))
        while left and len(chosen) < DEPTH:

            def value(j: int) -> float:
                near = max((float(sims[j, c]) for c in chosen), default=0.0)
                return lam * scores[head[j]] / top - (1 - lam) * near

            best = max(left, key=value)
            chosen.append(best)
            left.remove(best)
        picked = [head[j] for j in chosen]
        return picked + [i for i in order if i not in set(picked)]

    return technique


def speaker_boost(b: float) -> Technique:
    def technique(conv: Conv, q: QLegs) -> list[int]:
        scores = default_scores(conv, q)
        named = named_speakers(q.question, conv.speakers)
        if not named or len(named) == len(set(conv.speakers) - {""}):
            return ranked(scores)
        return ranked(
            {i: s * (1 + b) if conv.speakers[i] in named else s for i, s in scores.items()}
        )

    return technique


def speaker_text(b: float) -> Technique:
    """The speaker boost on the BM25 leg before the fusion: the named speaker's BM25 hits score
    (1 + b) x their bm25, the leg is re-ranked, then fused as today."""

    def technique(conv: Conv, q: QLegs) -> list[int]:
        named = named_speakers(q.question, conv.speakers)
        vector = vector_leg(conv.matrix @ q.query)
        if not named or len(named) == len(set(conv.speakers) - {""}):
            return ranked(rrf_scores(q.text, vector))
        boosted = {i: s * (1 + b) if conv.speakers[i] in named else s for i, s in q.text}
        return ranked(rrf_scores([(i, boosted[i]) for i in ranked(boosted)], vector))

    return technique


def speaker_vector(depth_share: float) -> Technique:
    """The vector leg over the named speakers' passages only (`depth_share` of its depth
    from them, the rest as before)."""

    def technique(conv: Conv, q: QLegs) -> list[int]:
        named = named_speakers(q.question, conv.speakers)
        cosine = conv.matrix @ q.query
        if not named or len(named) == len(set(conv.speakers) - {""}):
            return ranked(rrf_scores(q.text, vector_leg(cosine)))
        mask = np.array([s in named for s in conv.speakers])
        own = vector_leg(np.where(mask, cosine, -2.0))[: int(LEG_DEPTH * depth_share)]
        rest = [hit for hit in vector_leg(cosine) if hit[0] not in {i for i, _ in own}]
        return ranked(rrf_scores(q.text, (own + rest)[:LEG_DEPTH]))

    return technique


def both(m: int, t: int, lam: float, rm: int, b: float) -> Technique:
    def technique(conv: Conv, q: QLegs) -> list[int]:
        return ranked(rrf_scores(prf_leg(q, m, t, lam), rocchio_leg(conv, q, rm, b)))

    return technique


LAMBDAS = (0.1, 0.2, 0.3, 0.5)
FAMILIES: dict[str, list[tuple[str, Technique]]] = {
    "prf": [(f"prf m{m} t{t} l{lam}", prf(m, t, lam)) for m, t in FEEDBACK for lam in LAMBDAS],
    "rocchio": [
        (f"rocchio m{m} b{b}", rocchio(m, b)) for m in (1, 3, 5, 10) for b in (0.25, 0.5, 1.0)
    ],
    "neighbours": [(f"neighbours g{g}", neighbours(g)) for g in (0.1, 0.2, 0.3, 0.5, 0.7)],
    "mmr": [(f"mmr l{lam}", mmr(lam)) for lam in (0.7, 0.8, 0.9, 0.95)],
    "speaker": [(f"speaker boost b{b}", speaker_boost(b)) for b in (0.1, 0.2, 0.3, 0.5, 1.0)]
    + [(f"speaker vector d{d}", speaker_vector(d)) for d in (0.25, 0.5, 1.0)]
    + [(f"speaker text b{b}", speaker_text(b)) for b in (0.25, 0.5, 1.0, 2.0)],
}


def rankings(dump: ExpansionDump, technique: Technique, mask: Sequence[bool]) -> list[list[str]]:
    found = []
    for q, keep in zip(dump.legs, mask, strict=True):
        if keep:
            conv = dump.convs[q.conv]
            found.append(list(dict.fromkeys(conv.names[i] for i in technique(conv, q)))[:DEPTH])
    return found


def table(systems: Sequence[System], questions: Sequence[Question]) -> list[str]:
    categories = np.array([q.category for q in questions])
    masks = [("all", np.ones(len(questions), dtype=bool))]
    masks += [(f"{n} {name}", categories == n) for n, name in CATEGORIES.items()]
    base = systems[0].scores
    lines = [
        "| system | R@5 | R@10 | R@20 | MRR | "
        + " | ".join(f"R@10 - default, {label}" for label, _ in masks)
        + " | R@20 - default, all |",
        "|---|---:|---:|---:|---:|" + "---:|" * (len(masks) + 1),
    ]
    for s in systems:
        means = " | ".join(f"{m:.3f}" for m in s.scores.mean(axis=0))
        cells = []
        for _, mask in masks:
            d, lo, hi = bootstrap_delta(s.scores[mask, 1], base[mask, 1])
            cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        d, lo, hi = bootstrap_delta(s.scores[:, 2], base[:, 2])
        cells.append(f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]")
        lines.append(f"| {s.label} | {means} | " + " | ".join(cells) + " |")
    return lines


def evaluate(dump: ExpansionDump, out: Path) -> str:
    conv = [q.group for q in dump.questions]
    groups = list(dict.fromkeys(conv))
    tune_groups = set(groups[0::2])
    tune = [g in tune_groups for g in conv]
    splits = {
        "tuning half": tune,
        "held-out half": [not t for t in tune],
        "all": [True] * len(conv),
    }

    def system(label: str, technique: Technique, mask: Sequence[bool]) -> System:
        qs = [q for q, keep in zip(dump.questions, mask, strict=True) if keep]
        return score_system(label, rankings(dump, technique, mask), qs)

    chosen: list[tuple[str, Technique]] = [("default (rrf k60 x0.25)", default)]
    tuning = ["| family | setting | tuning-half R@10 |", "|---|---|---:|"]
    best: dict[str, str] = {}
    for family, candidates in FAMILIES.items():
        scored = [
            (system(label, t, splits["tuning half"]).scores[:, 1].mean(), label, t)
            for label, t in candidates
        ]
        for value, label, _ in sorted(scored, key=lambda s: -s[0])[:5]:
            tuning.append(f"| {family} | {label} | {value:.3f} |")
        top = max(scored, key=lambda s: s[0])
        chosen.append((top[1] + " (tuned)", top[2]))
        best[family] = top[1]
        log(f"{family}: best on the tuning half {top[1]} {top[0]:.3f}")
    m, t, lam = (float(x[1:]) for x in best["prf"].split()[1:])
    rm, b = (float(x[1:]) for x in best["rocchio"].split()[1:])
    chosen.append((f"{best['prf']} + {best['rocchio']}", both(int(m), int(t), lam, int(rm), b)))
    lines = [
        "# Query expansion and neighbour propagation on REALTALK (passages, MiniLM)",
        "",
        "Best five of each family on the tuning half (R@10):",
        "",
        *tuning,
        "",
    ]
    for split, mask in splits.items():
        qs = [q for q, keep in zip(dump.questions, mask, strict=True) if keep]
        systems = [system(label, technique, mask) for label, technique in chosen]
        lines += [f"## {split} ({len(qs)} questions)", "", *table(systems, qs), ""]
    report = "\n".join(lines)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report, encoding="utf-8")
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    parser.add_argument("--no-build", action="store_true", help="reuse the built workspace")
    parser.add_argument("--out", type=Path, default=RESULTS / "expansion.md")
    args = parser.parse_args(argv)
    faiss.omp_set_num_threads(1)
    began = time.perf_counter()
    directory = args.cache / "stages"
    stored = args.cache / "fusion" / "expansion-minilm.pkl"
    if stored.exists():
        dump: ExpansionDump = load_dump(stored)
    else:
        if not args.no_build:
            build(directory, args.cache, load_realtalk(DATA)[0])
        with Workspace(Settings(workspace=directory, vector_follow="sync")) as ws:
            dump = dump_legs(ws)
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_bytes(pickle.dumps(dump))
    print(evaluate(dump, args.out))
    log(f"whole run {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":  # run as bench.expansion_compare, so that a dump names its classes by it
    sys.exit(importlib.import_module("bench.expansion_compare").main())
