"""What the call ledger's lines say (seed 001 `--ledger`, ADR 0079): one line per tool call
(`kind` "call", or "recall" for lambo_recall), a "completion" line when a write settles and a
"heartbeat" line per session on a period.

A line never carries a payload an error would refuse to repeat: a refused call's line names
the tool, the caller and the refusal's kind, field and rule, never the arguments or the
message; a recall by image or vector says only `by` ("image", "vector"). The recall's detail
(fusion values, annotations) is the tool's to give: lambo_recall hands it over through
`RECALL_DETAIL` while the Service dispatches the call, so that it is built only when a ledger
is on and never travels in a response.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from lcg.domain.memory.records import WriteOutcome
from lcg.interfaces.jsonrpc import JsonObject, RpcError

RECALL = "lambo_recall"
AGENT_ID_CHARS = 256  # longer is refused anyway; never logged past it
LEGS = ("bm25", "recent", "vector")

# Set (to an empty dict) by the Service while a call runs with a ledger on; lambo_recall fills
# it with the recall's hits as the ledger shows them (recall_detail).
RECALL_DETAIL: ContextVar[dict[str, Any] | None] = ContextVar("lcg_recall_detail", default=None)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def call_line(
    method: str,
    params: Mapping[str, Any] | None,
    session: str,
    ms: float,
    result: JsonObject | None,
    error: RpcError | None,
    detail: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One call's line: what was called, by whom, for which session, how long it took and
    how it ended; lambo_recall's with its hits (`detail`)."""
    params = params or {}
    line: dict[str, Any] = {
        "kind": "recall" if method == RECALL else "call",
        "ts": now(),
        "tool": method,
        "session": session,
    }
    refused_field = (error.data or {}).get("field") if error is not None else None
    agent = params.get("agent_id")
    if isinstance(agent, str) and refused_field != "agent_id" and len(agent) <= AGENT_ID_CHARS:
        line["agent_id"] = agent
    line["ms"] = round(ms, 3)
    if method == RECALL:
        line.update(_recall_fields(params, error is None, detail))
    if error is not None:
        line["ok"] = False
        data = error.data if isinstance(error.data, dict) else {}
        line["error"] = {
            "code": error.code,
            **{key: data[key] for key in ("kind", "field", "rule") if key in data},
        }
        return line
    line["ok"] = True
    content = (result or {}).get("structuredContent")
    if isinstance(content, dict):
        for key in ("receipt", "receipt_state"):
            if isinstance(content.get(key), str):
                line[key] = content[key]
    return line


def _recall_fields(
    params: Mapping[str, Any], ok: bool, detail: Mapping[str, Any] | None
) -> dict[str, Any]:
    """`by` always (image and vector: nothing else of them); the query text, top_k and the
    hits only when the recall was answered; `scope` when the call sent one."""
    fields: dict[str, Any] = {}
    if params.get("image") is not None:
        fields["by"] = "image"
    elif params.get("query_vector") is not None:
        fields["by"] = "vector"
    else:
        fields["by"] = "query"
        if ok and isinstance(params.get("query"), str):
            fields["query"] = params["query"]
    scope = params.get("scope")
    if ok and isinstance(scope, str):
        fields["scope"] = scope
    if ok and detail:
        fields.update(detail)
    return fields


def recall_detail(session: str, hits: list[dict[str, Any]]) -> dict[str, Any]:
    """The recall line's hits and counts from the hits as the ledger shows them (each with
    its `session`, `fusion` when a query leg found it, and `annotations`)."""
    detail: dict[str, Any] = {"hits": hits}
    detail["session_hits"] = dict(Counter(str(hit.get("session", session)) for hit in hits))
    kinds = Counter(note["kind"] for hit in hits for note in hit.get("annotations", ()))
    if kinds["contradiction"]:
        detail["contradiction_warning"] = True
    if kinds["possibly_superseded"]:
        detail["possibly_superseded"] = kinds["possibly_superseded"]
    return detail


def fusion_of(ranks: Mapping[str, int] | None, fused: Mapping[str, float] | None) -> JsonObject:
    """A hit's `fusion`: its rank in each query leg it came from and both fused values."""
    fusion: JsonObject = {f"{leg}_rank": (ranks or {})[leg] for leg in LEGS if leg in (ranks or {})}
    if fused:
        fusion.update({"max": fused["max"], "rrf": fused["rrf"]})
    return fusion


def completion_line(
    session: str | None, receipt: str, state: str, fields: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A settled write's line: its receipt, its state and, when applied, the receipt's counts
    (M-STA-084); replacement candidates only as counts, cosines and flags (M-DER-124)."""
    line: dict[str, Any] = {"kind": "completion", "ts": now()}
    if session is not None:
        line["session"] = session
    line.update({"receipt": receipt, "state": state})
    if fields is not None:
        line.update(fields)
    return line


def completion_fields(outcome: WriteOutcome) -> dict[str, Any]:
    """An applied write's counts, as its receipt gives them (M-STA-081), without ids; its
    replacement candidates as the count, each cosine, and the merged and newer flags when a
    candidate is either (M-DER-124)."""
    fields: dict[str, Any] = {
        "created_count": outcome.created_count,
        "matched_count": outcome.matched_count,
        "semantic_merged": outcome.semantic_merged,
        "reinforced": outcome.reinforced,
        "edges": outcome.edges_count,
        "embedded": outcome.embedded,
    }
    found = outcome.replacement_candidates
    if found is not None and found.total:
        fields["replacement_candidates"] = found.total
        fields["replacement_cosines"] = [c.cosine for c in found.candidates]
        if any(c.merged for c in found.candidates):
            fields["replacement_merged"] = [c.merged for c in found.candidates]
        if any(c.newer for c in found.candidates):
            fields["replacement_newer"] = [c.newer for c in found.candidates]
    return fields


def heartbeat_line(session: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """A session's heartbeat: lambo_stats's payload (promotion_policy and the ledger keys
    among it, the builder lambo_stats answers with)."""
    return {"kind": "heartbeat", "ts": now(), "session": session, **payload}
