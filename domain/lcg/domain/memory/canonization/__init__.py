"""Canonization policy: which concepts the next cycle promotes or demotes, and why (inspect).

Pure functions over what the store measured (canonization.md §1-§6, M-CAN, M-INS-030..043).
The scheduled job measures a `SessionStats`, asks `plan_cycle` for the transitions and appends
them as events; `lambo_inspect` asks `evaluate` about one concept. Both read one gate function,
so inspect's admission is the cycle's own decision. The clock arrives as `now`.

Decisions on what the spec leaves open (tagged [I] there) are marked "Decision" in its modules.
"""

from __future__ import annotations

from lcg.domain.memory.canonization.answers import (
    Admission,
    Check,
    CyclePlan,
    SoloTerms,
    Transition,
    held_line,
    last_demotion_line,
)
from lcg.domain.memory.canonization.cycle import (
    cycle_needs,
    plan_cycle,
    plan_cycle_over,
    plan_cycle_with_cursors,
)
from lcg.domain.memory.canonization.gates import (
    evaluate,
    evaluate_over,
)
from lcg.domain.memory.canonization.ladder import (
    LEGAL_TRANSITIONS,
    IllegalTransition,
    Status,
    check_transition,
)
from lcg.domain.memory.canonization.measures import (
    Cause,
    ConceptStats,
    Cursors,
    Demotion,
    Measures,
    SessionStats,
    SoloMeasures,
    SupersessionEvidence,
)
from lcg.domain.memory.canonization.policy import (
    BLAST_RADIUS_BAR,
    COVERAGE_BAR,
    DISTINCT_INTERACTIONS_BAR,
    GC_SURVIVED_BAR,
    RESISTANCE,
    SCORE_PERCENTILE,
    SOLO_BANDS,
    SOLO_SESSION_GAP,
    Knobs,
    Policy,
    parse_policy,
)
from lcg.domain.memory.canonization.scoring import (
    p90,
    solo_band,
    solo_sessions,
    solo_terms,
)
from lcg.domain.memory.canonization.session import (
    ConceptRows,
)
from lcg.domain.memory.canonization.supersession import (
    coverage,
    superseders,
)

__all__ = [
    "BLAST_RADIUS_BAR",
    "COVERAGE_BAR",
    "DISTINCT_INTERACTIONS_BAR",
    "GC_SURVIVED_BAR",
    "LEGAL_TRANSITIONS",
    "RESISTANCE",
    "SCORE_PERCENTILE",
    "SOLO_BANDS",
    "SOLO_SESSION_GAP",
    "Admission",
    "Cause",
    "Check",
    "ConceptRows",
    "ConceptStats",
    "Cursors",
    "CyclePlan",
    "Demotion",
    "IllegalTransition",
    "Knobs",
    "Measures",
    "Policy",
    "SessionStats",
    "SoloMeasures",
    "SoloTerms",
    "Status",
    "SupersessionEvidence",
    "Transition",
    "check_transition",
    "coverage",
    "cycle_needs",
    "evaluate",
    "evaluate_over",
    "held_line",
    "last_demotion_line",
    "p90",
    "parse_policy",
    "plan_cycle",
    "plan_cycle_over",
    "plan_cycle_with_cursors",
    "solo_band",
    "solo_sessions",
    "solo_terms",
    "superseders",
]
