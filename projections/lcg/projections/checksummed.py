"""Checkpoint files that carry their own sha256 and the graph database generation they follow.

Layout: `LCGSUM1\\n`, the sha256 of everything after it, a 2-byte length and the generation
(the graph database's `text_meta` generation: a file made from another graph.sqlite is
stale, not damaged), then the payload (a FAISS index, an npz). Written to a temp file,
fsynced and renamed, so a reader sees the old file or the new one, whole.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from lcg.projections.own_files import open_own

MAGIC = b"LCGSUM1\n"
_DIGEST = 32


class ChecksumMismatch(Exception):
    """The file's bytes are not the bytes written: it is damaged."""


class NotChecksummed(Exception):
    """The file was written before checksums (or is not ours)."""


@dataclass(frozen=True, slots=True)
class Sealed:
    generation: str
    payload: bytes


def write(path: Path, generation: str, payload: bytes | memoryview) -> None:
    """Write atomically: temp file, fsync, rename."""
    tag = generation.encode("utf-8")
    body_head = struct.pack("<H", len(tag)) + tag
    digest = hashlib.sha256(body_head)
    digest.update(payload)
    temporary = path.with_name(path.name + ".tmp")
    # 0600 whatever the process's umask: memory is its owner's alone (issue 9, F7)
    # never through a link planted at the temp name (issue 24): O_NOFOLLOW
    descriptor = open_own(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "write")
    os.fchmod(descriptor, 0o600)  # an old temp file left by a crash keeps its mode otherwise
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(MAGIC)
        handle.write(digest.digest())
        handle.write(body_head)
        handle.write(payload)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def read(path: Path) -> Sealed:
    """The generation and payload; ChecksumMismatch if a byte changed, NotChecksummed if the
    file has no checksum header."""
    data = path.read_bytes()
    if not data.startswith(MAGIC):
        raise NotChecksummed(f"{path} has no checksum header")
    start = len(MAGIC)
    stored, body = data[start : start + _DIGEST], memoryview(data)[start + _DIGEST :]
    if len(stored) != _DIGEST or hashlib.sha256(body).digest() != stored:
        raise ChecksumMismatch(f"{path}: sha256 mismatch (the file changed after it was written)")
    (length,) = struct.unpack_from("<H", body, 0)
    generation = bytes(body[2 : 2 + length]).decode("utf-8")
    return Sealed(generation, bytes(body[2 + length :]))
