"""Exit codes of the `lcg` commands, which scripts can rely on."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1  # unexpected failure
EXIT_INVALID = 2  # invalid parameters or flags; the message names the field and the rule
EXIT_REFUSED = 3  # refused: not found, conflict, pinned group
EXIT_BUSY = 4  # the workspace (or its socket) is held by another process serving no socket
EXIT_PROJECTION = 5  # projection error
EXIT_UNREACHABLE = 6  # attached mode: no socket service answers at --connect
EXIT_STORAGE = 7  # a file cannot be used (WAL lost or behind, unreadable event, full or
# read-only disk); the message names the file, and the group and seq for the WAL
