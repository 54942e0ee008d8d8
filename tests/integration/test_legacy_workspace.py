"""The legacy `.graphiti/` workspace directory is moved to `.lcg/` before anything opens it
(K-RDY-001, K-CFG-004, P-021): once, atomically, never over an existing `.lcg/`."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.legacy import LEGACY_STATE_DIR, migrate_legacy_state_dir
from lcg.projections.embedding.port import Embedder
from lcg.projections.layout import STATE_DIR
from tests.conftest import make_call, make_workspace
from tests.integration.test_wal_identity import add_episodes, episode_names


def _legacy(settings: Settings, embedder: Embedder) -> Path:
    """A workspace whose state lives in .graphiti/ (as a legacy release left it)."""
    add_episodes(settings, embedder, "g", "kept")
    legacy = settings.workspace / LEGACY_STATE_DIR
    settings.state_dir.rename(legacy)
    return legacy


def test_p_021_k_cfg_004_the_legacy_directory_is_moved_once_and_the_move_is_idempotent(
    settings: Settings, embedder: Embedder
) -> None:
    legacy = _legacy(settings, embedder)
    files = sorted(p.name for p in legacy.iterdir())
    assert migrate_legacy_state_dir(settings.workspace) == "moved"
    assert not legacy.exists()
    assert sorted(p.name for p in settings.state_dir.iterdir()) == files
    assert migrate_legacy_state_dir(settings.workspace) == "none"  # idempotent
    assert episode_names(settings, embedder, "g") == ["kept"]


def test_k_rdy_001_opening_a_legacy_workspace_moves_it_first_and_loses_nothing(
    settings: Settings, embedder: Embedder
) -> None:
    _legacy(settings, embedder)
    with make_workspace(settings, embedder) as ws:  # the open migrates, then opens .lcg/
        found = make_call(App(ws))("knowledge_get_episodes", group_id="g", last_n=10)
    assert [e["name"] for e in found["episodes"]] == ["kept"]
    assert not (settings.workspace / LEGACY_STATE_DIR).exists()


def test_p_021_with_both_directories_lcg_is_used_and_graphiti_left_alone(
    settings: Settings, embedder: Embedder, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    legacy = _legacy(settings, embedder)
    other = Settings(tmp_path / "other")
    add_episodes(other, embedder, "g", "current")
    other.state_dir.rename(settings.state_dir)  # a newer .lcg/ beside the legacy one
    before = sorted((p.name, p.stat().st_size) for p in legacy.iterdir())
    with caplog.at_level(logging.WARNING, logger="lcg.legacy"):
        assert migrate_legacy_state_dir(settings.workspace) == "both"
    assert "leaving" in caplog.text
    assert LEGACY_STATE_DIR in caplog.text
    assert sorted((p.name, p.stat().st_size) for p in legacy.iterdir()) == before
    assert episode_names(settings, embedder, "g") == ["current"]


def test_p_021_a_legacy_name_that_is_not_a_directory_is_not_touched(settings: Settings) -> None:
    settings.workspace.mkdir(parents=True, exist_ok=True)
    (settings.workspace / LEGACY_STATE_DIR).write_text("not a workspace", encoding="utf-8")
    assert migrate_legacy_state_dir(settings.workspace) == "none"
    assert not (settings.workspace / STATE_DIR).exists()
