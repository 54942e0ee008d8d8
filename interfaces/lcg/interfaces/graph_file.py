"""Opening graph.sqlite for a workspace: a damaged file is set aside and rebuilt from the WAL.

Damage is found before the file is used (`PRAGMA quick_check`, or a read that met corruption
earlier and left a marker) or while installing and catching up (an SQLite corruption error,
confirmed by quick_check when it came during the catch-up, which also reads the WAL). Either
way the file (with its -wal/-shm) is renamed aside and a new one is replayed from the log
(docs/adr/0020-damaged-derivable-files.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from lcg.interfaces.config import Settings
from lcg.projections import damage, registry
from lcg.projections.damage import Repair
from lcg.projections.graph import schema
from lcg.projections.runner import ProjectionRunner
from lcg.projections.wal.store import EventLog

REBUILD = "set aside; every group is rebuilt from the WAL into a new graph.sqlite"


@dataclass
class OpenedGraph:
    runner: ProjectionRunner
    caught_up: int = 0
    repairs: list[Repair] = field(default_factory=list)


def open_graph(
    settings: Settings, log: EventLog, clock: Callable[[], datetime], *, read_only: bool
) -> OpenedGraph:
    """The runner on graph.sqlite, installed and caught up (writers); read-only opens only
    connect: they never repair or write."""
    path = settings.graph_path
    if read_only:
        return OpenedGraph(ProjectionRunner(_connect(settings), log, registry.projections()))
    repairs: list[Repair] = []
    recorded = damage.recorded_damage(settings.state_dir).get(path.name)
    repair = damage.set_aside_if_damaged(path, clock(), REBUILD, recorded)
    if repair is not None:
        repairs.append(repair)
    try:
        opened = _install_and_catch_up(settings, log)
    except _Corrupt as corrupt:
        repairs.append(
            damage.report(
                path, corrupt.problem, REBUILD, damage.set_aside(path, clock(), sqlite=True)
            )
        )
        opened = _install_and_catch_up(settings, log)
    opened.repairs = repairs
    damage.forget_damage(settings.state_dir, path.name)
    return opened


class _Corrupt(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _connect(settings: Settings) -> sqlite3.Connection:
    return schema.connect(str(settings.graph_path))


def _install_and_catch_up(settings: Settings, log: EventLog) -> OpenedGraph:
    conn: sqlite3.Connection | None = None
    installed = False
    try:
        conn = _connect(settings)
        runner = ProjectionRunner(conn, log, registry.projections())
        runner.install()
        installed = True
        return OpenedGraph(runner, runner.catch_up())
    except sqlite3.DatabaseError as error:
        if conn is not None:
            conn.close()
        if not damage.is_corruption(error):
            raise
        # the catch-up also reads the WAL: blame graph.sqlite only when it is the damaged one
        problem = damage.sqlite_problem(settings.graph_path) if installed else str(error)
        if problem is None:
            raise
        raise _Corrupt(problem) from error
    except BaseException:
        if conn is not None:
            conn.close()
        raise
