"""Benchmark one oversized request line over MCP stdio: how long until the server answers it
and the request after it, and the server's peak memory (issue 24 item 7, ADR 0050).

Run from the repository root:

    .venv/bin/python -m bench.bench_big_line [--mb 60] [--source CHECKOUT] [--out FILE]

`--source` runs the server from another checkout's folders (for example a `git worktree` of
an older commit) with this venv's dependencies, so the same line can be timed before and
after a change. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.checkout import checkout_env

SERVE = "from lcg.interfaces.cli import main; main()"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


def _line(frame: dict[str, Any]) -> bytes:
    return json.dumps(frame).encode() + b"\n"


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def _peak_rss_kib(pid: int) -> int:
    for status in Path(f"/proc/{pid}/status").read_text().splitlines():
        if status.startswith("VmHWM:"):
            return int(status.split()[1])
    return 0


class _Frames:
    """The server's stdout, split into frames, each read waiting at most `deadline` s."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def until(self, wanted: object, deadline: float) -> dict[str, Any]:
        end = time.monotonic() + deadline
        with selectors.DefaultSelector() as selector:
            selector.register(self.fd, selectors.EVENT_READ)
            while True:
                while b"\n" in self.buffer:
                    line, self.buffer = self.buffer.split(b"\n", 1)
                    frame: dict[str, Any] = json.loads(line)
                    if frame.get("id") == wanted:
                        return frame
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to id {wanted} within {deadline} s")
                if selector.select(left):
                    chunk = os.read(self.fd, 65536)
                    if not chunk:
                        raise EOFError("the server closed stdout")
                    self.buffer += chunk


def measure(size_mb: int, source: Path | None, deadline: float) -> dict[str, Any]:
    body = "q" * (size_mb * 1_000_000)
    big = _line(_call(2, "knowledge_add_episode", {"name": "big", "episode_body": body}))
    after = _line(_call(3, "knowledge_get_episodes", {}))
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--mcp-stdio", "-w", str(Path(tmp) / "ws")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=checkout_env(source),
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        try:
            frames = _Frames(proc.stdout.fileno())
            proc.stdin.write(_line(INITIALIZE))
            proc.stdin.flush()
            frames.until(1, deadline)
            rss_before = _peak_rss_kib(proc.pid)
            started = time.perf_counter()
            proc.stdin.write(big + after)
            proc.stdin.flush()
            written = time.perf_counter() - started
            answer = frames.until(2, deadline)
            answered = time.perf_counter() - started
            frames.until(3, deadline)
            next_answered = time.perf_counter() - started
            rss_after = _peak_rss_kib(proc.pid)
        finally:
            proc.kill()
            proc.wait()
    error = answer.get("error") or (answer.get("result") or {}).get("structuredContent") or {}
    return {
        "line_bytes": len(big) - 1,
        "written_s": written,
        "answered_s": answered,
        "next_answered_s": next_answered,
        "peak_rss_mib_before": rss_before / 1024,
        "peak_rss_mib_after": rss_after / 1024,
        "answer": f"{error.get('code')} {str(error.get('message'))[:60]}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=60, help="the line's body, in MB")
    parser.add_argument("--source", type=Path, help="run the server from this checkout")
    parser.add_argument("--deadline", type=float, default=300.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = measure(args.mb, args.source, args.deadline)
    label = "this checkout" if args.source is None else f"--source {args.source.name}"
    row = (
        f"| {label} | {result['line_bytes']:,} | {result['answered_s']:.2f} s | "
        f"{result['next_answered_s']:.2f} s | {result['peak_rss_mib_before']:.0f} -> "
        f"{result['peak_rss_mib_after']:.0f} MiB | {result['answer']} |"
    )
    header = (
        f"Python {platform.python_version()}\n\n"
        "| server | line bytes | line answered | next request answered | peak RSS "
        "(before -> after the line) | answer |\n|---|---:|---:|---:|---:|---|"
    )
    print(header)
    print(row)
    print(json.dumps(result), file=sys.stderr)
    if args.out is not None:
        args.out.write_text(header + "\n" + row + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
