"""Fault injection on a real `lcg serve` (issue 9, F2/F3): delete, truncate or overwrite bytes in
each file that can be rebuilt, start the service again, and prove that it comes up healthy,
that every acknowledged write is visible, and that each damaged file was set aside (never
deleted), rebuilt and named in knowledge_status (ADR 0020).

One seeded workspace (written through the socket, closed with SIGTERM) is copied per case.
Nothing sleeps: readiness and repairs are waited for by polling with a deadline.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.config import Settings
from tests.helpers import damage
from tests.helpers.service_process import RpcClient, ServiceProcess, wait_until

pytestmark = pytest.mark.slow

COUNT = 12
PAGE = 4096  # SQLite's page size here: page 2 starts a b-tree page


@dataclass(frozen=True)
class Seeded:
    workspace: Path
    acked: dict[str, str]  # uuid -> name of every acknowledged write


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    workspace = tmp_path_factory.mktemp("seed") / "ws"
    service = ServiceProcess(workspace)
    acked: dict[str, str] = {}
    try:
        assert service.wait_ready()["healthy"] is True, service.log
        with service.connect() as client:
            for n in range(COUNT):
                entity = client.result(
                    "knowledge_assert_entity",
                    {
                        "name": f"entity {n}",
                        "summary": f"entity {n} is about topic {n}",
                        "attributes": {"note": f"attribute of entity {n:03}"},
                    },
                )
                acked[entity["entity_uuid"]] = f"entity {n}"
                episode = client.result(
                    "knowledge_add_episode",
                    {"name": f"episode {n}", "episode_body": f"notes on topic {n}, day {n}."},
                )
                acked[episode["episode_uuid"]] = f"episode {n}"
    finally:
        assert service.stop() == 0, service.log
    return Seeded(workspace, acked)


@pytest.fixture
def copy(seeded: Seeded, tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    shutil.copytree(seeded.workspace, workspace)
    return workspace


def _faiss(settings: Settings) -> Path:
    (path,) = settings.vectors_dir.rglob("*-entity.faiss")
    return path


FILES: dict[str, Callable[[Settings], Path]] = {
    "graph": lambda s: s.graph_path,
    "embeddings": lambda s: s.embeddings_path,
    "faiss": _faiss,
    "text-scorer": lambda s: s.text_scorer_path,
}


def _overwrite_bytes(path: Path) -> None:
    """64 bytes overwritten: for SQLite files the start of page 2 (a b-tree page header, what
    quick_check reads), elsewhere the middle of the file (under the checksum)."""
    if path.suffix == ".sqlite":
        damage.overwrite(path, PAGE, bytes(range(64)))
    else:
        damage.overwrite_middle(path, 64)


DAMAGES: dict[str, Callable[[Path], None]] = {
    "deleted": lambda path: path.unlink(),
    "half-truncated": damage.truncate_half,
    "bytes-overwritten": _overwrite_bytes,
}


def _visible(client: RpcClient) -> dict[str, str]:
    nodes = client.result("knowledge_list_entities", {"num_results": 1000})["nodes"]
    episodes = client.result("knowledge_get_episodes", {"last_n": 1000})["episodes"]
    return {row["uuid"]: row["name"] for row in [*nodes, *episodes]}


@pytest.mark.parametrize("how", list(DAMAGES))
@pytest.mark.parametrize("which", list(FILES))
def test_f2_f3_a_damaged_derivable_file_is_set_aside_rebuilt_and_named(
    seeded: Seeded, copy: Path, which: str, how: str
) -> None:
    settings = Settings(copy)
    path = FILES[which](settings)
    DAMAGES[how](path)
    service = ServiceProcess(copy)
    try:
        assert service.wait_ready()["healthy"] is True, service.log
        with service.connect() as client:
            assert _visible(client) == seeded.acked
            hits = client.result("knowledge_find_entities", {"query": "topic 7"})
            assert "entity 7" in [node["name"] for node in hits["nodes"]]
            repaired = client.result("knowledge_status")["repaired"]
    finally:
        assert service.stop() == 0, service.log
    if how == "deleted":
        assert repaired == []  # nothing was damaged; the file is simply built again
    else:
        (repair,) = repaired
        assert repair["file"] == str(path)
        assert path.name in service.log
        assert repair["set_aside_as"] in [str(p) for p in damage.damaged_copies(path)]
    assert path.exists()  # rebuilt (FAISS and the scorer are written at close at the latest)


def test_f3_a_served_read_that_meets_a_damaged_row_rebuilds_the_graph_while_serving(
    seeded: Seeded, copy: Path
) -> None:
    """Bytes of one row overwritten (invalid UTF-8): start-up cannot see it (quick_check reads
    pages, not text), so the first read that meets it answers an error naming graph.sqlite, the
    service stops serving the damaged file at once and rebuilds it from the WAL, and comes back
    healthy with every acknowledged write and the row as written."""
    settings = Settings(copy)
    assert damage.overwrite_text(settings.graph_path, "attribute of entity 003", b"\xff\xfe") == 1
    service = ServiceProcess(copy)
    try:
        assert service.wait_ready()["healthy"] is True, service.log
        with service.connect() as client:
            frame = client.call("knowledge_list_entities", {"num_results": 1000})
            assert "graph.sqlite" in frame["error"]["message"], frame
            wait_until(lambda: _healthy(client), "the service to rebuild graph.sqlite")
            assert _visible(client) == seeded.acked
            nodes = client.result("knowledge_list_entities", {"num_results": 1000})["nodes"]
            (entity,) = [node for node in nodes if node["name"] == "entity 3"]
            assert "attribute of entity 003" in entity["attributes"]
            (repair,) = client.result("knowledge_status")["repaired"]
            assert repair["file"] == str(settings.graph_path)
    finally:
        assert service.stop() == 0, service.log


def _healthy(client: RpcClient) -> bool:
    health: dict[str, Any] = client.result("health_check")
    return bool(health["healthy"])
