"""Damaged derivable files: how they are recognised, set aside (never deleted) and reported.

Every file under `.lcg/` except the WAL can be rebuilt from the log (graph.sqlite), from the
catalog (FAISS files), from FTS5 (the text scorer) or by embedding again (the embedding
cache). A damaged one is renamed to `<name>.damaged-<UTC time>` beside it, so an operator can
still inspect it, and rebuilt (docs/adr/0020-damaged-derivable-files.md).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict

from lcg.projections.own_files import open_own

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]

# SQLite's own sidecars: they belong to the file and go aside with it
SQLITE_SIDECARS = ("-wal", "-shm", "-journal")
# Left by a read that met corruption: the next open sets these files aside even when
# `PRAGMA quick_check` passes (a damaged row's bytes can still be a valid page)
MARKER = "damaged.json"


class Repair(TypedDict):
    """One damaged file found at open or while serving: what it was and what was done."""

    file: str
    problem: str
    action: str
    set_aside_as: str | None


class DamagedFile(Exception):
    """A derivable file is damaged; its projection must be rebuilt before it is used again."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path} is damaged ({problem}); it is set aside and rebuilt at the next open"
        )
        self.path = path
        self.problem = problem


def utc_stamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def set_aside(
    path: Path, now: datetime, *, sqlite: bool = False, why: str = "damaged"
) -> Path | None:
    """Rename a file (and an SQLite file's -wal/-shm) out of the way as
    `<name>.<why>-<UTC time>`, never deleting it; None if absent."""
    if not path.exists():
        return None
    target = path.with_name(f"{path.name}.{why}-{utc_stamp(now)}")
    os.replace(path, target)
    if sqlite:
        for suffix in SQLITE_SIDECARS:
            sidecar = path.with_name(path.name + suffix)
            if sidecar.exists():
                os.replace(sidecar, target.with_name(target.name + suffix))
    return target


_CORRUPTION = ("malformed", "not a database", "Could not decode to UTF-8", "corrupt")


def is_corruption(error: BaseException) -> bool:
    """An SQLite error (or one caused by it) that means a file's bytes are wrong: not a lock,
    not a full disk."""
    seen: BaseException | None = error
    for _ in range(8):  # the chain of causes, bounded
        if seen is None:
            return False
        if isinstance(seen, sqlite3.DatabaseError):
            return any(phrase in str(seen) for phrase in _CORRUPTION)
        seen = seen.__cause__ or seen.__context__
    return False


def sqlite_problem(path: Path) -> str | None:
    """What is wrong with an SQLite file (`PRAGMA quick_check`), or None when it is sound.

    A missing or empty file is sound: SQLite creates it. quick_check reads every page and
    checks the b-trees and record formats, but not that index entries match their rows
    (that is `integrity_check`, measured ~3x dearer: ADR 0020)."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    except sqlite3.Error as error:
        return _damage_only(error)
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as error:
        return _damage_only(error)
    finally:
        conn.close()
    findings = [str(row[0]) for row in rows]
    if findings == ["ok"]:
        return None
    return "; ".join(findings[:3]) + (f" (+{len(findings) - 3} more)" if len(findings) > 3 else "")


def _damage_only(error: sqlite3.Error) -> str | None:
    """A check that could not run (a full disk: even reading needs a -shm file; an I/O
    error) says nothing about the bytes: the file is not called damaged, and the open that
    follows meets the same error and reports it as a storage failure naming the file."""
    return str(error) if is_corruption(error) else None


def report(path: Path, problem: str, action: str, aside: Path | None) -> Repair:
    """Log one repair (named by its file) and return it for knowledge_status."""
    log.warning(
        "%s is damaged (%s): %s; set aside as %s",
        path,
        problem,
        action,
        aside.name if aside is not None else "nothing (it was gone)",
    )
    return Repair(
        file=str(path),
        problem=problem,
        action=action,
        set_aside_as=None if aside is None else str(aside),
    )


def set_aside_if_damaged(
    path: Path, now: datetime, action: str, recorded: str | None = None
) -> Repair | None:
    """Check an SQLite file (or take a read's word for it) and set it aside when damaged."""
    problem = recorded or sqlite_problem(path)
    if problem is None:
        return None
    return report(path, problem, action, set_aside(path, now, sqlite=True))


def record_damage(state_dir: Path, path: Path, problem: str) -> None:
    """Remember that a read met corruption in `path`, for the next open (written atomically)."""
    marker = state_dir / MARKER
    known = recorded_damage(state_dir)
    known[path.name] = problem
    temporary = marker.with_name(marker.name + ".tmp")
    _write_marker(temporary, json.dumps(known))
    os.replace(temporary, marker)


def recorded_damage(state_dir: Path) -> dict[str, str]:
    """File name -> problem, for every file a read found damaged since the last repair."""
    marker = state_dir / MARKER
    try:
        loaded = json.loads(marker.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:  # the marker itself is damaged: trust nothing
        log.warning("%s unreadable (%s): checking every file", marker, error)
        return {"graph.sqlite": f"{marker.name} unreadable"}
    if not isinstance(loaded, dict):
        return {"graph.sqlite": f"{marker.name} unreadable"}
    return {str(name): str(problem) for name, problem in loaded.items()}


def forget_damage(state_dir: Path, name: str) -> None:
    """The file was repaired: drop it from the marker (and the marker once empty)."""
    known = recorded_damage(state_dir)
    if known.pop(name, None) is None:
        return
    marker = state_dir / MARKER
    if not known:
        marker.unlink(missing_ok=True)
        return
    temporary = marker.with_name(marker.name + ".tmp")
    _write_marker(temporary, json.dumps(known))
    os.replace(temporary, marker)


def _write_marker(temporary: Path, text: str) -> None:
    """The damage marker's temp file, never written through a link (issue 24)."""
    descriptor = open_own(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "write")
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        handle.write(text)
