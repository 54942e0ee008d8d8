"""The portal's pages (issue 29, ADR 0078): server-rendered HTML from the same reads as the
REST API, every value HTML-escaped; each page takes `session` and `as_of_seq` in its URL, so
"as of seq N" is a stable link. The graph page draws with the vendored cytoscape.js
(static/portal.js fetches /api/graph)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape
from typing import Any, Final
from urllib.parse import urlencode

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from lcg.domain.errors import DomainError
from lcg.interfaces.portal.args import Args
from lcg.interfaces.portal.reads import GRAPH_DEFAULT, GRAPH_MAX, PortalError, PortalReads

Page = Callable[[PortalReads, Args], str]

FIRST_DRAW: Final = 500  # the graph page's first draw; the rest follows in batches (ADR 0087)

NAV: Final = (
    ("/portal", "Overview"),
    ("/portal/recall", "Recall"),
    ("/portal/graph", "Graph"),
    ("/portal/history", "History"),
    ("/portal/canon", "Canonization"),
)


def e(value: object) -> str:
    """HTML-escaped text of any value (quotes too: safe in attributes)."""
    return escape(str(value), quote=True)


def link(path: str, **params: object) -> str:
    kept = {k: v for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


def layout(title: str, body: str, args: Args | None = None) -> str:
    session = None if args is None else args.text("session")
    as_of = None if args is None else args.text("as_of_seq")
    nav = " ".join(
        f'<a href="{e(link(path, session=session, as_of_seq=as_of))}">{e(name)}</a>'
        for path, name in NAV
    )
    banner = (
        f'<p class="as-of">Read-only view as of seq {e(as_of)} '
        f'(<a href="{e(link("/portal", session=session))}">back to now</a>)</p>'
        if as_of
        else ""
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{e(title)} · lcg portal</title>"
        '<link rel="icon" href="data:,">'
        '<link rel="stylesheet" href="/portal/static/portal.css"></head><body>'
        f"<header><strong>lcg portal</strong> <nav>{nav}</nav></header>{banner}"
        f"<main><h1>{e(title)}</h1>{body}</main></body></html>"
    )


def as_of_form(path: str, args: Args, **keep: object) -> str:
    hidden = "".join(
        f'<input type="hidden" name="{e(k)}" value="{e(v)}">'
        for k, v in {"session": args.text("session"), **keep}.items()
        if v
    )
    value = args.text("as_of_seq") or ""
    return (
        f'<form class="as-of-form" method="get" action="{e(path)}">{hidden}'
        f'<label>as of seq <input name="as_of_seq" id="as_of_seq" type="number" min="1" '
        f'value="{e(value)}"></label> <button>View</button></form>'
    )


def table(headers: list[str], rows: list[list[str]]) -> str:
    """`rows` hold HTML already escaped."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def concept_link(args: Args, node_id: str, text: str | None = None) -> str:
    url = link(
        "/portal/concept",
        session=args.text("session"),
        focus=node_id,
        as_of_seq=args.text("as_of_seq"),
    )
    return f'<a href="{e(url)}">{e(text if text is not None else node_id[:8])}</a>'


def overview(reads: PortalReads, args: Args) -> str:
    asked = args.text("session") is not None or args.text("as_of_seq") is not None
    found = reads.overview(reads.where(args.text("session"), _as_of(args)) if asked else None)
    health = found["health"]
    sessions = table(
        ["session", "concepts", "interactions", "edges", "head", "applied", "pinned to"],
        [
            [
                f'<a href="{e(link("/portal/recall", session=s["session"]))}">'
                f"{e(s['session'])}</a>",
                e(s["concept_count"]),
                e(s["interaction_count"]),
                e(s["edge_count"]),
                e(found["wal"].get(s["session"], {}).get("max_seq")),
                e(found["wal"].get(s["session"], {}).get("applied_seq")),
                e(found["wal"].get(s["session"], {}).get("pinned_to")),
            ]
            for s in found["sessions"]
        ],
    )
    jobs = table(
        ["session", "policy", "statuses", "cycles", "failures", "last GC"],
        [
            [
                e(j["session"]),
                e(j["promotion_policy"]),
                e(", ".join(f"{k} {v}" for k, v in j["statuses"].items())),
                e(j["canonization_cycles"]),
                e(j["canonization_failures"]),
                e(j["gc"]["last_gc_at"] or "never"),
            ]
            for j in found["jobs"]
        ],
    )
    backlog = found["vector_backlog"]
    return layout(
        "Overview",
        f'<p class="health">Health: <span id="health">{e(health.get("state"))}</span>'
        f" · vector follower backlog: {e(backlog['pending'])}"
        f"{' (' + e(backlog['error']) + ')' if backlog['error'] else ''}"
        f" · jobs every {e(found['tick_interval_secs'])} s</p>"
        + as_of_form("/portal", args)
        + f"<h2>Sessions</h2>{sessions}<h2>Jobs</h2>{jobs}",
        args,
    )


def recall_page(reads: PortalReads, args: Args) -> str:
    query = args.text("query") or ""
    form = (
        '<form method="get" action="/portal/recall">'
        + "".join(
            f'<input type="hidden" name="{k}" value="{e(v)}">'
            for k, v in (("session", args.text("session")), ("as_of_seq", args.text("as_of_seq")))
            if v
        )
        + f'<input name="query" id="query" size="60" value="{e(query)}"> '
        '<button id="recall">Recall</button></form>'
    )
    if not query:
        return layout("Recall", form, args)
    where = reads.where(args.text("session"), _as_of(args))
    found = reads.recall(where, query, 10, 2000, 1)
    hits = []
    for hit in found["hits"]:
        badges = "".join(
            f'<span class="badge badge-{e(a["kind"])}">{e(a["kind"])}</span>'
            for a in hit["annotations"]
        )
        if "skipped_redundant" in hit:
            badges += '<span class="badge badge-skipped_redundant">skipped_redundant</span>'
        legs = leg_cells(hit.get("ranks") or {}, hit["scores"])
        hits.append(
            [
                concept_link(args, hit["node_id"]),
                f'<span class="content">{e(hit["content"])}</span>',
                e(hit["concept_type"]),
                e(f"{hit['score']:.3f}"),
                legs,
                badges,
            ]
        )
    return layout(
        "Recall",
        form
        + '<h2>Context block</h2><pre id="context">'
        + e(found["context"])
        + "</pre><h2>Hits</h2>"
        + table(["id", "content", "type", "score", "per leg: rank (score)", "annotations"], hits)
        + LEGS_NOTE,
        args,
    )


LEGS_NOTE: Final = (
    '<p class="legs-note">Each leg\'s own score: bm25 the keyword score (higher is better, not'
    " capped at 1), vector the cosine, recent a fixed 0.25 for the session's latest writes."
    " A graph neighbour has only its hop: its score is the concept it was reached from,"
    " decayed; a concept kept beside a contradicted hit has no leg.</p>"
)


def leg_cells(ranks: dict[str, int], scores: dict[str, float]) -> str:
    """`bm25 #1 (7.41)`, `graph hop 1 (no own score)`: HTML, escaped."""
    cells = []
    for leg, rank in ranks.items():
        if leg == "graph":
            cells.append(f"graph hop {rank} (no own score)")
        elif leg in scores:
            cells.append(f"{leg} #{rank} ({scores[leg]:.3f})")
        else:
            cells.append(f"{leg} #{rank}")
    return e(", ".join(cells))


def concept_page(reads: PortalReads, args: Args) -> str:
    focus = args.text("focus")
    if not focus:
        raise PortalError(400, "focus: is required", "focus")
    where = reads.where(args.text("session"), _as_of(args))
    found = reads.inspect(where, focus, 1)
    names = found["neighbours"]
    node = found["node_id"]
    incoming = [e_ for e_ in found["edges"] if e_["target"] == node]
    outgoing = [e_ for e_ in found["edges"] if e_["source"] == node]

    def edge_rows(edges: list[dict[str, Any]], side: str) -> str:
        return table(
            ["kind", "concept"],
            [[e(x["kind"]), concept_link(args, x[side], names.get(x[side]))] for x in edges],
        )

    history = table(
        ["seq", "from", "to", "cause (reason)", "at"],
        [
            [
                e(h["seq"]),
                e(h["from_status"]),
                e(h["to_status"]),
                e(h["cause"]),
                e(h["occurred_at"]),
            ]
            for h in found["canonization_history"]
        ],
    )
    admission = found["admission"]
    checks = table(
        ["gate", "current", "bar", "met"],
        [
            [e(c["gate"]), e(c["current"]), e(c["bar"]), e("yes" if c["met"] else "no")]
            for c in admission["checks"]
        ],
    )
    receipts = table(
        ["receipt", "agent", "tool", "state", "accepted"],
        [
            [e(r["receipt"]), e(r["agent_id"]), e(r["tool"]), e(r["state"]), e(r["accepted_at"])]
            for r in found["receipts"]
        ],
    )
    dependents = table(
        ["concept", "edge"],
        [
            [concept_link(args, d["node_id"], d["label"]), e(d["edge_type"])]
            for d in found["dependents"]
        ],
    )
    graph = link(
        "/portal/graph", session=where.session, focus=node, as_of_seq=args.text("as_of_seq")
    )
    return layout(
        "Concept",
        f'<p class="content" id="concept-content">{e(found["content"])}</p>'
        f"<p>[{e(found['concept_type'])}] id {e(node)} · status {e(admission['status'])} · blast "
        f"radius {e(found['blast_radius'])} · written by {e(found['agent_id'])} at "
        f'{e(found["created_at"])} · <a href="{e(graph)}">neighbourhood graph</a></p>'
        + as_of_form("/portal/concept", args, focus=focus)
        + f"<h2>Neighbours in</h2>{edge_rows(incoming, 'source')}"
        f"<h2>Neighbours out</h2>{edge_rows(outgoing, 'target')}"
        f"<h2>Dependents</h2>{dependents}"
        f"<h2>Admission</h2>{checks}"
        f"<h2>Canonization history</h2>{history}<h2>Receipts</h2>{receipts}",
        args,
    )


def graph_page(reads: PortalReads, args: Args) -> str:
    where = reads.where(args.text("session"), _as_of(args))
    limit = args.bounded("limit", GRAPH_DEFAULT, 1, GRAPH_MAX)
    offset = args.bounded("offset", 0, 0, 2**62)
    first = args.bounded("first", FIRST_DRAW, 0, GRAPH_MAX)
    focus = args.text("focus")
    api = link(
        "/api/graph",
        session=where.session,
        focus=focus,
        as_of_seq=args.text("as_of_seq"),
        limit=limit,
        offset=offset or None,
    )
    concept = link("/portal/concept", session=where.session, as_of_seq=args.text("as_of_seq"))

    def page(at: int) -> str:
        return link(
            "/portal/graph",
            session=where.session,
            focus=focus,
            as_of_seq=args.text("as_of_seq"),
            limit=args.text("limit"),
            offset=at or None,
            first=args.text("first"),
        )

    # shown by portal.js when there are nodes before or after this page
    pager = (
        f'<a id="graph-previous" hidden href="{e(page(max(0, offset - limit)))}">'
        f"previous {e(limit)} nodes</a> "
        f'<a id="graph-next" hidden href="{e(page(offset + limit))}">next {e(limit)} nodes</a>'
    )
    filters = (
        '<div id="filters">types: <span id="type-filters"></span> · statuses: '
        '<span id="status-filters"></span> · edges: <span id="edge-filters"></span> · '
        f'<span id="graph-count"></span> <span id="graph-pages" data-offset="{e(offset)}">'
        f"{pager}</span></div>"
    )
    return layout(
        "Graph",
        as_of_form("/portal/graph", args, focus=focus)
        + filters
        + f'<div id="graph" data-api="{e(api)}" data-concept="{e(concept)}" '
        f'data-first="{e(first)}"></div>'
        '<script src="/portal/static/portal.js"></script>'
        '<script src="/portal/static/cytoscape.min.js"></script>',
        args,
    )


def history_page(reads: PortalReads, args: Args) -> str:
    where = reads.where(args.text("session"), _as_of(args))
    after = args.bounded("after_seq", 0, 0, 2**62)
    found = reads.events(where, after, 50)
    rows = [
        [
            f'<a href="{e(link("/portal/recall", session=where.session, as_of_seq=ev["seq"]))}">'
            f"{e(ev['seq'])}</a>",
            e(ev["time"]),
            e(ev["type"]),
            f"<code>{e(ev['summary'])}</code>",
        ]
        for ev in found["events"]
    ]
    more = ""
    if found["next_after_seq"] is not None:
        url = link(
            "/portal/history",
            session=where.session,
            after_seq=found["next_after_seq"],
            as_of_seq=args.text("as_of_seq"),
        )
        more = f'<p><a id="next" href="{e(url)}">next page</a></p>'
    return layout(
        "History",
        f"<p>session {e(where.session)}, head seq {e(where.head)}; a seq opens the memory as "
        "it stood then</p>"
        + as_of_form("/portal/history", args)
        + table(["seq", "time", "type", "payload"], rows)
        + more,
        args,
    )


def canon_page(reads: PortalReads, args: Args) -> str:
    where = reads.where(args.text("session"), _as_of(args))
    found = reads.canon(where)
    saints = table(
        ["concept", "type", "blast radius", "accesses"],
        [
            [
                concept_link(args, s["node_id"], s["content"]),
                e(s["concept_type"]),
                e(s["blast_radius"]),
                e(s["access_count"]),
            ]
            for s in found["saints"]
        ],
    )
    candidates = table(
        ["concept", "status", "still lacks"],
        [
            [
                concept_link(args, c["node_id"], c["content"]),
                e(c["status"]),
                e("; ".join(f"{x['gate']}: {x['current']} of {x['bar']}" for x in c["lacks"])),
            ]
            for c in found["candidates"]
        ],
    )
    budget = found["budget"]
    return layout(
        "Canonization",
        as_of_form("/portal/canon", args)
        + f"<p>budget: {e(budget['canonical'])} canonical of at most "
        f"{e(budget['max_canonical_nodes'])}</p>"
        f"<h2>Saints</h2>{saints}<h2>Candidates</h2>{candidates}",
        args,
    )


def login_page() -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>lcg portal</title>"
        '<link rel="icon" href="data:,"></head><body><h1>lcg portal</h1>'
        "<p>This portal needs the serve's bearer token.</p>"
        '<form id="login"><input type="password" id="token" autocomplete="off"> '
        "<button>Open</button></form><script>"
        'document.getElementById("login").addEventListener("submit",function(ev){'
        "ev.preventDefault();document.cookie='lcg_portal='+encodeURIComponent("
        'document.getElementById("token").value)+";path=/;SameSite=Strict";'
        'location.href=new URLSearchParams(location.search).get("next")||"/portal";});'
        "</script></body></html>"
    )


def _as_of(args: Args) -> int | None:
    value: int | None = args.integer("as_of_seq", None, 1, 2**62)
    return value


PAGES: Final[dict[str, Page]] = {
    "/portal": overview,
    "/portal/recall": recall_page,
    "/portal/concept": concept_page,
    "/portal/graph": graph_page,
    "/portal/history": history_page,
    "/portal/canon": canon_page,
}


def handler(reads: PortalReads, page: Page) -> Callable[[Request], Awaitable[Response]]:
    async def handle(request: Request) -> Response:
        args = Args(request)
        try:
            body = await anyio.to_thread.run_sync(page, reads, args)
        except PortalError as error:
            return HTMLResponse(
                layout("Error", f'<p class="error">{e(error.message)}</p>'), error.status
            )
        except DomainError as error:
            return HTMLResponse(layout("Error", f'<p class="error">{e(error.message)}</p>'), 400)
        return HTMLResponse(body)

    return handle
