"""Client vectors (seed 001 "Client vectors", M-IMG-027/028, M-IMG-040..046,
M-REC-011/272/284): a vector a
client computed, checked against the session's embedding contract and normalised to unit length.

Pure rules: the shape `{values, contract}`, `contract` `{kind, model, dim}` equal to the
session's exactly, at most 4096 values, the contract's width, finite values, a non-zero length.
A refusal names the field and the rule and shows the session's contract; it never repeats a
value the client sent (M-IMG-041, M-IMG-058, M-REC-283), not even the contract it declared.
Whether the vector really came from the model the contract names cannot be checked
(M-IMG-046): accepting client vectors is the operator's decision
(`[embedder] accept_client_vectors`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from lcg.domain.memory.limits import MAX_VECTOR_VALUES
from lcg.domain.memory.text import MemoryArgumentError

CONTRACT_KEYS = ("kind", "model", "dim")
VECTOR_KEYS = ("values", "contract")
CLIENT_VECTORS_SETTING = "[embedder] accept_client_vectors = true"


@dataclass(frozen=True, slots=True)
class Contract:
    """The embedding space a vector is in, as lambo_stats shows it (`embedding_contract`):
    `model` is the whole model string, or None for the embedder's default."""

    kind: str
    model: str | None
    dim: int

    def shown(self) -> str:
        """The contract as a refusal shows it (the session's, never the client's)."""
        model = "null" if self.model is None else f'"{self.model}"'
        return f'{{kind: "{self.kind}", model: {model}, dim: {self.dim}}}'


@dataclass(frozen=True, slots=True)
class ClientVector:
    """A checked client vector, normalised to unit length (M-IMG-045)."""

    values: tuple[float, ...]


def _refuse(field: str, rule: str, message: str) -> MemoryArgumentError:
    return MemoryArgumentError(f"{field}: {message}", field=field, rule=rule)


def not_configured(field: str) -> MemoryArgumentError:
    """Client vectors are off (M-IMG-007, M-IMG-029, M-REC-278): a configuration error
    naming the setting to change."""
    return MemoryArgumentError(
        f"configuration error: {field} is a client vector, which this server accepts only "
        f"when the operator sets {CLIENT_VECTORS_SETTING} (lcg.toml or lambo.toml); nothing "
        "was read from it",
        field=field,
        rule="configuration",
    )


def check_client_vector(field: str, raw: object, session: Contract) -> ClientVector:
    """`raw` (the argument as sent) as a checked, unit-length vector of the session's space,
    or a MemoryArgumentError naming the field and the rule (never a sent value)."""
    if not isinstance(raw, Mapping):
        raise _refuse(field, "shape", "must be an object {values, contract}")
    unknown = sorted(str(key) for key in raw if key not in VECTOR_KEYS)
    if unknown:
        raise _refuse(
            field,
            "shape",
            f"has keys other than values and contract ({len(unknown)} more); send exactly "
            "{values, contract}",
        )
    for key in VECTOR_KEYS:
        if key not in raw:
            raise _refuse(f"{field}.{key}", "required", "is required")
    _check_contract(f"{field}.contract", raw["contract"], session)
    values = _values(f"{field}.values", raw["values"], session.dim)
    return ClientVector(_normalised(f"{field}.values", values))


def _check_contract(field: str, declared: object, session: Contract) -> None:
    """The declared contract must be exactly the session's (M-IMG-040/041, M-REC-284)."""
    if not isinstance(declared, Mapping):
        raise _refuse(
            field,
            "shape",
            f"must be an object {{kind, model, dim}}; this session's embedding_contract is "
            f"{session.shown()} (lambo_stats)",
        )
    extra = [str(key) for key in declared if key not in CONTRACT_KEYS]
    missing = [key for key in CONTRACT_KEYS if key not in declared]
    expected: dict[str, object] = {"kind": session.kind, "model": session.model, "dim": session.dim}
    differ = [
        key for key in CONTRACT_KEYS if key in declared and not _same(declared[key], expected[key])
    ]
    if not (extra or missing or differ):
        return
    parts = []
    if differ:
        parts.append(f"{' and '.join(differ)} differ{'s' if len(differ) == 1 else ''}")
    if missing:
        parts.append(f"{' and '.join(missing)} missing")
    if extra:
        parts.append(f"{len(extra)} key(s) other than kind, model and dim")
    raise _refuse(
        field,
        "contract mismatch",
        f"does not match this session's embedding contract ({'; '.join(parts)}): it must "
        f"equal the session's embedding_contract exactly, {session.shown()}; copy it from "
        "lambo_stats",
    )


def _same(sent: object, expected: object) -> bool:
    """Equality with the JSON types kept apart: true is not 1, and 384.0 is not 384."""
    return type(sent) is type(expected) and sent == expected


def _values(field: str, raw: object, dim: int) -> list[float]:
    if not isinstance(raw, list | tuple):
        raise _refuse(field, "shape", "must be an array of numbers")
    if len(raw) > MAX_VECTOR_VALUES:
        raise _refuse(
            field,
            "too many values",
            f"holds {len(raw)} values; at most {MAX_VECTOR_VALUES} are accepted",
        )
    if len(raw) != dim:
        raise _refuse(
            field,
            "width",
            f"holds {len(raw)} values, but the session's embedding contract is {dim}-d",
        )
    values: list[float] = []
    for i, value in enumerate(raw):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _refuse(f"{field}[{i}]", "number", "must be a number")
        number = float(value)
        if not math.isfinite(number):
            raise _refuse(f"{field}[{i}]", "finite", "must be finite (NaN and infinity refused)")
        values.append(number)
    return values


def _normalised(field: str, values: list[float]) -> tuple[float, ...]:
    """Unit length (M-IMG-045); a zero vector has no direction to keep (M-IMG-044). Scaled by
    its largest value first, so that no finite vector overflows on the way."""
    largest = max((abs(value) for value in values), default=0.0)
    if largest == 0.0:
        raise _refuse(field, "non-zero length", "has zero length; it has no direction")
    scaled = [value / largest for value in values]
    norm = math.sqrt(math.fsum(value * value for value in scaled))
    return tuple(value / norm for value in scaled)
