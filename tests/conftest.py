"""Shared fixtures: real SQLite workspaces in tmp dirs, a stepping clock, a `call` helper."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace

Call = Callable[..., dict[str, Any]]


class SteppingClock:
    """A clock that moves one second per reading, so event times are distinct and replayable."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(workspace=tmp_path)


@pytest.fixture
def workspace(settings: Settings) -> Iterator[Workspace]:
    with Workspace(settings, command="pytest", clock=SteppingClock()) as ws:
        yield ws


@pytest.fixture
def app(workspace: Workspace) -> App:
    return App(workspace)


def make_call(app: App) -> Call:
    def call(name: str, /, **params: Any) -> dict[str, Any]:
        return operations.dispatch(app, name, params)

    return call


@pytest.fixture
def call(app: App) -> Call:
    return make_call(app)
