"""A real `lcg serve` socket service in a child process, and a line-oriented JSON-RPC client.

Readiness is a health_check round-trip, polled with a deadline (K-RDY-005, K-RDY-012);
nothing here sleeps to synchronise.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.conftest import EMBEDDER

LCG = Path(sys.executable).parent / "lcg"
DEADLINE = 60.0

Frame = dict[str, Any]


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without LCG_* settings (nor the reference's LAMBO_* names, which
    set some of them) but the embedder the test runs with (LCG_EMBEDDER, set for every test
    by tests/conftest.py: hashing unless it is marked `minilm`), plus `extra`."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LCG_", "LAMBO_")) or k == EMBEDDER
    }
    env.update(extra)
    return env


def wait_until(condition: Any, what: str, deadline: float = DEADLINE) -> Any:
    """Poll `condition()` until it returns something truthy, or fail after `deadline` s."""
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {deadline} s waiting for {what}")
        time.sleep(0.01)


def terminate(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM if still running; the exit code (killed, and raised, past the deadline)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


class RpcClient:
    """One connection to the socket service: write lines, read frames."""

    def __init__(self, path: Path, timeout: float = DEADLINE) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self._reader = self.sock.makefile("rb")
        self._ids = itertools.count(1)

    def send_line(self, data: bytes) -> None:
        self.sock.sendall(data + b"\n")

    def send(self, method: str, params: Frame | None = None, request_id: Any = None) -> Any:
        rid = next(self._ids) if request_id is None else request_id
        frame: Frame = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            frame["params"] = params
        self.send_line(json.dumps(frame).encode())
        return rid

    def read(self) -> Frame:
        line = self._reader.readline()
        assert line, "the service closed the connection"
        frame: Frame = json.loads(line)
        return frame

    def call(self, method: str, params: Frame | None = None) -> Frame:
        """Send one request and return its terminal frame (result or error)."""
        rid = self.send(method, params)
        frame = self.read()
        assert frame.get("id") == rid, frame
        return frame

    def result(self, method: str, params: Frame | None = None) -> Frame:
        frame = self.call(method, params)
        assert "result" in frame, frame
        result: Frame = frame["result"]
        return result

    def close(self) -> None:
        self._reader.close()
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ServiceProcess:
    """`lcg serve --workspace W [ARGS]` as a child; its stderr goes to a file beside the
    workspace (appended to by every service of that workspace: `own_log` is this one's part)."""

    def __init__(
        self,
        workspace: Path,
        *,
        socket_path: Path | None = None,
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
    ) -> None:
        self.workspace = workspace
        self.socket_path = socket_path or workspace / ".lcg" / "service.sock"
        self.log_path = workspace.parent / f"{workspace.name}-serve.log"
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        command = [str(LCG), "serve", "--workspace", str(workspace), *args]
        if socket_path is not None:
            command += ["--socket", str(socket_path)]
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=clean_env(**(env or {})),
            )

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    @property
    def own_log(self) -> str:
        """What this process wrote to the log (not the services before it)."""
        with self.log_path.open("rb") as log:
            log.seek(self._log_start)
            return log.read().decode("utf-8", errors="replace")

    def connect(self) -> RpcClient:
        """A connection once the socket is bound (which is not readiness, K-RDY-005)."""

        def bound() -> RpcClient | None:
            assert self.proc.poll() is None, f"lcg serve exited:\n{self.log}"
            try:
                return RpcClient(self.socket_path)
            except (FileNotFoundError, ConnectionRefusedError):
                return None

        client: RpcClient = wait_until(bound, f"a listener at {self.socket_path}")
        return client

    def wait_ready(self) -> Frame:
        """Poll health_check until it reports healthy or degraded (bounded, K-RDY-012)."""
        with self.connect() as client:
            return client.result("health_check")

    def stop(self) -> int:
        """SIGTERM if still running; the exit code."""
        return terminate(self.proc)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(DEADLINE)
