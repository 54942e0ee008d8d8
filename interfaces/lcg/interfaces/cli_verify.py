"""`lambo session verify --session S`: does the session's memory graph agree with its log
(lcg.queries.session_verify, ADR 0079). Exit 0 when clean; 5 (a projection error) naming
each problem by its kind and concept; 3 when the workspace holds no such session.

It reads the workspace's files read-only, beside a serve that holds it or not: the graph in
one read transaction, the WAL up to the positions that transaction saw. It never goes through
a running serve (ADR 0087 keeps ADR 0079's choice): when one holds the workspace, the command
says so (stderr; `holder` in --json), naming the serve and the seq the report stands at.
"""

from __future__ import annotations

import os
import socket
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
    holder = running_holder(settings.lease_path)
    found = {**report.to_json(), "holder": holder}
    if as_json:
        typer.echo(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode())
    else:
        typer.echo(_text(found))
    if holder is not None:
        typer.echo(beside_holder(holder, report.seq), err=True)
    raise typer.Exit(EXIT_OK if report.ok else EXIT_PROJECTION)


def running_holder(lease_path: Path) -> str | None:
    """The process holding the workspace's writer lease, as `pid N, `command``; None when
    none does (no record, or one left by a process of this host that is gone). A holder on
    another host (a shared directory) is taken as running: it cannot be checked from here."""
    from lcg.interfaces.http_auth import held_by
    from lcg.projections.wal.lease import read_record

    record = read_record(lease_path)
    if not record or not isinstance(record.get("pid"), int):
        return None
    pid = int(str(record["pid"]))
    host = str(record.get("host", ""))
    if host == socket.gethostname() and not _alive(pid):
        return None
    return held_by(f"pid {pid} on {host}, `{record.get('command', '')}`")


def beside_holder(holder: str, seq: int) -> str:
    return (
        f"note: {holder} holds this workspace; verify did not go through it: it read the "
        f"workspace's files read-only beside it, so this report is the session up to seq {seq} "
        "as that process had projected it when verify read it (writes it applies after are "
        "not in it; run verify again to check them)"
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


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
