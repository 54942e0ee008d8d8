"""The workspace on the PostgreSQL log when the server fails it (issue 28, Faults; ADR 0073).
The real server: the serving node's connections are killed with `pg_terminate_backend` by a
thread while another writes, and "down" is the test's database refusing connections
(`ALLOW_CONNECTIONS false`): the shared server itself is never stopped.

No acknowledged write is lost (it is in the log and in the projections, of this node and of a
fresh one); a write that fails is refused with the storage error (JSON-RPC STORAGE_ERROR);
reads go on from the local projections; status says the log is unreachable while it is; the
node takes writes again by itself once connections come back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from lcg.interfaces import operations
from lcg.interfaces import service as service_module
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import STORAGE_ERROR, error_from_exception
from lcg.interfaces.service import Service
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import StorageFailure
from lcg.projections.wal.postgres import describe
from tests.conftest import EMBEDDER, make_call, make_workspace
from tests.helpers.postgres import admin

pytestmark = pytest.mark.postgres


def kill_backends(url: str) -> int:
    """Terminate every connection to the test's database but this one; how many."""
    dbname = conninfo_to_dict(url)["dbname"]
    with admin() as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s"
            " AND pid <> pg_backend_pid()",
            (dbname,),
        ).fetchall()
    return sum(1 for row in rows if row[0])


@contextmanager
def database_down(url: str) -> Iterator[None]:
    """The test's database refuses new connections and loses its open ones, until the end."""
    dbname = conninfo_to_dict(url)["dbname"]
    with admin() as conn:
        conn.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS false')
    kill_backends(url)
    try:
        yield
    finally:
        with admin() as conn:
            conn.execute(f'ALTER DATABASE "{dbname}" ALLOW_CONNECTIONS true')


def episode_names(app: App, group: str) -> set[str]:
    found = operations.dispatch(app, "knowledge_get_episodes", {"group_id": group, "last_n": 500})
    return {e["name"] for e in found["episodes"]}


def test_killed_connections_lose_no_acked_write_and_refuse_the_rest_as_storage_errors(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    settings = replace(Settings(workspace=tmp_path / "node"), store_url=pg_url)
    acked: list[str] = []
    refused: list[BaseException] = []
    kills: list[int] = []
    done = threading.Event()

    def killer() -> None:  # a kill every 150 ms: between them the pool reconnects
        for _ in range(20):
            time.sleep(0.15)
            kills.append(kill_backends(pg_url))
        done.set()

    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        n = 0
        try:
            while not done.is_set():
                name = f"e{n}"
                n += 1
                params = {"name": name, "episode_body": f"body {n}", "group_id": "g"}
                try:
                    operations.dispatch(app, "knowledge_add_episode", params)
                except StorageFailure as error:
                    refused.append(error)
                else:
                    acked.append(name)
        finally:
            thread.join()
        assert sum(kills) > 0
        assert acked
        for failure in refused:
            assert describe(pg_url) in str(failure)
            assert error_from_exception(failure).code == STORAGE_ERROR
        # the node writes again by itself, and every acknowledged write is in its projections
        operations.dispatch(
            app, "knowledge_add_episode", {"name": "after", "episode_body": "x", "group_id": "g"}
        )
        here = episode_names(app, "g")
        assert set(acked) | {"after"} <= here
        assert not make_call(app)("knowledge_status")["degraded"]
    fresh = replace(Settings(workspace=tmp_path / "fresh"), store_url=pg_url)
    with make_workspace(fresh, embedder) as replayed:  # and in the log
        assert episode_names(App(replayed), "g") == here


def test_a_store_that_is_down_refuses_writes_serves_reads_says_so_and_comes_back(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    settings = replace(Settings(workspace=tmp_path), store_url=pg_url)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        call = make_call(app)
        call("knowledge_add_episode", name="before", episode_body="b", group_id="g")
        with database_down(pg_url):
            with pytest.raises(StorageFailure) as failed:
                call("knowledge_add_episode", name="during", episode_body="d", group_id="g")
            assert describe(pg_url) in str(failed.value)
            assert error_from_exception(failed.value).code == STORAGE_ERROR
            assert episode_names(app, "g") == {"before"}  # reads: the local projections
            status = call("knowledge_status")
            assert status["degraded"] is True
            assert "the log is unreachable" in str(status["reason"])
            assert status["wal_groups"]["g"]["applied_seq"] == 1
        call("knowledge_add_episode", name="after", episode_body="a", group_id="g")
        assert episode_names(app, "g") == {"before", "after"}
        status = call("knowledge_status")
        assert status["degraded"] is False
        assert status["wal_groups"]["g"]["max_seq"] == 2


def test_a_service_started_while_the_store_is_down_opens_by_itself_once_it_is_back(
    tmp_path: Path, pg_url: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_module, "STORE_RETRY_S", 0.0)
    settings = replace(Settings(workspace=tmp_path, embedder="hashing"), store_url=pg_url)
    with make_workspace(settings, embedder) as ws:  # the log holds an episode
        make_call(App(ws))("knowledge_add_episode", name="e1", episode_body="b", group_id="g")
    service = Service(settings, command="pytest")
    try:
        with database_down(pg_url):
            assert service.start() == "degraded"
            assert describe(pg_url) in str(service.reason)
            health = service.call("health_check", {})
            assert health["healthy"] is False
        # the server is back: the next call opens the workspace and answers
        episodes = service.call("knowledge_get_episodes", {"group_id": "g", "last_n": 5})
        assert [e["name"] for e in episodes["episodes"]] == ["e1"]
        assert service.state == "healthy"
    finally:
        service.close()


def test_health_check_probes_the_server_and_names_an_unreachable_log(
    tmp_path: Path, pg_url: str
) -> None:
    settings = replace(Settings.load({EMBEDDER: "hashing"}, tmp_path, tmp_path), store_url=pg_url)
    service = Service(settings, command="pytest")
    assert service.start() == "healthy", service.reason
    try:
        assert service.health()["healthy"] is True
        with database_down(pg_url):  # no write failed: only the probe can tell
            health = service.health()
            assert health["state"] == "degraded"
            assert health["serving"] is True
            assert "the log is unreachable" in str(health["reason"])
            assert describe(pg_url) in str(health["reason"])
        assert service.health()["healthy"] is True  # the pool connects again at the probe
    finally:
        service.close()
