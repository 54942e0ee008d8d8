"""The portal REST API's OpenAPI 3 document (`/api/openapi.json`); the tests validate every
endpoint's answers against it."""

from __future__ import annotations

from typing import Any, Final

from lcg.domain.memory import limits
from lcg.interfaces.portal.reads import EVENTS_PAGE_MAX, GRAPH_MAX, HOPS_MAX
from lcg.queries.recall_annotations import KINDS

STR: Final = {"type": "string"}
INT: Final = {"type": "integer"}
NULL_INT: Final = {"type": ["integer", "null"]}
# each query leg's own score (bm25, vector, recent); a graph neighbour's is absent: its
# "graph" rank is a hop, with no score of its own
LEG_SCORES: Final = {"type": "object", "additionalProperties": {"type": "number"}}
OBJ: Final = {"type": "object"}

STAMP: Final = {"session": STR, "head": INT, "as_of_seq": NULL_INT}


def _param(name: str, schema: dict[str, Any], required: bool = False, doc: str = "") -> Any:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": doc}


SESSION = _param("session", STR, doc="The memory session (default: the serve's own).")
AS_OF = _param("as_of_seq", {"type": "integer", "minimum": 1}, doc="Read as of this seq.")


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


ANNOTATION = _obj(
    {
        "kind": {"type": "string", "enum": list(KINDS)},
        "by": STR,
        "of": STR,
        "cited": STR,
        "contradicted_by": STR,
        "at": STR,
        "skipped": {"type": "array", "items": _obj({"node_id": STR, "signal": STR})},
    },
    ["kind"],
)
RECALL_HIT = _obj(
    {
        "node_id": STR,
        "content": STR,
        "concept_type": STR,
        "score": {"type": "number"},
        "is_canonical": {"type": "boolean"},
        "blast_radius": NULL_INT,
        "ranks": {"type": "object", "additionalProperties": INT},
        "companion_of": {"type": "array", "items": STR},
        "skipped_redundant": {
            "type": "array",
            "items": _obj({"node_id": STR, "signal": STR}),
        },
        "possibly_superseded_by": STR,
        "truncated_in_context": {"type": "boolean"},
        "annotations": {"type": "array", "items": ANNOTATION},
        "scores": LEG_SCORES,
    },
    ["node_id", "content", "concept_type", "score", "is_canonical", "annotations", "scores"],
)
ERROR = _obj({"error": STR, "field": {"type": ["string", "null"]}})


def _get(summary: str, params: list[Any], result: dict[str, Any]) -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": ERROR}}}
    return {
        "get": {
            "summary": summary,
            "parameters": params,
            "responses": {
                "200": {
                    "description": "OK",
                    "content": {"application/json": {"schema": result}},
                },
                "400": {"description": "A rule broken (the field named)", **error},
                "401": {"description": "No or a wrong bearer token"},
                "404": {"description": "An unknown session or id (named)", **error},
            },
        }
    }


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of `/api/`."""
    query = _param("query", {"type": "string", "minLength": 1}, True, "What to recall.")
    top_k = _param("top_k", {"type": "integer", "minimum": 1, "maximum": limits.TOP_K.maximum})
    return {
        "openapi": "3.1.0",
        "info": {"title": "lcg portal REST API (read-only)", "version": "1"},
        "paths": {
            "/api/overview": _get(
                "Sessions, health, WAL heads and pins, jobs, vector backlog",
                [
                    _param(
                        "session",
                        STR,
                        doc="Only this session (default: every memory session).",
                    ),
                    _param(
                        "as_of_seq",
                        {"type": "integer", "minimum": 1},
                        doc="The session (given or the serve's own) as of this seq; health,"
                        " backlog and tick are the serve's now.",
                    ),
                ],
                _obj(
                    {
                        "session": {"type": ["string", "null"]},
                        "as_of_seq": NULL_INT,
                        "health": OBJ,
                        "sessions": {"type": "array", "items": OBJ},
                        "wal": OBJ,
                        "jobs": {"type": "array", "items": OBJ},
                        "tick_interval_secs": {"type": "number"},
                        "vector_backlog": _obj(
                            {"pending": INT, "error": {"type": ["string", "null"]}}
                        ),
                    }
                ),
            ),
            "/api/recall": _get(
                "The context block as an agent gets it, hits with annotations",
                [
                    SESSION,
                    query,
                    top_k,
                    _param("max_tokens", {"type": "integer", "minimum": 1}),
                    _param("traversal_depth", {"type": "integer", "minimum": 0}),
                    AS_OF,
                ],
                _obj(
                    {
                        **STAMP,
                        "context": STR,
                        "hits": {"type": "array", "items": RECALL_HIT},
                        "warnings": {"type": "array", "items": STR},
                    }
                ),
            ),
            "/api/search": _get(
                "The fused hits with each leg's rank",
                [SESSION, query, top_k, AS_OF],
                _obj(
                    {
                        **STAMP,
                        "hits": {
                            "type": "array",
                            "items": _obj(
                                {
                                    "node_id": STR,
                                    "content": STR,
                                    "concept_type": {"type": ["string", "null"]},
                                    "status": STR,
                                    "score": {"type": "number"},
                                    "ranks": {"type": "object", "additionalProperties": INT},
                                    "scores": LEG_SCORES,
                                }
                            ),
                        },
                    }
                ),
            ),
            "/api/inspect": _get(
                "A concept: inspect, neighbours, dependents, history, receipts",
                [
                    SESSION,
                    _param("focus", {"type": "string", "minLength": 1}, True),
                    _param("depth", {"type": "integer", "minimum": 0}),
                    AS_OF,
                ],
                _obj(
                    {
                        **STAMP,
                        "node_id": STR,
                        "content": STR,
                        "concept_type": STR,
                        "agent_id": STR,
                        "created_at": STR,
                        "blast_radius": INT,
                        "dependents": {"type": "array", "items": OBJ},
                        "contradicted_by": {"type": "array", "items": STR},
                        "edges": {"type": "array", "items": OBJ},
                        "neighbours": {"type": "object", "additionalProperties": STR},
                        "admission": OBJ,
                        "canonization_history": {"type": "array", "items": OBJ},
                        "receipts": {"type": "array", "items": OBJ},
                    }
                ),
            ),
            "/api/stats": _get(
                "lambo_stats's session figures",
                [SESSION, AS_OF],
                _obj({**STAMP, "stats": OBJ}),
            ),
            "/api/events": _get(
                "A page of the session's events",
                [
                    SESSION,
                    _param("after_seq", {"type": "integer", "minimum": 0}),
                    _param("limit", {"type": "integer", "minimum": 1, "maximum": EVENTS_PAGE_MAX}),
                    AS_OF,
                ],
                _obj(
                    {
                        **STAMP,
                        "events": {
                            "type": "array",
                            "items": _obj({"seq": INT, "time": STR, "type": STR, "summary": STR}),
                        },
                        "next_after_seq": NULL_INT,
                    }
                ),
            ),
            "/api/graph": _get(
                "Nodes and edges of a session or of a concept's neighbourhood",
                [
                    SESSION,
                    _param("focus", STR),
                    _param("hops", {"type": "integer", "minimum": 1, "maximum": HOPS_MAX}),
                    _param("limit", {"type": "integer", "minimum": 1, "maximum": GRAPH_MAX}),
                    _param(
                        "offset",
                        {"type": "integer", "minimum": 0},
                        doc="Skip this many nodes (write order; a neighbourhood: nearest first).",
                    ),
                    AS_OF,
                ],
                _obj(
                    {
                        **STAMP,
                        "nodes": {
                            "type": "array",
                            "items": _obj(
                                {"id": STR, "content": STR, "concept_type": STR, "status": STR}
                            ),
                        },
                        "edges": {
                            "type": "array",
                            "items": _obj({"source": STR, "target": STR, "kind": STR}),
                        },
                        "total_nodes": INT,
                        "offset": INT,
                        "truncated": {"type": "boolean"},
                    }
                ),
            ),
            "/api/canon": _get(
                "Saints, candidates with what each lacks, the budget",
                [SESSION, AS_OF],
                _obj(
                    {
                        **STAMP,
                        "saints": {"type": "array", "items": OBJ},
                        "candidates": {
                            "type": "array",
                            "items": _obj(
                                {
                                    "node_id": STR,
                                    "content": STR,
                                    "status": STR,
                                    "lacks": {"type": "array", "items": OBJ},
                                }
                            ),
                        },
                        "budget": OBJ,
                        "statuses": OBJ,
                    }
                ),
            ),
        },
    }
