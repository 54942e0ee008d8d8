"""A node on a shared PostgreSQL log: it follows the log and holds the jobs' leases
(issue 28 item 2, docs/adr/0085-nodes-on-one-postgresql-log.md).

A workspace whose `[store] url` names PostgreSQL and that is open for writing is a node: any
number of them, each with its own projections, serve one log. Each one
- follows the log (`LogFollower` into `FollowedWrites`: other nodes' writes reach this node's
  projections, vectors and text index through its Writer, between its own batches);
- runs what must run once cluster-wide under a lease of `lcg_leases`: the intent applier
  (`intents`) and each session's canonization and GC (`jobs:<session>`). A `Keeper` takes and
  renews each one; a job runs while its tenure is held and fences every batch it writes with
  the tenure's epoch, so a holder paused past its lease writes nothing once another node took
  it over, and stops.
Nothing here is made for the embedded default (a log file): this module imports psycopg.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from lcg.commands.followed import FollowedWrites
from lcg.commands.tenure import Fence
from lcg.commands.writer import Writer
from lcg.domain.ids import GroupId
from lcg.projections.wal.pg_follow import LogFollower
from lcg.projections.wal.pg_lease import Keeper, PgLease
from lcg.projections.wal.postgres import PostgresLog

if TYPE_CHECKING:
    from lcg.interfaces.workspace import Workspace

log = logging.getLogger(__name__)


def holder_name() -> str:
    """This node in `lcg_leases.holder`: host, process and a random part (a restarted
    process with a reused pid is another holder)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class KeptTenure:
    """`lcg.commands.tenure.Tenure` over a Keeper."""

    def __init__(self, keeper: Keeper) -> None:
        self.keeper = keeper

    def fence(self) -> Fence | None:
        epoch = self.keeper.epoch
        return None if epoch is None else (self.keeper.name, epoch)


class Node:
    """The follower and the leases of one workspace on a PostgreSQL log."""

    def __init__(
        self, url: str, events: PostgresLog, writer: Writer, ttl: float, poll_seconds: float = 1.0
    ) -> None:
        self.holder = holder_name()
        self.ttl = ttl
        self.leases = PgLease(url)
        self._keepers: dict[str, Keeper] = {}
        self._lock = threading.Lock()
        self._closed = False
        self.on_followed: list[Callable[[], None]] = []  # woken after a group was caught up
        self.follower = LogFollower(
            url, events, FollowedWrites(writer), poll_seconds=poll_seconds, on_applied=self._woke
        )

    def start(self) -> None:
        self.follower.start()

    def _woke(self, _group: GroupId, _seq: int) -> None:
        for wake in self.on_followed:
            wake()

    def tenure(
        self, name: str, on_change: Callable[[int | None], None] | None = None
    ) -> KeptTenure:
        """The tenure of the lease `name`, its Keeper started on first use."""
        with self._lock:
            keeper = self._keepers.get(name)
            if keeper is None:
                if self._closed:
                    raise RuntimeError("the node is closed")
                keeper = Keeper(
                    self.leases, name, self.holder, self.ttl, self._logged(name, on_change)
                )
                self._keepers[name] = keeper
                keeper.start()
        return KeptTenure(keeper)

    @staticmethod
    def _logged(
        name: str, then: Callable[[int | None], None] | None
    ) -> Callable[[int | None], None]:
        def changed(epoch: int | None) -> None:
            if epoch is None:
                log.info("this node no longer holds the lease %r: its job stops here", name)
            else:
                log.info("this node took the lease %r (epoch %s): its job runs here", name, epoch)
            if then is not None:
                then(epoch)

        return changed

    def held(self) -> dict[str, int]:
        """The leases this node holds now, with their epochs."""
        with self._lock:
            keepers = list(self._keepers.values())
        return {k.name: k.epoch for k in keepers if k.epoch is not None}

    def faults(self) -> list[str]:
        """What the follower or a keeper last failed at (the log unreachable, mostly)."""
        found = [self.follower.failure] if self.follower.failure else []
        with self._lock:
            found += [k.failure for k in self._keepers.values() if k.failure]
        return found

    def stop_jobs(self) -> None:
        """Release every lease (the jobs were stopped first): another node takes them at
        once rather than after their expiry."""
        with self._lock:
            self._closed = True
            keepers = list(self._keepers.values())
        for keeper in keepers:
            keeper.stop()

    def close(self) -> None:
        self.stop_jobs()
        self.follower.stop()
        self.leases.close()


def open_node(workspace: Workspace) -> Node:
    """The workspace (open for writing, on a PostgreSQL log) as a node of it, following it."""
    events = workspace.log
    assert isinstance(events, PostgresLog)
    ttl = workspace.settings.tuning.get_int("store", "lease_ttl_ms") / 1000
    node = Node(workspace.settings.store_url, events, workspace.writer, ttl)
    node.start()
    return node
