"""A workspace's files are its user's own: never another user's, never reached through a link.

Issue 24, item 3 (docs/adr/0048-own-files-and-dump-directories.md): a workspace prepared by
another local user must not be adopted. A `.lcg/` or a file in it that is a symbolic link or
belongs to another uid is refused before anything is opened, created, truncated or chmod-ed,
with a `StorageFailure` naming the file and why (CLI exit 7, JSON-RPC -32002). Files opened
with the os module are opened with O_NOFOLLOW; SQLite cannot be told not to follow a link,
so its files (and their -wal/-shm sidecars) are checked with lstat right before it opens them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lcg.projections.faults import StorageFailure

SQLITE_SIDECARS = ("", "-wal", "-shm", "-journal")
_NOTE = (
    "lcg uses only files its own user owns and never follows a symbolic link in its "
    "workspace directory; nothing was opened or changed: if the file is not yours, move it "
    "away (lcg makes its own)"
)


class ForeignFile(StorageFailure):
    """A workspace file that is a symbolic link or belongs to another user: refused."""

    def __init__(self, path: Path, action: str, why: str) -> None:
        super().__init__(path, action, why, note=_NOTE)
        self.why = why


def refuse_foreign(path: Path, action: str, *, directory: bool = False) -> bool:
    """Raise ForeignFile if `path` is a symbolic link, not owned by this process's user, or
    (with `directory`) not a directory. Returns whether it exists."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    _check(path, info, action, directory=directory)
    return True


def refuse_foreign_sqlite(path: Path, action: str) -> None:
    """An SQLite database and its sidecars, checked before sqlite3 opens (or creates) them."""
    for suffix in SQLITE_SIDECARS:
        refuse_foreign(path.with_name(path.name + suffix), action)


def refuse_foreign_tree(state_dir: Path, action: str = "open the workspace file") -> None:
    """`state_dir` and everything under it: no link, nothing of another user. Links are not
    followed (a linked directory is refused, never entered)."""
    if not refuse_foreign(state_dir, action, directory=True):
        return
    for root, dirs, files in os.walk(state_dir):  # a directory gone meanwhile: skipped
        for name in (*dirs, *files):
            refuse_foreign(Path(root) / name, action)


def open_own(path: Path, flags: int, action: str, mode: int = 0o600) -> int:
    """os.open with O_NOFOLLOW (a link is refused, its target untouched) and O_CLOEXEC; a
    file of another user is closed again and refused before anything reads or writes it.
    O_TRUNC is applied only after that check, so another user's file is never emptied."""
    truncate = bool(flags & os.O_TRUNC)
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError:
        if path.is_symlink():  # ELOOP, or EEXIST with O_CREAT|O_EXCL
            raise ForeignFile(path, action, _link(path)) from None
        raise  # the disk's own answer (read-only, full) is the caller's to name
    try:
        _check(path, os.fstat(fd), action, directory=False)
        if truncate:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check(path: Path, info: os.stat_result, action: str, *, directory: bool) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise ForeignFile(path, action, _link(path))
    euid = os.geteuid()
    if info.st_uid != euid:
        why = f"it belongs to uid {info.st_uid}, not to this process's user (uid {euid})"
        raise ForeignFile(path, action, why)
    if directory and not stat.S_ISDIR(info.st_mode):
        raise ForeignFile(path, action, "it is not a directory")


def _link(path: Path) -> str:
    try:
        return f"it is a symbolic link (to {os.readlink(path)})"
    except OSError:
        return "it is a symbolic link"
