"""Where a holder publishes its forwarding socket, and the checks on the directory (ADR 0066)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lcg.interfaces.forward_place import (
    ForwardingOff,
    check_private,
    fits,
    make_private,
    place_of,
    private_problem,
    socket_directory,
    socket_name,
)


def _stat(mode: int, uid: int) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, uid, 0, 0, 0, 0))


def test_m_trn_040_with_xdg_runtime_dir_the_directory_is_its_lambo() -> None:
    assert socket_directory({"XDG_RUNTIME_DIR": "/run/user/7"}, 7) == Path("/run/user/7/lambo")


def test_m_trn_041_without_xdg_runtime_dir_the_directory_is_tmp_lambo_uid() -> None:
    assert socket_directory({}, 1234) == Path("/tmp/lambo-1234")  # noqa: S108
    assert socket_directory({"XDG_RUNTIME_DIR": ""}, 5) == Path("/tmp/lambo-5")  # noqa: S108


def test_m_trn_042_tmpdir_is_never_consulted() -> None:
    """With M-TRN-040/041, M-CFG-011: XDG_RUNTIME_DIR, else /tmp/lambo-<uid>, never TMPDIR."""
    assert socket_directory({"TMPDIR": "/elsewhere"}, 9) == socket_directory({}, 9)
    with_both = {"TMPDIR": "/elsewhere", "XDG_RUNTIME_DIR": "/run/user/9"}
    assert socket_directory(with_both, 9) == Path("/run/user/9/lambo")


def test_m_trn_047_the_name_comes_from_session_and_store_alone(tmp_path: Path) -> None:
    store, other = tmp_path / "a", tmp_path / "b"
    name = socket_name(store, "demo")
    assert name == socket_name(store, "demo")
    assert name == socket_name(tmp_path / "x" / ".." / "a", "demo")  # the store as resolved
    assert len({name, socket_name(store, "other"), socket_name(other, "demo")}) == 3
    one = place_of(store, "demo", {"XDG_RUNTIME_DIR": "/run/user/1"}, 1)
    two = place_of(store, "demo", {}, 1)
    assert one.name == two.name == name
    assert one.directory != two.directory


def test_m_trn_046_a_path_over_104_bytes_turns_forwarding_off() -> None:
    """Also M-LIM-045."""
    fits(Path("/" + "d" * 99 + "/x.s"))  # 104 bytes
    with pytest.raises(ForwardingOff, match="105 bytes, over the 104-byte limit"):
        fits(Path("/" + "d" * 100 + "/x.s"))


def test_m_trn_044_045_only_a_directory_of_ours_with_mode_700_is_private() -> None:
    assert private_problem(_stat(stat.S_IFDIR | 0o700, 10), 10) is None
    assert private_problem(_stat(stat.S_IFDIR | 0o755, 10), 10) == "has mode 755, not 700"
    assert private_problem(_stat(stat.S_IFDIR | 0o700, 11), 10) == (
        "is owned by uid 11, not by this user (uid 10)"
    )
    assert private_problem(_stat(stat.S_IFLNK | 0o777, 10), 10) == "is not a directory"


def test_m_trn_043_a_missing_directory_is_created_0700(tmp_path: Path) -> None:
    directory = tmp_path / "lambo"
    previous = os.umask(0o022)
    try:
        make_private(directory, os.geteuid())
    finally:
        os.umask(previous)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    make_private(directory, os.geteuid())  # found as it should be: accepted


def test_m_trn_044_an_open_directory_or_a_link_is_refused_naming_the_fix(tmp_path: Path) -> None:
    directory = tmp_path / "lambo"
    directory.mkdir(mode=0o700)
    directory.chmod(0o755)
    with pytest.raises(ForwardingOff, match="has mode 755, not 700; remove it or point"):
        make_private(directory, os.geteuid())
    link = tmp_path / "link"
    link.symlink_to(directory)
    with pytest.raises(ForwardingOff, match="is not a directory"):
        check_private(link, os.geteuid())
