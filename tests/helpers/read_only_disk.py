"""A real disk that turns read-only, for the issue-9 tests: ext4 on a loop device.

A tmpfs or a bind mount cannot be remounted read-only while a process holds a file open for
writing (the kernel answers EBUSY), and `chattr +i` does not stop writes through descriptors
already open, so neither can take a running service's files away from it. ext4 mounted with
`errors=remount-ro` can: writing to `/sys/fs/ext4/<device>/trigger_fs_error` records a file
system error, aborts the journal and switches the mounted file system to read-only at once;
every later write, through any descriptor, fails with EROFS, as on a disk failing under a
running service. Like a power loss, the aborted journal drops whatever was not yet synced.
After unmounting, e2fsck clears the recorded error and the disk mounts writable again.
"""

from __future__ import annotations

import errno
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SIZE = 64 * 1024 * 1024


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False)


class LoopDisk:
    """An ext4 image file mounted at `mount` through a loop device."""

    def __init__(self, image: Path, mount: Path) -> None:
        self.image = image
        self.mount = mount

    def attach(self, *, read_only: bool = False) -> subprocess.CompletedProcess[str]:
        options = "loop,errors=remount-ro" + (",ro" if read_only else "")
        return _run("mount", "-o", options, str(self.image), str(self.mount))

    def remount(self, *, read_only: bool) -> None:
        """Switch a quiet disk (no file open for writing) to read-only or back."""
        done = _run("mount", "-o", "remount," + ("ro" if read_only else "rw"), str(self.mount))
        assert done.returncode == 0, done.stderr

    def fail_read_only(self) -> None:
        """Make the live file system read-only under whoever has files open on it (the test
        is skipped, saying why, where the kernel has no error trigger for ext4)."""
        device = _run("findmnt", "-n", "-o", "SOURCE", str(self.mount)).stdout.strip()
        trigger = Path("/sys/fs/ext4") / Path(device).name / "trigger_fs_error"
        if not device or not trigger.exists():
            pytest.skip(f"a live read-only switch needs ext4's {trigger}, which is missing")
        trigger.write_text("lcg test: the disk turns read-only under a running service\n")
        # every write fails now, even through files already open
        with pytest.raises(OSError, match="Read-only file system") as refused:
            (self.mount / "probe").touch()
        assert refused.value.errno == errno.EROFS, refused.value

    def detach(self) -> None:
        if _run("umount", str(self.mount)).returncode != 0:
            _run("umount", "-l", str(self.mount))

    def repair(self) -> None:
        """Unmount, let e2fsck clear the error the trigger recorded, mount writable again."""
        self.detach()
        checked = _run("e2fsck", "-f", "-y", str(self.image))
        assert checked.returncode in (0, 1), checked.stdout + checked.stderr  # 1: corrected
        mounted = self.attach()
        assert mounted.returncode == 0, mounted.stderr


@contextmanager
def loop_disk(directory: Path) -> Iterator[LoopDisk]:
    """A 64 MiB ext4 disk mounted at `directory`/disk (unmounted afterwards); the test is
    skipped, saying why, where the tools are missing or this process may not mount."""
    for tool in ("mkfs.ext4", "e2fsck", "findmnt"):
        if shutil.which(tool) is None:
            pytest.skip(f"a read-only disk needs {tool}, which is not installed")
    disk = LoopDisk(directory / "disk.ext4", directory / "disk")
    disk.mount.mkdir(parents=True, exist_ok=True)
    with disk.image.open("wb") as image:
        image.truncate(SIZE)
    made = _run("mkfs.ext4", "-q", "-F", str(disk.image))
    if made.returncode != 0:
        pytest.skip(f"a read-only disk needs an ext4 image, and mkfs.ext4 failed: {made.stderr}")
    mounted = disk.attach()
    if mounted.returncode != 0:
        pytest.skip(f"a read-only disk needs a loop mount, and mount was refused: {mounted.stderr}")
    try:
        yield disk
    finally:
        disk.detach()
