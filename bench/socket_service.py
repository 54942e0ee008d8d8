"""The benches' socket client and `lcg serve` child process, shared by every bench that
drives the service the way a user's client does."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

LCG = Path(sys.executable).parent / "lcg"


class Client:
    """One JSON-RPC connection to the socket service."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(str(path))
        self.lines = self.sock.makefile("rwb")
        self.ids = itertools.count(1)

    def call(self, method: str, params: dict[str, Any]) -> Any:
        frame = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        self.lines.write(orjson.dumps(frame) + b"\n")
        self.lines.flush()
        answer = orjson.loads(self.lines.readline())
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def close(self) -> None:
        self.lines.close()
        self.sock.close()


def start_service(
    workspace: Path,
    env: Mapping[str, str] | None = None,
    command: Sequence[str] = (str(LCG),),
) -> subprocess.Popen[bytes]:
    """`lcg serve` on `workspace` (`command` runs lcg; `env`: this process's environment, so
    LCG_* settings pass through), returned once it answers healthy."""
    proc = subprocess.Popen(
        [*command, "serve", "--workspace", str(workspace)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ if env is None else env),
    )
    sock = workspace / ".lcg" / "service.sock"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            client = Client(sock)
        except (FileNotFoundError, ConnectionRefusedError):
            time.sleep(0.05)
            continue
        state = client.call("health_check", {})["state"]
        client.close()
        if state == "healthy":
            return proc
        proc.terminate()
        raise RuntimeError(f"service is {state}")
    proc.terminate()
    raise RuntimeError("service did not come up")
