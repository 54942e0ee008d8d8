"""MCP over Streamable HTTP: the SDK's session manager in Starlette, served by uvicorn (ADR 0064).

One serve holds its workspace and serves every memory session of it (ADR 0071): `/mcp` the
serve's own (`--session`), `/mcp/s/<session>` any other; `/healthz` answers {"ok", "state"}
without a token; `/api/` and `/portal/` the read-only portal (lcg.interfaces.portal). Every
request to an MCP path passes, in order: a credential in the query
string (refused, 401), the bearer token (401 with nothing else when a credential is
configured), the session name (400 naming the rule), the credential's `sessions` (404, as if
there were no such session), the body deadline (408), the 4 MiB body limit (413, the SDK's
middleware, before any parsing), the credential's token buckets (429 with Retry-After), then
the SDK: Host and Origin against DNS rebinding (421/403), the session ceiling (503) and the
protocol.

Each credential gets its own `LcgMcpServer` per memory session, whose tools are the serve's
scopes cut to the credential's: a tool outside them is not listed and is answered "Unknown
tool" as over stdio (P-011). An MCP session opened under one credential, or at one session's
path, answers 404 to every other.
Imported only when HTTP is served (ADR 0053).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import FrameType
from typing import Any, Final

import anyio
import uvicorn
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    RequestBodyLimitMiddleware,
    TransportSecuritySettings,
)
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from lcg.domain.errors import InvalidParams
from lcg.interfaces.backends import LocalBackend
from lcg.interfaces.config import session_name
from lcg.interfaces.http_auth import (
    Credential,
    RateLimiter,
    bearer_credential,
    request_costs,
    token_in_query,
)
from lcg.interfaces.http_connections import bounded_protocol
from lcg.interfaces.mcp_server import LcgMcpServer
from lcg.interfaces.memory_sessions import MAX_SESSIONS
from lcg.interfaces.portal.reads import PortalReads
from lcg.interfaces.portal.web import routes as portal_routes
from lcg.interfaces.scopes import Visibility
from lcg.interfaces.service import Service
from lcg.interfaces.socket_server import Publishing

MAX_BODY: Final = DEFAULT_MAX_REQUEST_BODY_SIZE  # 4 MiB (M-TRN-022, M-TRN-060)
OPEN: Final = ""  # the key of the one server when no credential is configured
SHUTDOWN_GRACE_SECONDS: Final = 5  # open streams a stopping serve waits for
CLOSE_POLL_SECONDS: Final = 0.2  # how soon a knowledge_close stops the serve

log = logging.getLogger("lcg.http")


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """What the serve was asked for, after the flags, the environment and `lcg.toml`."""

    bind: str
    port: int  # 0: any free port (logged)
    credentials: tuple[Credential, ...]
    max_sessions: int
    rate: float
    burst: int
    body_timeout: float
    header_timeout: float = 10.0
    max_connections: int = 1024
    server_name: str | None = None  # serverInfo's name; None: lcg's (`lambo serve`: lambo)


class _SessionBudget:
    """The ceiling on live MCP sessions across every credential's manager (M-TRN-021)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.managers: list[_BudgetedManager] = []

    def live(self) -> int:
        return sum(manager.live for manager in self.managers)


class _BudgetedManager(StreamableHTTPSessionManager):
    """The SDK's manager, admitting a session only while the shared budget has room (the
    SDK's own ceiling is per manager; admission runs synchronously, so the count is exact)."""

    def __init__(
        self, budget: _SessionBudget, app: Any, security: TransportSecuritySettings
    ) -> None:
        super().__init__(app, security_settings=security, max_sessions=budget.limit)
        self._budget = budget
        budget.managers.append(self)

    @property
    def live(self) -> int:
        return len(self._server_instances)

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        if self._budget.live() >= self._budget.limit:
            return None
        return super()._admit_session(requestor)


class _SlowBody(Exception):
    """The client did not send its whole body within the deadline."""


class _Managers:
    """One session manager per (credential, memory session), each with its own server whose
    instructions name the session; the serve's own session's are made at start, another
    session's at its first request, and all run in the serve's task group (ADR 0071)."""

    def __init__(
        self,
        service: Service,
        default: str,
        scopes: Sequence[tuple[str, frozenset[Any]]],
        budget: _SessionBudget,
        security: TransportSecuritySettings,
        server_name: str | None = None,
        reach: Mapping[str, frozenset[str] | None] | None = None,
    ) -> None:
        self.service = service
        self.reach = dict(reach or {})  # the sessions each credential may address (None: all)
        self.server_name = server_name  # serverInfo's name; None: lcg's (`lambo serve`: lambo)
        self.default = default
        self.scopes = dict(scopes)
        self.budget = budget
        self.security = security
        self._managers: dict[tuple[str, str], _BudgetedManager] = {}
        self._tasks: TaskGroup | None = None
        self._lock = anyio.Lock()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tasks:
            self._tasks = tasks
            for key in self.scopes:
                await self.get(key, self.default)
            try:
                yield
            finally:
                self._tasks = None
                tasks.cancel_scope.cancel()

    def sessions(self) -> set[str]:
        return {session for _, session in self._managers}

    async def get(self, key: str, session: str) -> _BudgetedManager | None:
        """The manager, made and started if need be; None past MAX_SESSIONS sessions."""
        found = self._managers.get((key, session))
        if found is not None:
            return found
        async with self._lock:
            found = self._managers.get((key, session))
            if found is not None:
                return found
            if session not in self.sessions() and len(self.sessions()) >= MAX_SESSIONS:
                return None
            layers = self._layers(key) if session == self.default else ()
            backend = LocalBackend(
                self.service, None if session == self.default else session, layers
            )
            server = LcgMcpServer(
                backend,
                Visibility(
                    self.scopes[key],
                    client_vectors=self.service.settings.tuning.accept_client_vectors,
                ),
                exit_on_close=False,
                session=session,
                name=self.server_name,
                layers=layers,
            ).server
            manager = _BudgetedManager(self.budget, server, self.security)
            assert self._tasks is not None, "the serve is not running"
            await self._tasks.start(_run_manager, manager)
            self._managers[(key, session)] = manager
            return manager

    def _layers(self, key: str) -> tuple[str, ...]:
        """The serve's layers that credential `key` may address (M-LAY-004): one it may not
        is no layer of its calls, so a scope naming it is refused as any other scope is,
        without saying that the layer exists."""
        reach = self.reach.get(key)
        layers = self.service.settings.layers
        return tuple(layer for layer in layers if reach is None or layer in reach)


async def _run_manager(
    manager: _BudgetedManager, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    async with manager.run():
        task_status.started()
        await anyio.sleep_forever()


class _Gateway:
    """The ASGI app at `/mcp` and `/mcp/s/<session>`: the checks before the SDK (see the
    module docstring)."""

    def __init__(
        self,
        managers: _Managers,
        credentials: Sequence[Credential],
        limiter: RateLimiter,
        body_timeout: float,
    ) -> None:
        self.managers = managers
        self.credentials = credentials
        self.limiter = limiter
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if token_in_query(scope.get("query_string", b"")):
            await _bare(401)(scope, receive, send)
            return
        key = OPEN
        credential: Credential | None = None
        if self.credentials:
            credential = bearer_credential(
                Headers(scope=scope).get("authorization"), self.credentials
            )
            if credential is None:
                await _bare(401)(scope, receive, send)
                return
            key = credential.name
        session = scope.get("path_params", {}).get("session", self.managers.default)
        try:
            session_name(session, "session")
        except InvalidParams as error:  # the rule, nothing private
            await JSONResponse({"error": str(error)}, status_code=400)(scope, receive, send)
            return
        if credential is not None and not credential.may_address(session):
            await _bare(404)(scope, receive, send)  # as a session that is not there
            return
        manager = await self.managers.get(key, session)
        if manager is None:
            refusal = {"error": f"session: one serve serves at most {MAX_SESSIONS} sessions"}
            await JSONResponse(refusal, status_code=503)(scope, receive, send)
            return
        started = False

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        limited = RequestBodyLimitMiddleware(partial(self._admitted, key, manager), MAX_BODY)
        try:
            await limited(scope, _deadline(receive, self.body_timeout), watched)
        except _SlowBody:
            log.warning("a request body took over %g s; answered 408", self.body_timeout)
            if not started:
                await _bare(408)(scope, receive, send)

    async def _admitted(
        self, key: str, manager: _BudgetedManager, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """The body is whole here (the limit middleware read it); draw on the buckets."""
        first = await receive()
        body = first.get("body", b"") if first["type"] == "http.request" else b""
        if scope["method"] == "POST":
            reads, writes = request_costs(body)
            wait = self.limiter.retry_after(key, reads, writes)
            if wait:
                response = JSONResponse(
                    {"error": "rate limit: too many requests for this credential"},
                    status_code=429,
                    headers={"Retry-After": str(wait)},
                )
                await response(scope, receive, send)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await manager.handle_request(scope, replay, send)


def _deadline(receive: Receive, seconds: float) -> Receive:
    """`receive`, bounded to `seconds` from now until the body is complete (slow-loris)."""
    end = time.monotonic() + seconds
    done = False

    async def bounded() -> Message:
        nonlocal done
        if done:
            return await receive()
        with anyio.move_on_after(max(end - time.monotonic(), 0.0)):
            message = await receive()
            done = message["type"] != "http.request" or not message.get("more_body", False)
            return message
        raise _SlowBody

    return bounded


def _bare(status: int) -> Response:
    """A status and nothing else (no tool list, no hint of what exists)."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return Response(b"", status_code=status, headers=headers)


def security_settings(bind: str, port: int) -> TransportSecuritySettings:
    """Host and Origin must name this serve: the bind address and the localhost forms, with
    the port. A wildcard bind (0.0.0.0, ::) cannot know its names: the check is off there,
    where a credential is required anyway (ADR 0064)."""
    if bind in ("0.0.0.0", "::", "[::]", ""):  # noqa: S104 (the wildcard is what is tested)
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    host = f"[{bind.strip('[]')}]" if ":" in bind else bind
    hosts = list(dict.fromkeys([host, "127.0.0.1", "localhost", "[::1]"]))
    allowed = [f"{name}:{port}" for name in hosts]
    return TransportSecuritySettings(
        allowed_hosts=allowed,
        allowed_origins=[f"{scheme}://{name}" for name in allowed for scheme in ("http", "https")],
    )


def build_app(
    service: Service,
    visibility: Visibility,
    session: str,
    options: HttpOptions,
    port: int,
    on_close: Callable[[], None],
    publication: Publishing | None = None,
) -> Starlette:
    """The Starlette app of one serve: `/mcp`, `/mcp/s/<session>` and `/healthz`; while it
    runs, a healthy service is also `publication`'s (ADR 0091: the forwarding socket and
    `.lcg/service.sock`, so stdio serves forward to it and the CLI goes through it)."""
    budget = _SessionBudget(options.max_sessions)
    security = security_settings(options.bind, port)
    scopes = _scopes_by_key(visibility, options.credentials)
    reach = {c.name: c.sessions for c in options.credentials}
    managers = _Managers(
        service, session, scopes, budget, security, options.server_name, reach=reach
    )
    gateway = _Gateway(
        managers,
        options.credentials,
        RateLimiter(options.rate, options.burst),
        options.body_timeout,
    )

    portal = PortalReads(service)  # /api/ and /portal/ (issue 29, ADR 0078)

    async def healthz(request: Request) -> JSONResponse:
        health = service.health()  # only ok and state: nothing private (no paths, no reason)
        return JSONResponse({"ok": bool(health.get("ok")), "state": health.get("state")})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with managers.running(), anyio.create_task_group() as tasks:
            tasks.start_soon(_stop_when_closed, service, on_close)
            if publication is not None and service.state == "healthy":
                await publication.open()
            try:
                yield
            finally:
                if publication is not None:  # withdrawn before the workspace is released
                    await publication.aclose()
            tasks.cancel_scope.cancel()
        portal.close()

    return Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            Route("/mcp", gateway),
            Route("/mcp/s/{session}", gateway),
            *portal_routes(portal, options.credentials),
        ],
        lifespan=lifespan,
    )


def _scopes_by_key(
    visibility: Visibility, credentials: Sequence[Credential]
) -> list[tuple[str, frozenset[Any]]]:
    if not credentials:
        return [(OPEN, visibility.scopes)]
    return [
        (c.name, visibility.scopes if c.scopes is None else visibility.scopes & c.scopes)
        for c in credentials
    ]


async def _stop_when_closed(service: Service, on_close: Callable[[], None]) -> None:
    """knowledge_close (admin) answered: the serve stops, as a standalone stdio serve does."""
    while not service.closing.is_set():  # a thread waiting on it would hold the exit
        await anyio.sleep(CLOSE_POLL_SECONDS)
    log.info("knowledge_close was called; stopping the HTTP serve")
    on_close()


class _Server(uvicorn.Server):
    """uvicorn's server, ending with exit code 0 after a graceful stop on SIGTERM/SIGINT (it
    would raise the signal again once stopped), so the workspace closes as the socket
    service's does."""

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop without waiting for streams
        self.should_exit = True


def stoppable_server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server ending with exit code 0 on SIGTERM/SIGINT (`lcg portal` too)."""
    return _Server(config)


def listen(bind: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is served (so a port in use is named)."""
    family = socket.AF_INET6 if ":" in bind.strip("[]") else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted sockets only then, and without
    # it a response written in two parts waits out the client's delayed ACK (~40 ms a call).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bind.strip("[]"), port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve_http(
    service: Service,
    visibility: Visibility,
    session: str,
    options: HttpOptions,
    publication: Publishing | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM or knowledge_close; `listen` may raise OSError."""
    sock = listen(options.bind, options.port)
    port = sock.getsockname()[1]
    holder: list[uvicorn.Server] = []

    def stop() -> None:
        holder[0].should_exit = True

    app = build_app(service, visibility, session, options, port, stop, publication)
    config = uvicorn.Config(
        app,
        log_config=None,  # lcg's logging (stderr or --log-file) carries uvicorn's lines
        access_log=False,
        lifespan="on",
        timeout_keep_alive=5,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        server_header=False,
        http=bounded_protocol(options.header_timeout, options.max_connections),
    )
    server = _Server(config)
    holder.append(server)
    where = f"[{options.bind.strip('[]')}]" if ":" in options.bind else options.bind
    guard = "bearer token required" if options.credentials else "open: loopback, no credential"
    log.info("serving MCP over HTTP at http://%s:%d/mcp (%s)", where, port, guard)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
