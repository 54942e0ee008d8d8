"""The annotations of a recall's hits (seed 001): what each hit's warning lines say, as kinds
a machine reads, for the `--ledger` recall line (and the portal's `/api/recall`).

Kinds, in the seed's words: `contradiction` (the hit is contradicted: its ⚠ line),
`contradicts` (the concept shown beside a contradicted hit), `rests_on_contradicted` (the hit
cites a contradicted concept), `skipped_redundant` (the hit replaced repeats), `possibly_superseded`
(a newer concept may replace it, #198, whether or not its line is shown) and `superseded` (its
`⤓ Superseded` history line). They are computed from what the recall decided, never re-ranked.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from lcg.domain.memory import evidence, redundancy
from lcg.projections.canonization import state as canon

Annotation = dict[str, Any]


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
    """Each hit's annotations, in the order its block shows its lines. `beside`: a concept
    shown beside contradicted hits, and those hits; `rests_on`: a hit's (cited, contradicting)
    pairs; `skipped`: the repeats a hit replaced; `replaced`: older hit -> newer concept."""
    out: dict[str, tuple[Annotation, ...]] = {}
    held_by = canon.node_states_of(conn, session, list(hits))  # one query
    for uuid in hits:
        found: list[Annotation] = []
        for of in beside.get(uuid, ()):
            found.append({"kind": "contradicts", "of": of})
        contradiction = contradicted.get(evidence.ConceptId(uuid))
        if contradiction is not None:
            found.append({"kind": "contradiction", "by": contradiction.source})
        for cited, source in rests_on.get(uuid, ()):
            found.append({"kind": "rests_on_contradicted", "on": cited, "by": source})
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
            found.append({"kind": "superseded", "by": held.superseded_by})
        out[uuid] = tuple(found)
    return out
