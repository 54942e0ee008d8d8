"""Measures the policy derives from the store's: the score percentile and Solo's score (§3, §4)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime

from lcg.domain.memory.canonization.answers import SoloTerms
from lcg.domain.memory.canonization.ladder import Status
from lcg.domain.memory.canonization.measures import ConceptStats
from lcg.domain.memory.canonization.policy import (
    RESISTANCE,
    SCORE_PERCENTILE,
    SOLO_BANDS,
    SOLO_SESSION_GAP,
)


def clean_score(score: float) -> float:
    return score if math.isfinite(score) and score > 0 else 0.0


def p90(scores: Iterable[float]) -> float:
    """Nearest-rank 90th percentile; a NaN, infinite or negative score counts as 0 (§3)."""
    clean = sorted(s if math.isfinite(s) and s > 0 else 0.0 for s in scores)
    if not clean:
        return 0.0
    return clean[math.ceil(SCORE_PERCENTILE * len(clean)) - 1]


def solo_sessions(times: Iterable[datetime]) -> int:
    """Distinct sessions: the first time, then each at least 24 h after the last counted."""
    counted = 0
    last: datetime | None = None
    for at in sorted(set(times)):
        if last is None or at - last >= SOLO_SESSION_GAP:
            counted += 1
            last = at
    return counted


def solo_band(score: float) -> Status:
    """The status a Solo score reaches (bands inclusive)."""
    for floor, status in SOLO_BANDS:
        if score >= floor:
            return status
    return Status.NONE


def solo_terms(stats: ConceptStats) -> SoloTerms:
    """Solo's score of a concept: (sessions + 4 human + 2 actions - 3 reverts) x resistance."""
    measures = stats.solo
    sessions = solo_sessions(measures.support_times)
    raw = float(
        sessions + 4 * measures.human_confirmed + 2 * measures.valid_actions - 3 * measures.reverts
    )
    resistance = RESISTANCE[stats.concept_type]
    score = raw * resistance
    return SoloTerms(
        sessions,
        measures.human_confirmed,
        measures.valid_actions,
        measures.reverts,
        resistance,
        raw,
        score,
        solo_band(score),
    )
