"""A dump: the graph as a fresh, compacted WAL file plus a manifest, restorable (ADR 0032).

`knowledge_dump_wal` writes `wal.sqlite` (a new EventLog: its own identity, seqs renumbered
from 1, no marks, no pins) and `dump.json` into an empty directory. Each group carries the
events its projections applied (never the tail past a pin, which the graph does not show),
starting after its last `GroupPurged` when that purge left nothing behind: in a group without
memory events a purge empties every projection, so what came before it rebuilds nothing. A
memory session keeps its whole stream: its projection stores seqs (an interaction's id, a
receipt's intent) and a purge keeps the intents still owed an outcome, so renumbering or
cutting it would change what its reads answer.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from lcg.domain.events import CANONIZATION_FAMILY, MEMORY_FAMILY, GroupPurged
from lcg.domain.ids import GroupId, Seq
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import EventLog, RecordedEvent

DUMP_WAL = "wal.sqlite"
MANIFEST = "dump.json"
FORMAT = "lcg-wal-dump"
FORMAT_VERSION = 1
MEMORY_EVENTS = tuple(
    cls.wire_name for family in (MEMORY_FAMILY, CANONIZATION_FAMILY) for cls in family.events
)
_SIDECARS = ("", "-wal", "-shm", "-journal")

Progress = Callable[[int, int], None]


class BadDump(Exception):
    """A directory that is not a dump this build can restore; the message says why."""


@dataclass(frozen=True, slots=True)
class GroupPlan:
    """What a dump carries of one group: its source seqs `after < seq <= upto`, renumbered
    `seq - after`."""

    group_id: GroupId
    after: int
    upto: int

    @property
    def count(self) -> int:
        return self.upto - self.after


def plan_group(log: LogStore, group_id: GroupId, applied: int) -> GroupPlan:
    """The group's events up to `applied`, after its last purge unless it holds memory."""
    purge = log.last_seq_of(group_id, (GroupPurged.wire_name,), applied)
    if purge and log.last_seq_of(group_id, MEMORY_EVENTS, applied) == 0:
        return GroupPlan(group_id, purge, applied)
    return GroupPlan(group_id, 0, applied)


def prepare_target(target: Path) -> bool:
    """Make sure `target` is an empty directory (created 0700 if missing); True if created."""
    if target.exists() or target.is_symlink():
        if not target.is_dir():
            raise FileExistsError(f"{target} exists and is not a directory")
        if any(target.iterdir()):
            raise FileExistsError(f"{target} is not empty")
        return False
    target.mkdir(mode=0o700, parents=True)
    return True


def remove_partial(target: Path, *, created: bool) -> None:
    """After a failed dump: the directory if the dump made it, else only the files it wrote."""
    if created:
        shutil.rmtree(target, ignore_errors=True)
        return
    for name in (*(DUMP_WAL + suffix for suffix in _SIDECARS), MANIFEST):
        (target / name).unlink(missing_ok=True)


def write_dump(
    log: LogStore,
    plans: Sequence[GroupPlan],
    target: Path,
    created_at: datetime,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Copy each plan's events into `target/wal.sqlite`, renumbered; write the manifest.
    Returns the manifest. The caller holds the writer so that nothing moves meanwhile."""
    total = sum(plan.count for plan in plans)
    done = 0
    dump = EventLog(target / DUMP_WAL, log.codec, durability="full")
    try:
        for plan in plans:
            for page in log.read(plan.group_id, after=plan.after, upto=plan.upto):
                dump.append(
                    [RecordedEvent(r.group_id, Seq(r.seq - plan.after), r.event) for r in page]
                )
                done += len(page)
                if progress is not None:
                    progress(done, total)
        manifest = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "created_at": created_at.isoformat(),
            "source_wal": log.identity,
            "wal": dump.identity,
            "events": done,
            "groups": {
                plan.group_id: {
                    "events": plan.count,
                    "source_from_seq": plan.after + 1,
                    "source_to_seq": plan.upto,
                }
                for plan in plans
            },
        }
    finally:
        dump.close()
    _single_file(target / DUMP_WAL)
    manifest_path = target / MANIFEST
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.chmod(manifest_path, 0o600)
    return manifest


def check_dump(directory: Path) -> dict[str, Any]:
    """The manifest of a complete dump at `directory`; `BadDump` naming what is wrong (not a
    dump, another format or version, or a WAL whose streams differ from the manifest)."""
    manifest_path = directory / MANIFEST
    wal_path = directory / DUMP_WAL
    if not directory.is_dir():
        raise BadDump(f"{directory} is not a directory")
    if not manifest_path.is_file() or not wal_path.is_file():
        raise BadDump(f"{directory} is not a dump: it needs {MANIFEST} and {DUMP_WAL}")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BadDump(f"{manifest_path} cannot be read as JSON: {error}") from error
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BadDump(f"{manifest_path} is not an {FORMAT} manifest")
    if manifest.get("version") != FORMAT_VERSION:
        raise BadDump(
            f"{manifest_path} has format version {manifest.get('version')!r}; this build "
            f"restores version {FORMAT_VERSION}"
        )
    expected = {group: spec["events"] for group, spec in manifest["groups"].items()}
    try:
        heads, identity = _heads_and_identity(wal_path)
    except sqlite3.Error as error:
        raise BadDump(f"{wal_path} cannot be read as a WAL: {error}") from error
    if heads != {group: count for group, count in expected.items() if count}:
        raise BadDump(f"{wal_path} does not hold the events {manifest_path} lists (incomplete?)")
    if identity != manifest.get("wal"):
        raise BadDump(f"{wal_path} is not the WAL {manifest_path} was written with")
    return manifest


def _single_file(path: Path) -> None:
    """Leave the dump as one self-contained file (a rollback journal, not WAL mode), so that
    reading or copying it never needs, or leaves, -wal and -shm files beside it."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
    finally:
        conn.close()
    os.chmod(path, 0o600)


def _heads_and_identity(path: Path) -> tuple[dict[str, int], str]:
    """The dump's non-empty streams and identity, read without writing anything."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT g.group_id, (SELECT MAX(e.originator_version) FROM stored_events e"
            " WHERE e.originator_id = g.stream_id) FROM lcg_groups g"
        ).fetchall()
        (identity,) = conn.execute("SELECT identity FROM lcg_wal_identity").fetchone()
    finally:
        conn.close()
    return {str(group): int(head) for group, head in rows if head}, str(identity)
