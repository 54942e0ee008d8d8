"""`lcg serve`: the socket service (default), MCP over stdio (standalone or attached), or MCP
over Streamable HTTP (--http, ADR 0064).

Logs go to stderr (or --log-file: log_setup, set up by the entry point before this runs);
with --mcp-stdio, stdout carries nothing but the protocol (K-MCP-015).
The MCP SDK is imported only when --mcp-stdio or --http is given, and the HTTP stack only with
--http, so the other commands start fast.
"""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lcg.domain.errors import InvalidParams
from lcg.domain.ids import DEFAULT_GROUP
from lcg.interfaces.exit_codes import (
    EXIT_BUSY,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_STORAGE,
    EXIT_UNREACHABLE,
)
from lcg.projections.own_files import ForeignFile, refuse_foreign_tree

if TYPE_CHECKING:
    from lcg.interfaces.backends import Backend
    from lcg.interfaces.config import Settings
    from lcg.interfaces.ledger import CallLedger
    from lcg.interfaces.mcp_server import LcgMcpServer
    from lcg.interfaces.scopes import Visibility

# Fast start (ADR 0053): the service, the operation table, the MCP SDK and the settings are
# imported where `serve` uses them, so the other commands (which register `serve`) never load
# them.

# The flags that select `serve`, so that `liminis-context-graph --mcp-stdio ...` works as in
# the seed's example client configs (K-EXC-001, K-EXC-004).
SERVE_FLAGS = frozenset(
    {"--mcp-stdio", "--connect", "--scope", "--allow-remote-close", "--socket", "--session"}
    | {"--http", "--port", "--bind", "--auth-token", "--ledger"}
)

log = logging.getLogger("lcg.serve")


def with_serve_default(args: list[str]) -> list[str]:
    """`--mcp-stdio --scope=read` means `serve --mcp-stdio --scope=read`."""
    if args and args[0].split("=", 1)[0] in SERVE_FLAGS:
        return ["serve", *args]
    return args


def serve(
    mcp_stdio: Annotated[
        bool, typer.Option("--mcp-stdio", help="Serve MCP over stdin/stdout, not the socket.")
    ] = False,
    scope: Annotated[
        str,
        typer.Option(
            "--scope",
            help="MCP: comma-separated scopes to advertise: read, write, cypher, admin, "
            "memory, all (default all; cypher is never implied).",
        ),
    ] = "all",
    connect: Annotated[
        Path | None,
        typer.Option(
            "--connect",
            help="MCP attached mode: forward every call to the socket service at this path; "
            "the workspace is never opened.",
        ),
    ] = None,
    allow_remote_close: Annotated[
        bool,
        typer.Option(
            "--allow-remote-close",
            help="MCP attached mode: advertise knowledge_close, which stops the remote service.",
        ),
    ] = False,
    socket: Annotated[
        Path | None,
        typer.Option("--socket", help="Socket path (default: <workspace>/.lcg/service.sock)."),
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-w",
            help="Directory holding .lcg/ (default: LCG_WORKSPACE or the current directory).",
        ),
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help="The session (a group) the lambo_* memory tools serve (default: LCG_SESSION "
            "or liminis).",
        ),
    ] = None,
    http: Annotated[
        bool,
        typer.Option(
            "--http", help="Serve MCP over Streamable HTTP at /mcp (default 127.0.0.1:7700)."
        ),
    ] = False,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", help="HTTP: the port (default [serve] port, 7700; 0: any free port)."
        ),
    ] = None,
    bind: Annotated[
        str | None,
        typer.Option(
            "--bind",
            help="HTTP: the address (default [serve] bind, 127.0.0.1); anything but loopback "
            "needs a credential.",
        ),
    ] = None,
    auth_token: Annotated[
        str | None,
        typer.Option(
            "--auth-token",
            help="HTTP: a bearer token every request must carry (also LCG_AUTH_TOKEN, "
            "LAMBO_AUTH_TOKEN, [[serve.credential]] in lcg.toml).",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="The identity this process holds the workspace lease under, named to a "
            "process it refuses; never applied to tool calls, which each name their agent_id.",
        ),
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="Append one JSON line per tool call (and per settled write, and a heartbeat) "
            "to this file, created 0600; lines are dropped and counted, never waited for "
            "(default [serve] ledger: none).",
        ),
    ] = None,
    layer: Annotated[
        list[str] | None,
        typer.Option(
            "--layer",
            help="A shared session the served session is layered over (repeatable, or "
            "comma-separated; default [serve] layers): lambo_recall reads it too, scope names it.",
        ),
    ] = None,
    server_name: Annotated[
        str | None,
        typer.Option(
            "--server-name",
            hidden=True,  # `lambo serve` passes the name seed 001's server goes by
            help="MCP: the name in serverInfo (default liminis-context-graph).",
        ),
    ] = None,
) -> None:
    """Serve the operations: JSON-RPC on a Unix socket, MCP over stdio (--mcp-stdio) or MCP
    over Streamable HTTP (--http).

    Socket clients should wait for a `health_check` answering healthy before real work.
    """
    from lcg.interfaces.config import session_name

    try:
        _refuse_http_only_flags(http, mcp_stdio, connect, port, bind, auth_token)
        held_as = _held_as(agent)
        _refuse_attached_ledger(connect, ledger)
        if http:
            settings = _settings(workspace, session, layer)
            visibility = _visibility(scope, attached=False, allow_close=False, settings=settings)
            calls = _ledger(ledger, settings)
            _serve_http(visibility, settings, port, bind, auth_token, held_as, server_name, calls)
        elif mcp_stdio and connect is not None:
            visibility = _visibility(scope, attached=True, allow_close=allow_remote_close)
            attached_session = session or os.environ.get("LCG_SESSION", "").strip()
            _serve_attached(visibility, connect, session_name(attached_session or DEFAULT_GROUP))
        elif mcp_stdio:
            settings = _settings(workspace, session, layer)
            visibility = _visibility(scope, attached=False, allow_close=False, settings=settings)
            calls = _ledger(ledger, settings)
            _serve_standalone(visibility, settings, held_as, server_name, calls)
        else:
            _refuse_mcp_only_flags(connect, allow_remote_close)
            settings = _settings(workspace, session, layer)
            calls = _ledger(ledger, settings)
            _serve_socket(settings, socket or settings.socket_path, held_as, calls)
    except InvalidParams as error:
        _fail(error.message, EXIT_INVALID)


def _refuse_attached_ledger(connect: Path | None, ledger: Path | None) -> None:
    if connect is not None and ledger is not None:
        raise InvalidParams(
            "--ledger",
            "is written by the serve that runs the calls; give it to the service --connect "
            "attaches to",
        )


def _ledger(flag: Path | None, settings: Settings) -> CallLedger | None:
    """The call ledger --ledger or [serve] ledger names (a relative setting is under the
    workspace), opened now so that a path that cannot be opened refuses the serve."""
    from lcg.interfaces.ledger import open_ledger

    tuning = settings.tuning
    path = flag
    if path is None:
        configured = tuning.text("serve", "ledger").strip()
        if not configured:
            return None
        path = settings.workspace / configured
        if not Path(configured).is_absolute():  # the serve makes its workspace directory anyway
            settings.workspace.mkdir(parents=True, exist_ok=True)
    return open_ledger(path, tuning.get_int("serve", "ledger_queue"))


def _refuse_http_only_flags(
    http: bool,
    mcp_stdio: bool,
    connect: Path | None,
    port: int | None,
    bind: str | None,
    auth_token: str | None,
) -> None:
    if http and (mcp_stdio or connect is not None):
        raise InvalidParams("--http", "serves MCP over HTTP; give it without --mcp-stdio/--connect")
    if not http:
        for flag, value in (("--port", port), ("--bind", bind), ("--auth-token", auth_token)):
            if value is not None:
                raise InvalidParams(flag, "needs --http (it is an HTTP flag)")
    if port is not None and not 0 <= port <= 65_535:
        raise InvalidParams("--port", "must be an integer from 0 to 65,535", f"got {port}")


def _held_as(agent: str | None) -> str:
    """What the lease records after the command: the process's own `--agent` (M-TRN-005,
    M-CFG-007), checked by the rules of an agent_id; never applied to a tool call."""
    if agent is None:
        return ""
    from lcg.domain.memory.text import MemoryArgumentError, check_agent_id

    try:
        check_agent_id(agent)
    except MemoryArgumentError as error:
        rule = str(error).replace("agent_id", "--agent", 1)
        raise InvalidParams("--agent", "follows the rules of an agent_id", rule) from None
    return f" --agent {agent}"


def _refuse_mcp_only_flags(connect: Path | None, allow_remote_close: bool) -> None:
    if connect is not None:
        raise InvalidParams("--connect", "needs --mcp-stdio (attached mode is MCP only)")
    if allow_remote_close:
        raise InvalidParams(
            "--allow-remote-close", "needs --mcp-stdio --connect PATH (it is an MCP flag)"
        )


def _serve_socket(
    settings: Settings, path: Path, held_as: str = "", ledger: CallLedger | None = None
) -> None:
    from lcg.interfaces.forward_holder import Publication
    from lcg.interfaces.legacy import migrate_legacy_state_dir
    from lcg.interfaces.service import Service
    from lcg.interfaces.socket_server import SocketInUse, serve_socket

    try:
        migrate_legacy_state_dir(settings.workspace)  # before the socket is bound: K-RDY-001
    except OSError as error:
        _fail(str(error), EXIT_STORAGE)
    _refuse_foreign_workspace(settings)
    service = Service(settings, command=f"lcg serve (socket {path}){held_as}", publishes=True)
    service.ledger = ledger
    # the socket service holds the workspace too: a stdio serve beside it forwards (ADR 0066)
    publication = Publication(service, dict(os.environ), service_socket=False)
    try:
        serve_socket(service, path, publication)
    except SocketInUse as error:
        _fail(f"{error}; attach with `lcg serve --mcp-stdio --connect {path}`", EXIT_BUSY)
    except OSError as error:  # a read-only or full disk: the socket is a file that cannot be made
        storage = error.errno in (errno.EROFS, errno.ENOSPC, errno.EDQUOT)
        _fail(f"cannot listen at {path}: {error}", EXIT_STORAGE if storage else EXIT_FAILURE)


def _refuse_foreign_workspace(settings: Settings) -> None:
    """Another user's `.lcg/`, or a link in it, stops the server before it binds a socket
    there or serves degraded: no recovery tool can make such a workspace safe (ADR 0048)."""
    try:
        refuse_foreign_tree(settings.state_dir)
    except ForeignFile as error:
        _fail(str(error), EXIT_STORAGE)


def _serve_standalone(
    visibility: Visibility,
    settings: Settings,
    held_as: str = "",
    server_name: str | None = None,
    ledger: CallLedger | None = None,
) -> None:
    """Hold the workspace and publish it, or forward every call to the serve that holds it
    (ADR 0066), then serve MCP (K-DBM-002/003). Stdout is claimed first, so nothing printed
    while opening (a model loading) reaches the protocol."""
    import anyio

    from lcg.interfaces.forwarding import Forwarder
    from lcg.interfaces.service import Service
    from lcg.interfaces.stdio_pipe import claimed_stdio

    _refuse_foreign_workspace(settings)
    service = Service(settings, command=f"lcg serve --mcp-stdio{held_as}", publishes=True)
    service.ledger = ledger
    backend = Forwarder(service, dict(os.environ))

    async def main(wire_in: int, wire_out: int) -> None:
        await backend.start()
        if not backend.holds and service.state == "degraded" and not service.held:
            log.warning("every call will fail until restarted: %s", service.reason)
        if ledger is not None and not backend.holds:
            log.warning(
                "--ledger %s: this serve forwards its calls to the serve holding the "
                "workspace, whose own ledger (if it has one) records them",
                ledger.path,
            )
        try:
            server = _mcp_server(
                backend,
                visibility,
                exit_on_close=True,
                session=settings.session,
                name=server_name,
                layers=settings.layers,
            )
            await server.serve_stdio(wire_in, wire_out)
        finally:
            log.info("shutting down")
            await backend.aclose()

    with claimed_stdio() as (wire_in, wire_out):
        try:
            anyio.run(main, wire_in, wire_out)
        finally:
            service.close()


def _serve_http(
    visibility: Visibility,
    settings: Settings,
    port: int | None,
    bind: str | None,
    auth_token: str | None,
    held_as: str = "",
    server_name: str | None = None,
    ledger: CallLedger | None = None,
) -> None:
    """Check the credentials and the bind rule, open the workspace (a held one refuses to
    start, naming the holder: M-TRN-039), then serve MCP over HTTP until stopped."""
    from lcg.interfaces.forward_holder import Publication
    from lcg.interfaces.http_auth import credentials_of, held_by, refuse_open_bind
    from lcg.interfaces.http_server import HttpOptions, serve_http
    from lcg.interfaces.service import Service

    tuning = settings.tuning
    options = HttpOptions(
        bind=(bind or tuning.text("serve", "bind")).strip(),
        port=tuning.get_int("serve", "port") if port is None else port,
        credentials=credentials_of(tuning.credentials, auth_token, os.environ, settings.workspace),
        max_sessions=tuning.get_int("serve", "max_sessions"),
        rate=tuning.get_float("serve", "per_session_rps"),
        burst=tuning.get_int("serve", "burst"),
        body_timeout=tuning.get_float("serve", "body_timeout_secs"),
        header_timeout=tuning.get_float("serve", "header_timeout_secs"),
        max_connections=tuning.get_int("serve", "max_connections"),
        server_name=server_name,
    )
    refuse_open_bind(options.bind, options.credentials)
    _refuse_foreign_workspace(settings)
    # the HTTP holder publishes too: stdio serves beside it forward, the CLI goes through
    # its .lcg/service.sock (ADR 0091)
    service = Service(settings, command=f"lcg serve --http{held_as}", publishes=True)
    service.ledger = ledger
    if service.start() != "healthy":
        if service.held:
            _fail(
                f"the workspace is held by another process ({held_by(service.holder)}); one "
                "process serves a workspace: stop it, or connect your clients to it",
                EXIT_BUSY,
            )
        log.warning("every call will fail until restarted: %s", service.reason)
    try:
        publication = Publication(service, dict(os.environ))
        serve_http(service, visibility, settings.session, options, publication)
    except OSError as error:
        code = EXIT_BUSY if error.errno == errno.EADDRINUSE else EXIT_FAILURE
        _fail(f"cannot listen on {options.bind}:{options.port}: {error.strerror}", code)
    finally:
        log.info("shutting down")
        service.close()


def _serve_attached(visibility: Visibility, path: Path, session: str) -> None:
    """Forward every call to the socket service; never open the workspace (K-DBM-005)."""
    import anyio

    from lcg.interfaces.attached import AttachedClient, AttachedUnavailable
    from lcg.interfaces.config import attached_call_timeout_ms
    from lcg.interfaces.stdio_pipe import claimed_stdio

    client = AttachedClient(path, attached_call_timeout_ms(os.environ))

    async def main(wire_in: int, wire_out: int) -> None:
        health = await client.start()
        log.info("attached to %s (%s)", path, health.get("state"))
        # the holder's settings decide what it can serve: lambo_derive_image is listed here
        # exactly when the holder accepts client vectors (M-IMG-001/002, ADR 0095)
        holder = dataclasses.replace(
            visibility, client_vectors=health.get("client_vectors") is True
        )
        try:
            server = _mcp_server(client, holder, exit_on_close=False, session=session)
            await server.serve_stdio(wire_in, wire_out)
        finally:
            await client.aclose()

    try:
        with claimed_stdio() as (wire_in, wire_out):
            anyio.run(main, wire_in, wire_out)
    except AttachedUnavailable as error:
        _fail(str(error), EXIT_UNREACHABLE)


def _mcp_server(
    backend: Backend,
    visibility: Visibility,
    *,
    exit_on_close: bool,
    session: str,
    name: str | None = None,
    layers: tuple[str, ...] = (),
) -> LcgMcpServer:
    from lcg.interfaces.mcp_server import LcgMcpServer

    return LcgMcpServer(
        backend, visibility, exit_on_close=exit_on_close, session=session, name=name, layers=layers
    )


def _visibility(
    scope: str, *, attached: bool, allow_close: bool, settings: Settings | None = None
) -> Visibility:
    """What the MCP server lists: `--scope`'s tools; lambo_derive_image only where the
    settings accept client vectors (M-IMG-001)."""
    from lcg.interfaces.scopes import ScopeError, Visibility, parse_scopes

    try:
        scopes = parse_scopes(scope)
    except ScopeError as error:
        raise InvalidParams("--scope", str(error)) from None
    vectors = settings is not None and settings.tuning.accept_client_vectors
    return Visibility(
        scopes, attached=attached, allow_remote_close=allow_close, client_vectors=vectors
    )


def _settings(
    workspace: Path | None, session: str | None = None, layers: list[str] | None = None
) -> Settings:
    from lcg.domain.memory.layers import check_layers
    from lcg.interfaces.config import Settings, session_name

    settings = Settings.load(os.environ, Path.cwd(), workspace)
    if session is not None:
        settings = dataclasses.replace(settings, session=session_name(session))
    if layers:  # --layer wins over [serve] layers (ADR 0080)
        names = [name.strip() for given in layers for name in given.split(",") if name.strip()]
        settings = dataclasses.replace(
            settings, layers=tuple(session_name(name, "--layer") for name in names)
        )
    return dataclasses.replace(settings, layers=check_layers(settings.session, settings.layers))


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)
