"""Stdio for the MCP server: the protocol's own copies of fds 0 and 1, read and written
without blocking threads, so that serving can end while the client keeps stdin open."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.lowlevel

from lcg.interfaces.request_lines import Oversized, RequestLines

CHUNK = 64 * 1024

log = logging.getLogger("lcg.mcp")


async def read_lines(fd: int) -> AsyncIterator[bytes | Oversized]:
    """The request lines read from `fd`, each within the 4 MiB limit, or Oversized for a
    longer one, discarded unread past the limit (M-TRN-061); at end of input, a last line
    without a newline, unless it was oversized (M-TRN-067)."""
    lines = RequestLines()
    while True:
        await _ready(fd, anyio.wait_readable)
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            break
        for line in lines.feed(chunk):
            yield line
    if (cut_off := lines.discarding) is not None:
        log.warning(
            "a request line of at least %d bytes, over the 4 MiB limit, was cut off by the "
            "end of input: discarded unread, not answered",
            cut_off,
        )
    last = lines.end()
    if last is not None:
        yield last


async def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        await _ready(fd, anyio.wait_writable)
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            continue
        view = view[written:]


async def _ready(fd: int, wait: Callable[[int], Any]) -> None:
    try:
        await wait(fd)
    except OSError:
        await anyio.lowlevel.checkpoint()  # a regular file or device: always ready


@contextlib.contextmanager
def claimed_stdio() -> Iterator[tuple[int, int]]:
    """The protocol's own duplicates of fds 0 and 1; while serving, fd 0 reads /dev/null and
    fd 1 writes to stderr, so stray output never corrupts the protocol (K-MCP-015)."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    os.set_blocking(wire_in, False)
    os.set_blocking(wire_out, False)
    try:
        yield wire_in, wire_out
    finally:
        os.set_blocking(wire_in, True)
        os.set_blocking(wire_out, True)
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)
