"""Stdio serves of one store for the forwarding tests (ADR 0066): a private runtime directory
per test, a holder started as a bare process (it holds and publishes before any client
speaks), and the lease record that says where it published."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mcp import Client

from tests.helpers.mcp_session import CONSOLE_SCRIPTS, structured
from tests.helpers.service_process import DEADLINE, clean_env, terminate, wait_until

SESSION = "demo"


@contextmanager
def runtime_dir() -> Iterator[Path]:
    """A short private directory to be XDG_RUNTIME_DIR (a socket path must fit 104 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="lr"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def serve_env(workspace: Path, runtime: Path | None, **extra: str) -> dict[str, str]:
    """The environment of a serve of `workspace`: XDG_RUNTIME_DIR set to `runtime`, or unset."""
    env = clean_env(LCG_WORKSPACE=str(workspace), **extra)
    env.pop("XDG_RUNTIME_DIR", None)
    if runtime is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime)
    return env


def lease_record(workspace: Path) -> dict[str, Any]:
    try:
        text = (workspace / ".lcg" / "writer.lock").read_text(encoding="utf-8")
        record: dict[str, Any] = json.loads(text)
    except (OSError, ValueError):
        return {}
    return record


def published(workspace: Path, pid: int | None = None) -> dict[str, Any]:
    """The lease record once a holder (`pid`, when given) has said where it publishes."""

    def ready() -> dict[str, Any] | None:
        record = lease_record(workspace)
        if pid is not None and record.get("pid") != pid:
            return None
        return record if "forward" in record or "forward_off" in record else None

    found: dict[str, Any] = wait_until(ready, "the holder's lease record to say where it is")
    return found


@contextmanager
def bare_holder(
    workspace: Path, env: dict[str, str], log: Path, *args: str
) -> Iterator[subprocess.Popen[bytes]]:
    """`lambo serve --session demo ARGS` holding `workspace`, with no client: its stdin stays
    open and silent, so it serves forwarders until the test ends it (or kills it)."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(CONSOLE_SCRIPTS / "lambo"), "serve", "--session", SESSION, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    try:
        published(workspace, proc.pid)
        yield proc
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        if proc.poll() is None:
            try:
                proc.wait(DEADLINE)
            except subprocess.TimeoutExpired:
                terminate(proc)


async def derive(client: Client, agent_id: str, content: str) -> str:
    """One concept derived as `agent_id`; its receipt."""
    ack = await client.call_tool(
        "lambo_derive",
        {"agent_id": agent_id, "concepts": [{"content": content, "concept_type": "entity"}]},
    )
    assert not ack.is_error, ack
    receipt: str = structured(ack)["receipt"]
    return receipt


async def settled(client: Client, agent_id: str, receipt: str) -> dict[str, Any]:
    """lambo_stats once `receipt` settled (read-your-writes through whatever serve this is)."""
    stats = await client.call_tool(
        "lambo_stats", {"agent_id": agent_id, "receipt": receipt, "wait_ms": 20_000}
    )
    assert not stats.is_error, stats
    return structured(stats)


def requests_waiting(path: str) -> int:
    """How many connections accepted at the socket `path` hold bytes their server has not
    read (iproute2's `ss`): requests written to a stopped holder."""
    listing = subprocess.run(
        ["ss", "-xnH", "src", path], capture_output=True, text=True, check=True, timeout=DEADLINE
    ).stdout
    return sum(1 for line in listing.splitlines() if int(line.split()[2]) > 0)


def refuses_oversized_then_serves(path: str) -> None:
    """The socket at `path` applies the stdio rule (M-TRN-068): a line over 4 MiB is discarded
    unread and answered -32600 with its id, and the connection serves the next request."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(DEADLINE)
        sock.connect(path)
        lines = sock.makefile("rwb")
        big = b'{"jsonrpc":"2.0","id":7,"method":"lambo_recall","params":{"q":"'
        lines.write(big + b"x" * (5 * 1024 * 1024) + b'"}}\n')
        lines.write(b'{"jsonrpc":"2.0","id":8,"method":"health_check"}\n')
        lines.flush()
        refused = lines.readline()
        assert b'"id":7' in refused
        assert b"-32600" in refused
        assert b"request too large" in refused
        assert b'"healthy":true' in lines.readline()
