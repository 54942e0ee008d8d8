"""The one logging set-up of every `lcg` and `lambo` command (ADR 0054).

Where: stderr, or a file given with `--log-file` (appended to, created 0600); never stdout,
which carries a command's answer or, with --mcp-stdio, the MCP protocol (K-MCP-015).
How much: `--log-level`, else LCG_LOG_LEVEL, else `info` for a command that serves and
`warning` for the others. lcg's own loggers (`lcg.*`) follow that level; the libraries'
(apscheduler, mcp, httpx, faiss, ...) stay at `warning` or above unless the level is `debug`,
so a serving process says nothing per scheduler tick or per request.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from io import TextIOWrapper
from pathlib import Path

from lcg.domain.errors import InvalidParams
from lcg.interfaces.exit_codes import EXIT_INVALID
from lcg.projections.private_files import FILE_MODE

LOG_LEVEL_ENV = "LCG_LOG_LEVEL"
LEVELS: Mapping[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
SERVING_DEFAULT = "info"
COMMAND_DEFAULT = "warning"
SERVE_FORMAT = "lcg serve: %(message)s"  # what an operator (and the tests) read on stderr
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# The options, and their values, that may come before a command (`lcg --log-level debug serve`).
LOG_OPTIONS = frozenset({"--log-level", "--log-file"})


class OneLine(logging.Formatter):
    """A record's message alone: a warning logged with its exception (a close step failing
    on a full disk) is one line on a command's stderr, never a traceback."""

    def format(self, record: logging.LogRecord) -> str:
        return record.getMessage()


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """stderr as it is when a record is written, not when the handler was made: a command
    run in-process (a test's CliRunner) swaps sys.stderr and closes its stand-in after."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


class _PrivateFileHandler(logging.FileHandler):
    """A log file opened for appending; created 0600, as every file lcg makes (F7)."""

    def _open(self) -> TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        return open(fd, "a", encoding="utf-8")


_OURS = "_lcg_log_setup"  # marks the handler `configure` installed


def notes_on_one_line() -> None:
    """Where a warning goes before `configure` ran (or when it never does: `--version`).
    Replaces Python's last-resort handler, which prints the traceback of a record logged
    with exc_info."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(OneLine())
    logging.lastResort = handler


def choose_level(option: str | None, environ: Mapping[str, str], *, serving: bool) -> int:
    """The level: the option, else LCG_LOG_LEVEL, else the default for the command.
    A value that names no level is refused, naming where it came from."""
    if option is not None:
        return _level("--log-level", option)
    from_env = environ.get(LOG_LEVEL_ENV, "").strip()
    if from_env:
        return _level(LOG_LEVEL_ENV, from_env)
    return LEVELS[SERVING_DEFAULT if serving else COMMAND_DEFAULT]


def _level(field: str, text: str) -> int:
    level = LEVELS.get(text.strip().lower())
    if level is None:
        raise InvalidParams(field, f"must be one of {', '.join(LEVELS)}", f"got {text!r}")
    return level


def configure(level: int, log_file: Path | None, *, serving: bool) -> None:
    """Send every record at or above its threshold to one handler: lcg's loggers at `level`,
    the libraries' at warning (or `level` if higher), everything at debug. Calling it again
    replaces what it installed (lambo's serve is lcg's); other handlers are left alone."""
    handler = _handler(log_file, serving=serving)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
        old.close()
    setattr(handler, _OURS, True)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if level == logging.DEBUG else max(level, logging.WARNING))
    logging.getLogger("lcg").setLevel(level)


def _handler(log_file: Path | None, *, serving: bool) -> logging.Handler:
    if log_file is None:
        stream = _Stderr(sys.stderr)
        stream.setFormatter(logging.Formatter(SERVE_FORMAT) if serving else OneLine())
        return stream
    try:
        handler: logging.Handler = _PrivateFileHandler(log_file, mode="a", encoding="utf-8")
    except OSError as error:
        raise InvalidParams(
            "--log-file", "must be a file lcg can append to", error.strerror or str(error)
        ) from None
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    return handler


def set_up(
    log_level: str | None, log_file: Path | None, *, serving: bool, environ: Mapping[str, str]
) -> None:
    """Parse and apply the options; a bad one is refused on stderr with exit 2."""
    try:
        configure(choose_level(log_level, environ, serving=serving), log_file, serving=serving)
    except InvalidParams as error:
        sys.stderr.write(f"error: {error.message}\n")
        raise SystemExit(EXIT_INVALID) from None


def split_log_options(args: list[str]) -> tuple[list[str], list[str]]:
    """The log options (`--log-level debug`, `--log-file=x`) wherever they are before a
    `--`, and the other arguments: the entry points put the first before the command, so
    `lcg serve --log-level debug` means `lcg --log-level debug serve`."""
    options: list[str] = []
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest.extend(args[index:])
            break
        if arg.split("=", 1)[0] in LOG_OPTIONS:
            taken = 1 if "=" in arg else 2
            options.extend(args[index : index + taken])
            index += taken
            continue
        rest.append(arg)
        index += 1
    return options, rest
