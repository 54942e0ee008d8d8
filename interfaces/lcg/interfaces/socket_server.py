"""The socket service: newline-delimited JSON-RPC 2.0 over a Unix socket (K-INV-001/002).

Start-up follows the seed's readiness contract: the socket is bound (mode 0600) before the
workspace opens, and the accept loop starts only once opening has resolved, healthy or
degraded (K-RDY-002/004). Requests on one connection are answered in order (P-005); each
runs in a worker thread, so the event loop only moves bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

import orjson

from lcg.commands.writer import recording_writes
from lcg.domain.errors import InvalidParams
from lcg.interfaces.jsonrpc import (
    INVALID_REQUEST,
    MIN_SEQ_FIELD,
    PARSE_ERROR,
    WRITTEN_FIELD,
    JsonObject,
    RpcError,
    encode,
    error_frame,
    error_from_exception,
    progress_frame,
    request_problem,
    request_too_large,
    result_frame,
    valid_id,
)
from lcg.interfaces.read_after import reading_after, request_min_seq
from lcg.interfaces.request_lines import Oversized, RequestId, RequestLines, request_id_of_line
from lcg.interfaces.service import Service
from lcg.projections.runner import Progress

CHUNK = 64 * 1024
SHUTDOWN_GRACE_SECONDS = 30.0  # how long calls in flight may finish after knowledge_close
WORKERS = 16

log = logging.getLogger("lcg.socket")


class Publishing(Protocol):
    """More sockets on the same service, opened once it is healthy (forward_holder)."""

    async def open(self) -> None: ...
    async def aclose(self) -> None: ...


class SocketInUse(Exception):
    """Another process already listens at the socket path."""


def bind_unix_socket(path: Path) -> socket.socket:
    """A listening socket at `path`, readable and writable by its owner only (mode 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        if _listening(path):
            raise SocketInUse(f"another service is already listening at {path}")
        path.unlink()  # a stale socket left by a process that died
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)  # no window in which the socket is reachable by others
    try:
        sock.bind(str(path))
    except OSError:
        sock.close()
        raise
    finally:
        os.umask(previous)
    path.chmod(0o600)
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _listening(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


class LineReader:
    """The request lines of one connection (RequestLines over its stream): each within the
    4 MiB limit, or Oversized, discarded unread past the limit (ADR 0050)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._lines = RequestLines()
        self._ready: deque[bytes | Oversized] = deque()

    async def next_line(self) -> bytes | Oversized | None:
        """The next line without its newline, Oversized, or None at end of stream (a last
        line without a newline, oversized or not, is not answered)."""
        while not self._ready:
            chunk = await self._reader.read(CHUNK)
            if not chunk:
                return None
            self._ready.extend(self._lines.feed(chunk))
        return self._ready.popleft()


class SocketService:
    """Serves one Service over a Unix socket until knowledge_close or SIGTERM/SIGINT."""

    def __init__(self, service: Service, path: Path, *, handle_signals: bool = True) -> None:
        self.service = service
        self.path = path
        self._signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
        self._executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="lcg-call")
        self._connections: set[asyncio.Task[Any]] = set()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Shut down as knowledge_close would (call from the service's event loop)."""
        self._stop.set()

    async def run(self, publication: Publishing | None = None) -> None:
        """Serve until stopped; a healthy service is then also `publication`'s (the
        forwarding socket of ADR 0066), withdrawn before the workspace is released."""
        loop = asyncio.get_running_loop()
        sock = bind_unix_socket(self.path)
        log.info("listening on %s (opening the workspace)", self.path)
        server = await asyncio.start_unix_server(
            self._serve_connection, sock=sock, start_serving=False
        )
        for signum in self._signals:
            loop.add_signal_handler(signum, self._stop.set)
        try:
            state = await loop.run_in_executor(self._executor, self.service.start)
            log.info(
                "workspace %s: %s; accepting connections",
                self.service.settings.workspace,
                state if state == "healthy" else f"{state} ({self.service.reason})",
            )
            await server.start_serving()
            if publication is not None and state == "healthy":
                await publication.open()
            await self._stop.wait()
            log.info("shutting down")
        finally:
            server.close()
            if publication is not None:
                await publication.aclose()
            await self._shut_down(loop)
            for signum in self._signals:
                loop.remove_signal_handler(signum)

    async def accept(self, sock: socket.socket) -> asyncio.Server:
        """Serve connections on a bound socket for a service already started by its owner
        (a stdio serve holding the workspace publishes this way, ADR 0066)."""
        return await asyncio.start_unix_server(self._serve_connection, sock=sock)

    async def stop_accepting(self, servers: list[asyncio.Server]) -> None:
        """Stop the servers `accept` made: calls in flight finish (bounded), idle connections
        are dropped; the service stays its owner's to close."""
        for server in servers:
            server.close()
        await self._drain()
        self._executor.shutdown(wait=False)

    async def _drain(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), SHUTDOWN_GRACE_SECONDS)
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    async def _shut_down(self, loop: asyncio.AbstractEventLoop) -> None:
        """Let calls in flight finish (bounded), drop idle connections, release the workspace."""
        await self._drain()
        try:
            await loop.run_in_executor(self._executor, self.service.close)
        except Exception:
            log.exception("releasing the workspace failed; the socket is removed anyway")
        finally:
            self._executor.shutdown(wait=False)
            try:
                self.path.unlink(missing_ok=True)
            except OSError as error:  # a read-only directory: the next start replaces it
                log.warning("could not remove the socket %s: %s", self.path, error.strerror)

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        lines = LineReader(reader)
        try:
            while not self._stop.is_set():
                line = await lines.next_line()
                if line is None:
                    break
                if isinstance(line, Oversized):
                    refusal = request_too_large(line.size)
                    await _send(writer, error_frame(line.request_id, refusal))
                    continue
                if line.strip():
                    await self._answer(line, writer)
                if self.service.closing.is_set():
                    self._stop.set()  # knowledge_close was answered: shut down gracefully
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            if task is not None:
                self._connections.discard(task)

    async def _answer(self, line: bytes, writer: asyncio.StreamWriter) -> None:
        self._in_flight += 1
        self._idle.clear()
        try:
            response = await self._response_to(line, writer)
            if response is not None:
                writer.write(response)
                await writer.drain()
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def _response_to(self, line: bytes, writer: asyncio.StreamWriter) -> bytes | None:
        """The encoded response to one request line; None for a notification (no id)."""
        try:
            request = orjson.loads(line)
        except orjson.JSONDecodeError as error:  # answered with the id if it can be read
            refusal = RpcError(PARSE_ERROR, f"Parse error: {error}")
            return encode(error_frame(request_id_of_line(line), refusal))
        problem = request_problem(request)
        if problem is not None:
            request_id = request.get("id") if isinstance(request, dict) else None
            echoed = request_id if valid_id(request_id) else None
            return encode(error_frame(echoed, RpcError(INVALID_REQUEST, problem)))
        answer_id: RequestId = request.get("id")
        written: dict[str, int] = {}
        try:
            result = await self._call(
                request["method"],
                request.get("params"),
                writer,
                request.get("session"),
                request.get("layers"),
                written,
                request.get(MIN_SEQ_FIELD),
            )
            frame = result_frame(answer_id, result)
            if written:  # beside the result, never in it (ADR 0086): {group: last seq}
                frame[WRITTEN_FIELD] = written
            response = encode(frame)
        except Exception as error:  # noqa: BLE001 (every failure is answered, never raised)
            response = encode(error_frame(answer_id, error_from_exception(error)))
        return response if "id" in request else None

    async def _call(
        self,
        method: str,
        params: Any,
        writer: asyncio.StreamWriter,
        session: Any = None,
        layers: Any = None,
        written: dict[str, int] | None = None,
        min_seq: Any = None,
    ) -> JsonObject:
        if params is None:
            params = {}  # P-001: a missing params is {}
        if not isinstance(params, dict):
            raise InvalidParams("params", "must be a JSON object")
        if session is not None and not isinstance(session, str):  # ADR 0071
            raise InvalidParams("session", "must be a session name (a string) when given")
        if layers is not None and (
            not isinstance(layers, list) or not all(isinstance(x, str) for x in layers)
        ):  # ADR 0080
            raise InvalidParams("layers", "must be a list of session names when given")
        wanted = None if min_seq is None else request_min_seq(min_seq)  # ADR 0086
        progress = None
        if params.get("_progress_token") is not None:  # P-006
            progress = self._progress_writer(writer, method)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor,
            _recorded,
            {} if written is None else written,
            wanted,
            self.service.call,
            method,
            params,
            progress,
            session,
            None if layers is None else tuple(layers),
        )

    def _progress_writer(self, writer: asyncio.StreamWriter, method: str) -> Progress:
        """Progress from the worker thread, written as `{"type":"progress"}` lines in order
        before the terminal response (K-PRG-006..008); a gone client never stops the call."""
        loop = asyncio.get_running_loop()

        def report(done: int, total: int) -> None:
            data = encode(progress_frame(method, done, total))
            loop.call_soon_threadsafe(_write_quietly, writer, data)

        return report


def _write_quietly(writer: asyncio.StreamWriter, data: bytes) -> None:
    if not writer.is_closing():
        writer.write(data)


async def _send(writer: asyncio.StreamWriter, frame: JsonObject) -> None:
    writer.write(encode(frame))
    await writer.drain()


def serve_socket(service: Service, path: Path, publication: Publishing | None = None) -> None:
    """Run the socket service in this thread until it shuts down."""
    asyncio.run(SocketService(service, path).run(publication))


def _recorded(
    written: dict[str, int],
    wanted: dict[str, int] | None,
    call: Callable[..., JsonObject],
    *args: Any,
) -> JsonObject:
    """Run `call` in this worker thread, noting the writes it makes into `written`, a read
    waiting for `wanted` first (the request's min_seq, ADR 0086)."""
    with recording_writes(written), reading_after(wanted):
        return call(*args)
