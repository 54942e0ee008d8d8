"""LCG_DURABILITY reaches the connection that writes the workspace's log (ADR 0005)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from lcg.projections.wal.store import EventLog
from tests.conftest import make_workspace


@pytest.mark.parametrize(("env", "level"), [({}, 1), ({"LCG_DURABILITY": "full"}, 2)])
def test_lcg_durability_sets_the_synchronous_level_of_the_workspace_log(
    tmp_path: Path, embedder: Embedder, env: dict[str, str], level: int
) -> None:
    """Unset is normal (`synchronous=NORMAL`, 1); full is `synchronous=FULL` (2)."""
    settings = Settings.load(env, tmp_path)
    with make_workspace(settings, embedder) as ws:
        log = ws.log
        assert isinstance(log, EventLog)
        assert log.synchronous == level
