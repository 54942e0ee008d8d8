"""A real full disk for the fault-injection tests: a small tmpfs, and a file that fills it."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def mounted_tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of `size` at `mount` (unmounted afterwards); the test is skipped, saying
    why, where this process may not mount (not root, no mount namespace)."""
    mount.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"a full disk needs a small tmpfs, and mount was refused: {done.stderr}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write zeros until the filesystem refuses (a real ENOSPC for whatever comes next);
    returns the file, whose removal gives the space back."""
    filler = disk / "filler"
    # unbuffered: a buffered file keeps the tail of a short last write and raises ENOSPC again
    # when it is closed, whenever the free space is not a multiple of the block written
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                os.fsync(out.fileno())
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
    return filler
