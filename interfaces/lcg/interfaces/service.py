"""One serving process's hold on a workspace: start-up, health, degraded mode, the one dispatch.

The socket service and the standalone MCP server both start through `Service.start` and call
through `Service.call` (K-DBM-003, K-INV-004), so health_check, knowledge_close and the
degraded-mode rules exist once. Safe to call from many threads once started.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Literal

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import JsonObject, error_from_exception, unavailable
from lcg.interfaces.params import NoParams, parse
from lcg.interfaces.tools.admin import CloseResult
from lcg.interfaces.workspace import Workspace
from lcg.projections.runner import Progress

HEALTH_CHECK = "health_check"
STATUS = "knowledge_status"
CLOSE = "knowledge_close"

State = Literal["initializing", "healthy", "degraded", "closing"]

log = logging.getLogger("lcg.service")


class Service:
    """Opens the workspace once; answers every method of the table plus health_check."""

    def __init__(self, settings: Settings, *, command: str) -> None:
        self.settings = settings
        self.command = command
        self.state: State = "initializing"
        self.reason: str | None = None
        self.closing = threading.Event()  # set once knowledge_close has been answered
        self._workspace: Workspace | None = None
        self._app: App | None = None

    @property
    def methods(self) -> tuple[str, ...]:
        """Every method the service dispatches (K-INV-005: the table plus health_check)."""
        return (HEALTH_CHECK, *(op.name for op in operations.OPERATIONS))

    def start(self) -> State:
        """Open the workspace (lease, WAL, projections, catch-up); degraded if that fails."""
        try:
            workspace = Workspace(self.settings, command=self.command).open()
        except Exception as error:  # noqa: BLE001 (any failure to open is the degraded state)
            self.reason = str(error)
            self.state = "degraded"
            log.warning("workspace did not open; serving in degraded mode: %s", error)
            return self.state
        self._workspace = workspace
        self._app = App(workspace)
        self.state = "healthy"
        return self.state

    def health(self) -> JsonObject:
        """health_check (P-101): healthy only once the workspace opened (K-RDY-006), and
        degraded (while still serving) when a file cannot be written or a group cannot be
        caught up from its WAL; healthy again once a write commits (ADR 0019)."""
        workspace = self._workspace
        faults = [] if workspace is None else workspace.faults()
        if self.state == "healthy" and faults:  # still serving: reads and other groups work
            return {
                "ok": False,
                "healthy": False,
                "state": "degraded",
                "reason": "; ".join(faults),
                "serving": True,
            }
        if self.state == "healthy":
            return {"ok": True, "healthy": True, "state": "healthy"}
        return {
            "ok": False,
            "healthy": False,
            "state": self.state,
            "reason": self.reason or self.state,
        }

    def call(
        self, method: str, params: dict[str, Any] | None, progress: Progress | None = None
    ) -> JsonObject:
        """Run one method; every failure is raised as an RpcError (P-002, P-003)."""
        if method == HEALTH_CHECK:
            return self.health()
        app = self._app
        if self.state != "healthy" or app is None:
            return self._call_unready(method, params)
        try:
            result = operations.dispatch(app, method, params, progress)
        except Exception as error:
            raise error_from_exception(error) from error
        if method == CLOSE:
            self._begin_closing()
        return result

    def _call_unready(self, method: str, params: dict[str, Any] | None) -> JsonObject:
        """Degraded or closing: only status, close and health_check answer (P-003)."""
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
        raise unavailable(self.reason or self.state)

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
            "recovery_available": [],
            "cross_group_pointers": None,
            "database_path": str(self.settings.graph_path),
            "wal_path": str(self.settings.wal_path),
        }

    def close(self) -> None:
        """Release the workspace (its lease, connections and files); idempotent."""
        workspace, self._workspace, self._app = self._workspace, None, None
        if workspace is not None:
            workspace.close()
        if self.state != "degraded":
            self.state = "closing"
