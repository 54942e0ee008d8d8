"""Issue 9, F6 on a real full disk: `knowledge_close` still shuts the service down cleanly.

The workspace lives on a 16 MiB tmpfs mounted for the test (root only; skipped, saying why,
where mounting is not allowed). After some writes the disk is filled, then the service is
asked to close: it answers, exits 0, removes its socket and logs what it could not write.
Once space returns, a new service starts healthy with every acknowledged write.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.service_process import DEADLINE, ServiceProcess, wait_until
from tests.helpers.small_disk import fill, mounted_tmpfs

pytestmark = pytest.mark.slow


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MiB tmpfs (tests/helpers/small_disk.py)."""
    with mounted_tmpfs(tmp_path / "disk", "16m") as mount:
        yield mount


def test_f6_close_on_a_full_disk_answers_exits_0_and_removes_its_socket(
    small_disk: Path,
) -> None:
    (small_disk / "ws").mkdir()
    workspace = small_disk.parent / "ws"  # its serve log lands beside it, off the small disk
    workspace.symlink_to(small_disk / "ws")
    service = ServiceProcess(workspace)
    try:
        assert service.wait_ready()["state"] == "healthy"
        with service.connect() as client:
            for index in range(5):
                client.result(
                    "knowledge_add_episode",
                    {"name": f"e{index}", "episode_body": f"a note about {index}"},
                )
            # the vector indexes follow writes on their own thread (ADR 0022): let them hold
            # all five, unsaved, so that close has index files to write on the full disk
            wait_until(lambda: client.result("knowledge_status")["vector_pending"] == 0, "vectors")
            filler = fill(small_disk)
            assert client.result("knowledge_close") == {"status": "closed"}
        code = service.proc.wait(DEADLINE)
    finally:
        service.stop()
    assert code == 0, service.log
    assert not service.socket_path.exists()
    assert "could not be released" in service.log
    filler.unlink()
    again = ServiceProcess(workspace)
    try:
        assert again.wait_ready()["state"] == "healthy"
        with again.connect() as client:
            episodes = client.result("knowledge_get_episodes", {"group_id": "liminis"})
            assert episodes["count"] == 5
            wait_until(lambda: client.result("knowledge_status")["vector_count"] == 5, "vectors")
    finally:
        again.stop()
