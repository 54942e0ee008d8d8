"""`lcg portal`: the portal alone (issue 29), read-only, on loopback by default; off loopback
it needs the HTTP transport's credential (the same flags, variables and `[[serve.credential]]`)
or it refuses to start. It opens the workspace like a serve does (a workspace another process
holds: open that serve's /portal instead)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Final

import typer

from lcg.domain.errors import InvalidParams
from lcg.interfaces.exit_codes import EXIT_BUSY, EXIT_FAILURE, EXIT_INVALID

DEFAULT_PORT: Final = 7710


def portal(
    workspace: Annotated[
        Path | None,
        typer.Option("--workspace", "-w", help="Directory holding .lcg/ (default: cwd)."),
    ] = None,
    port: Annotated[
        int, typer.Option("--port", help="The port (0: any free port, logged).")
    ] = DEFAULT_PORT,
    host: Annotated[
        str,
        typer.Option(
            "--host", help="The address (default 127.0.0.1); off loopback needs a credential."
        ),
    ] = "127.0.0.1",
    auth_token: Annotated[
        str | None,
        typer.Option(
            "--auth-token",
            help="A bearer token every request must carry (also LCG_AUTH_TOKEN, "
            "LAMBO_AUTH_TOKEN, [[serve.credential]] in lcg.toml).",
        ),
    ] = None,
) -> None:
    """Serve the read-only web portal and its REST API (/portal, /api/) alone."""
    # the HTTP stack is imported only when served (ADR 0053)
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, RedirectResponse
    from starlette.routing import Route

    from lcg.interfaces.config import Settings
    from lcg.interfaces.http_auth import credentials_of, held_by, refuse_open_bind
    from lcg.interfaces.http_connections import bounded_protocol
    from lcg.interfaces.http_server import listen, stoppable_server
    from lcg.interfaces.portal.reads import PortalReads
    from lcg.interfaces.portal.web import routes
    from lcg.interfaces.service import Service

    settings = Settings.load(os.environ, Path.cwd(), workspace)
    try:
        credentials = credentials_of(
            settings.tuning.credentials, auth_token, os.environ, settings.workspace
        )
        refuse_open_bind(host, credentials)
    except InvalidParams as error:
        _fail(error.message.replace("--bind", "--host", 1), EXIT_INVALID)
    service = Service(settings, command="lcg portal")
    if service.start() != "healthy":
        if service.held:
            _fail(
                f"the workspace is held by another process ({held_by(service.holder)}); open "
                "the portal of that serve at /portal (lcg serve --http serves it)",
                EXIT_BUSY,
            )
        _fail(f"the workspace did not open: {service.reason}", EXIT_FAILURE)
    reads = PortalReads(service)

    async def healthz(request: Request) -> JSONResponse:
        health = service.health()
        return JSONResponse({"ok": bool(health.get("ok")), "state": health.get("state")})

    async def root(request: Request) -> RedirectResponse:
        return RedirectResponse("/portal")

    app = Starlette(
        routes=[
            Route("/", root, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            *routes(reads, credentials),
        ]
    )
    try:
        sock = listen(host, port)
    except OSError as error:
        service.close()
        _fail(f"cannot listen on {host}:{port}: {error.strerror}", EXIT_BUSY)
    bound = sock.getsockname()[1]
    where = f"[{host.strip('[]')}]" if ":" in host else host
    sys.stderr.write(f"lcg portal at http://{where}:{bound}/portal\n")
    sys.stderr.flush()
    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        timeout_keep_alive=5,
        server_header=False,
        http=bounded_protocol(10.0, 1024),
    )
    try:
        stoppable_server(config).run(sockets=[sock])
    finally:
        sock.close()
        reads.close()
        service.close()


def _fail(message: str, code: int) -> None:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)
