"""What every `lcg` command shares: the consoles, how a command reaches the workspace, and how
failures become one line on stderr and an exit code (exit_codes). No typer here (its options
are in cli_options): the launcher answers `lcg call` with this module before typer loads."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console
from rich.text import Text

from lcg.domain.errors import DomainError, InvalidParams, NotFound
from lcg.interfaces.exit_codes import (
    EXIT_BUSY,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_PROJECTION,
    EXIT_REFUSED,
    EXIT_STORAGE,
)

if TYPE_CHECKING:
    from lcg.interfaces.cli_caller import Caller
    from lcg.interfaces.config import Settings

# Fast start (ADR 0053): what reaches the workspace (the caller, the settings, the storage's
# errors) is imported where a command uses it, so `lcg --version` and `lcg tools` never load it.

# Messages and stored names are printed as plain text, never as Rich markup, and unwrapped.
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def load_settings(workspace: Path | None, session: str | None = None) -> Settings:
    from lcg.interfaces.config import Settings, session_name

    settings = Settings.load(os.environ, Path.cwd(), workspace)
    if session is None:
        return settings
    return dataclasses.replace(settings, session=session_name(session))


@contextmanager
def workspace_caller(
    workspace: Path | None,
    command: str,
    *,
    read_only: bool = False,
    reads: bool = False,
    flags: dict[str, str] | None = None,
    session: str | None = None,
) -> Iterator[Caller]:
    """The workspace, here or through the socket service that holds it (cli_caller).

    A command that only `reads` never creates a workspace: where there is none it says so.
    A command that creates one says so, in one line (issue 26 item 6: never silently).
    `session` (the memory commands' --session) is the session a workspace opened here serves.
    """
    from lcg.interfaces.cli_caller import open_caller

    say = partial(complain, "note")
    with errors(flags):
        settings = load_settings(workspace, session)
        existed = settings.state_dir.exists()
        if reads and not existed:
            raise NotFound(
                f"workspace: there is no workspace at {settings.workspace} (no .lcg/); pass "
                "--workspace DIR (or set LCG_WORKSPACE), or write to create one here",
                field="workspace",
                rule="must name an existing workspace for a read",
            )
        with open_caller(settings, command, read_only=read_only, say=say, reads=reads) as caller:
            if not existed and settings.state_dir.exists():
                say(f"created a new workspace at {settings.workspace}")
            yield caller


@contextmanager
def errors(flags: dict[str, str] | None = None) -> Iterator[None]:
    """Failures as one line on stderr and an exit code; `flags` maps the tool's parameter
    names to what the user typed (num_results -> --limit), so messages name the flag."""
    try:
        yield
    except Exception as error:
        fail(error, flags)
        raise


def fail(error: Exception, flags: dict[str, str] | None) -> None:
    """Complain about an error lcg knows and exit with its code; return on any other.

    The storage's error classes are imported here, on the way out, not by every command."""
    from lcg.commands.graph_file import ForeignProjections
    from lcg.interfaces.cli_caller import ServiceError
    from lcg.interfaces.jsonrpc import STORAGE_ERROR, UNAVAILABLE
    from lcg.interfaces.workspace import WorkspaceClosed
    from lcg.projections.damage import DamagedFile
    from lcg.projections.faults import FAULTS
    from lcg.projections.runner import ProjectionError
    from lcg.projections.wal.lease import WorkspaceBusy

    if isinstance(error, WorkspaceBusy | WorkspaceClosed):  # closed: read-only beside a holder
        complain("error", str(error))
        raise SystemExit(EXIT_BUSY) from None
    if isinstance(error, InvalidParams):
        complain("error", _as_typed(error.message, error.field, flags))
        raise SystemExit(EXIT_INVALID) from None
    if isinstance(error, DomainError):
        complain("refused", error.message)
        raise SystemExit(EXIT_REFUSED) from None
    if isinstance(error, ProjectionError):
        complain("projection error", str(error))
        raise SystemExit(EXIT_PROJECTION) from None
    if isinstance(error, (*FAULTS, ForeignProjections, DamagedFile)):
        complain("storage error", str(error))
        raise SystemExit(EXIT_STORAGE) from None
    if isinstance(error, ServiceError):
        kind, code = SERVICE_ERRORS.get(error.kind, ("error", EXIT_FAILURE))
        if error.error.code == STORAGE_ERROR:
            kind, code = "storage error", EXIT_STORAGE
        elif error.error.code == UNAVAILABLE:
            kind, code = "error", EXIT_BUSY
        data = error.error.data
        field = data.get("field") if isinstance(data, dict) else None
        complain(kind, _as_typed(error.error.message, field, flags))
        raise SystemExit(code) from None


def _as_typed(message: str, field: str | None, flags: dict[str, str] | None) -> str:
    """`num_results: must be ...` -> `--limit: num_results: must be ...`."""
    if not flags or field is None:
        return message
    top = field.split(".", 1)[0]
    typed = flags.get(top)
    if typed is None or not message.startswith(f"{field}:"):
        return message
    return f"{typed}: {message}"


# What the socket service's error kinds mean as exit codes (the same as in this process).
SERVICE_ERRORS = {
    "invalid_params": ("error", EXIT_INVALID),
    "method_not_found": ("error", EXIT_INVALID),
    "not_found": ("refused", EXIT_REFUSED),
    "conflict": ("refused", EXIT_REFUSED),
    "refused": ("refused", EXIT_REFUSED),
    "projection_error": ("projection error", EXIT_PROJECTION),
}


def complain(kind: str, message: str) -> None:
    err.print(Text.assemble((f"{kind}: ", "red"), message))


def print_json(result: Any) -> None:
    sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")


def show(result: dict[str, Any], as_json: bool, summary: str) -> None:
    if as_json:
        print_json(result)
    else:
        out.print(Text(summary))


def unknown_group(group: str, known: Iterable[str]) -> NotFound:
    """The refusal of a group the workspace does not hold, naming the ones it does."""
    names = ", ".join(sorted(known)) or "none"
    return NotFound(
        f"group: no group {group!r} in this workspace (groups: {names})",
        field="group",
        rule="must name a group of the workspace",
    )


def read_file(path: Path) -> str:
    """--file: a UTF-8 text file, or `-` for standard input."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise InvalidParams("--file", "must name a readable file", str(error)) from None
    except UnicodeDecodeError as error:
        raise InvalidParams("--file", "must be UTF-8 text", str(error)) from None


def json_arg(field: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidParams(field, "must be valid JSON", str(error)) from None


def json_object_flag(flag: str, text: str | None) -> dict[str, Any] | None:
    """A flag that takes a JSON object (`--attributes`); None when it was not given.

    The seed stores a non-object `attributes` sent by a tool call as {} (K-AST-011); someone
    typing `--attributes '[1,2]'` meant something, so the CLI refuses it, naming the flag."""
    if text is None:
        return None
    rule = 'must be a JSON object, e.g. \'{"role": "lead"}\''
    try:
        value = json.loads(text)
    except ValueError as error:
        raise InvalidParams(flag, rule, f"not valid JSON: {error}") from None
    if not isinstance(value, dict):
        raise InvalidParams(flag, rule, f"got {_json_kind(value)}")
    return value


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "an array"
