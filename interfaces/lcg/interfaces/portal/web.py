"""The portal's HTTP face (issue 29, ADR 0078): `/api/*` (JSON, read-only) and `/portal/*`
(server-rendered pages, a small script, the vendored graph library), as Starlette routes that
the HTTP serve mounts beside `/mcp` and that `lcg portal` serves alone.

Every request passes the credential check first when credentials are configured: the bearer
token in the Authorization header, or the same token in the `lcg_portal` cookie (a browser
cannot send a header on navigation; the login page sets the cookie in the browser only).
Without it: 401 and nothing else. Only GET is routed: the portal never writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Final

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from lcg.domain.errors import DomainError
from lcg.interfaces.http_auth import Credential, bearer_credential, token_in_query
from lcg.interfaces.portal import pages
from lcg.interfaces.portal.args import Args
from lcg.interfaces.portal.openapi import document
from lcg.interfaces.portal.reads import (
    EVENTS_PAGE_DEFAULT,
    EVENTS_PAGE_MAX,
    GRAPH_DEFAULT,
    GRAPH_MAX,
    HOPS_MAX,
    PortalError,
    PortalReads,
)

COOKIE: Final = "lcg_portal"
STATIC: Final = Path(__file__).parent / "static"

Handler = Callable[[Request], Awaitable[Response]]


def _error(error: PortalError) -> JSONResponse:
    return JSONResponse({"error": error.message, "field": error.field}, status_code=error.status)


def guarded(credentials: Sequence[Credential], default: str, handler: Handler) -> Handler:
    """401 without the token when credentials are configured (a token in the query string is
    refused as over MCP); 404 for a session outside the credential's (`default`: the serve's
    own session, which a request naming none reads)."""

    async def checked(request: Request) -> Response:
        if token_in_query(request.scope.get("query_string", b"")):
            return Response(b"", status_code=401, headers={"WWW-Authenticate": "Bearer"})
        if credentials:
            header = request.headers.get("authorization")
            cookie = request.cookies.get(COOKIE)
            found = bearer_credential(header, credentials) or (
                bearer_credential(f"Bearer {cookie}", credentials) if cookie else None
            )
            if found is None:
                if request.url.path.startswith("/portal") and request.url.path != "/portal/login":
                    return HTMLResponse(pages.login_page(), status_code=401)
                return Response(b"", status_code=401, headers={"WWW-Authenticate": "Bearer"})
            if not found.may_address(request.query_params.get("session") or default):
                return _error(PortalError(404, "session not found", "session"))
        return await handler(request)

    return checked


def _json(work: Callable[[Args], dict[str, Any]]) -> Handler:
    async def handle(request: Request) -> Response:
        args = Args(request)
        try:
            answer = await anyio.to_thread.run_sync(work, args)
        except PortalError as error:
            return _error(error)
        except DomainError as error:
            return _error(PortalError(400, error.message, error.field))
        return JSONResponse(answer)

    return handle


def _where(reads: PortalReads, args: Args) -> Any:
    return reads.where(args.text("session"), args.integer("as_of_seq", None, 1, 2**62))


def routes(reads: PortalReads, credentials: Sequence[Credential]) -> list[BaseRoute]:
    """The `/api/` and `/portal/` routes over `reads`."""
    default = reads.service.settings.session

    def recall(args: Args) -> dict[str, Any]:
        where = _where(reads, args)
        query = args.text("query", required=True)
        assert query is not None
        return reads.recall(
            where,
            query,
            args.bounded("top_k", 10, 1, 100),
            args.bounded("max_tokens", 2000, 1, 100_000),
            args.bounded("traversal_depth", 1, 0, 5),
        )

    def search(args: Args) -> dict[str, Any]:
        where = _where(reads, args)
        query = args.text("query", required=True)
        assert query is not None
        return reads.search(where, query, args.bounded("top_k", 10, 1, 100))

    def inspect(args: Args) -> dict[str, Any]:
        where = _where(reads, args)
        focus = args.text("focus", required=True)
        assert focus is not None
        return reads.inspect(where, focus, args.bounded("depth", 1, 0, 5))

    def stats(args: Args) -> dict[str, Any]:
        return reads.stats(_where(reads, args))

    def events(args: Args) -> dict[str, Any]:
        where = _where(reads, args)
        return reads.events(
            where,
            args.bounded("after_seq", 0, 0, 2**62),
            args.bounded("limit", EVENTS_PAGE_DEFAULT, 1, EVENTS_PAGE_MAX),
        )

    def graph(args: Args) -> dict[str, Any]:
        where = _where(reads, args)
        return reads.graph(
            where,
            args.text("focus"),
            args.bounded("hops", 2, 1, HOPS_MAX),
            args.bounded("limit", GRAPH_DEFAULT, 1, GRAPH_MAX),
            args.bounded("offset", 0, 0, 2**62),
        )

    def canon(args: Args) -> dict[str, Any]:
        return reads.canon(_where(reads, args))

    def overview(args: Args) -> dict[str, Any]:
        asked = args.text("session") is not None or args.text("as_of_seq") is not None
        return reads.overview(_where(reads, args) if asked else None)

    async def openapi(request: Request) -> Response:
        return JSONResponse(document())

    api: dict[str, Callable[[Args], dict[str, Any]]] = {
        "/api/overview": overview,
        "/api/recall": recall,
        "/api/search": search,
        "/api/inspect": inspect,
        "/api/stats": stats,
        "/api/events": events,
        "/api/graph": graph,
        "/api/canon": canon,
    }
    found: list[BaseRoute] = [
        Route(path, guarded(credentials, default, _json(work)), methods=["GET"])
        for path, work in api.items()
    ]
    found.append(
        Route("/api/openapi.json", guarded(credentials, default, openapi), methods=["GET"])
    )
    for path, page in pages.PAGES.items():
        guard = guarded(credentials, default, pages.handler(reads, page))
        found.append(Route(path, guard, methods=["GET"]))

    async def login(request: Request) -> Response:
        return HTMLResponse(pages.login_page())

    found.append(Route("/portal/login", login, methods=["GET"]))
    found.append(Mount("/portal/static", app=StaticFiles(directory=STATIC), name="static"))
    return found
