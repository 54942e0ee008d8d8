"""Opening graph.sqlite for a workspace: it must belong to this WAL, be whole, and not be ahead.

In order (docs/adr/0019 and 0020):
1. Damage: found before the file is used (`PRAGMA quick_check`, or a read that met corruption
   earlier and left a marker): the file (with its -wal/-shm) is renamed aside and a new one is
   replayed from the log.
2. Identity: a file that records another WAL's identity (copied from another workspace, or
   left beside a replaced WAL) is renamed aside with the FAISS files derived from it.
3. Position: projections applied past a group's WAL head mean the log is behind them (lost or
   replaced): refused with `LogBehindProjections`, nothing acked.
4. Install, record the WAL identity (adopting it in a workspace from before identities),
   bring the graph's pins to the WAL's (ADR 0023) and catch every unpinned group up; a group
   that fails (an unreadable event) is returned, the others are applied. An SQLite corruption
   error met in graph.sqlite here sets it aside and opens again.
5. (`check_the_log`, writers) Every group's applied events against their checksums (ADR 0049):
   a damaged group is returned, and its writes are refused.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol, cast

import orjson

from lcg.domain.ids import GroupId
from lcg.projections import damage, registry
from lcg.projections.damage import DamagedFile, Repair
from lcg.projections.faults import (
    CorruptEvent,
    LogBehindProjections,
    StorageFailure,
    is_storage_error,
)
from lcg.projections.graph import schema
from lcg.projections.layout import WorkspaceFiles
from lcg.projections.positions import applied_seqs, behind_log, recorded_wal_identity
from lcg.projections.runner import ProjectionRunner
from lcg.projections.wal.opening import holds_anything, open_log
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import EventLog

log = logging.getLogger(__name__)
REBUILD = "set aside; every group is rebuilt from the WAL into a new graph.sqlite"


class ForeignProjections(Exception):
    """A read-only open met projections built from another WAL (the writer sets them aside)."""


@dataclass
class OpenedGraph:
    runner: ProjectionRunner
    caught_up: int = 0
    repairs: list[Repair] = field(default_factory=list)
    set_aside: list[Path] = field(default_factory=list)  # projections of another WAL
    catch_up_failures: dict[GroupId, Exception] = field(default_factory=dict)


def open_graph(
    files: WorkspaceFiles, log_: LogStore, clock: Callable[[], datetime], *, read_only: bool
) -> OpenedGraph:
    """The runner on graph.sqlite, checked, installed and caught up (writers); read-only
    opens only check and connect: they never repair or write. A full disk or an I/O error
    is a StorageFailure naming the file (exit 7, ADR 0019), never a damage."""
    path = files.graph_path
    try:
        if not read_only:
            return _open_for_writing(files, log_, clock)
        try:
            return _open_read_only(files, log_, clock)
        except sqlite3.DatabaseError as error:  # a reader never repairs: the next writer does
            if not damage.is_corruption(error):
                raise
            raise DamagedFile(path, str(error)) from error
    except sqlite3.DatabaseError as error:
        if damage.is_corruption(error) or not is_storage_error(error):
            raise
        raise StorageFailure(path, "open the projections", error) from error


def _open_for_writing(
    files: WorkspaceFiles, log_: LogStore, clock: Callable[[], datetime]
) -> OpenedGraph:
    path = files.graph_path
    repairs: list[Repair] = []
    recorded = damage.recorded_damage(files.state_dir).get(path.name)
    repair = damage.set_aside_if_damaged(path, clock(), REBUILD, recorded)
    if repair is not None:
        repairs.append(repair)
    set_aside: list[Path] = []
    identity = _recorded_identity(files, log_.identity, clock, read_only=False, set_aside=set_aside)
    try:
        opened = _install_and_catch_up(files, log_, identity)
    except _Corrupt as corrupt:
        repairs.append(
            damage.report(
                path, corrupt.problem, REBUILD, damage.set_aside(path, clock(), sqlite=True)
            )
        )
        opened = _install_and_catch_up(files, log_, None)
    opened.repairs = repairs
    opened.set_aside = set_aside
    damage.forget_damage(files.state_dir, path.name)
    return opened


def check_the_log(
    log_: LogStore, runner: ProjectionRunner, files: WorkspaceFiles | None = None
) -> dict[GroupId, CorruptEvent]:
    """Each group's events up to its applied position, against their checksums (ADR 0049): a
    damaged one is what a rebuild would stop before, hiding every write acknowledged after it.
    Events without checksums (a WAL from before them) are decoded once and sealed.

    On a PostgreSQL log (`files.store_url`) each open checks only what this workspace's
    earlier opens did not (ADR 0085): the seqs checked are kept in `.lcg/log_checked.json`
    with the log's identity, so a node's open reads its new events, not the whole log again."""
    damaged: dict[GroupId, CorruptEvent] = {}
    server = files is not None and bool(files.store_url)
    done = checked_before(files, log_.identity) if server and files is not None else {}
    for group, position in runner.positions().items():
        after = min(done.get(group, 0), position.position)
        if after == position.position:  # nothing applied, or all of it checked before
            continue
        if after:
            damage = cast(_CheckedAfter, log_).check(
                group, position.position, seal=True, after=after
            )
        else:
            damage = log_.check(group, position.position, seal=True)
        if damage is not None:
            log.error("%s", damage)
            damaged[group] = damage
        else:
            done[group] = position.position
    if server and files is not None:
        record_checked(files, log_.identity, {g: s for g, s in done.items() if g not in damaged})
    return damaged


class _CheckedAfter(Protocol):
    """A log whose check starts after a seq (`PostgresLog`)."""

    def check(
        self, group_id: GroupId, upto: int, *, seal: bool, after: int = 0
    ) -> CorruptEvent | None: ...


CHECKED_FILE = "log_checked.json"


def checked_before(files: WorkspaceFiles, identity: str) -> dict[GroupId, int]:
    """The seqs of each group an earlier open checked, if they are of this log."""
    try:
        recorded = orjson.loads((files.state_dir / CHECKED_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(recorded, dict) or recorded.get("identity") != identity:
        return {}
    groups = recorded.get("groups")
    if not isinstance(groups, dict):
        return {}
    return {GroupId(str(g)): s for g, s in groups.items() if isinstance(s, int) and s >= 0}


def record_checked(files: WorkspaceFiles, identity: str, done: dict[GroupId, int]) -> None:
    """Keep what this open checked (0600, written whole then renamed); a failure to is
    logged: the next open checks more, nothing else."""
    path = files.state_dir / CHECKED_FILE
    temporary = path.with_suffix(".tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(orjson.dumps({"identity": identity, "groups": done}))
        os.replace(temporary, path)
    except OSError as error:
        log.warning("could not record the log's checked seqs in %s: %s", path, error)


def _open_read_only(
    files: WorkspaceFiles, log_: LogStore, clock: Callable[[], datetime]
) -> OpenedGraph:
    _recorded_identity(files, log_.identity, clock, read_only=True, set_aside=[])
    runner = ProjectionRunner(_connect(files), log_, registry.projections())
    try:
        refuse_if_behind(files, behind_log(runner.conn, log_.heads()))
    except BaseException:
        runner.conn.close()
        raise
    return OpenedGraph(runner)


def open_the_log(files: WorkspaceFiles) -> LogStore:
    """The workspace's log, refused when it is lost: a missing or empty log beside applied
    projections (a WAL file is checked before it is made: one with a new identity would make
    the projections look foreign at the next open; a PostgreSQL log is opened, then asked)."""
    if not files.store_url:
        refuse_if_the_log_is_lost(files, EventLog.holds_anything(files.wal_path))
        return open_log(files)
    opened = open_log(files)
    try:
        refuse_if_the_log_is_lost(files, holds_anything(opened))
    except BaseException:
        opened.close()
        raise
    return opened


def refuse_if_the_log_is_lost(files: WorkspaceFiles, holds: bool) -> None:
    """A log that holds nothing beside applied projections: refused. A graph.sqlite too
    damaged to say what it applied is left to the damage check."""
    graph = files.graph_path
    if holds or not graph.exists():
        return
    try:
        with closing(schema.connect(str(graph), read_only=True)) as peek:
            applied = applied_seqs(peek)
    except sqlite3.DatabaseError:
        return
    refuse_if_behind(files, [(group, 0, seq) for group, seq in sorted(applied.items()) if seq])


def refuse_if_behind(files: WorkspaceFiles, behind: list[tuple[str, int, int]]) -> None:
    if behind:
        wal: Path | str = files.wal_path if not files.store_url else files.log_where
        raise LogBehindProjections(wal, files.graph_path, behind, (files.vectors_dir,))


def _recorded_identity(
    files: WorkspaceFiles,
    identity: str,
    clock: Callable[[], datetime],
    *,
    read_only: bool,
    set_aside: list[Path],
) -> str | None:
    """The WAL identity the projection database records; one of another WAL is set aside
    (with the FAISS files derived from it) so that the projections are rebuilt from this WAL.
    None when none is recorded (a new database, or one from before identities)."""
    graph = files.graph_path
    if not graph.exists():
        return None
    with closing(schema.connect(str(graph), read_only=True)) as peek:
        recorded = recorded_wal_identity(peek)
    if recorded is None or recorded == identity:
        return recorded
    if files.store_url:  # a shared log: pointing a workspace at another one is a mistake
        raise ForeignProjections(
            f"{graph} was built from another log (identity {recorded}); {files.log_where}"
            f" is {identity}: refused, nothing is written. Point [store] url (LCG_STORE_URL)"
            " back at the log these projections came from, or open a new workspace"
            " directory on this one (it replays from the log); `lcg store copy` keeps the"
            " identity, so a copied log serves the same projections"
        )
    if read_only:
        raise ForeignProjections(
            f"{graph} was built from another WAL (identity {recorded}, this WAL is "
            f"{identity}); the next writer to open the workspace sets it aside"
        )
    now = clock()
    for path in (graph, files.vectors_dir):
        target = damage.set_aside(path, now, sqlite=path == graph, why="foreign")
        if target is not None:
            set_aside.append(target)
    log.warning(
        "%s was built from another WAL (identity %s, %s is %s): set aside as %s; the "
        "projections are rebuilt from the WAL",
        graph,
        recorded,
        files.log_where,
        identity,
        ", ".join(str(path) for path in set_aside),
    )
    return None


class _Corrupt(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _connect(files: WorkspaceFiles) -> sqlite3.Connection:
    return schema.connect(str(files.graph_path))


def _install_and_catch_up(
    files: WorkspaceFiles, log_: LogStore, identity: str | None
) -> OpenedGraph:
    conn: sqlite3.Connection | None = None
    installed = False
    try:
        conn = _connect(files)
        runner = ProjectionRunner(conn, log_, registry.projections())
        refuse_if_behind(files, behind_log(conn, log_.heads()))
        runner.install()
        if identity is None:
            runner.record_wal_identity(log_.identity)
        installed = True
        for group in runner.reconcile_pins():
            log.warning(
                "group %r is pinned in %s at seq %s: replayed to it (graph.sqlite did not hold"
                " it there)",
                group,
                files.log_where,
                runner.position(group).pinned_to,
            )
        caught_up, failures = runner.catch_up_each()
        for error in failures.values():
            if isinstance(error, sqlite3.DatabaseError):
                _raise_if_graph_corrupt(files, error, installed=True)
        for group, error in failures.items():
            log.error("group %r could not be caught up from the WAL: %s", group, error)
        return OpenedGraph(runner, caught_up, catch_up_failures=failures)
    except sqlite3.DatabaseError as error:
        if conn is not None:
            conn.close()
        _raise_if_graph_corrupt(files, error, installed=installed)
        raise
    except BaseException:
        if conn is not None:
            conn.close()
        raise


def _raise_if_graph_corrupt(
    files: WorkspaceFiles, error: sqlite3.DatabaseError, *, installed: bool
) -> None:
    """Raise _Corrupt when the error is corruption of graph.sqlite (not of the WAL, which the
    catch-up also reads)."""
    if not damage.is_corruption(error):
        return
    problem = damage.sqlite_problem(files.graph_path) if installed else str(error)
    if problem is not None:
        raise _Corrupt(problem) from error
