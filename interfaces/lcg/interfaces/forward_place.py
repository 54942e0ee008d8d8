"""Where the holder of a session publishes its forwarding socket, and the checks on it.

Seed 001, "More than one client on one machine" (ADR 0066): the directory is
`$XDG_RUNTIME_DIR/lambo`, else `/tmp/lambo-<uid>` (never TMPDIR), private to its user (mode
0700, owned by us); the file name derives from the session and the store alone, so two
environments that disagree about the directory still agree about the name; the whole path
fits the 104-byte socket address limit, or forwarding is off.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_SOCKET_PATH = 104  # bytes of the whole socket path (seed 001; macOS's sun_path, the least)
SHARED_ROOT = Path("/tmp")  # noqa: S108 (the seed names it: the per-uid fallback, not TMPDIR)
NAME_DIGITS = 20  # hex digits of the name's hash: 80 bits, no two stores/sessions collide


class ForwardingOff(Exception):
    """The socket cannot be used safely or at all; the message says why (logged, and told
    to a forwarder's client)."""


@dataclass(frozen=True, slots=True)
class Place:
    """Where the holder of one session of one store listens."""

    directory: Path
    name: str

    @property
    def path(self) -> Path:
        return self.directory / self.name


def socket_directory(environ: Mapping[str, str], uid: int) -> Path:
    """`$XDG_RUNTIME_DIR/lambo` when the variable is set, else `/tmp/lambo-<uid>`
    (M-TRN-040..042): TMPDIR is never read, since clients disagree about passing it on."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    if runtime:
        return Path(runtime) / "lambo"
    return SHARED_ROOT / f"lambo-{uid}"


def socket_name(store: Path, session: str) -> str:
    """The same session of the same store always gets the same name, whatever the
    environment; another session or another store another name (M-TRN-047)."""
    key = f"{store.resolve()}\n{session}".encode()
    return f"{hashlib.sha256(key).hexdigest()[:NAME_DIGITS]}.sock"


def place_of(store: Path, session: str, environ: Mapping[str, str], uid: int) -> Place:
    return Place(socket_directory(environ, uid), socket_name(store, session))


def fits(path: Path) -> None:
    """Refuse a path over the socket address limit (M-TRN-046)."""
    size = len(os.fsencode(path))
    if size > MAX_SOCKET_PATH:
        raise ForwardingOff(
            f"the socket path {path} is {size} bytes, over the {MAX_SOCKET_PATH}-byte limit of a "
            "socket address; set XDG_RUNTIME_DIR to a shorter directory to forward"
        )


def private_problem(info: os.stat_result, uid: int) -> str | None:
    """Why a socket directory with this lstat is not private to `uid`, or None."""
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != uid:
        return f"is owned by uid {info.st_uid}, not by this user (uid {uid})"
    mode = stat.S_IMODE(info.st_mode)
    if mode != 0o700:
        return f"has mode {mode:o}, not 700"
    return None


def check_private(directory: Path, uid: int) -> None:
    """Refuse a directory not ours or not 0700 (M-TRN-044/045): a socket where another
    account can reach it would let that account write to our memory."""
    try:
        info = os.lstat(directory)
    except FileNotFoundError:
        raise ForwardingOff(f"the socket directory {directory} does not exist") from None
    problem = private_problem(info, uid)
    if problem is not None:
        raise ForwardingOff(
            f"the socket directory {directory} {problem}; remove it or point XDG_RUNTIME_DIR at "
            "a directory you own"
        )


def make_private(directory: Path, uid: int) -> None:
    """Create the directory 0700 when missing (M-TRN-043), then check it as found."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise ForwardingOff(f"cannot create the socket directory {directory}: {error}") from None
    else:
        os.chmod(directory, 0o700)  # the umask may have taken bits we asked for
    check_private(directory, uid)
