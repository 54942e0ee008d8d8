"""The write queue's rate keys (seed 001, M-STA-126..131; ADR 0101): which figure is in force
as the startup probe and the observed applies come in, and the probe itself on the hashing
embedder (the integration tests read the same keys through lambo_stats)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from lcg.commands.memory_probe import ProbeFigures, StartupProbe, probe_concepts, probe_texts
from lcg.commands.memory_processor import Counters
from lcg.commands.memory_stats import rate_keys
from lcg.domain.memory.text import call_text, embedding_text
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.port import Vectors

RATE_KEYS = (
    "write_queue_items_per_sec",
    "write_queue_serial_items_per_sec",
    "write_queue_probe_serial_items_per_sec",
    "write_queue_probe_optimism",
)


def test_m_sta_126_127_with_no_probe_figure_and_no_write_nothing_is_measured() -> None:
    """The probe did not finish (an embedder not answering at start) and nothing applied."""
    keys = rate_keys([], Counters())
    assert keys["write_queue_measured"] is False
    assert keys["write_queue_bound_source"] == "unmeasured"
    assert [keys[key] for key in RATE_KEYS] == [None] * 4


def test_m_sta_127_129_131_the_probe_is_in_force_until_writes_are_observed() -> None:
    counters = Counters(probe=ProbeFigures(serial_per_sec=40.0, wide_per_sec=100.0))
    probed = rate_keys([], counters)
    assert (probed["write_queue_measured"], probed["write_queue_bound_source"]) == (True, "probe")
    assert probed["write_queue_serial_items_per_sec"] == 40.0
    assert probed["write_queue_probe_serial_items_per_sec"] == 40.0
    assert probed["write_queue_items_per_sec"] == 100.0
    assert probed["write_queue_probe_optimism"] is None
    observed = rate_keys([50.0, 50.0, 50.0], counters)  # 50 ms an apply: 20 writes/s
    assert observed["write_queue_bound_source"] == "observed"
    assert observed["write_queue_serial_items_per_sec"] == 20.0
    assert observed["write_queue_probe_serial_items_per_sec"] == 40.0  # kept beside it
    assert observed["write_queue_probe_optimism"] == 2.0  # probe / observed
    assert observed["write_queue_items_per_sec"] == 100.0  # only the probe measures four-wide


def test_m_sta_126_131_observed_writes_without_a_probe_figure() -> None:
    keys = rate_keys([25.0], Counters())
    assert (keys["write_queue_measured"], keys["write_queue_bound_source"]) == (True, "observed")
    assert keys["write_queue_serial_items_per_sec"] == 40.0
    assert keys["write_queue_probe_serial_items_per_sec"] is None
    assert keys["write_queue_probe_optimism"] is None
    assert keys["write_queue_items_per_sec"] is None


def test_m_sta_130_the_probe_write_is_two_framed_concepts_of_340_bytes() -> None:
    concepts = probe_concepts()
    assert [len(text.encode()) for text in concepts] == [340, 340]
    assert concepts[0] != concepts[1]
    whole = call_text(concepts)
    assert probe_texts() == [embedding_text(text, whole) for text in concepts]


def test_m_sta_128_130_the_probe_measures_both_widths_within_its_budget() -> None:
    probe = StartupProbe(HashingEmbedder().embed)
    probe.start()
    assert probe.wait(30.0)
    assert probe.failure is None
    assert probe.figures is not None
    assert probe.figures.serial_per_sec > 0
    assert probe.figures.wide_per_sec is not None
    assert probe.figures.wide_per_sec > 0


def test_m_sta_128_the_four_wide_figure_is_null_when_it_cannot_finish_in_time() -> None:
    """A budget already spent by the serial runs leaves no time for four at once."""
    figures = StartupProbe(HashingEmbedder().embed, budget=0.0).measure()
    assert figures.serial_per_sec > 0
    assert figures.wide_per_sec is None


def test_m_sta_129_stopping_the_probe_waits_for_the_embedding_under_way_and_starts_no_other() -> (
    None
):
    """A process must not exit while a probe thread is inside the model's native code (an
    ONNX session torn down under it aborts the process: "terminate called without an active
    exception", exit 134). `stop` lets the embedding under way finish, then none starts."""
    inside = threading.Event()
    release = threading.Event()
    calls: list[str] = []

    def embed(texts: Sequence[str]) -> Vectors:
        calls.append("began")
        inside.set()
        release.wait(30.0)
        calls.append("ended")
        return HashingEmbedder().embed(texts)

    probe = StartupProbe(embed)
    probe.start()
    assert inside.wait(30.0)
    stopper = threading.Thread(target=probe.stop, args=(30.0,))
    stopper.start()
    stopper.join(0.2)
    assert stopper.is_alive()  # held by the embedding under way
    release.set()
    stopper.join(30.0)
    assert not stopper.is_alive()
    assert calls == ["began", "ended"]  # the first embedding finished; no second began
    assert probe.wait(0.0)
    assert probe.figures is None
    assert probe.failure == "stopped before it finished"
