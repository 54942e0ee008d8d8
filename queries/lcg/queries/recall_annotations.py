"""The annotations of a recall's hits (seed 001): each warning or history line a hit's block
carries, by kind, for the portal REST API's `/api/recall` `hits[].annotations` and the
`--ledger` recall line. structuredContent carries none (M-REC-143).

Kinds, in the seed's words (M-CFG-053): `contradiction` (the hit is contradicted: `by` the
concept shown beside it), `contradicts` (the concept beside a contradicted hit: `of` that
hit), `rests_on_contradicted` (the hit's own depends_on cites a contradicted concept: `cited`,
`contradicted_by`), `skipped_redundant` (the repeats the hit replaced: `skipped`),
`possibly_superseded` (a newer concept may replace it, #198, whether or not its line is shown:
`by`) and `superseded` (demoted by a supersession while not Canonical: `by`, `at`). Worked
out from the facts the recall decided its lines by, in the same recall, so a line and its
annotation never disagree; never re-ranked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from lcg.domain.memory import evidence, redundancy
from lcg.projections.canonization import state as canon

Kind = Literal[
    "contradiction",
    "contradicts",
    "rests_on_contradicted",
    "skipped_redundant",
    "possibly_superseded",
    "superseded",
]
KINDS: tuple[Kind, ...] = (
    "contradiction",
    "contradicts",
    "rests_on_contradicted",
    "skipped_redundant",
    "possibly_superseded",
    "superseded",
)


class SkippedRepeat(TypedDict):
    node_id: str
    signal: str


class Annotation(TypedDict, total=False):
    """One annotation: `kind` always; the ids (and time) the kind names."""

    kind: Kind
    by: str
    of: str
    cited: str
    contradicted_by: str
    at: str
    skipped: list[SkippedRepeat]


def annotations_of(
    conn: sqlite3.Connection,
    session: str,
    hits: Sequence[str],
    contradicted: Mapping[evidence.ConceptId, evidence.Contradiction],
    beside: Mapping[str, Sequence[str]],
    rests_on: Mapping[str, Sequence[tuple[str, str]]],
    skipped: Mapping[str, Sequence[redundancy.Skipped]],
    replaced: Mapping[str, str],
) -> dict[str, tuple[Annotation, ...]]:
    """Each hit's annotations, in the order its block shows its lines. `contradicted`: the
    contradictions the hits' Contradicted lines show; `beside`: a concept shown beside
    contradicted hits -> those hits; `rests_on`: a hit's (cited, contradicting) pairs;
    `skipped`: the repeats a hit replaced; `replaced`: older hit -> newer concept."""
    out: dict[str, tuple[Annotation, ...]] = {}
    held_by = canon.node_states_of(conn, session, list(hits))  # one query
    for uuid in hits:
        found: list[Annotation] = []
        for of in beside.get(uuid, ()):
            found.append({"kind": "contradicts", "of": of})
        contradiction = contradicted.get(evidence.ConceptId(uuid))
        if contradiction is not None:
            found.append({"kind": "contradiction", "by": str(contradiction.source)})
        for cited, source in rests_on.get(uuid, ()):
            found.append(
                {"kind": "rests_on_contradicted", "cited": cited, "contradicted_by": source}
            )
        repeats = skipped.get(uuid, ())
        if repeats:
            found.append(
                {
                    "kind": "skipped_redundant",
                    "skipped": [{"node_id": r.node_id, "signal": r.signal} for r in repeats],
                }
            )
        if uuid in replaced:
            found.append({"kind": "possibly_superseded", "by": replaced[uuid]})
        held = held_by.get(uuid)
        if (
            held is not None
            and held.status != "Canonical"
            and held.demotion_cause == "supersession"
            and held.superseded_by is not None
        ):
            note: Annotation = {"kind": "superseded", "by": held.superseded_by}
            if held.last_demotion_at is not None:
                note["at"] = held.last_demotion_at.isoformat()
            found.append(note)
        out[uuid] = tuple(found)
    return out
