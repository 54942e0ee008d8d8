"""`lambo`: the reference's command line, for MCP configs written for seed 001.

`lambo serve --session S` serves the session's memory tools (the `memory` scope) over MCP
stdio, exactly as `lcg serve --mcp-stdio --scope memory --session S` does, on the workspace
named by `--workspace`, LCG_WORKSPACE or the current directory. The reference's other
transports and commands are not provided; asking for one is refused with the lcg way.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from lcg.domain.errors import InvalidParams
from lcg.interfaces import log_setup
from lcg.interfaces import serve as lcg_serve
from lcg.interfaces.cli_common import WorkspaceOpt
from lcg.interfaces.exit_codes import EXIT_INVALID
from lcg.interfaces.log_setup import LogFileOpt, LogLevelOpt
from lcg.projections.private_files import PRIVATE_UMASK

lambo = typer.Typer(
    help="lambo (lcg's seed 001 compatibility): agentic graph memory over MCP stdio.",
    no_args_is_help=True,
    add_completion=False,
)


@lambo.callback()
def _root(log_level: LogLevelOpt = None, log_file: LogFileOpt = None) -> None:
    """lambo (lcg's seed 001 compatibility): agentic graph memory over MCP stdio."""
    log_setup.set_up(log_level, log_file, serving=True, environ=os.environ)  # its one command


@lambo.command()
def serve(
    session: Annotated[str, typer.Option("--session", help="The session to serve.")],
    transport: Annotated[
        str, typer.Option("--transport", help="stdio (the only transport lcg serves).")
    ] = "stdio",
    workspace: WorkspaceOpt = None,
) -> None:
    """Serve the session's lambo_* tools over MCP stdio (the reference's default transport)."""
    if transport != "stdio":
        refused = InvalidParams(
            "--transport",
            "must be stdio: lcg serves MCP over stdio (and JSON-RPC on its Unix socket, "
            "`lcg serve`); HTTP is not provided",
            f"got {transport!r}",
        )
        typer.echo(f"error: {refused.message}", err=True)
        raise typer.Exit(EXIT_INVALID)
    lcg_serve.serve(mcp_stdio=True, scope="memory", workspace=workspace, session=session)


def main() -> None:
    os.umask(PRIVATE_UMASK)
    log_setup.notes_on_one_line()
    log_options, args = log_setup.split_log_options(sys.argv[1:])
    lambo(args=[*log_options, *args])
