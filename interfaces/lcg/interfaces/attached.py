"""Attached mode's client: forwards each call as JSON-RPC to a running socket service.

The seed's rules (K-DBM-008..022, P-013/P-014): one call at a time on one connection; a
per-line idle timeout re-armed by every line, progress lines included; a broken connection
is re-dialled; a request whose write failed is retried exactly once on a fresh connection; a
break after the request was written fails the call ("connection lost mid-call") and is never
retried, since the service may have run it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

import anyio
import orjson
from anyio.abc import ByteStream

from lcg.commands.writer import note_written
from lcg.interfaces.jsonrpc import (
    MIN_SEQ_FIELD,
    SERVER_ERROR,
    WRITTEN_FIELD,
    JsonObject,
    RpcError,
    encode,
    is_progress,
    request_frame,
)
from lcg.interfaces.read_after import requested

CHUNK = 64 * 1024
MAX_RESPONSE_BYTES = 512 * 1024 * 1024
TRANSPORT_ERRORS = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)

ProgressSink = Callable[[JsonObject], Coroutine[Any, Any, None]]

log = logging.getLogger("lcg.attached")


class Connection(Protocol):
    """A byte stream to the service; `receive` returns b"" at end of stream."""

    async def send(self, data: bytes) -> None: ...
    async def receive(self) -> bytes: ...
    async def aclose(self) -> None: ...


Dial = Callable[[], Awaitable[Connection]]


class AttachedUnavailable(Exception):
    """No service answers at the socket path (attached start-up fails, P-013)."""


class StreamConnection:
    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream

    async def send(self, data: bytes) -> None:
        await self._stream.send(data)

    async def receive(self) -> bytes:
        try:
            return await self._stream.receive(CHUNK)
        except anyio.EndOfStream:
            return b""

    async def aclose(self) -> None:
        await self._stream.aclose()


def unix_dialer(path: Path) -> Dial:
    async def dial() -> Connection:
        return StreamConnection(await anyio.connect_unix(str(path)))

    return dial


class _Lines:
    """Lines read from one connection (a fresh buffer per connection)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._buffer = bytearray()

    async def next(self) -> bytes:
        while (newline := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > MAX_RESPONSE_BYTES:
                raise ValueError(f"a response line exceeds {MAX_RESPONSE_BYTES} bytes")
            chunk = await self.connection.receive()
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line = bytes(self._buffer[:newline])
        del self._buffer[: newline + 1]
        return line


def _text(error: BaseException) -> str:
    return str(error) or type(error).__name__


def _lost(message: str) -> RpcError:
    return RpcError(SERVER_ERROR, message, {"kind": "attached_connection"})


class AttachedClient:
    """Forwards calls to the socket service at `path`; never opens the workspace."""

    def __init__(
        self,
        path: Path,
        timeout_ms: int,
        dial: Dial | None = None,
        session: str | None = None,
        layers: tuple[str, ...] | None = None,
    ) -> None:
        self.path = path
        self.timeout_ms = timeout_ms
        self.session = session  # the memory session each call names (None: the service's)
        self.layers = layers  # the shared sessions it is layered over (ADR 0080)
        self._dial = dial or unix_dialer(path)
        self._lines: _Lines | None = None
        self._lock = anyio.Lock()
        self._last_id = 0

    async def start(self) -> JsonObject:
        """Dial once and wait for a health_check round-trip (P-013, K-RDY-005)."""
        try:
            self._lines = _Lines(await self._dial())
        except TRANSPORT_ERRORS as error:
            raise AttachedUnavailable(self._no_listener(error)) from error
        try:
            health = await self.call("health_check", {})
        except RpcError as error:
            raise AttachedUnavailable(
                f"the service at '{self.path}' did not answer health_check: {error.message}"
            ) from error
        if not health.get("healthy"):
            log.warning("the attached service is not healthy: %s", health.get("reason"))
        return health

    async def aclose(self) -> None:
        await self._drop()

    async def call(
        self, method: str, params: JsonObject, on_progress: ProgressSink | None = None
    ) -> JsonObject:
        """One request, one terminal response; progress lines go to `on_progress`."""
        async with self._lock:  # held through any reconnect (P-013)
            self._last_id += 1
            request_id = self._last_id
            if on_progress is not None:
                params = {**params, "_progress_token": True}  # P-008
            frame = request_frame(request_id, method, params)
            if self.session is not None:  # a top-level member beside method (ADR 0071)
                frame["session"] = self.session
            if self.layers is not None:  # beside it: the forwarding serve's layers (0080)
                frame["layers"] = list(self.layers)
            wanted = requested()
            if wanted:  # beside it too: the caller's min_seq (ADR 0086)
                frame[MIN_SEQ_FIELD] = wanted
            lines = await self._send(encode(frame))
            return await self._receive(lines, request_id, on_progress)

    async def _send(self, data: bytes) -> _Lines:
        """Write the request; if the write fails, re-dial and write it once more (K-DBM-015/016)."""
        lines = self._lines
        if lines is None:
            lines = await self._reconnect()
        try:
            await lines.connection.send(data)
        except TRANSPORT_ERRORS as first:
            await self._drop()
            try:
                lines = await self._redial()
            except TRANSPORT_ERRORS as again:
                raise _lost(
                    f"attached socket write failed ({_text(first)}); reconnect attempt failed "
                    f"({_text(again)}). Ensure a liminis-context-graph socket service is running "
                    f"at '{self.path}'."
                ) from again
            try:
                await lines.connection.send(data)
            except TRANSPORT_ERRORS as second:
                await self._drop()
                raise _lost(
                    f"attached socket write failed ({_text(first)}); reconnected but retry write "
                    f"also failed ({_text(second)})"
                ) from second
        return lines

    async def _receive(
        self, lines: _Lines, request_id: int, on_progress: ProgressSink | None
    ) -> JsonObject:
        while True:
            line = await self._read_line(lines)
            try:
                frame: Any = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                await self._drop()
                raise _lost(f"the attached service sent a malformed line ({error})") from error
            if is_progress(frame):
                if on_progress is not None:
                    await on_progress(frame)
                continue
            if not isinstance(frame, dict) or frame.get("id") != request_id:
                continue  # a stale reply to an earlier, timed-out call (P-013)
            if "error" in frame:
                raise RpcError.from_json(frame["error"])
            written = frame.get(WRITTEN_FIELD)
            if isinstance(written, dict):  # the holder's writes, for this caller (ADR 0086)
                note_written({str(g): s for g, s in written.items() if isinstance(s, int)})
            result = frame.get("result")
            return result if isinstance(result, dict) else {"result": result}

    async def _read_line(self, lines: _Lines) -> bytes:
        """One line within the idle timeout; any failure marks the connection dead."""
        try:
            with anyio.fail_after(self.timeout_ms / 1000):
                return await lines.next()
        except TimeoutError:
            await self._drop()
            raise _lost(
                f"attached service call timed out after {self.timeout_ms}ms with no response "
                "(LCG_ATTACHED_CALL_TIMEOUT_MS); the call was not retried and may or may not "
                "have run"
            ) from None
        except EOFError:
            await self._drop()
            raise _lost(
                "connection lost mid-call: the attached service closed the connection "
                "unexpectedly; the call was not retried and may or may not have run"
            ) from None
        except (*TRANSPORT_ERRORS, ValueError) as error:
            await self._drop()
            raise _lost(
                f"connection lost mid-call: attached socket read failed: {_text(error)}; the call "
                "was not retried and may or may not have run"
            ) from error

    async def _reconnect(self) -> _Lines:
        """Re-dial a connection marked dead by an earlier call (K-DBM-019, K-DBM-022)."""
        try:
            return await self._redial()
        except TRANSPORT_ERRORS as error:
            raise _lost(self._no_listener(error, verb="reconnect")) from error

    async def _redial(self) -> _Lines:
        self._lines = _Lines(await self._dial())
        return self._lines

    async def _drop(self) -> None:
        lines, self._lines = self._lines, None
        if lines is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await lines.connection.aclose()
                except TRANSPORT_ERRORS:
                    log.debug("closing a dead connection failed", exc_info=True)

    def _no_listener(self, error: BaseException, *, verb: str = "connect") -> str:
        return (
            f"failed to {verb} to attached service at '{self.path}': {_text(error)}. Ensure a "
            "liminis-context-graph socket service is running at this path."
        )
