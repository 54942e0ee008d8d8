"""Fault injection, issue 24 item 3: a workspace another local user prepared is refused.

A `.lcg/` or a file in it that is a symbolic link or belongs to another uid stops `lcg`
(a writer, a read-only `lcg status`, `lcg serve`) with one line naming the file and why and
exit 7, before anything is opened, created, truncated or chmod-ed: the link's target is left
as it was (ADR 0048). Real console-script processes; "another user" is uid 65534, given the
files with chown (root can; skipped, saying why, elsewhere).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from lcg.interfaces.exit_codes import EXIT_STORAGE
from tests.helpers.console_script import lcg

pytestmark = pytest.mark.slow
NOBODY = 65534
PRECIOUS = "a file of another user that lcg must not touch\n"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root here")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    workspace = tmp_path_factory.mktemp("seed") / "ws"
    written = lcg(workspace, "add-episode", "first", "what was said first", "--group", "g")
    assert written.returncode == 0, written.stderr
    return workspace


@pytest.fixture
def workspace(seeded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "ws"
    shutil.copytree(seeded, copy, symlinks=True)
    return copy


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    """A file outside the workspace, standing for /etc/... of the issue."""
    path = tmp_path / "precious.txt"
    path.write_text(PRECIOUS)
    return path


def refused_naming(result: subprocess.CompletedProcess[str], path: Path, why: str) -> str:
    """Exit 7, nothing on stdout, and one line on stderr naming `path` and `why`."""
    assert result.returncode == EXIT_STORAGE, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0]
    assert why in lines[0]
    return lines[0]


def add_episode(workspace: Path) -> subprocess.CompletedProcess[str]:
    return lcg(workspace, "add-episode", "second", "what was said next", "--group", "g")


def test_a_writer_lock_linked_outside_is_refused_and_its_target_untouched(
    workspace: Path, precious: Path
) -> None:
    lock = workspace / ".lcg" / "writer.lock"
    lock.unlink()
    lock.symlink_to(precious)
    line = refused_naming(add_episode(workspace), lock, "is a symbolic link")
    assert str(precious) in line  # says where the link points
    assert precious.read_text() == PRECIOUS
    assert stat.S_IMODE(precious.stat().st_mode) == 0o644  # nor chmod-ed
    assert lock.is_symlink()


def test_a_wal_linked_to_a_path_another_user_chose_is_never_created_there(
    tmp_path: Path,
) -> None:
    workspace, chosen = tmp_path / "ws", tmp_path / "chosen" / "wal.sqlite"
    chosen.parent.mkdir()
    (workspace / ".lcg").mkdir(parents=True, mode=0o700)
    wal = workspace / ".lcg" / "wal.sqlite"
    wal.symlink_to(chosen)
    refused_naming(add_episode(workspace), wal, "is a symbolic link")
    assert list(chosen.parent.iterdir()) == []


def test_a_linked_state_directory_is_refused_and_its_target_left_alone(
    seeded: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(seeded / ".lcg", elsewhere)
    elsewhere.chmod(0o755)
    before = sorted(path.name for path in elsewhere.iterdir())
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / ".lcg").symlink_to(elsewhere)
    refused_naming(add_episode(workspace), workspace / ".lcg", "is a symbolic link")
    refused_naming(lcg(workspace, "status"), workspace / ".lcg", "is a symbolic link")
    assert sorted(path.name for path in elsewhere.iterdir()) == before
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


@needs_root
def test_a_state_directory_of_another_user_is_neither_chmod_ed_nor_used(workspace: Path) -> None:
    state_dir = workspace / ".lcg"
    state_dir.chmod(0o755)
    os.chown(state_dir, NOBODY, NOBODY)
    before = sorted(path.name for path in state_dir.iterdir())
    why = f"belongs to uid {NOBODY}"
    refused_naming(lcg(workspace, "status"), state_dir, why)
    refused_naming(add_episode(workspace), state_dir, why)
    assert stat.S_IMODE(state_dir.stat().st_mode) == 0o755
    assert state_dir.stat().st_uid == NOBODY
    assert sorted(path.name for path in state_dir.iterdir()) == before


@needs_root
@pytest.mark.parametrize("name", ["graph.sqlite", "wal.sqlite", "writer.lock"])
def test_a_file_of_another_user_in_the_state_directory_is_refused(
    workspace: Path, name: str
) -> None:
    path = workspace / ".lcg" / name
    os.chown(path, NOBODY, NOBODY)
    refused_naming(lcg(workspace, "status"), path, f"belongs to uid {NOBODY}")
    assert path.stat().st_uid == NOBODY


def test_serve_refuses_a_planted_link_before_it_binds_its_socket(
    workspace: Path, precious: Path
) -> None:
    lock = workspace / ".lcg" / "writer.lock"
    lock.unlink()
    lock.symlink_to(precious)
    refused_naming(lcg(workspace, "serve"), lock, "is a symbolic link")
    assert not (workspace / ".lcg" / "service.sock").exists()
    assert precious.read_text() == PRECIOUS
