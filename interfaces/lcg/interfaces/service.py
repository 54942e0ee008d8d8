"""One serving process's hold on a workspace: start-up, health, degraded mode, the one dispatch.

The socket service and the standalone MCP server both start through `Service.start` and call
through `Service.call` (K-DBM-003, K-INV-004), so health_check, knowledge_close and the
degraded-mode rules exist once. Safe to call from many threads once started.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from lcg.commands import recovery, wal_admin
from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.domain.ids import GroupId
from lcg.domain.memory.layers import check_layers
from lcg.domain.memory.receipts import ReceiptId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings, session_name
from lcg.interfaces.jsonrpc import (
    HELD_ELSEWHERE,
    JsonObject,
    RpcError,
    error_from_exception,
    unavailable,
)
from lcg.interfaces.ledger import CallLedger
from lcg.interfaces.ledger_lines import (
    RECALL_DETAIL,
    call_line,
    completion_fields,
    completion_line,
    heartbeat_line,
)
from lcg.interfaces.memory_sessions import MemorySessions
from lcg.interfaces.params import NoParams, parse
from lcg.interfaces.tools.admin import (
    CloseResult,
    RecoverParams,
    WalMarkDeleteParams,
    WalMarkListParams,
)
from lcg.interfaces.workspace import Workspace
from lcg.projections.damage import DamagedFile, is_corruption, sqlite_problem
from lcg.projections.faults import LogBehindProjections, StorageFailure
from lcg.projections.runner import Progress
from lcg.projections.wal.lease import WorkspaceBusy
from lcg.projections.wal.opening import open_log
from lcg.projections.wal.store import EventLog

HEALTH_CHECK = "health_check"
STORE_RETRY_S = 2.0  # a PostgreSQL log unreachable at open: how often a call tries again
STATUS = "knowledge_status"
CLOSE = "knowledge_close"
RECOVER = "knowledge_recover"
RECOVER_FULL = "knowledge_recover_full"
MARK_LIST = "knowledge_wal_mark_list"
MARK_DELETE = "knowledge_wal_mark_delete"
STATS = "lambo_stats"

State = Literal["initializing", "healthy", "degraded", "closing"]

log = logging.getLogger("lcg.service")


class Service:
    """Opens the workspace once; answers every method of the table plus health_check."""

    def __init__(self, settings: Settings, *, command: str, publishes: bool = False) -> None:
        self.settings = settings
        self.command = command
        self.publishes = publishes  # it will publish a forwarding socket once open (ADR 0066)
        self.state: State = "initializing"
        self.reason: str | None = None
        self.closing = threading.Event()  # set once knowledge_close has been answered
        self._workspace: Workspace | None = None
        self._app: App | None = None
        self._lock = threading.Lock()  # state changes of a repair against close
        self.recovery: list[str] = []  # what can be done while degraded (knowledge_status)
        self.held = False  # degraded because another process holds the writer lease
        self.holder: str | None = None  # then, who holds it (the lease's description)
        self.ledger: CallLedger | None = None  # serve --ledger: a line per call (ADR 0079)
        # degraded because the PostgreSQL log could not be reached at open: the next call (at
        # most every STORE_RETRY_S) opens again, so the node comes up when the server does
        self._store_down_since: float | None = None
        self._reopening = threading.Lock()

    @property
    def app(self) -> App | None:
        """The open workspace's App while healthy (None otherwise): the portal's reads."""
        return self._app if self.state == "healthy" else None

    @property
    def methods(self) -> tuple[str, ...]:
        """Every method the service dispatches (K-INV-005: the table plus health_check)."""
        return (HEALTH_CHECK, *(op.name for op in operations.OPERATIONS))

    def start(self) -> State:
        """Open the workspace (lease, WAL, projections, catch-up); degraded if that fails."""
        try:
            workspace = Workspace(
                self.settings, command=self.command, publishes=self.publishes
            ).open()
            workspace.start_memory_jobs()  # the session's canonization cycle and daemon tick
        except Exception as error:  # noqa: BLE001 (any failure to open is the degraded state)
            # the holder of the lease is the operator's business (logged below), and a held
            # workspace needs no recovery (M-ERR-002)
            self.held = isinstance(error, WorkspaceBusy)
            self.holder = error.holder if isinstance(error, WorkspaceBusy) else None
            down = bool(self.settings.store_url) and isinstance(error, StorageFailure)
            self._store_down_since = time.monotonic() if down else None
            self.reason = HELD_ELSEWHERE if self.held else str(error)
            self.recovery = recovery_for(self.settings, error)
            self.state = "degraded"
            if self.held:  # a stdio serve then forwards to the holder (ADR 0066)
                log.info("the workspace did not open: %s", error)
            else:
                log.warning("workspace did not open; serving in degraded mode: %s", error)
            return self.state
        self._workspace = workspace
        self._app = App(workspace)
        if self.ledger is not None:
            self._attach_ledger(self.ledger, workspace)
        self._store_down_since = None
        self.recovery = []
        self.held = False
        self.state = "healthy"
        return self.state

    def health(self) -> JsonObject:
        """health_check (P-101): healthy only once the workspace opened (K-RDY-006), and
        degraded (while still serving) when a file cannot be written or a group cannot be
        caught up from its WAL; healthy again once a write commits (ADR 0019). A healthy
        service whose vector indexes are still catching up (a restart with a backlog, a
        write burst) says how much with `vector_pending`, as knowledge_status does."""
        workspace = self._workspace
        faults = [] if workspace is None else workspace.faults()
        if self.state == "healthy" and workspace is not None:  # a PostgreSQL log's server
            unreachable = workspace.probe_log()
            faults += [] if unreachable is None else [unreachable]
        if self.state == "healthy" and faults:  # still serving: reads and other groups work
            return {
                "ok": False,
                "healthy": False,
                "state": "degraded",
                "reason": "; ".join(faults),
                "serving": True,
            }
        if self.state == "healthy":
            healthy: JsonObject = {"ok": True, "healthy": True, "state": "healthy"}
            pending = 0 if workspace is None else workspace.vector_follow_state[0]
            if pending:  # serving while the vector indexes catch up (ADR 0047)
                healthy["vector_pending"] = pending
            if self.settings.tuning.accept_client_vectors:  # what an attached serve lists
                healthy["client_vectors"] = True  # (M-IMG-001/002, ADR 0095)
            return healthy
        return {
            "ok": False,
            "healthy": False,
            "state": self.state,
            "reason": self.reason or self.state,
        }

    def call(
        self,
        method: str,
        params: dict[str, Any] | None,
        progress: Progress | None = None,
        session: str | None = None,
        layers: Sequence[str] | None = None,
    ) -> JsonObject:
        """Run one method; every failure is raised as an RpcError (P-002, P-003). The memory
        tools answer for `session` (None: the serve's own; any valid name: that session of
        the workspace, new and empty if it holds nothing yet, ADR 0071), layered over
        `layers` (None: the serve's configured layers for its own session, none for another
        one; ADR 0080). With a ledger, the call's line is queued after it ran (never waiting
        for the file)."""
        ledger = self.ledger
        if ledger is None or method == HEALTH_CHECK:
            return self._call(method, params, progress, session, layers)
        detail: dict[str, Any] = {}
        bound = RECALL_DETAIL.set(detail)
        started = time.perf_counter()
        addressed = session or self.settings.session
        try:
            result = self._call(method, params, progress, session, layers)
        except Exception as error:
            refusal = error if isinstance(error, RpcError) else error_from_exception(error)
            ms = (time.perf_counter() - started) * 1000
            line = call_line(method, params, addressed, ms, None, refusal, None)
            ledger.append(addressed, line)
            raise
        finally:
            RECALL_DETAIL.reset(bound)
        ms = (time.perf_counter() - started) * 1000
        ledger.append(addressed, call_line(method, params, addressed, ms, result, None, detail))
        content = result.get("structuredContent") if method == STATS else None
        if isinstance(content, dict):  # lambo_stats's ledger keys (M-STA-160)
            content.update(ledger.keys(addressed, self._one_session()))
        return result

    def _one_session(self) -> bool:
        workspace = self._workspace
        return workspace is None or len(workspace.memory_sessions.sessions()) <= 1

    def _attach_ledger(self, ledger: CallLedger, workspace: Workspace) -> None:
        """Completion lines as writes settle, heartbeat lines on the period (each session's
        lambo_stats payload: ADR 0079)."""
        sessions = workspace.memory_sessions

        def settled(receipt: str, state: str, outcome: Any) -> None:
            session = _session_of(sessions, receipt)
            fields = None if isinstance(outcome, str) else completion_fields(outcome)
            ledger.append(session, completion_line(session, receipt, state, fields))

        sessions.processor.listeners.append(settled)

        def beat() -> None:
            workspace = self._workspace
            if workspace is None or self.state != "healthy":
                return
            served = workspace.memory_sessions
            names = served.sessions()
            for name in names:
                payload = served.get(name).stats_payload()
                payload.update(ledger.keys(name, len(names) <= 1))
                ledger.append(name, heartbeat_line(name, payload))

        ledger.beat_every(self.settings.tuning.get_float("serve", "ledger_heartbeat_secs"), beat)

    def _call(
        self,
        method: str,
        params: dict[str, Any] | None,
        progress: Progress | None,
        session: str | None,
        layers: Sequence[str] | None,
    ) -> JsonObject:
        try:
            if session is not None:
                session_name(session, "session")
            stack = self._layers(session, layers)
        except Exception as error:
            raise error_from_exception(error) from error
        self._open_if_the_store_is_back()
        if method == HEALTH_CHECK:
            return self.health()
        if method in (RECOVER, RECOVER_FULL):  # in every state: they close and reopen
            return self._recover(method, params)
        app = self._app
        if self.state != "healthy" or app is None:
            return self._call_unready(method, params)
        try:
            result = operations.dispatch(app.for_session(session, stack), method, params, progress)
        except DamagedFile as error:
            self._repair(error)
            raise error_from_exception(error) from error
        except Exception as error:
            raise error_from_exception(error) from error
        if method == CLOSE:
            self._begin_closing()
        return result

    def _layers(self, session: str | None, layers: Sequence[str] | None) -> tuple[str, ...]:
        """The layers a call's session reads with it, each a session name, none itself."""
        if layers is None:
            if session is not None and session != self.settings.session:
                return ()
            layers = self.settings.layers
        names = [session_name(layer, "layers") for layer in layers]
        return check_layers(session or self.settings.session, names)

    def _open_if_the_store_is_back(self) -> None:
        """Degraded because the PostgreSQL log was unreachable at open: try the open again
        (one caller at a time, at most every STORE_RETRY_S; ADR 0073)."""
        since = self._store_down_since
        if since is None or self.state != "degraded" or time.monotonic() - since < STORE_RETRY_S:
            return
        if not self._reopening.acquire(blocking=False):
            return
        try:
            if self._store_down_since is not None and self.state == "degraded":
                log.info("trying the log at %s again", self.settings.files.log_where)
                if self.start() == "healthy":
                    log.info("the workspace opened: the log is reachable again")
        finally:
            self._reopening.release()

    def _call_unready(self, method: str, params: dict[str, Any] | None) -> JsonObject:
        """Degraded, closing or recovering: only status, close, the recovery methods and
        health_check answer, and, while degraded, mark list and delete (P-003)."""
        if method == STATUS:
            return self._unready_status()
        if method == CLOSE:
            try:
                parse(NoParams, params)
            except Exception as error:
                raise error_from_exception(error) from error
            self._begin_closing()
            return dict(CloseResult(status="closed"))
        if method not in operations.BY_NAME:
            raise error_from_exception(operations.UnknownMethod(method))
        if method in (MARK_LIST, MARK_DELETE) and self.state == "degraded":
            return self._marks_while_degraded(method, params)
        raise self._unavailable()

    def _unavailable(self) -> RpcError:
        return unavailable(self.reason or self.state, recovery=not self.held)

    def _marks_while_degraded(self, method: str, params: dict[str, Any] | None) -> JsonObject:
        """P-003: mark list and delete answer while degraded, from the WAL file alone (marks
        are rows of wal.sqlite, ADR 0032), so an operator can find the seq to recover to. A
        WAL that does not exist holds no marks and is not created; one that does not open
        either (a read-only disk) gets the degraded answer every other method gets."""
        try:
            if method == MARK_LIST:
                listing = parse(WalMarkListParams, params)
                group, name = GroupId(listing.group_id), None
            else:
                deleting = parse(WalMarkDeleteParams, params)
                group, name = GroupId(deleting.group_id), deleting.name
        except Exception as error:
            raise error_from_exception(error) from error
        path = self.settings.wal_path
        if not self.settings.store_url and not EventLog.holds_anything(path):
            if name is None:
                return dict(wal_admin.MarkList(group_id=group, generation=1, checkpoints=[]))
            raise error_from_exception(
                NotFound(
                    f"name: group {group!r} has no mark named {name!r} (its marks: none;"
                    f" {path.name} holds nothing)",
                    field="name",
                    rule="must name an active mark of the group",
                )
            )
        try:
            events = open_log(self.settings.files)
        except Exception as error:  # e.g. a read-only disk: the degraded answer, as for the rest
            where = self.settings.files.log_where
            log.warning("%s while degraded: %s did not open either: %s", method, where, error)
            raise self._unavailable() from error
        try:
            if name is None:
                return dict(wal_admin.list_marks(events, group))
            return dict(wal_admin.delete_mark_in(events, group, name, datetime.now(UTC)))
        except Exception as error:
            raise error_from_exception(error) from error
        finally:
            events.close()

    def _recover(self, method: str, params: dict[str, Any] | None) -> JsonObject:
        """knowledge_recover / knowledge_recover_full (ADR 0038): close the workspace, apply
        the strategy to its files, open it again; degraded or healthy alike (K-RDY-009)."""
        try:
            if method == RECOVER:
                strategy = recovery.Strategy(parse(RecoverParams, params).strategy)
            else:
                parse(NoParams, params)
                strategy = recovery.Strategy.REBUILD_FROM_WORKSPACE_WAL
            return recovery.exclusively(lambda: self._run_recovery(method, strategy))
        except Exception as error:
            raise error_from_exception(error) from error

    def _run_recovery(self, method: str, strategy: recovery.Strategy) -> JsonObject:
        with self._lock:
            if self.closing.is_set():
                raise Conflict(
                    "the service is closing; start it again to recover",
                    field="strategy",
                    rule="recovery needs a serving process that is not closing",
                )
            workspace = self._workspace
            healthy = self.state == "healthy" and workspace is not None and not workspace.faults()
            before = recovery.episode_count(self.settings.files)
            if method == RECOVER_FULL and healthy:
                return dict(
                    recovery.RecoverFullResult(
                        success=True,
                        recovery_needed=False,
                        episodes_before=before,
                        mutations_replayed=0,
                        episodes_after=before or 0,
                        indexes_rebuilt=0,
                        set_aside=[],
                    )
                )
            self._workspace, self._app = None, None
            self.state, self.reason = "initializing", f"{method} ({strategy}) in progress"
            if workspace is not None:
                workspace.close()
            try:
                moved = recovery.apply_strategy(self.settings.files, strategy, datetime.now(UTC))
            finally:
                state = self.start()  # the files as the strategy left them (or as they were)
            opened = self._workspace
            aside = recovery.relative(self.settings.files, moved.paths)
            if method == RECOVER_FULL:
                return dict(
                    recovery.RecoverFullResult(
                        success=state == "healthy",
                        recovery_needed=True,
                        episodes_before=before,
                        mutations_replayed=0 if opened is None else opened.caught_up,
                        episodes_after=recovery.episode_count(self.settings.files) or 0,
                        indexes_rebuilt=len(moved.paths),
                        set_aside=aside,
                    )
                )
            result = recovery.RecoverResult(
                strategy=str(strategy),
                success=state == "healthy",
                restart_required=False,
                set_aside=aside,
                detail=moved.detail,
            )
            if state != "healthy":
                result["error"] = f"the workspace still did not open: {self.reason}"
            return dict(result)

    def _repair(self, damaged: DamagedFile) -> None:
        """A call met a damaged graph.sqlite: stop serving it at once (nothing more is acked
        into it) and rebuild it now, on a thread, by closing and opening the workspace again
        (the open sets the file aside and replays the WAL, ADR 0020)."""
        with self._lock:
            workspace = self._workspace
            if self.state != "healthy" or workspace is None:
                return
            self.state = "degraded"
            self.reason = f"{damaged}; rebuilding it now"
            log.error("%s: writes refused until it is rebuilt", self.reason)
            self.recovery = [
                f"automatic: {damaged.path.name} is being set aside and rebuilt from the WAL;"
                " health_check answers healthy when it is done"
            ]
            self._workspace, self._app = None, None
        threading.Thread(target=self._reopen, args=(workspace,), name="lcg-repair").start()

    def _reopen(self, workspace: Workspace) -> None:
        workspace.close()
        with self._lock:
            if self.closing.is_set():
                return
            self.start()

    def _begin_closing(self) -> None:
        if self.state == "healthy":
            self.reason = "knowledge_close was called; the service is shutting down"
        self.state = "closing"
        self.closing.set()

    def _unready_status(self) -> JsonObject:
        """knowledge_status while the workspace is not open (P-102's degraded shape)."""
        return {
            "running": True,
            "degraded": self.state == "degraded",
            "reason": self.reason,
            "connected": False,
            "queryable": False,
            "initializing": self.state == "initializing",
            "recovery_available": list(self.recovery),
            "cross_group_pointers": None,
            "database_path": str(self.settings.graph_path),
            "wal_path": self.settings.files.log_where,
        }

    def close(self) -> None:
        """Release the workspace (its lease, connections and files); idempotent."""
        with self._lock:
            workspace, self._workspace, self._app = self._workspace, None, None
        if workspace is not None:
            workspace.close()
        if self.state != "degraded":
            self.state = "closing"
        if self.ledger is not None:  # after the workspace: the last completion lines too
            self.ledger.close()


def _session_of(sessions: MemorySessions, receipt: str) -> str | None:
    """The session whose receipt book issued `receipt` (None: a previous process's)."""
    try:
        epoch = ReceiptId.parse(receipt).epoch
    except InvalidParams:
        return None
    for name in sessions.sessions():
        if sessions.get(name).book.epoch == epoch:
            return name
    return None


def recovery_for(settings: Settings, error: BaseException) -> list[str]:
    """What an operator can do when the workspace did not open (knowledge_status)."""
    if isinstance(error, LogBehindProjections):
        return [
            "knowledge_recover {strategy: rebuild_from_workspace_wal}: set the projections aside"
            f" and rebuild them from what {settings.files.log_name} holds",
            "knowledge_recover {strategy: restore_from_backup}: restore the dump in "
            f"{settings.state_dir / recovery.BACKUP_DIR} (events after it are set aside)",
        ]
    if not (isinstance(error, DamagedFile) or is_corruption(error)):
        return []
    if not settings.store_url and sqlite_problem(settings.wal_path) is not None:
        return []  # the WAL is the truth and cannot be rebuilt (ADR 0019 says what can be done)
    return [
        f"rebuild_from_wal: restart the service; {settings.graph_path.name} is then set aside"
        f" and rebuilt from {settings.files.log_name} (if it fails again, move every file of"
        f" {settings.state_dir} but {settings.wal_path.name} and writer.lock aside first)"
    ]
