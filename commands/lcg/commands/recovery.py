"""knowledge_recover and knowledge_recover_full (P-139, K-REC, K-RDY-009; ADR 0038): the
operator's recovery strategies, mapped onto this store's files.

The WAL (`wal.sqlite`) is the truth; every other file of `.lcg/` is derived from it and can
be rebuilt. A strategy works on the files of a workspace that no process has open (it holds
the writer lease while it moves them); the serving process closes its workspace first and
opens it again afterwards, so recovery answers in degraded mode too. Nothing is deleted: a
file a strategy replaces is renamed `<name>.recovered-<UTC time>` beside it.

- `drop_lbug_wal`: the reference drops its graph engine's own write-ahead file. Ours is
  graph.sqlite's `-wal`/`-shm` sidecar: set aside, graph.sqlite opens at its last checkpoint
  and the runner catches every group up from the WAL (positions commit with the rows they
  describe, so nothing logged is lost).
- `rebuild_from_workspace_wal`: set aside graph.sqlite (with its sidecars), the FAISS files
  and the BM25 scorer's file; the open rebuilds every group from the WAL. This is the answer
  to projections that are ahead of their log (`LogBehindProjections`: a WAL lost or replaced).
- `restore_from_backup`: the WAL itself is replaced by the dump in `.lcg/wal-compacted/`
  (knowledge_dump_wal's default target): the whole `.lcg/` is set aside as
  `.lcg.replaced-<UTC time>` and the dump is restored as by `lcg restore`. Events logged after
  the dump are not in the restored workspace (they stay in the set-aside directory).
"""

from __future__ import annotations

import logging
import shutil
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import NotRequired, TypedDict, TypeVar

from lcg.commands.restore import restore
from lcg.domain import rules
from lcg.domain.errors import Conflict, NotFound
from lcg.domain.ids import GroupId
from lcg.projections.damage import SQLITE_SIDECARS, set_aside, utc_stamp
from lcg.projections.graph import schema
from lcg.projections.layout import WorkspaceFiles
from lcg.projections.wal.dump import check_dump
from lcg.projections.wal.lease import WriterLease
from lcg.projections.wal.opening import open_log
from lcg.projections.wal.store import EventLog

BACKUP_DIR = "wal-compacted"  # knowledge_dump_wal's default target (P-133), in .lcg/
IN_PROGRESS = "Recovery already in progress"
log = logging.getLogger(__name__)
RECOVERED = "recovered"  # a replaced file is renamed <name>.recovered-<UTC time>


StrategyName = rules.RecoveryStrategy


class Strategy(StrEnum):
    DROP_LBUG_WAL = "drop_lbug_wal"
    REBUILD_FROM_WORKSPACE_WAL = "rebuild_from_workspace_wal"
    RESTORE_FROM_BACKUP = "restore_from_backup"


class RecoverResult(TypedDict):
    strategy: str
    success: bool
    restart_required: bool
    set_aside: list[str]  # what was renamed out of the way, relative to the workspace
    detail: str
    error: NotRequired[str]


class RecoverFullResult(TypedDict):
    success: bool
    recovery_needed: bool
    episodes_before: int | None
    mutations_replayed: int
    episodes_after: int
    indexes_rebuilt: int
    set_aside: list[str]


@dataclass
class Moved:
    paths: list[Path]
    detail: str


_busy = threading.Lock()  # one recovery at a time in this process
T = TypeVar("T")


def exclusively(run: Callable[[], T]) -> T:
    """Run one recovery; a concurrent call is refused with the reference's words."""
    if not _busy.acquire(blocking=False):
        raise Conflict(IN_PROGRESS, field="strategy", rule="one recovery at a time")
    try:
        return run()
    finally:
        _busy.release()


def apply_strategy(files: WorkspaceFiles, strategy: Strategy, now: datetime) -> Moved:
    """Move the files `strategy` replaces aside, the workspace closed (the lease held)."""
    if strategy is Strategy.RESTORE_FROM_BACKUP:
        return _restore_from_backup(files, now)
    lease = WriterLease(files.lease_path, f"knowledge_recover {strategy}", now)
    lease.acquire()
    try:
        if strategy is Strategy.DROP_LBUG_WAL:
            moved = _aside([Path(f"{files.graph_path}{s}") for s in SQLITE_SIDECARS], now)
            detail = (
                f"{files.graph_path.name}'s -wal/-shm set aside; the open catches every "
                "group up from the WAL"
                if moved
                else f"{files.graph_path.name} had no -wal/-shm to drop; nothing moved"
            )
            return Moved(moved, detail)
        _keep_what_was_applied(files)
        graph = set_aside(files.graph_path, now, sqlite=True, why=RECOVERED)  # with sidecars
        moved = [*([] if graph is None else [graph])]
        moved += _aside([files.vectors_dir, files.text_scorer_path], now)
        return Moved(
            moved,
            f"the projections were set aside; every group is rebuilt from "
            f"{files.log_name} (untouched)",
        )
    finally:
        lease.release()


def _keep_what_was_applied(files: WorkspaceFiles) -> None:
    """Recovery never rebuilds a group below what was applied unless asked (issue 24, K-WAL-035):
    a pin the WAL holds below the seq graph.sqlite applied, which the graph holds too, was left
    by a bounded resume that replayed nothing (before it was refused): the open would replay
    the group to the pin and drop the events after it. The pin is raised to the applied seq.
    A pin the graph does not hold yet is an operator's replay the open still owes: kept."""
    if not files.graph_path.exists():
        return
    if not files.store_url and not EventLog.holds_anything(files.wal_path):
        return
    try:
        with closing(schema.connect(str(files.graph_path), read_only=True)) as conn:
            rows = conn.execute(
                "SELECT group_id, MIN(position), MIN(pinned_to) FROM projection_positions"
                " GROUP BY group_id"
            ).fetchall()
    except sqlite3.Error:  # unreadable: nothing to compare with
        return
    events = open_log(files)
    try:
        pins = events.pins() or {}
        raised: dict[GroupId, int | None] = {}
        for group, applied, graph_pin in rows:
            pin = pins.get(GroupId(group))
            if pin is not None and pin == graph_pin and pin < applied:
                raised[GroupId(group)] = int(applied)
                log.warning(
                    "group %r is pinned at seq %s in %s but applied to seq %s: the pin is "
                    "raised to %s, so the rebuild keeps what was applied",
                    group,
                    pin,
                    files.log_where,
                    applied,
                    applied,
                )
        if raised:
            events.set_pins(raised)
    finally:
        events.close()


def episode_count(files: WorkspaceFiles) -> int | None:
    """Episodes in graph.sqlite, read-only; None when it is absent or cannot be read."""
    if not files.graph_path.exists():
        return None
    try:
        with closing(schema.connect(str(files.graph_path), read_only=True)) as conn:
            (count,) = conn.execute("SELECT count(*) FROM episodes").fetchone()
    except sqlite3.Error:
        return None
    return int(count)


def relative(files: WorkspaceFiles, paths: list[Path]) -> list[str]:
    return [str(path.relative_to(files.workspace)) for path in paths]


def _aside(paths: list[Path], now: datetime) -> list[Path]:
    moved = (set_aside(path, now, why=RECOVERED) for path in paths)
    return [target for target in moved if target is not None]


def _restore_from_backup(files: WorkspaceFiles, now: datetime) -> Moved:
    backup = files.state_dir / BACKUP_DIR
    if not (backup / "dump.json").exists():
        raise NotFound(
            f"strategy: restore_from_backup restores the dump in {backup}, and there is none; "
            "knowledge_dump_wal (or `lcg dump`) writes one there while the workspace is healthy",
            field="strategy",
            rule="restore_from_backup needs a dump in .lcg/wal-compacted",
        )
    check_dump(backup)  # a damaged dump is refused before anything moves
    staging = files.workspace / f".lcg-restore-{utc_stamp(now)}"
    shutil.copytree(backup, staging)  # the dump moves aside with .lcg/; restore from a copy
    try:
        restored = restore(staging, files, force=True, now=now)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    aside = [] if restored.set_aside is None else [restored.set_aside]
    return Moved(
        aside,
        f"the workspace was set aside and the dump of {restored.manifest.get('created_at')} "
        "restored; events logged after it are only in the set-aside directory",
    )
