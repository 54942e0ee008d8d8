"""The typer options every `lcg` command shares: workspace, --json, group, logging.

They live apart from cli_common so that what a command does (reach the workspace, print,
fail with an exit code) loads no typer: the launcher answers `lcg call` with it (ADR 0066).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lcg.interfaces.log_setup import LEVELS, LOG_LEVEL_ENV

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Directory holding .lcg/ (default: LCG_WORKSPACE or the current directory).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
GroupOpt = Annotated[str, typer.Option("--group", "-g", help="Group id.")]
LogLevelOpt = Annotated[
    str | None,
    typer.Option(
        "--log-level",
        help=f"How much to log: {', '.join(LEVELS)} (default: {LOG_LEVEL_ENV}, else info "
        "when serving and warning otherwise). Libraries log warnings only, unless debug.",
        show_default=False,
    ),
]
LogFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--log-file",
        help="Append the log to this file (created 0600) instead of stderr.",
        show_default=False,
    ),
]
