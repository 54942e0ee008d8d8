"""A real `lcg serve --http` / `lambo serve --transport http` in a child process, on a port
the OS picks (`--port 0`, read back from its log line), and the clients that reach it: the
SDK's streamable HTTP client and raw HTTP (httpx2, the SDK's own HTTP library)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.mcp_session import CONSOLE_SCRIPTS
from tests.helpers.service_process import DEADLINE, clean_env, terminate, wait_until

LISTENING = re.compile(r"serving MCP over HTTP at (http://\S+/mcp)")
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class HttpServe:
    """The child; `url` is its `/mcp` once /healthz answers."""

    def __init__(
        self, workspace: Path, *args: str, command: str = "lcg", env: dict[str, str]
    ) -> None:
        self.log_path = workspace.parent / f"{workspace.name}-http.log"
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(CONSOLE_SCRIPTS / command), *args, "--port", "0"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env=clean_env(LCG_WORKSPACE=str(workspace), **env),
            )
        self.url: str = wait_until(self._listening, "the HTTP serve's log line")
        self.base = self.url.removesuffix("/mcp")
        wait_until(self._healthy, "/healthz answering")

    @property
    def log(self) -> str:
        """What this serve wrote to the log (not an earlier one of the workspace)."""
        with self.log_path.open("rb") as log:
            log.seek(self._log_start)
            return log.read().decode("utf-8", errors="replace")

    def _listening(self) -> str | None:
        assert self.proc.poll() is None, f"the serve exited:\n{self.log}"
        found = LISTENING.search(self.log)
        return None if found is None else found.group(1)

    def _healthy(self) -> bool:
        try:
            return httpx2.get(f"{self.base}/healthz", timeout=5).status_code == 200
        except httpx2.TransportError:
            return False

    def post(self, body: Any, token: str | None = None, **kwargs: Any) -> httpx2.Response:
        headers = dict(MCP_HEADERS)
        if token is not None:
            headers["authorization"] = f"Bearer {token}"
        headers.update(kwargs.pop("headers", {}))
        return httpx2.post(self.url, json=body, headers=headers, timeout=DEADLINE, **kwargs)

    def stop(self) -> int:
        return terminate(self.proc)


@asynccontextmanager
async def http_client(
    url: str, token: str | None = None, mode: Literal["legacy", "auto"] = "auto"
) -> AsyncIterator[Client]:
    """The SDK's client over its streamable HTTP transport, with the bearer token if given;
    mode "legacy" forces the initialize handshake (the older protocol generation)."""
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=DEADLINE) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=mode, read_timeout_seconds=60
        ) as client,
    ):
        yield client


def refused_start(
    workspace: Path, *args: str, command: str = "lcg", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A serve that is expected to refuse to start: its exit code and stderr."""
    return subprocess.run(
        [str(CONSOLE_SCRIPTS / command), *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=clean_env(LCG_WORKSPACE=str(workspace), **(env or {})),
        timeout=DEADLINE,
        check=False,
    )
