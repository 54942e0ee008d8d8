"""The guard of tests/unit/conftest.py: no unit test can load the real model."""

from __future__ import annotations

import onnxruntime
import pytest

from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import Embedder
from tests.unit.conftest import ModelLoadedInUnitTest


def test_constructing_minilm_in_a_unit_test_fails() -> None:
    with pytest.raises(ModelLoadedInUnitTest):
        MiniLmEmbedder()


def test_an_onnxruntime_session_cannot_be_created_in_a_unit_test() -> None:
    with pytest.raises(ModelLoadedInUnitTest):
        onnxruntime.InferenceSession("model.onnx")


def test_asking_for_the_session_model_fails(request: pytest.FixtureRequest) -> None:
    with pytest.raises(ModelLoadedInUnitTest):
        request.getfixturevalue("minilm")


def test_the_default_embedder_of_a_unit_test_is_the_hashing_one(embedder: Embedder) -> None:
    assert embedder.contract.kind == "hashing"
