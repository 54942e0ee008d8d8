"""A stdio serve's backend: the workspace in this process when it holds it, else every call
forwarded to the serve that does (seed 001, "More than one client on one machine"; ADR 0066).

The first serve of a store holds it and publishes (forward_holder); a later one forwards each
call over the holder's socket with the attached client. When the holder goes away, the calls
it did not answer get a tool error saying so, and the next call tries to take the lease: this
serve then becomes the holder, or forwards to whichever serve won (exactly one can: the
lease is an flock). No client is restarted.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path

import anyio
import anyio.to_thread
from anyio.abc import SocketAttribute

from lcg.interfaces.attached import (
    AttachedClient,
    AttachedUnavailable,
    Connection,
    ProgressSink,
    StreamConnection,
)
from lcg.interfaces.backends import LocalBackend
from lcg.interfaces.forward_holder import FORWARD, FORWARD_OFF, SESSION, Publication
from lcg.interfaces.forward_place import ForwardingOff, check_private, fits, socket_name
from lcg.interfaces.jsonrpc import SERVER_ERROR, UNAVAILABLE, JsonObject, RpcError
from lcg.interfaces.service import CLOSE, Service
from lcg.projections.wal.lease import PUBLISHES, read_record

FORWARD_IDLE_MS = 60_000  # a line from the holder within this; above lambo_stats' 34 s wait
PUBLISH_WAIT_SECONDS = 5.0  # how long a new holder may take to say where it publishes
POLL_SECONDS = 0.05
REACHABLE_SECONDS = 5.0  # how long a holder a call lost touch with has to answer a new one
# How long a call keeps looking for the holder while none answers and nothing was sent: a
# holder just killed leaves its lease record naming its dead socket until the serve taking
# over (this one, or another) writes its own, and that takes a moment (M-TRN-037).
TAKEOVER_SECONDS = 10.0
GONE = (
    "memory is unavailable: the serve holding session '{session}' stopped answering, so "
    "nothing was read or written for this call; memory returns once a `lambo serve` holds "
    "the session again (this serve takes it over on a later call if it can)"
)

log = logging.getLogger("lcg.forward")


class _NotSent(Exception):
    """No connection to the holder could be made: the call never left this process."""


def _unavailable(message: str) -> RpcError:
    return RpcError(UNAVAILABLE, message, {"kind": "holder_unavailable", "reason": message})


class _Link:
    """One connection to the holder: an AttachedClient that keeps its raw socket, so an idle
    link the holder closed is seen before a call is written to it."""

    def __init__(self, path: Path, session: str, layers: tuple[str, ...] = ()) -> None:
        self.path = path
        self._raw: socket.socket | None = None
        self.client = AttachedClient(
            path, FORWARD_IDLE_MS, dial=self._dial, session=session, layers=layers
        )

    async def _dial(self) -> Connection:
        stream = await anyio.connect_unix(str(self.path))
        self._raw = stream.extra(SocketAttribute.raw_socket)  # noqa: S610 (anyio, not Django)
        return StreamConnection(stream)

    def closed_by_holder(self) -> bool:
        raw = self._raw
        if raw is None:
            return True
        try:
            return raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False  # nothing to read: open and idle
        except OSError:
            return True


class HolderClient:
    """The holder's socket, with a connection per call in flight (idle ones reused)."""

    def __init__(self, path: Path, session: str, layers: tuple[str, ...] = ()) -> None:
        self.path = path
        self.session = session  # every call names it: the holder serves each session
        self.layers = layers  # and this serve's layers: the holder merges them (ADR 0080)
        self._idle: list[_Link] = []

    async def call(
        self, method: str, params: JsonObject, on_progress: ProgressSink | None
    ) -> JsonObject:
        link = await self._link()
        try:
            result = await link.client.call(method, params, on_progress)
        except RpcError as error:
            if (error.data or {}).get("kind") == "attached_connection":
                await link.client.aclose()
            else:
                self._idle.append(link)
            raise
        self._idle.append(link)
        return result

    async def _link(self) -> _Link:
        while self._idle:
            link = self._idle.pop()
            if not link.closed_by_holder():
                return link
            await link.client.aclose()
        link = _Link(self.path, self.session, self.layers)
        try:
            await link.client.start()
        except AttachedUnavailable as error:
            raise _NotSent(str(error)) from error
        return link

    async def reachable(self) -> bool:
        """Whether the holder answers a health_check on a new connection: a holder being
        killed may still accept one while its other connections are already closed."""
        link = _Link(self.path, self.session)
        try:
            with anyio.fail_after(REACHABLE_SECONDS):
                await link.client.start()
        except (AttachedUnavailable, TimeoutError):
            return False
        finally:
            await link.client.aclose()
        return True

    async def aclose(self) -> None:
        links, self._idle = self._idle, []
        for link in links:
            await link.client.aclose()


class Forwarder:
    """The Backend of a stdio serve: local while it holds the workspace, remote otherwise."""

    def __init__(self, service: Service, environ: Mapping[str, str]) -> None:
        self.service = service
        self._environ = environ
        self._local: LocalBackend | None = None
        self._remote: HolderClient | None = None
        self._publication: Publication | None = None
        self._lock = anyio.Lock()

    @property
    def holds(self) -> bool:
        return self._local is not None

    async def start(self) -> None:
        """Hold the workspace, or find its holder; a holder that cannot be reached yet is
        looked for again on each call (start-up never fails for it, M-TRN-030)."""
        try:
            await self._route()
        except RpcError as error:
            log.warning("%s", error.message)

    async def call(
        self, method: str, params: JsonObject, on_progress: ProgressSink | None = None
    ) -> JsonObject:
        deadline = anyio.current_time() + TAKEOVER_SECONDS
        while True:  # again while the holder is gone before anything was sent (a takeover)
            route = await self._route()
            if isinstance(route, LocalBackend):
                return await route.call(method, params, on_progress)
            if method == CLOSE:
                raise RpcError(
                    SERVER_ERROR,
                    f"{CLOSE}: this serve forwards to the serve holding the store; that one's "
                    "own client closes it",
                    {"kind": "forwarding"},
                )
            try:
                return await route.call(method, params, on_progress)
            except _NotSent as error:
                log.info("the holder at %s is gone (%s); looking again", route.path, error)
                await self._forget(route)
                if anyio.current_time() >= deadline:
                    break
                await anyio.sleep(POLL_SECONDS)
            except RpcError as error:
                if (error.data or {}).get("kind") != "attached_connection":
                    raise
                if await route.reachable():
                    raise  # the holder is there: a timeout, told as the attached client does
                await self._forget(route)
                log.warning("the holder at %s went away mid-call", route.path)
                raise _unavailable(GONE.format(session=self.service.settings.session)) from None
        raise _unavailable(GONE.format(session=self.service.settings.session))

    async def aclose(self) -> None:
        if self._publication is not None:
            await self._publication.aclose()
            self._publication = None
        if self._remote is not None:
            await self._remote.aclose()
            self._remote = None

    async def _forget(self, remote: HolderClient) -> None:
        """Look for the holder again on the next call; the idle connections to this one
        are closed (its process is gone, or unreachable)."""
        if self._remote is remote:
            self._remote = None
        await remote.aclose()

    async def _route(self) -> LocalBackend | HolderClient:
        async with self._lock:  # one attempt to hold (or find the holder) at a time
            if self._local is not None:
                return self._local
            if self._remote is not None:
                return self._remote
            state = await anyio.to_thread.run_sync(self.service.start)
            if state == "healthy":
                self._publication = Publication(self.service, self._environ)
                await self._publication.open()
                log.info("holding %s; serving MCP over stdio", self.service.settings.workspace)
            if state == "healthy" or not self.service.held:  # degraded: it answers as today
                self._local = LocalBackend(self.service)
                return self._local
            path = await self._holder_socket()
            if path is None:  # a holder that publishes nothing: the degraded answers, this call
                return LocalBackend(self.service)
            log.info("the store is held elsewhere; forwarding every call to %s", path)
            settings = self.service.settings
            self._remote = HolderClient(path, settings.session, settings.layers)
            return self._remote

    async def _holder_socket(self) -> Path | None:
        """Where the holder published, as its lease record says (M-TRN-048), once checked:
        the name of this store (M-TRN-049), a private directory (M-TRN-045), a path that
        fits; None for a holder that publishes nothing (a CLI command). The
        holder itself (pid, command) is the operator's business, logged, never told to the
        model (M-ERR-002)."""
        settings = self.service.settings
        record = read_record(settings.lease_path) or {}
        if record.get(PUBLISHES):  # a serve: it says where once it has opened the store
            with anyio.move_on_after(PUBLISH_WAIT_SECONDS):
                while FORWARD not in record and FORWARD_OFF not in record:
                    await anyio.sleep(POLL_SECONDS)
                    record = read_record(settings.lease_path) or {}
        if FORWARD_OFF in record:
            raise _unavailable(
                "memory is unavailable: the serve holding this store forwards no calls: "
                f"{record[FORWARD_OFF]}"
            )
        if FORWARD not in record:
            if record.get(PUBLISHES):
                raise _unavailable(
                    "memory is unavailable: the serve holding this store is still opening it; "
                    "this serve looks again on the next call"
                )
            return None
        path = Path(str(record[FORWARD]))
        if path.name != socket_name(settings.workspace, str(record.get(SESSION))):
            raise _unavailable(
                f"memory is unavailable: refusing to forward to {path}: its name is not the one "
                f"this store gets ({settings.workspace.resolve()}, session "
                f"{record.get(SESSION)!r}), so it serves another store"
            )
        try:
            check_private(path.parent, os.geteuid())
            fits(path)
        except ForwardingOff as off:
            raise _unavailable(f"memory is unavailable: refusing to forward: {off}") from None
        return path
