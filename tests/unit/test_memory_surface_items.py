"""Fixed parts of the lambo surface no other test names (seed 001): recall's schema on every
server, the apply-latency window, and the default match strategy."""

from __future__ import annotations

from lcg.commands.memory_processor import Counters
from lcg.interfaces.operations import BY_NAME
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.settings_keys import TOP


def test_m_rec_017_image_and_query_vector_are_in_recalls_schema_whatever_the_embedder() -> None:
    """The schema is the operation's own, not built per embedder: a text-only server lists
    the same lambo_recall as one that embeds images."""
    properties = BY_NAME["lambo_recall"].input_schema()["properties"]
    assert {"image", "query_vector"} <= set(properties)


def test_m_lim_048_the_apply_latency_window_is_the_last_256_writes() -> None:
    counters = Counters()
    for n in range(300):
        counters.apply_ms.append(float(n))
    assert len(counters.apply_ms) == 256
    assert counters.apply_ms[0] == 44.0  # the oldest 44 fell out


def test_m_der_130_match_strategy_defaults_to_hybrid() -> None:
    assert Tuning().get(TOP, "match_strategy") == "hybrid"
