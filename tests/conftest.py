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
from lcg.projections.embedding.minilm import MiniLmEmbedder

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


# One real MiniLM model for the whole test process: loading it costs ~0.5 s per workspace.
MODEL = MiniLmEmbedder()


def make_workspace(settings: Settings, **options: Any) -> Workspace:
    """A Workspace with the shared model and a stepping clock unless told otherwise."""
    options.setdefault("clock", SteppingClock())
    options.setdefault("command", "pytest")
    return Workspace(settings, embedder=MODEL, **options)


@pytest.fixture
def workspace(settings: Settings) -> Iterator[Workspace]:
    with make_workspace(settings) as ws:
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
