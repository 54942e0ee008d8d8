"""`lcg call NAME [JSON]`: the request's checks, and the launcher's answer through a running
socket service before typer loads (issue 25 item 4, ADR 0072).

The launcher (`lcg.interfaces.cli`) hands a `call` command line here. When it holds only what
the typer command takes (a name, a JSON object, `--workspace`) and a healthy socket service
holds the workspace, the call goes through the service with the typer command's checks,
note, output and exit codes (cli_common, cli_caller); any other line, or no service, returns
False and typer runs the command, opening the workspace in this process.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any

from lcg.domain.errors import InvalidParams
from lcg.interfaces import log_setup, tool_catalogue
from lcg.interfaces.cli_common import complain, errors, json_arg, load_settings, print_json
from lcg.projections.private_files import PRIVATE_UMASK

WORKSPACE_FLAGS = frozenset({"-w", "--workspace"})


def checked_request(method: str, params: str) -> tuple[tool_catalogue.Tool, dict[str, Any]]:
    """The operation `method` names and its parameters; an unknown name or parameters that
    are not a JSON object are refused before a workspace is opened (or created)."""
    operation = tool_catalogue.by_name().get(method)
    if operation is None:
        from lcg.interfaces.operations import UnknownMethod  # its suggestions need the table

        raise UnknownMethod(method)
    raw = json_arg("params", params)
    if not isinstance(raw, dict):
        raise InvalidParams("params", "must be a JSON object")
    return operation, raw


def answer_through_service(args: list[str]) -> bool:
    """Run `lcg call ARGS` through the healthy socket service holding the workspace; False:
    typer runs the command line (another option, no workspace, no service answering)."""
    parsed = _parsed(args)
    if parsed is None:
        return False
    method, params, workspace = parsed
    os.umask(PRIVATE_UMASK)  # as cli_app.run: what lcg creates is its owner's alone
    log_setup.notes_on_one_line()
    log_setup.set_up(None, None, serving=False, environ=os.environ)
    from lcg.interfaces.cli_caller import going_through, healthy_service

    with errors():
        _, raw = checked_request(method, params)
        settings = load_settings(workspace)
    if not settings.state_dir.exists():
        return False  # typer's path says there is no workspace, or creates one
    remote = healthy_service(settings.socket_path)
    if remote is None:
        return False
    with errors(), going_through(remote, partial(complain, "note")) as service:
        print_json(service.call(method, raw))
    return True


def _parsed(args: list[str]) -> tuple[str, str, Path | None] | None:
    """NAME, JSON (default `{}`) and --workspace from the arguments after `call`, or None
    for a line with anything else (`--help`, `--`, another option), left to typer."""
    positional: list[str] = []
    workspace: str | None = None
    rest = iter(args)
    for arg in rest:
        if arg in WORKSPACE_FLAGS:
            workspace = next(rest, None)
            if workspace is None or workspace.startswith("-"):
                return None
        elif arg.startswith("--workspace="):
            workspace = arg.partition("=")[2]
        elif arg.startswith("-"):
            return None
        else:
            positional.append(arg)
    if len(positional) not in (1, 2) or workspace == "":
        return None
    method, params = (*positional, "{}")[:2]
    return method, params, None if workspace is None else Path(workspace)
