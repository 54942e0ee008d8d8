"""lambo_derive_image's events and stored vectors (ADR 0095): the intent carries the unit
vector at version 3 (every other intent is written as before), an outcome node carries it
only when it is an image's, and the vector catalog's text of a stored vector gives the vector
back without a model."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import orjson
import pytest

from lcg.domain.events import EventCodec, MemoryWriteAccepted, MemoryWriteApplied
from lcg.domain.memory.image_calls import vector_id
from lcg.domain.memory.records import (
    ImageRequest,
    OutcomeNode,
    ParentOf,
    WriteOutcome,
)
from lcg.domain.memory.text import MemoryArgumentError, check_text
from lcg.projections.embedding import stored

CODEC = EventCodec()
NOW = datetime(2026, 1, 1, tzinfo=UTC)
VECTOR = (0.6, 0.8, 0.0)


def _intent() -> MemoryWriteAccepted:
    request = ImageRequest(
        "red silk saree",
        "resource",
        "r17",
        VECTOR,
        "client",
        ("hashing", "lcg-hashing-v1", 3),
        (ParentOf("outfits", "red silk saree [image:r17]"),),
    )
    return MemoryWriteAccepted(NOW, "lwr1.x.1", "agent-a", "lambo_derive_image", request, None)


def test_m_img_051_an_image_intent_carries_its_vector_at_version_3() -> None:
    event = _intent()
    payload = CODEC.encode(event)
    assert payload["_v"] == 3
    assert payload["request"]["vector"] == list(VECTOR)
    assert payload["request"]["source"] == {
        "kind": "client",
        "contract": {"kind": "hashing", "model": "lcg-hashing-v1", "dim": 3},
    }
    assert "image" not in payload["request"]  # no bytes, no base64 (M-IMG-051)
    decoded = CODEC.decode("memory_write_accepted", orjson.loads(orjson.dumps(payload)))
    assert decoded == event
    assert isinstance(decoded, MemoryWriteAccepted)
    assert isinstance(decoded.request, ImageRequest)
    assert decoded.request.content == "red silk saree [image:r17]"


def test_an_outcome_node_writes_its_vector_only_when_it_has_one() -> None:
    text = OutcomeNode("u1", "concept", "a", "logic", "a", "a — a")
    image = OutcomeNode("u2", "concept", "b [image:r1]", "resource", "b image:r1", None, VECTOR)
    assert "vector" not in text.to_wire()
    assert image.to_wire()["vector"] == list(VECTOR)
    outcome = WriteOutcome(
        "agent-a",
        "2026-01-01T00:00:00+00:00",
        "i",
        (text, image),
        (),
        (),
        (),
        (),
        2,
        0,
        0,
        0,
        0,
        2,
        "s",
    )
    event = MemoryWriteApplied(NOW, "lwr1.x.1", 1, outcome, False)
    again = CODEC.decode("memory_write_applied", orjson.loads(orjson.dumps(CODEC.encode(event))))
    assert again == event


def test_m_img_020_the_default_id_is_a_digest_of_the_unit_vector() -> None:
    first = vector_id(VECTOR)
    assert len(first) == 16
    assert first == vector_id(VECTOR)
    assert first != vector_id((0.8, 0.6, 0.0))


def test_a_stored_vector_text_gives_the_vector_back() -> None:
    text = stored.stored_text(VECTOR)
    assert stored.is_stored(text)
    assert np.allclose(stored.stored_vector(text, 3), VECTOR)
    assert not np.any(stored.stored_vector(text, 4))  # another width: zeros, never searched
    with pytest.raises(MemoryArgumentError):  # no memory string can take that form
        check_text("concepts[0].content", text)
