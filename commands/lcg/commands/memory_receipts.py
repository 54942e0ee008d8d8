"""What a settled memory write's receipt says (ADR 0026): its fields and text lines from the
outcome, the log's answer for a receipt this process does not hold, and the stale report of
a write that contradicted something (M-STL-014..018)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from lcg.domain.ids import GroupId
from lcg.domain.memory import evidence
from lcg.domain.memory.context import quote
from lcg.domain.memory.receipts import IntentRecord, JsonValue, ReceiptState
from lcg.domain.memory.records import WriteOutcome
from lcg.projections.memory import evidence as memory_evidence
from lcg.projections.memory import state
from lcg.projections.memory.state import WriteRow

STALE_REPORT_BYTES = 2048  # ids, cited ids and snippets of a receipt's stale rows (M-STL-016)


def settled_fields(outcome: WriteOutcome) -> dict[str, JsonValue]:
    """The receipt object's keys on applied (M-STA-081)."""
    fields: dict[str, JsonValue] = {
        "created": list(outcome.created),
        "matched": list(outcome.matched),
        "created_count": outcome.created_count,
        "matched_count": outcome.matched_count,
        "semantic_merged": outcome.semantic_merged,
        "reinforced": outcome.reinforced,
        "edges": outcome.edges_count,
        "embedded": outcome.embedded,
    }
    if outcome.action_node is not None:
        fields["action_node"] = outcome.action_node
    if outcome.replacement_candidates is not None:
        fields["replacement_candidates"] = outcome.replacement_candidates.to_wire()
    return fields


def record_of(row: WriteRow, *, this_process: bool, owed: bool = False) -> IntentRecord:
    """What the log says about a write, as a receipt state (ADR 0026). `owed`: this server
    owes the write a replay after a transient failure (ADR 0108), so it answers as an intent
    still owed; where it failed, and once it fails again, it answers failed."""
    if row.state == "pending" or (row.state == state.FAILED_TRANSIENT and owed):
        waits = ReceiptState.PENDING if this_process else ReceiptState.PENDING_REPLAY
        return IntentRecord(waits, row.agent_id, row.group_id)
    if row.state in ("failed", state.FAILED_TRANSIENT):
        return IntentRecord(ReceiptState.FAILED, row.agent_id, row.group_id, detail=row.summary)
    outcome = row.outcome
    assert outcome is not None
    applied = (
        ReceiptState.APPLIED
        if this_process and not row.after_restart
        else ReceiptState.APPLIED_AFTER_RESTART
    )
    fields = settled_fields(outcome)
    if this_process:
        return IntentRecord(
            applied,
            row.agent_id,
            row.group_id,
            detail=row.summary,
            lines=outcome.candidate_lines,
            fields=fields,
        )
    # A previous process's receipt, recovered from the log, keeps only its summary: no
    # candidate rows (M-DER-123), as it keeps no stale rows (M-STL-019); the concepts named
    # then may have merged or gone since, and recall or lambo_stale answer for the graph now.
    fields.pop("replacement_candidates", None)
    return IntentRecord(applied, row.agent_id, row.group_id, detail=row.summary, fields=fields)


def stale_report(
    conn: sqlite3.Connection, session: GroupId, outcome: WriteOutcome, now: datetime
) -> tuple[dict[str, JsonValue], tuple[str, ...]] | None:
    """A write carrying `against`: the direct citations of what it contradicted that are
    stale as it settles (M-STL-014..018): at most 50 rows within 2,048 bytes of ids and
    snippets, the true total, and a text line per row. None without a contradiction."""
    targets = [e.target for e in outcome.edges if e.kind == "contradicts"]
    if not targets:
        return None
    found = memory_evidence.load(conn, session, targets)
    rows = evidence.stale_rows(
        found.concepts.values(),
        found.contradictions,
        found.support,
        now,
        targets=[evidence.ConceptId(t) for t in targets],
    )
    nodes = state.nodes_by_uuid(conn, [row.dependent for row in rows[:50]])
    shown: list[JsonValue] = []
    lines: list[str] = [f"stale report: {len(rows)} citation(s) rest on what this contradicted"]
    used = 0
    for row in rows[:50]:
        snippet = quote(nodes[row.dependent].content) if row.dependent in nodes else ""
        size = len(f"{row.dependent}{row.cited}{snippet}".encode())
        if used + size > STALE_REPORT_BYTES:
            break
        used += size
        shown.append({"node_id": row.dependent, "content": snippet, "cited_id": row.cited})
        lines.append(f'  - {row.dependent} "{snippet}" rests on {row.cited}')
    return {"rows": shown, "total": len(rows)}, tuple(lines)
