"""A tiny scripted socket service for attached-mode tests (silent, slow, or crashing).

It answers health_check itself; every other request goes to the test's `behaviour`, which
may answer, stream progress, stay silent or drop the connection. Every request received is
recorded, so a test can prove a call reached the service exactly once.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

Frame = dict[str, Any]


class FakeConnection:
    """The service side of one accepted connection."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, frame: Frame) -> None:
        self.sock.sendall(json.dumps(frame).encode() + b"\n")

    def answer(self, request: Frame, result: Frame) -> None:
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def drop(self) -> None:
        """Close abruptly, as a crashed service would (the peer reads end of stream)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


Behaviour = Callable[[Frame, FakeConnection], None]


class FakeService:
    """Listens at `path` in a background thread until closed."""

    def __init__(self, path: Path, behaviour: Behaviour) -> None:
        self.path = path
        self.behaviour = behaviour
        self.requests: list[Frame] = []
        self.connections: list[FakeConnection] = []
        self.received = threading.Condition()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(16)
        self._closed = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def methods(self) -> list[str]:
        with self.received:
            return [request["method"] for request in self.requests]

    def wait_for_request(self, method: str, timeout: float = 30.0) -> Frame:
        with self.received:
            found = self.received.wait_for(
                lambda: any(r["method"] == method for r in self.requests), timeout
            )
            assert found, f"{method} never reached the fake service"
            return next(r for r in self.requests if r["method"] == method)

    def _accept(self) -> None:
        while not self._closed:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        connection = FakeConnection(sock)
        self.connections.append(connection)
        with sock, sock.makefile("rb") as lines:
            while True:
                try:
                    line = lines.readline()
                except (OSError, ValueError):
                    return  # dropped by the behaviour
                if not line:
                    return
                request: Frame = json.loads(line)
                with self.received:
                    self.requests.append(request)
                    self.received.notify_all()
                try:
                    if request["method"] == "health_check":
                        connection.answer(request, {"ok": True, "healthy": True})
                    else:
                        self.behaviour(request, connection)
                except OSError:
                    return

    def close(self) -> None:
        """Stop listening and drop every connection, as a service that went away."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept()
        self._listener.close()
        self.path.unlink(missing_ok=True)
        for connection in self.connections:
            connection.drop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
