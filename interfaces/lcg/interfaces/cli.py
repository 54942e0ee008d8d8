"""The `lcg` and `liminis-context-graph` console scripts: answer `--version`, `tools` and a
`call` through a running socket service without loading typer, hand every other command line
to the typer app (`cli_app`).

Fast start (ADR 0053, 0065, 0072): a typer app with one command already costs 2.3x `import
typer`, so the two commands a user runs to check an install, and a script's call to a running
service, answer before it loads. Each prints what the typer command prints, with its errors and
exit codes (tests/e2e/test_fast_start.py compares them); any other argument, a log option
included, goes through typer, and so does every command line while an LCG_LOG_* variable is
set (typer's path checks its value: a bad one is refused, exit 2). A `call` no service answers
goes through typer too, which opens the workspace in this process (cli_call).
"""

from __future__ import annotations

import os
import sys

DISTRIBUTION = "liminis-context-graph"


def print_version() -> None:
    """`lcg --version`: the installed distribution's version."""
    from importlib import metadata

    sys.stdout.write(f"lcg {metadata.version(DISTRIBUTION)}\n")


def main() -> None:
    """`lcg`: with no command, the help."""
    args = sys.argv[1:]
    if not _answered_here(args):
        from lcg.interfaces.cli_app import run

        run(args)


def _answered_here(args: list[str]) -> bool:
    """Answer `--version`, `tools` and a `call` through a socket service without typer;
    False: typer runs the command line."""
    if any(name.startswith("LCG_LOG_") for name in os.environ):
        return False  # typer's path checks the logging variables' values
    if args == ["--version"]:
        print_version()
        return True
    if args[:1] == ["call"]:
        from lcg.interfaces.cli_call import answer_through_service

        return answer_through_service(args[1:])
    if args == ["tools"]:
        from rich.console import Console

        from lcg.interfaces.cli_listing import print_tools

        print_tools(Console(soft_wrap=True))
        return True
    return False


def service_main() -> None:
    """`liminis-context-graph`, the seed's binary: with no command it serves the socket."""
    from lcg.interfaces.cli_app import run

    run(sys.argv[1:], default=("serve",))
