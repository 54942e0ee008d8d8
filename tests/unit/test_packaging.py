"""The layout of docs/adr/0001: every package is listed, no lcg/__init__.py, one identity."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "commands", "projections", "queries", "interfaces", "fixtures")


def test_every_package_under_the_layer_roots_is_listed_in_pyproject() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(config["tool"]["setuptools"]["packages"])
    found = {
        ".".join(init.parent.relative_to(ROOT / layer).parts)
        for layer in LAYERS
        for init in (ROOT / layer).rglob("__init__.py")
    }
    assert found == listed


def test_there_is_no_lcg_init_module() -> None:
    assert list(ROOT.glob("*/lcg/__init__.py")) == []


def test_events_have_one_class_identity() -> None:
    import importlib
    import importlib.util

    from lcg.domain import events

    assert importlib.import_module("lcg.domain.events") is events
    assert importlib.util.find_spec("domain.events") is None
