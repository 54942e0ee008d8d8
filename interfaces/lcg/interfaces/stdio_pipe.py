"""Stdio for the MCP server: the protocol's own copies of fds 0 and 1, read and written
without blocking threads, so that serving can end while the client keeps stdin open."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import anyio
import anyio.lowlevel

CHUNK = 64 * 1024


async def read_lines(fd: int) -> AsyncIterator[bytes]:
    buffer = bytearray()
    while True:
        await _ready(fd, anyio.wait_readable)
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            continue
        if not chunk:
            break
        buffer += chunk
        while (newline := buffer.find(b"\n")) >= 0:
            yield bytes(buffer[:newline])
            del buffer[: newline + 1]
    if buffer.strip():
        yield bytes(buffer)


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
