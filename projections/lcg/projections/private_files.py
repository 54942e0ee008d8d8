"""A workspace's files are its owner's alone: `.lcg/` is 0700, every file in it 0600 (F7).

Memory holds what people told their agents, so no other local user may read it or take the
writer lock (F8). A new workspace is created private; an existing one is tightened at open,
and each tightened path is reported so the caller can say so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
PRIVATE_UMASK = 0o077  # what the `lcg` processes create files with (set at their entry point)


def make_private(state_dir: Path) -> list[str]:
    """Create `state_dir` 0700 if missing; drop group and other bits from it and everything
    under it. Returns what was tightened, as "path: 0o755 -> 0o700" lines."""
    state_dir.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tightened: list[str] = []
    _tighten(state_dir, DIR_MODE, tightened)
    for root, dirs, files in os.walk(state_dir):
        for name in dirs:
            _tighten(Path(root) / name, DIR_MODE, tightened)
        for name in files:
            _tighten(Path(root) / name, FILE_MODE, tightened)
    return tightened


def _tighten(path: Path, private: int, tightened: list[str]) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:  # a SQLite sidecar that went away meanwhile
        return
    if stat.S_ISLNK(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        return  # a socket is made 0600 when bound; a link is its target's business
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        try:
            path.chmod(mode & private)
        except FileNotFoundError:  # another process's SQLite journal, gone meanwhile
            return
        tightened.append(f"{path}: {oct(mode)} -> {oct(mode & private)}")
