"""`lambo`: the reference's command line, for MCP configs written for seed 001.

`lambo serve --session S` serves the session's memory tools (the `memory` scope) over MCP
stdio, exactly as `lcg serve --mcp-stdio --scope memory --session S` does, on the workspace
named by `--workspace`, LCG_WORKSPACE or the current directory; `--transport http` serves
them over Streamable HTTP as `lcg serve --http --scope memory` does (ADR 0064).
`lambo session verify --session S` checks a session against its log (ADR 0079). The
reference's other commands are not provided.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from lcg.domain.errors import InvalidParams
from lcg.interfaces import log_setup
from lcg.interfaces import serve as lcg_serve
from lcg.interfaces.cli_options import LogFileOpt, LogLevelOpt, PlainFlagsGroup, WorkspaceOpt
from lcg.interfaces.cli_verify import session_app
from lcg.interfaces.exit_codes import EXIT_INVALID
from lcg.projections.private_files import PRIVATE_UMASK

TRANSPORTS = ("stdio", "http")
SERVER_NAME = "lambo"  # serverInfo's name: seed 001's server is `lambo serve`, not lcg's

lambo = typer.Typer(
    cls=PlainFlagsGroup,
    help="lambo (lcg's seed 001 compatibility): agentic graph memory over MCP.",
    no_args_is_help=True,
    add_completion=False,
)


@lambo.callback()
def _root(log_level: LogLevelOpt = None, log_file: LogFileOpt = None) -> None:
    """lambo (lcg's seed 001 compatibility): agentic graph memory over MCP."""
    log_setup.set_up(log_level, log_file, serving=True, environ=os.environ)  # its one command


@lambo.command()
def serve(
    session: Annotated[str, typer.Option("--session", help="The session to serve.")],
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (the default) or http (Streamable HTTP).")
    ] = "stdio",
    port: Annotated[
        int | None, typer.Option("--port", help="http: the port (default 7700).")
    ] = None,
    bind: Annotated[
        str | None,
        typer.Option("--bind", help="http: the address (default 127.0.0.1)."),
    ] = None,
    auth_token: Annotated[
        str | None,
        typer.Option(
            "--auth-token", help="http: the bearer token (also LAMBO_AUTH_TOKEN, LCG_AUTH_TOKEN)."
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="The identity this process holds the session under (its lease); never applied "
            "to tool calls, which each name their agent_id.",
        ),
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(
            "--ledger",
            help="Append one JSON line per tool call to this file (created 0600); lines are "
            "dropped and counted in lambo_stats, never waited for.",
        ),
    ] = None,
    layer: Annotated[
        list[str] | None,
        typer.Option(
            "--layer",
            help="A shared session this one is layered over (repeatable, or comma-separated; "
            "default [serve] layers in lcg.toml): lambo_recall reads it too, scope names it.",
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Serve the session's lambo_* tools over MCP stdio (the default) or Streamable HTTP."""
    if transport not in TRANSPORTS:
        refused = InvalidParams(
            "--transport", "must be " + " | ".join(TRANSPORTS), f"got {transport!r}"
        )
        typer.echo(f"error: {refused.message}", err=True)
        raise typer.Exit(EXIT_INVALID)
    http = transport == "http"
    lcg_serve.serve(
        mcp_stdio=not http,
        http=http,
        scope="memory",
        workspace=workspace,
        session=session,
        port=port,
        bind=bind,
        auth_token=auth_token,
        agent=agent,
        ledger=ledger,
        server_name=SERVER_NAME,
        layer=layer,
    )


lambo.add_typer(session_app, name="session")


def main() -> None:
    os.umask(PRIVATE_UMASK)
    log_setup.notes_on_one_line()
    log_options, args = log_setup.split_log_options(sys.argv[1:])
    lambo(args=[*log_options, *args])
