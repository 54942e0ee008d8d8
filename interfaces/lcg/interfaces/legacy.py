"""The legacy `.graphiti/` workspace directory becomes `.lcg/` (K-RDY-001, K-CFG-004, P-021).

Workspaces made by the reference's earlier releases keep their state in `.graphiti/`. Before
anything binds a socket or opens a file of the workspace, `migrate_legacy_state_dir` renames
that directory to `.lcg/` in one `rename(2)` (atomic on one file system: a crash leaves one
name or the other, never half a move). It is idempotent: with no `.graphiti/` it does
nothing; with both directories present it uses `.lcg/` and leaves `.graphiti/` alone, saying
so once per process. What the directory holds is not converted: files this build does not
recognise are handled as any foreign file is when the workspace opens (ADR 0019).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final, Literal

from lcg.projections.layout import STATE_DIR

LEGACY_STATE_DIR: Final = ".graphiti"

Migration = Literal["moved", "both", "none"]

log = logging.getLogger("lcg.legacy")
_warned: set[Path] = set()


def migrate_legacy_state_dir(workspace: Path) -> Migration:
    """Rename `workspace/.graphiti` to `workspace/.lcg` when only the legacy one exists.

    Returns what it found: "moved" (renamed now), "both" (kept `.lcg/`, left `.graphiti/`)
    or "none" (no legacy directory)."""
    legacy, current = workspace / LEGACY_STATE_DIR, workspace / STATE_DIR
    if not legacy.is_dir() or legacy.is_symlink():
        return "none"
    if current.exists() or current.is_symlink():
        resolved = legacy.resolve()
        if resolved not in _warned:
            _warned.add(resolved)
            log.warning(
                "both %s and %s exist: using %s and leaving %s as it is",
                legacy,
                current,
                current,
                legacy,
            )
        return "both"
    try:
        os.rename(legacy, current)  # refuses (never merges) if .lcg/ appeared meanwhile
    except FileExistsError:
        return "both"
    except OSError as error:
        if current.is_dir():  # another process moved it first
            return "none"
        raise OSError(
            error.errno,
            f"cannot move the legacy workspace directory {legacy} to {current}: "
            f"{error.strerror}; move it by hand (mv {LEGACY_STATE_DIR} {STATE_DIR})",
        ) from error
    log.warning("moved the legacy workspace directory %s to %s", legacy, current)
    return "moved"
