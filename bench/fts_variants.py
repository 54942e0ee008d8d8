"""Compare FTS5 variants on REALTALK (BM25 alone): tokenizer, stop words, neighbour context.

Run from the repository root: `python -m bench.fts_variants`. No model runs; one
in-memory FTS5 table per conversation. Results are in docs/adr/0009-fts5-for-bm25.md.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import numpy as np

from bench.realtalk import load_realtalk
from bench.search_quality import distinct, question_scores
from lcg.projections.text.reader import STOP_WORDS

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "realtalk"
TOKENIZERS = ("unicode61", "porter unicode61 remove_diacritics 2")


def run(tokenizer: str, *, stop: bool, context: bool) -> str:
    conversations, _ = load_realtalk(DATA)
    scores = []
    for conversation in conversations:
        conn = sqlite3.connect(":memory:")
        conn.execute(
            "CREATE VIRTUAL TABLE f USING fts5(name UNINDEXED, content, context,"
            f" tokenize='{tokenizer}')"
        )
        turns = conversation.turns
        for index, turn in enumerate(turns):
            near = turns[max(0, index - 1) : index] + turns[index + 1 : index + 2]
            around = " ".join(t.body for t in near) if context else ""
            conn.execute("INSERT INTO f VALUES (?,?,?)", (turn.dia_id, turn.body, around))
        for question in conversation.questions:
            words = list(dict.fromkeys(w.lower() for w in re.findall(r"\w+", question.text)))
            if stop:
                words = [w for w in words if w not in STOP_WORDS] or words
            expression = " OR ".join(f'"{w}"' for w in words)
            rows = conn.execute(
                "SELECT name FROM f WHERE f MATCH ? ORDER BY bm25(f, 0, 2.0, 1.0) LIMIT 20",
                (expression,),
            ).fetchall()
            ranking = distinct([str(row[0]) for row in rows])
            scores.append(question_scores(ranking, question.evidence))
    mean = np.array(scores).mean(axis=0)
    return (
        f"| {tokenizer} | {'yes' if stop else 'no'} | {'yes' if context else 'no'} | "
        + " | ".join(f"{value:.3f}" for value in mean)
        + " |"
    )


def main() -> None:
    print("| tokenizer | stop words dropped | neighbour context | R@5 | R@10 | R@20 | MRR |")
    print("|---|---|---|---:|---:|---:|---:|")
    for tokenizer in TOKENIZERS:
        for stop in (False, True):
            for context in (False, True):
                print(run(tokenizer, stop=stop, context=context))


if __name__ == "__main__":
    main()
