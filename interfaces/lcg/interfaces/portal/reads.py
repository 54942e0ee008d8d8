"""What the portal reads, and how (issue 29): every REST endpoint and page answers from the
same query layer the tools use, on the live workspace or on a snapshot as of seq N (ADR 0077).
Read-only: no access is counted, no receipt is handed over, nothing is appended.

Each function takes the checked arguments and answers a JSON-ready dict; bad input raises
PortalError with its HTTP status (400: a rule broken, named; 404: an unknown id, named).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Final

import orjson

from lcg.domain.errors import DomainError, NotFound
from lcg.domain.ids import GroupId
from lcg.domain.memory import limits
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import session_name
from lcg.interfaces.portal.as_of import Snapshots
from lcg.interfaces.service import Service
from lcg.interfaces.tools.memory_read import admission_payload
from lcg.interfaces.tools.memory_recall import hit_payload
from lcg.queries import memory_graph, recall
from lcg.queries.memory_inspect import InspectRequest, inspect_memory
from lcg.queries.memory_lists import SaintsRequest, saints
from lcg.queries.memory_recall import RecallRequest, recall_memory
from lcg.queries.reads import search_context

EVENTS_PAGE_MAX: Final = 500
EVENTS_PAGE_DEFAULT: Final = 50
GRAPH_MAX: Final = 20_000
GRAPH_DEFAULT: Final = 5_000
HOPS_MAX: Final = 3
SUMMARY_CHARS: Final = 240  # an event's payload summary


class PortalError(Exception):
    """A refusal with its HTTP status; `field` names the argument or id concerned."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


@dataclass(frozen=True, slots=True)
class Where:
    """The session asked about, its head, and the seq it is read as of (None: live)."""

    session: str
    head: int
    as_of_seq: int | None

    def stamp(self) -> dict[str, Any]:
        return {"session": self.session, "head": self.head, "as_of_seq": self.as_of_seq}


class PortalReads:
    """The portal's reads over one serving process's Service."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._snapshots: Snapshots | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._snapshots is not None:
            self._snapshots.close()

    # -- where -------------------------------------------------------------------------

    def live(self) -> App:
        app = self.service.app
        if app is None:
            reason = self.service.reason or self.service.state
            raise PortalError(503, f"the workspace is not open: {reason}")
        return app

    def where(self, session: str | None, as_of_seq: int | None) -> Where:
        """The session (default: the serve's own) checked to exist, and `as_of_seq` to be
        within its stream (1..head)."""
        app = self.live()
        name = self.service.settings.session if session is None else session
        try:
            session_name(name, "session")
        except DomainError as error:
            raise PortalError(400, error.message, "session") from error
        if name not in app.workspace.log.groups():
            raise PortalError(404, f"session {name!r} not found", "session")
        head = app.workspace.log.head(GroupId(name))
        if as_of_seq is not None and as_of_seq > head:
            raise PortalError(
                400,
                f"as_of_seq: must be at most the head of session {name!r} ({head}); "
                f"got {as_of_seq}",
                "as_of_seq",
            )
        return Where(name, head, None if as_of_seq == head else as_of_seq)

    def app_at(self, where: Where) -> App:
        """The live App, or a snapshot's as of the seq (built on first use, ADR 0077)."""
        live = self.live()
        if where.as_of_seq is None:
            return live.for_session(where.session)
        with self._lock:
            if self._snapshots is None:
                self._snapshots = Snapshots(live.workspace)
            snapshots = self._snapshots
        return snapshots.app(where.session, where.as_of_seq).for_session(where.session)

    # -- the endpoints -------------------------------------------------------------------

    def overview(self, where: Where | None = None) -> dict[str, Any]:
        """Sessions with their counts and heads, health, WAL heads and pins, the job
        schedule and last runs, the vector follower's backlog. With `where` (a `session` or
        an `as_of_seq` asked for): that session alone, as of the seq when one is given (its
        snapshot's counts, WAL row and jobs); health, the follower's backlog and the tick
        are the serving process's now (they have no history)."""
        live = self.live()
        app = live if where is None else self.app_at(where)
        status = operations.dispatch(app, "knowledge_status", {})
        groups = app.workspace.log.groups() if where is None else [GroupId(where.session)]
        sessions = []
        for group in groups:
            conn = app.reads.reader()
            counts = memory_graph.session_counts(conn, group)
            if counts["node_count"] == 0 and where is None:
                continue  # a knowledge group, not a memory session
            sessions.append({"session": str(group), **counts})
        workspace = live.workspace
        pending, follow_error = workspace.vector_follow_state
        jobs = []
        for session in sessions:
            canon = operations.dispatch(app, "lcg_canon_status", {"session": session["session"]})
            jobs.append(_jsonable(canon))
        wal = _jsonable(status.get("wal_groups", {}))
        return {
            "session": None if where is None else where.session,
            "as_of_seq": None if where is None else where.as_of_seq,
            "health": self.service.health(),
            "sessions": sessions,
            "wal": wal if where is None else {where.session: wal.get(where.session, {})},
            "jobs": jobs,
            "tick_interval_secs": workspace.settings.tuning.tick_interval.total_seconds(),
            "vector_backlog": {"pending": pending, "error": follow_error},
        }

    def recall(
        self, where: Where, query: str, top_k: int, max_tokens: int, depth: int
    ) -> dict[str, Any]:
        app = self.app_at(where)
        service = app.memory
        request = RecallRequest(where.session, "portal", query, top_k, max_tokens, depth)
        recalled = recall_memory(app.reads, service.jobs, request)
        hits = []
        for hit in recalled.hits:
            shown = hit_payload(hit)
            shown["annotations"] = [dict(note) for note in hit.annotations]
            shown["scores"] = dict(hit.scores or {})
            hits.append(shown)
        return {
            **where.stamp(),
            "context": recalled.context,
            "hits": hits,
            "warnings": list(recalled.warnings),
        }

    def search(self, where: Where, query: str, top_k: int) -> dict[str, Any]:
        """The fused hits alone, each leg's rank: what recall ranks before its lines."""
        app = self.app_at(where)
        found = recall.recall_concepts(search_context(app.reads), where.session, query, top_k, 0)
        nodes = memory_graph.nodes_of(app.reads.reader(), [hit.node_id for hit in found])
        hits = [
            {
                "node_id": hit.node_id,
                "content": nodes[hit.node_id].content,
                "concept_type": nodes[hit.node_id].concept_type,
                "status": nodes[hit.node_id].status,
                "score": hit.score,
                "ranks": dict(hit.ranks),
                "scores": dict(hit.scores),
            }
            for hit in found
            if hit.node_id in nodes
        ]
        return {**where.stamp(), "hits": hits}

    def inspect(self, where: Where, focus: str, depth: int) -> dict[str, Any]:
        app = self.app_at(where)
        service = app.memory
        try:
            found = inspect_memory(
                app.reads, service.jobs_or_fail, InspectRequest(where.session, focus, depth)
            )
        except DomainError as error:
            if error.rule == "must name a concept" or isinstance(error, NotFound):
                raise PortalError(404, error.message, "focus") from error
            raise
        conn = app.reads.reader()
        history = operations.dispatch(
            app, "lcg_canon_history", {"session": where.session, "node_id": found.node_id}
        )
        return {
            **where.stamp(),
            "node_id": found.node_id,
            "content": found.content,
            "concept_type": found.concept_type,
            "agent_id": found.agent_id,
            "created_at": found.created_at,
            "blast_radius": found.blast_radius,
            "dependents": [
                {"node_id": d.node_id, "label": d.label, "edge_type": d.edge_type}
                for d in found.dependents
            ],
            "contradicted_by": [other.node_id for other in found.contradicted_by],
            "edges": [
                {"source": e.source, "target": e.target, "kind": e.kind, "hop": e.hop}
                for e in found.edges
            ],
            "neighbours": _jsonable(
                {
                    k: v.content
                    for k, v in memory_graph.nodes_of(
                        conn, [e.source for e in found.edges] + [e.target for e in found.edges]
                    ).items()
                }
            ),
            "admission": admission_payload(found.admission),
            "canonization_history": _jsonable(history.get("rows", [])),
            "receipts": memory_graph.receipts_of(conn, found.node_id),
        }

    def stats(self, where: Where) -> dict[str, Any]:
        app = self.app_at(where)
        return {**where.stamp(), "stats": _jsonable(app.memory.stats_payload())}

    def events(self, where: Where, after_seq: int, limit: int) -> dict[str, Any]:
        """A page of the session's events after `after_seq` (up to as_of_seq when given)."""
        app = self.live()
        log = app.workspace.log
        upto = where.as_of_seq if where.as_of_seq is not None else where.head
        rows: list[dict[str, Any]] = []
        for page in log.read(GroupId(where.session), after=after_seq, upto=upto, page=limit):
            for recorded in page:
                payload = orjson.dumps(log.codec.encode(recorded.event)).decode()
                rows.append(
                    {
                        "seq": int(recorded.seq),
                        "time": recorded.event.occurred_at.isoformat(),
                        "type": recorded.event.wire_name,
                        "summary": payload[:SUMMARY_CHARS],
                    }
                )
            break  # one page
        last = rows[-1]["seq"] if rows else after_seq
        return {
            **where.stamp(),
            "events": rows,
            "next_after_seq": last if last < upto else None,
        }

    def graph(
        self, where: Where, focus: str | None, hops: int, limit: int, offset: int = 0
    ) -> dict[str, Any]:
        """Nodes `offset`..`offset+limit` (write order; a neighbourhood: nearest first) and
        the edges among them."""
        app = self.app_at(where)
        conn = app.reads.reader()
        if focus is None:
            drawn = memory_graph.session_graph(conn, where.session, limit, offset)
        else:
            if memory_graph.nodes_of(conn, [focus]).get(focus) is None:
                raise PortalError(404, f"focus {focus!r} not found", "focus")
            drawn = memory_graph.neighbourhood(conn, where.session, focus, hops, limit, offset)
        return {
            **where.stamp(),
            "nodes": [
                {
                    "id": n.node_id,
                    "content": n.content,
                    "concept_type": n.concept_type,
                    "status": n.status,
                }
                for n in drawn.nodes
            ],
            "edges": [
                {"source": e.source, "target": e.target, "kind": e.kind} for e in drawn.edges
            ],
            "total_nodes": drawn.total_nodes,
            "offset": offset,
            "truncated": drawn.truncated,
        }

    def canon(self, where: Where) -> dict[str, Any]:
        """Saints, candidates with what each still lacks, the budget."""
        app = self.app_at(where)
        status = operations.dispatch(app, "lcg_canon_status", {"session": where.session})
        listed = [
            {
                "node_id": s.node_id,
                "content": s.content,
                "concept_type": s.concept_type,
                "blast_radius": s.blast_radius,
                "access_count": s.access_count,
            }
            for s in saints(app.reads, SaintsRequest(where.session))
        ]
        conn = app.reads.reader()
        service = app.memory
        candidates = []
        for node_id, content in memory_graph.with_status(
            conn, where.session, ("Candidate", "Venerable"), limits.MAX_INSPECT_NEIGHBOURS
        ):
            found = inspect_memory(
                app.reads, service.jobs_or_fail, InspectRequest(where.session, node_id, 0)
            )
            admission = admission_payload(found.admission)
            candidates.append(
                {
                    "node_id": node_id,
                    "content": content,
                    "status": admission["status"],
                    "lacks": [c for c in admission["checks"] if not c["met"]],
                }
            )
        knobs = status.get("knobs", {})
        return {
            **where.stamp(),
            "saints": listed,
            "candidates": candidates,
            "budget": {
                "max_canonical_nodes": knobs.get("max_canonical_nodes"),
                "canonical": len(listed),
            },
            "statuses": _jsonable(status.get("statuses", {})),
        }


def _jsonable(value: Any) -> Any:
    """Through orjson and back: datetimes and dataclasses as JSON values."""
    return orjson.loads(orjson.dumps(value, default=str))
