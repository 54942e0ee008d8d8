"""The typer options every `lcg` command shares: workspace, --json, group, logging; and the
command group that prints flags plainly in `--help`.

They live apart from cli_common so that what a command does (reach the workspace, print,
fail with an exit code) loads no typer: the launcher answers `lcg call` with it (ADR 0072).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Annotated

import typer
from typer import _click as click  # the click typer vendors (typer 0.29)
from typer.core import TyperGroup, TyperOption

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


class PlainFlagsGroup(TyperGroup):
    """A command group whose help shows a flag as a plain flag: `--json  Print ...`, not
    `--json <bool>` (typer's help gives every option a type, a flag's too). A command's
    parameters are plain when the group hands the command out, for help as for a run;
    sub-groups' commands with them."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            plain_flags(command, ctx)
        return command

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        _no_flag_metavar(params)
        return params


def plain_flags(command: click.Command, ctx: click.Context) -> None:
    """Give `command`'s flags (its --help included) and, for a group, its commands' flags an
    empty metavar, which typer's help prints in place of `<bool>`."""
    _no_flag_metavar(command.get_params(ctx))
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.commands.get(name)
            if sub is not None:
                plain_flags(sub, ctx)


def _no_flag_metavar(params: Iterable[click.Parameter]) -> None:
    for param in params:
        if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
            param.metavar = ""
