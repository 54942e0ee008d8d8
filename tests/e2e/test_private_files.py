"""Issue 9, F7 and F8: memory is readable by its owner only, and no other user can lock it.

`.lcg/` is 0700 and every file in it 0600 (the WAL, the graph, the embedding cache, their
SQLite sidecars, the index files, the lock); an older workspace is tightened at open, and
the command says so. Real console-script processes; the other user is `nobody`, reached by a
child process that drops to its uid (needs root; skipped, saying why, elsewhere).
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.console_script import lcg, said

pytestmark = pytest.mark.slow
NOBODY = 65534


def modes(state_dir: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(state_dir.stat().st_mode)}
    for path in state_dir.rglob("*"):
        found[str(path.relative_to(state_dir))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def add_episode(workspace: Path, name: str) -> subprocess.CompletedProcess[str]:
    result = lcg(workspace, "add-episode", name, f"what {name} said", "--group", "g")
    assert result.returncode == 0, result.stderr
    return result


def test_f7_a_new_workspace_and_every_file_in_it_are_private(tmp_path: Path) -> None:
    add_episode(tmp_path, "first")
    found = modes(tmp_path / ".lcg")
    assert found["."] == 0o700
    assert {"wal.sqlite", "graph.sqlite", "embeddings.sqlite", "writer.lock"} <= set(found)
    assert any(name.endswith(".faiss") for name in found)
    leaky = {name: oct(mode) for name, mode in found.items() if mode & 0o077}
    assert leaky == {}


def test_f7_an_older_workspace_is_tightened_at_open_and_the_command_says_so(
    tmp_path: Path,
) -> None:
    add_episode(tmp_path, "first")
    state_dir = tmp_path / ".lcg"
    state_dir.chmod(0o755)
    for path in state_dir.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    result = add_episode(tmp_path, "second")
    assert "tightened the permissions of" in said(result.stderr)
    assert "wal.sqlite: 0o644 -> 0o600" in said(result.stderr)
    leaky = {name: oct(mode) for name, mode in modes(state_dir).items() if mode & 0o077}
    assert leaky == {}
    episodes = lcg(tmp_path, "call", "knowledge_get_episodes", '{"group_id": "g"}')
    assert episodes.returncode == 0, episodes.stderr
    assert '"second"' in episodes.stdout


ATTEMPT = """
import errno, fcntl, os, sys
os.setgid({uid}); os.setuid({uid})
codes = []
for name, flags in (("writer.lock", os.O_RDONLY), ("wal.sqlite", os.O_RDONLY)):
    try:
        fd = os.open(os.path.join(sys.argv[1], name), flags)
    except OSError as error:
        codes.append(error.errno)
        continue
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    codes.append(0)
print(",".join(map(str, codes)))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="becoming another local user needs root here")
def test_f8_another_local_user_can_neither_read_memory_nor_take_the_writer_lock(
    tmp_path: Path,
) -> None:
    tmp_path.chmod(0o755)  # the other user may reach the workspace, not what is inside .lcg
    add_episode(tmp_path, "first")
    state_dir = tmp_path / ".lcg"
    other = subprocess.run(
        [sys.executable, "-c", ATTEMPT.format(uid=NOBODY), str(state_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == f"{errno.EACCES},{errno.EACCES}"
    add_episode(tmp_path, "second")  # the owner is not locked out
