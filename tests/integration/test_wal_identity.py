"""The WAL and the projections know they belong together (issue 9, F1; ADR 0019).

Real workspaces on disk: the WAL is removed, truncated, restored from an older copy, or the
projection database comes from another workspace, and the next open must not hide a write.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import LogBehindProjections
from tests.conftest import make_call, make_workspace


def add_episodes(settings: Settings, embedder: Embedder, group: str, *names: str) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for name in names:
            call("knowledge_add_episode", name=name, episode_body=f"body of {name}", group_id=group)


def episode_names(settings: Settings, embedder: Embedder, group: str) -> list[str]:
    with make_workspace(settings, embedder) as ws:
        episodes = make_call(App(ws))("knowledge_get_episodes", group_id=group, last_n=50)
        return sorted(e["name"] for e in episodes["episodes"])


def remove_wal(settings: Settings) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{settings.wal_path}{suffix}").unlink(missing_ok=True)


def test_f1_a_lost_wal_refuses_to_open_and_acks_no_write(
    settings: Settings, embedder: Embedder
) -> None:
    add_episodes(settings, embedder, "g", "e1", "e2")
    remove_wal(settings)
    with pytest.raises(LogBehindProjections) as refused:
        add_episodes(settings, embedder, "g", "e3")
    message = str(refused.value)
    assert str(settings.wal_path) in message
    assert "holds no events for group 'g'" in message
    assert "applied seq 2" in message
    assert "lost or replaced" in message
    assert not settings.wal_path.exists()  # no new WAL with a new identity was made
    with pytest.raises(LogBehindProjections):  # and the next open says the same
        add_episodes(settings, embedder, "g", "e3")


def test_f1_a_wal_truncated_to_zero_bytes_is_a_lost_wal(
    settings: Settings, embedder: Embedder
) -> None:
    add_episodes(settings, embedder, "g", "e1", "e2")
    settings.wal_path.write_bytes(b"")
    with pytest.raises(LogBehindProjections, match="applied seq 2"):
        add_episodes(settings, embedder, "g", "e3")
    assert settings.wal_path.stat().st_size == 0


def test_f1_a_wal_restored_from_an_older_copy_is_behind_its_projections(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    add_episodes(settings, embedder, "g", "e1")
    backup = tmp_path / "wal-backup.sqlite"
    shutil.copy(settings.wal_path, backup)  # closed cleanly: no -wal file to copy
    add_episodes(settings, embedder, "g", "e2", "e3")
    remove_wal(settings)
    shutil.copy(backup, settings.wal_path)
    with pytest.raises(LogBehindProjections) as refused:
        add_episodes(settings, embedder, "g", "e4")
    assert "holds seq 1 for group 'g'" in str(refused.value)
    assert "applied seq 3" in str(refused.value)


def test_f1_the_recovery_the_message_names_rebuilds_from_what_the_log_holds(
    settings: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    add_episodes(settings, embedder, "g", "e1")
    backup = tmp_path / "wal-backup.sqlite"
    shutil.copy(settings.wal_path, backup)
    add_episodes(settings, embedder, "g", "e2")
    remove_wal(settings)
    shutil.copy(backup, settings.wal_path)
    with pytest.raises(LogBehindProjections) as refused:
        add_episodes(settings, embedder, "g", "e3")
    # the message's command: move the projection database (and the FAISS files) aside
    aside = settings.state_dir / "lost-wal"
    assert f"mkdir {aside} && mv {settings.graph_path}* {settings.vectors_dir}" in str(
        refused.value
    )
    aside.mkdir()
    for path in [*settings.state_dir.glob("graph.sqlite*"), settings.vectors_dir]:
        path.rename(aside / path.name)
    add_episodes(settings, embedder, "g", "e3")
    assert episode_names(settings, embedder, "g") == ["e1", "e3"]


def test_f1_projections_of_another_wal_are_set_aside_and_rebuilt_from_this_wal(
    tmp_path: Path, embedder: Embedder
) -> None:
    mine, other = Settings(tmp_path / "mine"), Settings(tmp_path / "other")
    add_episodes(mine, embedder, "g", "mine-1")
    add_episodes(other, embedder, "g", "other-1", "other-2", "other-3")
    shutil.copy(other.graph_path, mine.graph_path)  # a graph.sqlite from another workspace
    add_episodes(mine, embedder, "g", "mine-2")
    assert episode_names(mine, embedder, "g") == ["mine-1", "mine-2"]
    set_aside = sorted(p.name for p in mine.state_dir.glob("graph.sqlite.foreign-*Z"))
    assert len(set_aside) == 1
    with sqlite3.connect(mine.state_dir / set_aside[0]) as conn:  # kept, not deleted
        names = sorted(row[0] for row in conn.execute("SELECT name FROM episodes"))
    assert names == ["other-1", "other-2", "other-3"]


def test_f1_a_workspace_from_before_identities_adopts_its_wal(
    settings: Settings, embedder: Embedder
) -> None:
    add_episodes(settings, embedder, "g", "e1")
    with sqlite3.connect(settings.wal_path) as conn:
        conn.execute("DROP TABLE lcg_wal_identity")
    with sqlite3.connect(settings.graph_path) as conn:
        conn.execute("DROP TABLE projection_wal")
    add_episodes(settings, embedder, "g", "e2")
    with sqlite3.connect(settings.wal_path) as wal, sqlite3.connect(settings.graph_path) as graph:
        identity = wal.execute("SELECT identity FROM lcg_wal_identity").fetchone()
        recorded = graph.execute("SELECT identity FROM projection_wal").fetchone()
    assert identity == recorded
    assert episode_names(settings, embedder, "g") == ["e1", "e2"]
    assert not list(settings.state_dir.glob("*.foreign-*"))
