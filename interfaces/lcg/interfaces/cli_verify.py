"""`lambo session verify --session S`: does the session's memory graph agree with its log
(lcg.queries.session_verify, ADR 0079). Exit 0 when clean; 5 (a projection error) naming
each problem by its kind and concept; 3 when the workspace holds no such session.

It reads the workspace's files read-only, beside a serve that holds it or not: the graph in
one read transaction, the WAL up to the positions that transaction saw.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer

from lcg.domain.errors import InvalidParams
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt
from lcg.interfaces.exit_codes import EXIT_INVALID, EXIT_OK, EXIT_PROJECTION, EXIT_REFUSED

session_app = typer.Typer(
    help="Check a session of the workspace.", no_args_is_help=True, add_completion=False
)


@session_app.command("verify")
def verify(
    session: Annotated[str, typer.Option("--session", help="The session to check.")],
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Check the session: its edges point at its concepts; its concepts, edges, statuses and
    receipts are what its log says; and list its concepts by annotation kind."""
    from lcg.interfaces.config import Settings, session_name
    from lcg.interfaces.workspace import Workspace
    from lcg.queries.session_verify import verify_session

    try:
        name = session_name(session, "--session")
    except InvalidParams as error:
        _fail(error.message, EXIT_INVALID)
    settings = Settings.load(os.environ, Path.cwd(), workspace)
    if not settings.wal_path.exists():
        _fail(f"no workspace at {settings.workspace} (no {settings.wal_path.name})", EXIT_REFUSED)
    with Workspace(settings, command="lambo session verify", read_only=True) as opened:
        if name not in opened.log.groups():
            _fail(f"--session: the workspace holds no session {name!r}", EXIT_REFUSED)
        report = verify_session(opened.reader(), opened.log, name, opened.clock())
    found = report.to_json()
    if as_json:
        typer.echo(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(_text(found))
    raise typer.Exit(EXIT_OK if report.ok else EXIT_PROJECTION)


def _text(found: dict[str, Any]) -> str:
    checked = found["checked"]
    lines = [
        f"session {found['session']} at seq {found['seq']}: {checked['concepts']} concepts, "
        f"{checked['edges']} edges, {checked['receipts']} receipts "
        f"({checked['pending_receipts']} pending) checked",
        "annotations: "
        + ", ".join(f"{kind} {held['count']}" for kind, held in found["annotations"].items()),
    ]
    for kind, held in found["annotations"].items():
        if held["node_ids"]:
            lines.append(f"  {kind}: {' '.join(held['node_ids'])}")
    if found["ok"]:
        lines.append("ok: the graph agrees with the log")
        return "\n".join(lines)
    lines.append(f"{len(found['problems'])} problem(s):")
    lines.extend(f"{p['kind']}: {p['subject']}: {p['detail']}" for p in found["problems"])
    return "\n".join(lines)


def _fail(message: str, code: int) -> Any:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)
