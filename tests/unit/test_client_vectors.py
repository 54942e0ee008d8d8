"""Client vectors' pure rules (lcg.domain.memory.client_vectors, ADR 0093): the shape, the
contract held to the session's exactly, the width, finite non-zero values, unit length, and
refusals that never repeat what was sent."""

from __future__ import annotations

import math

import pytest

from lcg.domain.memory.client_vectors import Contract, check_client_vector, not_configured
from lcg.domain.memory.limits import MAX_VECTOR_VALUES
from lcg.domain.memory.text import MemoryArgumentError

SESSION = Contract("hashing", "lcg-hashing-v1", 4)
SENT_MODEL = "secret-model-name-9f3"  # a value the client sent: never in a refusal


def _vector(values: object, **contract: object) -> dict[str, object]:
    declared = {"kind": SESSION.kind, "model": SESSION.model, "dim": SESSION.dim, **contract}
    return {"values": values, "contract": declared}


def _refused(raw: object, session: Contract = SESSION) -> MemoryArgumentError:
    with pytest.raises(MemoryArgumentError) as error:
        check_client_vector("query_vector", raw, session)
    return error.value


def test_m_img_045_an_accepted_vector_is_scaled_to_unit_length() -> None:
    checked = check_client_vector("query_vector", _vector([3, 4.0, 0, 0]), SESSION)
    assert checked.values == (0.6, 0.8, 0.0, 0.0)


def test_m_img_045_a_vector_of_huge_finite_values_is_scaled_without_overflow() -> None:
    checked = check_client_vector("query_vector", _vector([1e308, 1e308, -1e308, 0]), SESSION)
    assert math.isclose(math.fsum(v * v for v in checked.values), 1.0)


def test_m_img_046_any_vector_under_the_right_contract_is_accepted() -> None:
    """Lambo cannot tell which model made a vector: the contract is the client's word."""
    assert check_client_vector("query_vector", _vector([0.1, -7, 2, 1e-300]), SESSION).values


@pytest.mark.parametrize(
    ("contract", "differ"),
    [
        ({"kind": "onnx"}, "kind differs"),
        ({"model": SENT_MODEL}, "model differs"),
        ({"model": None}, "model differs"),
        ({"dim": 768}, "dim differs"),
        ({"dim": 4.0}, "dim differs"),  # a JSON number of another type is another contract
        ({"kind": "x", "model": SENT_MODEL, "dim": 3}, "kind and model and dim differ"),
    ],
)
def test_m_img_040_041_a_mismatched_contract_names_what_differs_and_shows_the_sessions(
    contract: dict[str, object], differ: str
) -> None:
    error = _refused(_vector([1, 0, 0, 0], **contract))
    assert error.field == "query_vector.contract"
    assert error.rule == "contract mismatch"
    assert differ in error.message
    assert '{kind: "hashing", model: "lcg-hashing-v1", dim: 4}' in error.message
    assert SENT_MODEL not in error.message
    assert "768" not in error.message


def test_m_img_040_a_session_whose_model_is_the_default_shows_null() -> None:
    session = Contract("onnx", None, 4)
    error = _refused(_vector([1, 0, 0, 0], kind="onnx"), session)
    assert "model differs" in error.message
    assert "model: null" in error.message
    assert check_client_vector("v", _vector([1, 0, 0, 0], kind="onnx", model=None), session)


def test_m_img_027_a_contract_missing_a_key_or_carrying_another_is_refused() -> None:
    missing = _refused({"values": [1, 0, 0, 0], "contract": {"kind": "hashing", "dim": 4}})
    assert "model missing" in missing.message
    extra = _refused(_vector([1, 0, 0, 0], normalised=True))
    assert "other than kind, model and dim" in extra.message
    assert _refused({"values": [1, 0, 0, 0], "contract": "hashing"}).rule == "shape"


@pytest.mark.parametrize(
    ("raw", "field", "rule"),
    [
        ([1.0, 0.0], "query_vector", "shape"),
        ({"values": [1, 0, 0, 0]}, "query_vector.contract", "required"),
        ({"contract": {}}, "query_vector.values", "required"),
        ({"values": [1], "contract": {}, "image": "x"}, "query_vector", "shape"),
        (_vector("1,0,0,0"), "query_vector.values", "shape"),
        (_vector([1, 0, 0]), "query_vector.values", "width"),
        (_vector([0.5] * (MAX_VECTOR_VALUES + 1)), "query_vector.values", "too many values"),
        (_vector([1, True, 0, 0]), "query_vector.values[1]", "number"),
        (_vector([1, "0.25", 0, 0]), "query_vector.values[1]", "number"),
        (_vector([1, math.nan, 0, 0]), "query_vector.values[1]", "finite"),
        (_vector([1, 0, -math.inf, 0]), "query_vector.values[2]", "finite"),
        (_vector([0, 0.0, -0.0, 0]), "query_vector.values", "non-zero length"),
    ],
)
def test_m_img_027_028_042_043_044_each_rule_is_refused_by_field_and_rule(
    raw: object, field: str, rule: str
) -> None:
    error = _refused(raw)
    assert (error.field, error.rule) == (field, rule)
    assert error.message.startswith(f"{field}: ")
    assert "0.25" not in error.message
    assert "0.5," not in error.message
    assert "nan" not in error.message


def test_m_img_029_m_rec_278_client_vectors_off_is_a_configuration_error_naming_the_setting() -> (
    None
):
    error = not_configured("query_vector")
    assert error.message.startswith("configuration error: ")
    assert "[embedder] accept_client_vectors = true" in error.message
    assert (error.field, error.rule) == ("query_vector", "configuration")
