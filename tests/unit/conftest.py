"""The unit group never loads a model: constructing MiniLM or an onnxruntime session fails."""

from __future__ import annotations

from typing import NoReturn

import onnxruntime
import pytest

from lcg.projections.embedding.minilm import MiniLmEmbedder


class ModelLoadedInUnitTest(AssertionError):
    """A unit test reached the real model; it belongs in tests/integration."""


def _refuse(*_: object, **__: object) -> NoReturn:
    raise ModelLoadedInUnitTest(
        "unit tests run without a model: use the hashing embedder, or move the test to"
        " tests/integration (mark it `minilm` if it is about the model's semantics)"
    )


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MiniLmEmbedder, "__init__", _refuse)
    monkeypatch.setattr(MiniLmEmbedder, "load", _refuse)
    monkeypatch.setattr(onnxruntime, "InferenceSession", _refuse)


@pytest.fixture(scope="session")
def minilm() -> MiniLmEmbedder:
    """Overrides the session model: asking for it in a unit test fails at once."""
    _refuse()
