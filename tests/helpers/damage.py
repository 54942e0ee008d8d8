"""Ways to damage a file on disk, as a failing disk or a stray write would (fault injection)."""

from __future__ import annotations

import os
from pathlib import Path


def truncate_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def overwrite(path: Path, offset: int, data: bytes) -> None:
    with path.open("r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def corrupt_header(path: Path) -> None:
    """The first 16 bytes (SQLite's magic string, our checksum header) replaced."""
    overwrite(path, 0, b"\x00garbage-garbage"[:16])


def overwrite_middle(path: Path, length: int = 64) -> None:
    """`length` bytes in the middle of the file replaced by a pattern they cannot hold."""
    size = path.stat().st_size
    overwrite(
        path, max(0, size // 2 - length // 2), bytes((i * 37 + 11) % 256 for i in range(length))
    )


def overwrite_text(path: Path, text: str, replacement: bytes) -> int:
    """Every occurrence of `text`'s UTF-8 bytes gets `replacement` at its start; how many."""
    data = path.read_bytes()
    needle = text.encode("utf-8")
    found = 0
    start = data.find(needle)
    while start >= 0:
        overwrite(path, start, replacement)
        found += 1
        start = data.find(needle, start + 1)
    return found


def damaged_copies(path: Path) -> list[Path]:
    """The files a damaged `path` was set aside as."""
    copies = path.parent.glob(f"{path.name}.damaged-*")
    return sorted(p for p in copies if not p.name.endswith(("-wal", "-shm", "-journal")))
