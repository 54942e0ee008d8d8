"""The workspace on the PostgreSQL log (issue 28; docs/adr/0073-the-workspace-on-a-log-store.md):
with `[store] url` naming a PostgreSQL database, every tool answers as on the workspace's
SQLite file; the projections stay in the workspace and catch up from the server's log at
open; a workspace is tied to its log's identity. The real server (tests/helpers/postgres.py).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lcg.commands.graph_file import ForeignProjections
from lcg.interfaces import operations, tool_docs
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import LogBehindProjections
from lcg.projections.wal.postgres import describe
from tests.conftest import make_call, make_workspace
from tests.helpers.postgres import admin, with_database

pytestmark = pytest.mark.postgres


def on(settings: Settings, url: str) -> Settings:
    return replace(settings, store_url=url)


def reset(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")


@pytest.fixture
def other_database(pg_url: str) -> Iterator[str]:
    """A second database on the server: another PostgreSQL log."""
    name = f"lcg_other_{uuid.uuid4().hex[:12]}"
    with admin() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(pg_url, name)
    finally:
        with admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def add_episodes(settings: Settings, embedder: Embedder, group: str, *names: str) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for name in names:
            call("knowledge_add_episode", name=name, episode_body=f"body of {name}", group_id=group)


def episode_names(settings: Settings, embedder: Embedder, group: str) -> list[str]:
    with make_workspace(settings, embedder) as ws:
        episodes = make_call(App(ws))("knowledge_get_episodes", group_id=group, last_n=50)
        return sorted(e["name"] for e in episodes["episodes"])


def test_the_log_is_in_postgresql_and_a_fresh_workspace_replays_it(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    first = on(Settings(workspace=tmp_path / "one"), pg_url)
    add_episodes(first, embedder, "g", "e1", "e2")
    assert not first.wal_path.exists()  # the log is on the server, not in the workspace
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()
    assert row is not None
    assert row[0] == 2
    fresh = on(Settings(workspace=tmp_path / "two"), pg_url)
    assert episode_names(fresh, embedder, "g") == ["e1", "e2"]
    add_episodes(fresh, embedder, "g", "e3")  # and writes after what the other appended
    assert episode_names(first, embedder, "g") == ["e1", "e2", "e3"]  # caught up at open


def test_status_names_the_server_without_its_password_and_its_size(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    secret = "pw-never-shown-0815"  # noqa: S105 (made up; trust auth ignores it)
    url = pg_url.replace("postgresql://postgres@", f"postgresql://postgres:{secret}@")
    settings = on(Settings(workspace=tmp_path), url)
    add_episodes(settings, embedder, "g", "e1")
    with make_workspace(settings, embedder) as ws:
        status = make_call(App(ws))("knowledge_status")
    assert status["wal_path"] == describe(pg_url)
    assert secret not in repr(status)
    assert status["wal"]["byte_size"] > 0  # the log's relations on the server
    assert status["wal_groups"]["g"]["max_seq"] == 1


def test_a_workspace_built_from_one_postgresql_log_refuses_another(
    tmp_path: Path, pg_url: str, other_database: str, embedder: Embedder
) -> None:
    settings = on(Settings(workspace=tmp_path), pg_url)
    add_episodes(settings, embedder, "g", "e1")
    add_episodes(on(Settings(workspace=tmp_path / "elsewhere"), other_database), embedder, "h", "x")
    with pytest.raises(ForeignProjections) as refused:
        add_episodes(on(settings, other_database), embedder, "g", "e2")
    message = str(refused.value)
    assert "built from another log" in message
    assert describe(other_database) in message
    assert episode_names(settings, embedder, "g") == ["e1"]  # its own log still serves it


def test_a_workspace_whose_postgresql_log_is_empty_refuses_to_open(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    settings = on(Settings(workspace=tmp_path), pg_url)
    add_episodes(settings, embedder, "g", "e1", "e2")
    reset(pg_url)  # the log is lost: an empty database
    with pytest.raises(LogBehindProjections) as refused:
        add_episodes(settings, embedder, "g", "e3")
    message = str(refused.value)
    assert describe(pg_url) in message
    assert "holds no events for group 'g'" in message
    assert "applied seq 2" in message


def _stable(result: dict[str, Any], where: str) -> Any:
    """A result with the PostgreSQL log named as the SQLite one is."""
    return repr(result).replace(where, "<workspace>/.lcg/wal.sqlite")


def test_every_tool_answers_on_postgresql_as_on_sqlite(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, example_results: dict[str, dict[str, Any]]
) -> None:
    """Each tool's documented example (a fresh workspace holding the docs' story, then the
    call), on the workspace's file (the run's example results, which the tool pages are
    rendered from) and on an empty PostgreSQL log: the same answer but for where the log is
    (a checkpoint has no file of the log to fold; a recovery names it)."""
    differing: dict[str, tuple[Any, Any]] = {}
    for operation in operations.OPERATIONS:
        on_file = example_results[operation.name]
        reset(pg_url)
        with monkeypatch.context() as patch:
            patch.setattr(tool_docs, "Settings", functools.partial(Settings, store_url=pg_url))
            on_server = json.loads(json.dumps(tool_docs.run_example(operation)))
        if _stable(on_file, "\0") != _stable(on_server, describe(pg_url)):
            differing[operation.name] = (on_file, on_server)
    assert set(differing) == {"knowledge_prepare_checkpoint", "knowledge_recover"}, differing
    on_file, on_server = differing["knowledge_prepare_checkpoint"]
    assert [f["file"] for f in on_file["files"]] == [
        *(f["file"] for f in on_server["files"][:2]),
        "wal.sqlite",
        *(f["file"] for f in on_server["files"][3:]),
    ]
    assert on_server["files"][2]["file"] == describe(pg_url)
    assert on_server["success"] is True
    on_file, on_server = differing["knowledge_recover"]
    assert on_server["detail"] == on_file["detail"].replace("wal.sqlite", describe(pg_url))
    assert on_server["set_aside"] == on_file["set_aside"]


def test_the_portals_as_of_seq_on_postgresql_reads_a_copy_never_the_live_log(
    tmp_path: Path, pg_url: str, embedder: Embedder
) -> None:
    """ "As of seq N" (ADR 0077) builds its workspace on a copy of the session's events in a
    file of its own: with `[store] url` set, the copy's workspace must not open the live
    database (it would replay, and its jobs could append, on the live log)."""
    from lcg.domain.ids import GroupId
    from lcg.interfaces.portal.as_of import Snapshots

    settings = on(Settings(workspace=tmp_path / "live", embedder="hashing"), pg_url)
    add_episodes(settings, embedder, "liminis", "first", "second")
    with make_workspace(settings, embedder) as live:
        head = live.log.head(GroupId("liminis"))
        snapshots = Snapshots(live)
        try:
            old = snapshots.app("liminis", 1).workspace
            assert old.log.where != live.log.where
            assert old.log.head(GroupId("liminis")) == 1
        finally:
            snapshots.close()
        assert live.log.head(GroupId("liminis")) == head
