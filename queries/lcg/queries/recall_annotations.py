"""The annotations of a recall's hits (seed 001): each warning or history line a hit's block
carries, by kind, for the portal REST API's `/api/recall` `hits[].annotations` (and any other
surface that reports lines by kind). structuredContent carries none (M-REC-143).

Kinds (M-CFG-053): `contradiction` (the hit is contradicted: `by` the concept shown beside it),
`contradicts` (the concept beside a contradicted hit: `of` that hit), `rests_on_contradicted`
(the hit's own depends_on cites a contradicted concept: `cited`, `contradicted_by`),
`possibly_superseded` (a newer concept of the result may replace it, not declared: `by`),
`superseded` (demoted by a supersession, while not Canonical: `by`, `at`). Worked out from the
same facts the lines are, in the same recall, so a line and its annotation never disagree.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from lcg.domain.memory import evidence
from lcg.domain.memory.context import HitView
from lcg.projections.canonization import state as canon

Kind = Literal[
    "contradiction", "contradicts", "rests_on_contradicted", "possibly_superseded", "superseded"
]
KINDS: tuple[Kind, ...] = (
    "contradiction",
    "contradicts",
    "rests_on_contradicted",
    "possibly_superseded",
    "superseded",
)


class Annotation(TypedDict, total=False):
    """One annotation: `kind` always; the ids (and time) the kind names."""

    kind: Kind
    by: str
    of: str
    cited: str
    contradicted_by: str
    at: str


Contradictions = Mapping[evidence.ConceptId, evidence.Contradiction]


def annotate(
    conn: sqlite3.Connection,
    views: Sequence[HitView],
    contradicted: Contradictions,
    companions: Mapping[str, Sequence[str]],
    cited: Mapping[str, Sequence[str]],
    live: Contradictions,
    replaced: Mapping[str, str],
) -> dict[str, tuple[Annotation, ...]]:
    """Each shown hit's annotations, in its block's order. `contradicted`: the contradictions
    the Contradicted lines show; `companions`: concept beside -> the hits it contradicts;
    `cited`: each hit's depends_on targets; `live`: this recall's own contradictions (the
    rests-on lines'); `replaced`: older hit -> the newer concept that may replace it."""
    states = {view.node_id: canon.node_state(conn, view.node_id) for view in views}
    out: dict[str, tuple[Annotation, ...]] = {}
    for view in views:
        uuid = view.node_id
        found: list[Annotation] = []
        for target in companions.get(uuid, ()):
            found.append({"kind": "contradicts", "of": target})
        contradiction = contradicted.get(evidence.ConceptId(uuid))
        if contradiction is not None:
            found.append({"kind": "contradiction", "by": str(contradiction.source)})
        for target in cited.get(uuid, ()):
            rule = live.get(evidence.ConceptId(target))
            if rule is not None and rule.source != uuid:
                found.append(
                    {
                        "kind": "rests_on_contradicted",
                        "cited": target,
                        "contradicted_by": str(rule.source),
                    }
                )
        newer = replaced.get(uuid)
        if newer is not None:
            found.append({"kind": "possibly_superseded", "by": newer})
        held = states[uuid]
        if (
            held.status != "Canonical"
            and held.demotion_cause == "supersession"
            and held.superseded_by is not None
        ):
            note: Annotation = {"kind": "superseded", "by": held.superseded_by}
            if held.last_demotion_at is not None:
                note["at"] = held.last_demotion_at.isoformat()
            found.append(note)
        if found:
            out[uuid] = tuple(found)
    return out
