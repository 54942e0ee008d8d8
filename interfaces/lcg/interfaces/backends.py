"""Where an MCP tools/call goes: this process's Service (standalone) or a socket (attached)."""

from __future__ import annotations

import logging
from typing import Protocol

import anyio
import anyio.from_thread
import anyio.to_thread

from lcg.interfaces.attached import ProgressSink
from lcg.interfaces.jsonrpc import JsonObject, progress_frame
from lcg.interfaces.service import Service
from lcg.projections.runner import Progress

log = logging.getLogger("lcg.mcp")


class Backend(Protocol):
    """Runs one call; failures are raised as jsonrpc.RpcError."""

    async def call(
        self, method: str, params: JsonObject, on_progress: ProgressSink | None = None
    ) -> JsonObject: ...


class LocalBackend:
    """Standalone mode: the blocking dispatch runs in a worker thread, off the event loop."""

    def __init__(
        self, service: Service, session: str | None = None, layers: tuple[str, ...] | None = None
    ) -> None:
        self.service = service
        self.session = session  # the memory session the calls are for (None: the serve's)
        self.layers = layers  # the session's layers (None: the serve's configured ones)

    async def call(
        self, method: str, params: JsonObject, on_progress: ProgressSink | None = None
    ) -> JsonObject:
        progress: Progress | None = None
        if on_progress is not None:
            sink = on_progress

            def report(done: int, total: int) -> None:
                # Called in the worker thread; waits until the notification is handed over.
                # A client that went away never aborts the call itself.
                try:
                    anyio.from_thread.run(sink, progress_frame(method, done, total))
                except Exception:
                    log.debug("progress notification not delivered", exc_info=True)

            progress = report
        return await anyio.to_thread.run_sync(
            self.service.call, method, params, progress, self.session, self.layers
        )
