"""What the serve holding a workspace publishes: the forwarding socket in the private
directory and `.lcg/service.sock`, both answering JSON-RPC on its one Service (ADR 0066).

Both are bound under the lease, so a socket file a crashed holder left behind is cleared here
(M-TRN-051); where the forwarding socket is, or why there is none, is then added to the lease
record, so a later serve finds the holder wherever it published (M-TRN-048).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping
from pathlib import Path

from lcg.interfaces.forward_place import ForwardingOff, fits, make_private, place_of
from lcg.interfaces.service import Service
from lcg.interfaces.socket_server import SocketInUse, SocketService, bind_unix_socket
from lcg.projections.wal.lease import annotate

FORWARD = "forward"  # the lease record's key: the socket forwarders connect to
FORWARD_OFF = "forward_off"  # ... or why the holder publishes none
SESSION = "session"  # the session the holder serves

log = logging.getLogger("lcg.forward")


class Publication:
    """The holder's sockets: open once its Service is healthy, closed before it closes."""

    def __init__(
        self, service: Service, environ: Mapping[str, str], *, service_socket: bool = True
    ) -> None:
        self.service = service
        self._environ = environ
        self._service_socket = service_socket  # False when `lcg serve` already listens there
        self._listener = SocketService(service, service.settings.socket_path, handle_signals=False)
        self._servers: list[asyncio.Server] = []
        self._paths: list[Path] = []
        self.forward_path: Path | None = None

    async def open(self) -> None:
        settings = self.service.settings
        fields: dict[str, object] = {SESSION: settings.session}
        try:
            self.forward_path = await self._listen(self._forwarding_socket())
            fields[FORWARD] = str(self.forward_path)
            log.info("forwarding socket: %s", self.forward_path)
        except ForwardingOff as off:
            log.warning("forwarding is off (this serve still serves its own client): %s", off)
            fields[FORWARD_OFF] = str(off)
        if self._service_socket:
            try:
                await self._listen(self._bound(settings.socket_path))
            except ForwardingOff as off:  # the CLI then reads beside it, as before
                log.warning("no socket for the CLI: %s", off)
        try:
            annotate(settings.lease_path, fields)
        except (OSError, ValueError) as error:
            log.warning("could not say where this serve publishes: %s", error)

    async def aclose(self) -> None:
        """Forwarded calls in flight finish (bounded), then the sockets go."""
        servers, self._servers = self._servers, []
        await self._listener.stop_accepting(servers)
        for path in self._paths:
            try:
                path.unlink(missing_ok=True)
            except OSError as error:  # the next holder clears it under the lease
                log.warning("could not remove the socket %s: %s", path, error.strerror)
        self._paths = []

    def _forwarding_socket(self) -> socket.socket:
        settings = self.service.settings
        place = place_of(settings.workspace, settings.session, self._environ, os.geteuid())
        fits(place.path)
        make_private(place.directory, os.geteuid())
        return self._bound(place.path)

    def _bound(self, path: Path) -> socket.socket:
        try:
            sock = bind_unix_socket(path)
        except SocketInUse as error:
            raise ForwardingOff(str(error)) from None
        except OSError as error:
            raise ForwardingOff(f"cannot listen at {path}: {error}") from None
        self._paths.append(path)
        return sock

    async def _listen(self, sock: socket.socket) -> Path:
        self._servers.append(await self._listener.accept(sock))
        return self._paths[-1]
