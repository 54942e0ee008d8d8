"""`lcg serve --mcp-stdio` as a child driven line by line over its real pipes, for bytes no
SDK client would send (oversized, malformed); every read waits on a deadline."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.helpers.service_process import DEADLINE, LCG, Frame, clean_env

INITIALIZE: Frame = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}
INITIALIZED: Frame = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def tool_call(request_id: Any, name: str, arguments: Frame) -> Frame:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def line(frame: Frame) -> bytes:
    return json.dumps(frame).encode()


class RawStdio:
    """One `lcg serve --mcp-stdio -w WORKSPACE` child (or `argv` in `env`): write lines, read
    frames; its stderr goes to a file beside the workspace."""

    def __init__(
        self,
        workspace: Path,
        argv: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.log_path = workspace.parent / f"{workspace.name}-stdio.log"
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                list(argv or [str(LCG), "serve", "--mcp-stdio", "-w", str(workspace)]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=clean_env() if env is None else env,
            )
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self._stdin = self.proc.stdin
        self._stdout = self.proc.stdout.fileno()
        self._buffer = b""

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def initialize(self) -> Frame:
        self.send(line(INITIALIZE) + b"\n" + line(INITIALIZED) + b"\n")
        return self.read()

    def send(self, data: bytes) -> None:
        self._stdin.write(data)
        self._stdin.flush()

    def read(self, deadline: float = DEADLINE) -> Frame:
        """The next frame the server wrote, or fail after `deadline` seconds."""
        end = time.monotonic() + deadline
        with selectors.DefaultSelector() as selector:
            selector.register(self._stdout, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = end - time.monotonic()
                assert left > 0, f"no answer within {deadline} s:\n{self.log}"
                if selector.select(left):
                    chunk = os.read(self._stdout, 65536)
                    assert chunk, f"the server closed stdout:\n{self.log}"
                    self._buffer += chunk
        frame_line, self._buffer = self._buffer.split(b"\n", 1)
        frame: Frame = json.loads(frame_line)
        return frame

    def finish(self) -> tuple[int, bytes]:
        """Close stdin (end of input); the exit code and whatever the server still wrote."""
        rest, _ = self.proc.communicate(timeout=DEADLINE)
        return self.proc.returncode, self._buffer + rest

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(DEADLINE)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if not self._stdin.closed:
            self._stdin.close()
