"""Calibrate the similarity-merge threshold of the bundled MiniLM contract on labelled pairs.

Run from the repository root:

    .venv/bin/python -m bench.bench_merge_threshold [--pairs PATH] [--show-merged]

The pairs are fixtures/lcg/fixtures/data/merge-pairs.json: short agent-memory concepts labelled
same (one fact restated) or different (another number, identifier, subject, a negation, an
opposite verb, a refinement, a sibling fact). Each text is embedded as a one-concept call
frames it, `text — text` (lcg.domain.memory.text.embedding_text), with the real model; a pair
merges when the cosine of its two vectors is >= t. For t = 0.80 .. 0.99 the table gives
precision, recall and F1 of "merges" against "same" on the fit half and on the held-out half
(each kind split alternately in file order, so both halves hold every kind). The choice is the
lowest t whose fit-half precision is >= 0.9 (issue 11's bar); the held-out half says whether it
carries over. Then: how often each kind merges at that t, and, as an experiment for a later
guard, what refusing a merge when the two texts' digit-bearing words differ would change.
docs/adr/0025-memory-identity-and-merge-threshold.md records a run.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from lcg.domain.memory.identity import (
    MINILM_CONTRACT,
    canonical_key,
    digit_words_differ,
)
from lcg.domain.memory.text import call_text, embedding_text
from lcg.projections.embedding.minilm import CONTRACT, MiniLmEmbedder
from lcg.projections.embedding.port import Embedder

THRESHOLDS = tuple(round(0.80 + 0.01 * step, 2) for step in range(20))
PRECISION_BAR = 0.9


@dataclass(frozen=True, slots=True)
class Pair:
    id: str
    kind: str
    same: bool
    a: str
    b: str
    fit: bool  # in the half the threshold is chosen on; else held out


@dataclass(frozen=True, slots=True)
class Scored:
    pair: Pair
    cosine: float


@dataclass(frozen=True, slots=True)
class Counts:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float | None:
        merged = self.tp + self.fp
        return self.tp / merged if merged else None

    @property
    def recall(self) -> float | None:
        same = self.tp + self.fn
        return self.tp / same if same else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None or p + r == 0:
            return None
        return 2 * p * r / (p + r)


def load_pairs(path: Path | None) -> list[Pair]:
    """The labelled pairs, each marked fit or held out: alternately within its kind."""
    if path is None:
        source = resources.files("lcg.fixtures") / "data" / "merge-pairs.json"
        document = json.loads(source.read_text("utf-8"))
    else:
        document = json.loads(path.read_text("utf-8"))
    seen: dict[str, int] = {}
    pairs = []
    for row in document["pairs"]:
        index = seen.get(row["kind"], 0)
        seen[row["kind"]] = index + 1
        pairs.append(
            Pair(row["id"], row["kind"], bool(row["same"]), row["a"], row["b"], index % 2 == 0)
        )
    return pairs


def score(pairs: Sequence[Pair], embedder: Embedder) -> list[Scored]:
    """Cosine of each pair's two framed texts (one model call for every distinct text)."""
    texts = sorted({text for pair in pairs for text in (pair.a, pair.b)})
    framed = [embedding_text(text, call_text([text])) for text in texts]
    vectors = embedder.embed(framed)
    row = {text: index for index, text in enumerate(texts)}
    return [
        Scored(pair, float(np.dot(vectors[row[pair.a]], vectors[row[pair.b]]))) for pair in pairs
    ]


Merges = Callable[[Scored, float], bool]


def by_cosine(item: Scored, threshold: float) -> bool:
    return item.cosine >= threshold


def with_digit_guard(item: Scored, threshold: float) -> bool:
    """Cosine >= t, and refused when the two texts' digit-bearing words differ."""
    return by_cosine(item, threshold) and not digit_words_differ(item.pair.a, item.pair.b)


MODES: tuple[tuple[str, Merges], ...] = (
    ("cosine >= t", by_cosine),
    ("cosine >= t and not digit_words_differ", with_digit_guard),
)


def count(items: Sequence[Scored], threshold: float, merges: Merges = by_cosine) -> Counts:
    tp = fp = fn = 0
    for item in items:
        merged = merges(item, threshold)
        tp += merged and item.pair.same
        fp += merged and not item.pair.same
        fn += not merged and item.pair.same
    return Counts(tp, fp, fn)


def choose(fit: Sequence[Scored], merges: Merges = by_cosine) -> float | None:
    """The lowest threshold whose precision on the fit half reaches the bar."""
    for threshold in THRESHOLDS:
        precision = count(fit, threshold, merges).precision
        if precision is not None and precision >= PRECISION_BAR:
            return threshold
    return None


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(
    fit: Sequence[Scored], held: Sequence[Scored], chosen: float | None, merges: Merges
) -> list[str]:
    lines = [
        "| t | fit P | fit R | fit F1 | fit merges (wrong) | held-out P | held-out R "
        "| held-out F1 | held-out merges (wrong) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for threshold in THRESHOLDS:
        f, h = count(fit, threshold, merges), count(held, threshold, merges)
        mark = "**" if threshold == chosen else ""
        lines.append(
            f"| {mark}{threshold:.2f}{mark} | {pct(f.precision)} | {pct(f.recall)} "
            f"| {pct(f.f1)} | {f.tp + f.fp} ({f.fp}) | {pct(h.precision)} | {pct(h.recall)} "
            f"| {pct(h.f1)} | {h.tp + h.fp} ({h.fp}) |"
        )
    return lines


def by_kind(items: Sequence[Scored], threshold: float) -> list[str]:
    kinds = dict.fromkeys(item.pair.kind for item in items)
    lines = [
        f"| kind | label | pairs | cosine min / median / max | merge at {threshold:.2f} "
        "| with the guard |",
        "|---|---|---:|---|---:|---:|",
    ]
    for kind in kinds:
        group = [item for item in items if item.pair.kind == kind]
        cosines = [item.cosine for item in group]
        merged = sum(by_cosine(item, threshold) for item in group)
        guarded = sum(with_digit_guard(item, threshold) for item in group)
        label = "same" if group[0].pair.same else "different"
        spread = f"{min(cosines):.3f} / {statistics.median(cosines):.3f} / {max(cosines):.3f}"
        lines.append(f"| {kind} | {label} | {len(group)} | {spread} | {merged} | {guarded} |")
    return lines


def folds(fit: Sequence[Scored], held: Sequence[Scored], merges: Merges) -> list[str]:
    """Each half chooses (lowest t with precision >= the bar on it); the other half checks."""
    lines = []
    for name, chooser, checker in (("fit", fit, held), ("held-out", held, fit)):
        chosen = choose(chooser, merges)
        if chosen is None:
            lines.append(f"  chosen on the {name} half: none reaches P {PRECISION_BAR}")
            continue
        own, other = count(chooser, chosen, merges), count(checker, chosen, merges)
        lines.append(
            f"  chosen on the {name} half: {chosen:.2f} (P {pct(own.precision)} "
            f"R {pct(own.recall)}); on the other half P {pct(other.precision)} "
            f"R {pct(other.recall)}"
        )
    return lines


def report(items: Sequence[Scored], show_merged: bool) -> list[str]:
    fit = [item for item in items if item.pair.fit]
    held = [item for item in items if not item.pair.fit]
    same = sum(item.pair.same for item in items)
    lines = [
        f"contract {CONTRACT.kind}:{CONTRACT.model}:{CONTRACT.dim}; {len(items)} pairs "
        f"({same} same, {len(items) - same} different); fit half {len(fit)}, "
        f"held-out half {len(held)}; texts framed `text — text`",
    ]
    for name, merges in MODES:
        chosen = choose(fit, merges)
        lines += ["", f"merge when {name}:", "", *table(fit, held, chosen, merges), ""]
        lines += folds(fit, held, merges)
        if chosen is not None:
            a = count(items, chosen, merges)
            lines.append(
                f"  all pairs at {chosen:.2f}: P {pct(a.precision)} R {pct(a.recall)} "
                f"F1 {pct(a.f1)}"
            )
    reference = choose(fit, with_digit_guard) or THRESHOLDS[-1]
    lines += ["", *by_kind(items, reference)]
    if show_merged:
        lines += ["", f"different pairs with cosine >= {reference:.2f} (g: the guard refuses):"]
        wrong = [i for i in items if not i.pair.same and by_cosine(i, reference)]
        for item in sorted(wrong, key=lambda i: -i.cosine):
            flag = "g" if not with_digit_guard(item, reference) else " "
            lines.append(
                f"  {item.cosine:.3f} {flag} {item.pair.id}: {item.pair.a!r} / {item.pair.b!r}"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=Path, help="another pair file in the same format")
    parser.add_argument(
        "--show-merged", action="store_true", help="list the different pairs that merge"
    )
    args = parser.parse_args(argv)
    if (CONTRACT.kind, CONTRACT.model, CONTRACT.dim) != MINILM_CONTRACT:
        raise SystemExit(f"the model's contract {CONTRACT} is not MINILM_CONTRACT")
    pairs = load_pairs(args.pairs)
    keyed = [pair.id for pair in pairs if canonical_key(pair.a) == canonical_key(pair.b)]
    if keyed:
        raise SystemExit(f"pairs whose texts share a canonical key never reach a merge: {keyed}")
    for line in report(score(pairs, MiniLmEmbedder()), args.show_merged):
        print(line)


if __name__ == "__main__":
    main()
