"""Restoring a dump (knowledge_dump_wal) as a workspace's WAL, before the workspace is opened.

The dump's `wal.sqlite` becomes `.lcg/wal.sqlite`, copied with SQLite's backup API (one
consistent file whatever journal the dump left); the first open rebuilds every projection from
it. A workspace already there is refused unless forced, and then it is set aside as
`.lcg.replaced-<UTC time>` (never deleted), while holding its writer lease so that a serving
process is not pulled out from under.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lcg.domain.errors import Conflict, InvalidParams
from lcg.projections.damage import utc_stamp
from lcg.projections.layout import WorkspaceFiles
from lcg.projections.private_files import DIR_MODE, FILE_MODE
from lcg.projections.wal.copy import copy_log
from lcg.projections.wal.dump import DUMP_WAL, BadDump, check_dump
from lcg.projections.wal.lease import WriterLease
from lcg.projections.wal.opening import holds_anything, open_log
from lcg.projections.wal.store import EventLog


@dataclass(frozen=True, slots=True)
class Restored:
    """What `restore` did: the dump's manifest, and where a replaced workspace went."""

    manifest: dict[str, Any]
    set_aside: Path | None


def restore(dump_dir: Path, files: WorkspaceFiles, *, force: bool, now: datetime) -> Restored:
    """Install the dump at `dump_dir` as the WAL of the workspace `files` names."""
    try:
        manifest = check_dump(dump_dir)
    except BadDump as error:
        raise InvalidParams(
            "PATH", "must name a dump written by knowledge_dump_wal", str(error)
        ) from None
    if files.store_url:
        return _restore_into_the_store(dump_dir, files, manifest, force=force, now=now)
    state = files.state_dir
    set_aside = None
    if _holds_anything(state):
        if not force:
            raise Conflict(
                f"--force: {files.workspace} already holds a workspace ({state} is not "
                "empty); restoring would replace it. Pass --force to set it aside as "
                f"{state.name}.replaced-<UTC time> and restore in its place, or choose "
                "another --workspace",
                field="force",
                rule="must be given to restore over a non-empty workspace",
            )
        set_aside = _set_aside(files, now)
    state.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    _copy_sqlite(dump_dir / DUMP_WAL, files.wal_path)
    return Restored(manifest=manifest, set_aside=set_aside)


def _restore_into_the_store(
    dump_dir: Path, files: WorkspaceFiles, manifest: dict[str, Any], *, force: bool, now: datetime
) -> Restored:
    """The dump's events copied into the PostgreSQL log the workspace names (ADR 0073): an
    empty log and workspace, or `force` (the log is erased, the workspace set aside)."""
    target = open_log(files)
    try:
        busy = [
            what
            for what, held in (
                (str(files.state_dir), _holds_anything(files.state_dir)),
                (files.log_where, holds_anything(target)),
            )
            if held
        ]
        if busy and not force:
            raise Conflict(
                f"--force: {' and '.join(busy)} already hold a workspace's state; restoring"
                " would replace it. Pass --force to set the workspace aside as"
                f" {files.state_dir.name}.replaced-<UTC time>, erase the log and restore in"
                " their place, or choose another --workspace and [store] url",
                field="force",
                rule="must be given to restore over a non-empty workspace",
            )
        set_aside = _set_aside(files, now) if _holds_anything(files.state_dir) else None
        files.state_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        staged = files.state_dir / f"restore-{utc_stamp(now)}.sqlite"
        _copy_sqlite(dump_dir / DUMP_WAL, staged)  # the dump itself is only read
        try:
            source = EventLog(staged, target.codec)
            try:
                target.truncate_all()
                copy_log(source, target)
            finally:
                source.close()
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{staged}{suffix}").unlink(missing_ok=True)
    finally:
        target.close()
    return Restored(manifest=manifest, set_aside=set_aside)


def _holds_anything(state: Path) -> bool:
    return state.exists() and (not state.is_dir() or any(state.iterdir()))


def _set_aside(files: WorkspaceFiles, now: datetime) -> Path:
    """Rename the workspace's state directory while holding its lease (WorkspaceBusy if a
    process has it open)."""
    state = files.state_dir
    lease = WriterLease(files.lease_path, "lcg restore --force", now) if state.is_dir() else None
    if lease is not None:
        lease.acquire()
    try:
        target = state.with_name(f"{state.name}.replaced-{utc_stamp(now)}")
        state.rename(target)
    finally:
        if lease is not None:
            lease.release()
    return target


def _copy_sqlite(source: Path, target: Path) -> None:
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(str(target))
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()
    os.chmod(target, FILE_MODE)
