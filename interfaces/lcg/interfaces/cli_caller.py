"""How a CLI command reaches the workspace: in this process, or through the service holding it.

A workspace has one writer. When `lcg serve` (or a stdio or HTTP MCP serve, which listens on
the same socket while it holds the workspace: ADR 0066, 0091) holds it, a CLI command would
be refused with "workspace busy"; instead it sends its call to the socket service at
`.lcg/service.sock`, says so on stderr, and gets the same result and the same errors (issue
10: reads are never locked out, writes go through the one writer).
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from lcg.interfaces.jsonrpc import MIN_SEQ_FIELD, WRITTEN_FIELD, RpcError, is_progress
from lcg.projections.wal.lease import WorkspaceBusy

if TYPE_CHECKING:
    from lcg.interfaces.app import App
    from lcg.interfaces.config import Settings
    from lcg.projections.runner import Progress

# Fast start (ADR 0053): the workspace and the operation table are imported where a command
# opens the workspace in this process; a command going through the socket service never loads
# them.

PROBE_SECONDS = 5.0  # how long a health_check may take before the socket counts as dead
CALL_SECONDS = 3600.0  # a replay of a large group streams progress well within this


class Caller(Protocol):
    """Runs one operation of the table and returns its result. `min_seq` is the request's
    own {group: seq} to read after, and `written` a dict the call's durable writes are noted
    in, `{group: last seq}` (ADR 0086): both beside the call, never among its arguments."""

    def call(
        self,
        name: str,
        params: dict[str, Any],
        progress: Progress | None = None,
        *,
        min_seq: dict[str, int] | None = None,
        written: dict[str, int] | None = None,
    ) -> dict[str, Any]: ...


class LocalCaller:
    """The workspace is open in this process."""

    def __init__(self, app: App) -> None:
        self.app = app

    def call(
        self,
        name: str,
        params: dict[str, Any],
        progress: Progress | None = None,
        *,
        min_seq: dict[str, int] | None = None,
        written: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        from lcg.commands.writer import recording_writes
        from lcg.interfaces import operations
        from lcg.interfaces.read_after import reading_after, request_min_seq

        wanted = None if min_seq is None else request_min_seq(min_seq)
        with recording_writes({} if written is None else written), reading_after(wanted):
            return operations.dispatch(self.app, name, params, progress)


class ServiceError(Exception):
    """The socket service answered with a JSON-RPC error."""

    def __init__(self, error: RpcError) -> None:
        super().__init__(error.message)
        self.error = error

    @property
    def kind(self) -> str:
        data = self.error.data
        return str(data.get("kind", "")) if isinstance(data, dict) else ""


class SocketCaller:
    """The socket service holding the workspace runs the call (one connection, blocking)."""

    def __init__(self, path: Path, timeout: float = CALL_SECONDS) -> None:
        self.path = path
        self._sock = socket.socket(socket.AF_UNIX)
        self._sock.settimeout(timeout)
        self._sock.connect(str(path))
        self._lines = self._sock.makefile("rwb")
        self._ids = itertools.count(1)

    def call(
        self,
        name: str,
        params: dict[str, Any],
        progress: Progress | None = None,
        *,
        min_seq: dict[str, int] | None = None,
        written: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        request_id = next(self._ids)
        sent = dict(params)
        if progress is not None:
            sent["_progress_token"] = f"lcg-cli-{request_id}"
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": name}
        frame["params"] = sent
        if min_seq is not None:
            frame[MIN_SEQ_FIELD] = min_seq  # beside params, checked by the service
        self._lines.write(orjson.dumps(frame) + b"\n")
        self._lines.flush()
        while True:
            line = self._lines.readline()
            if not line:
                raise ConnectionError(f"the service at {self.path} closed the connection")
            answer = orjson.loads(line)
            if is_progress(answer):
                if progress is not None:
                    progress(int(answer.get("processed", 0)), int(answer.get("total", 0)))
                continue
            if "error" in answer:
                raise ServiceError(RpcError.from_json(answer["error"]))
            if written is not None:
                for group, seq in (answer.get(WRITTEN_FIELD) or {}).items():
                    written[group] = max(int(seq), written.get(group, 0))
            result: dict[str, Any] = answer["result"]
            return result

    def timeout(self, seconds: float) -> None:
        self._sock.settimeout(seconds)

    def close(self) -> None:
        self._lines.close()
        self._sock.close()


def healthy_service(path: Path) -> SocketCaller | None:
    """A connection to the socket service at `path` if one answers healthy, else None."""
    return service_at(path, healthy_only=True)


@contextmanager
def going_through(remote: SocketCaller, say: Callable[[str], None]) -> Iterator[SocketCaller]:
    """The service's connection for one command, which says that it goes through it."""
    say(f"the workspace is held by its socket service; this command goes through {remote.path}")
    try:
        yield remote
    finally:
        remote.close()


def service_at(
    path: Path, *, healthy_only: bool, timeout: float = CALL_SECONDS
) -> SocketCaller | None:
    """A connection to the socket service at `path` if one answers health_check (healthy,
    or in any state when not `healthy_only`: recovery reaches a degraded one), else None."""
    if not path.exists():
        return None
    try:
        remote = SocketCaller(path, timeout=PROBE_SECONDS)
    except OSError:
        return None
    try:
        health = remote.call("health_check", {})
        if health.get("healthy") or not healthy_only:
            remote.timeout(timeout)
            return remote
    except (OSError, ValueError, ServiceError):
        pass
    remote.close()
    return None


@contextmanager
def open_caller(
    settings: Settings,
    command: str,
    *,
    read_only: bool,
    say: Callable[[str], None],
    reads: bool = False,
) -> Iterator[Caller]:
    """Open the workspace here, or, when another process holds it and serves its socket,
    reach it through that service (and `say` so): `lcg serve`, or a stdio or HTTP MCP serve,
    which listens there too while it holds the workspace (ADR 0066, 0091). A holder with no
    socket (a CLI command) still lets a command that only `reads` read the workspace
    directly, read-only; anything else is refused saying what works.

    A healthy service holds the workspace's lease, so a command that would take the lease
    asks the service first: then it never loads the workspace's code (fast start, ADR 0053).
    A read-only command reads the files beside the service, as before."""
    remote = None if read_only else healthy_service(settings.socket_path)
    if remote is None:
        from lcg.interfaces.app import App
        from lcg.interfaces.workspace import Workspace

        try:
            workspace = Workspace(settings, command=command, read_only=read_only).open()
        except WorkspaceBusy as busy:
            holder = busy.holder
        else:
            try:
                yield LocalCaller(App(workspace, operator=True))
            finally:
                workspace.close()
            return
        remote = healthy_service(settings.socket_path)
    if remote is not None:
        with going_through(remote, say) as service:
            yield service
    elif reads:
        say(
            "the workspace is held by another process that serves no socket; reading it "
            "directly, read-only (search needs the workspace open for writing)"
        )
        from lcg.interfaces.app import App
        from lcg.interfaces.workspace import Workspace

        with Workspace(settings, command=command, read_only=True) as direct:
            yield LocalCaller(App(direct, operator=True))
    else:
        raise WorkspaceBusy(settings.lease_path, holder, _no_socket(settings))


def _no_socket(settings: Settings) -> str:
    """What works when the holder serves no socket this command could go through."""
    return (
        f"no socket service answers at {settings.socket_path}, so this command cannot go "
        "through it: serve the workspace with `lcg serve` and start MCP servers with "
        f"`--mcp-stdio --connect {settings.socket_path}`, and CLI commands go through the "
        "service"
    )
