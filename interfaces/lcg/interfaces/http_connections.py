"""The HTTP serve's bounds on connections, below the app (ADR 0071): uvicorn's h11 protocol with
a deadline for a request's head and a ceiling on open connections.

uvicorn times out neither a connection that never sends a request nor one that sends its
headers a byte at a time (its keep-alive timeout runs only after a response, and any byte
cancels it), and its `limit_concurrency` answers 503 to requests past the limit while the idle
connections stay open: 1,000 idle sockets would then lock every real client out. So:

- **Head deadline.** From the moment a connection opens, and again after each response, the
  client has `header_timeout` seconds to complete a request head (request line and headers);
  otherwise the connection is closed without an answer. Once the head is in, the body deadline
  of the app (`body_timeout_secs`, 408) takes over. Idle keep-alive connections are still
  closed by uvicorn's 5 s keep-alive timeout.
- **Connection ceiling.** A connection accepted while `max_connections` are open is closed at
  once (before any byte is read), so a flood costs a file descriptor for a moment, never the
  serve; the serve's soft limit on open files is raised to fit the ceiling when it can be.

Imported only when HTTP is served (ADR 0053).
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from typing import Final

from uvicorn.protocols.http.h11_impl import H11Protocol

FILES_BESIDE_CONNECTIONS: Final = 256  # the workspace's files, the model, the listening socket
WARN_EVERY_SECONDS: Final = 10.0  # refusals are logged at most this often

log = logging.getLogger("lcg.http")


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the head deadline and the connection ceiling; subclassed
    per serve by `bounded_protocol` with the two values."""

    header_timeout: float = 10.0
    max_connections: int = 1024
    _last_warning: float = 0.0  # monotonic time of the last refusal logged (per class)
    refused: int = 0  # connections closed at accept, for the log line

    _head_deadline: asyncio.TimerHandle | None = None
    _turned_away = False  # closed at accept: nothing of it was set up

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.max_connections:
            self._turned_away = True
            transport.close()  # never added to the server's connections
            type(self).refused += 1
            self._warn_refused()
            return
        super().connection_made(transport)
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_request():
            self._cancel_head_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self._in_request() and not self.transport.is_closing():
            self._arm_head_deadline()  # the next request's head, if one comes

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        if not self._turned_away:
            super().connection_lost(exc)

    def _in_request(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm_head_deadline(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.header_timeout, self._head_too_slow)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self._in_request() or self.transport.is_closing():
            return
        log.debug("a connection sent no whole request head in %g s; closed", self.header_timeout)
        self.transport.close()

    def _warn_refused(self) -> None:
        now = time.monotonic()
        cls = type(self)
        if now - cls._last_warning >= WARN_EVERY_SECONDS:
            cls._last_warning = now
            log.warning(
                "%d open HTTP connections, the ceiling ([serve] max_connections): new ones are"
                " closed at once (%d so far)",
                self.max_connections,
                cls.refused,
            )


def bounded_protocol(header_timeout: float, max_connections: int) -> type[BoundedH11Protocol]:
    """The protocol class uvicorn is given (`http=`): the serve's two bounds, its own counts."""
    fit_open_files(max_connections)
    return type(
        "ServeH11Protocol",
        (BoundedH11Protocol,),
        {"header_timeout": header_timeout, "max_connections": max_connections, "refused": 0},
    )


def fit_open_files(max_connections: int) -> None:
    """Raise the soft limit on open files towards the ceiling's need (up to the hard limit): a
    soft limit of 1,024, common, would make accept fail before the ceiling is reached."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections + FILES_BESIDE_CONNECTIONS
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return
    raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if raised > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
    if raised < wanted:
        log.warning(
            "open files are limited to %d: fewer than [serve] max_connections = %d connections"
            " may be served at once",
            raised,
            max_connections,
        )
