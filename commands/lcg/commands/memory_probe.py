"""The write queue's startup probe (M-STA-126..131, ADR 0101): how fast the embedder takes a
representative write, measured before any write is timed: a serving process starts it when it
starts serving (`MemorySessions.schedule`); a one-shot command loads no model for it.

A representative write is a derive of two concepts of about 340 bytes each, embedded as
`lambo_derive` embeds them: each concept framed with the call's text, both in one batched
call. The probe runs on its own thread so that opening the workspace never waits for the
model: it embeds the pair once untimed (which loads a lazy model and warms it), then times
`SERIAL_RUNS` writes one after another (the median is the serial figure) and, if the
time left in `BUDGET` covers it, four such writes at once (the four-wide figure; null when
they do not finish in the time left, as with an embedder that answers one call at a time).

The probe embeds through the bare embedder, never the embedding cache (its texts are not
concepts) nor the counting wrapper (it is not a model call for any stored text), and it
appends nothing to the log: it is not a write. `lambo_stats` never waits for it: its figures
are in the payload once it has finished (`on_done`), and a caller that needs them waits with
`wait` (tests, benchmarks).
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from lcg.domain.memory.text import call_text, embedding_text
from lcg.projections.embedding.port import Vectors

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], Vectors]

CONCEPT_BYTES: Final = 340  # each probe concept's size, as the seed's representative write
SERIAL_RUNS: Final = 3  # timed serial writes; their median is the serial figure
WIDTH: Final = 4  # writes at once for the four-wide figure
BUDGET: Final = 2.0  # seconds for the timed part, after the untimed first embed

_WORDS = (
    "the flush retries three times with backoff before the session reports it as degraded "
    "and the operator is asked to look at the store's free space and its lease holder; "
    "receipts settle in stream order, and a recall made after the apply finds the concept "
    "with its neighbours, its access count and the interactions that produced it first"
)


def probe_concepts() -> tuple[str, str]:
    """Two concepts of `CONCEPT_BYTES` bytes each (ASCII), different from each other."""
    first = ("probe concept one: " + _WORDS)[:CONCEPT_BYTES]
    second = ("probe concept two: " + _WORDS[::-1])[:CONCEPT_BYTES]
    return first, second


def probe_texts() -> list[str]:
    """The texts a derive of the two probe concepts embeds, framed as lambo_derive frames."""
    concepts = probe_concepts()
    whole = call_text(concepts)
    return [embedding_text(concept, whole) for concept in concepts]


@dataclass(frozen=True, slots=True)
class ProbeFigures:
    """Writes per second: one after another, and four at once (None: not finished in time)."""

    serial_per_sec: float
    wide_per_sec: float | None


class StartupProbe:
    """Times the representative write on its own thread; `figures` once `wait` returns."""

    def __init__(
        self,
        embed: Embed,
        budget: float = BUDGET,
        on_done: Callable[[ProbeFigures], None] | None = None,
    ) -> None:
        self._embed = embed
        self._budget = budget
        self._on_done = on_done  # given the figures before `wait` returns
        self._done = threading.Event()
        self.figures: ProbeFigures | None = None
        self.failure: str | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # set by `stop`: no further embedding starts
        self._wide_threads: list[threading.Thread] = []

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="lcg-probe", daemon=True)
        self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Block until the probe has finished (or failed), or `timeout` seconds pass; True
        when it has finished (False at once if it was never started)."""
        if self._thread is None:
            return self._done.is_set()
        return self._done.wait(timeout)

    def stop(self, timeout: float) -> None:
        """Start no further embedding and wait (at most `timeout` seconds) for the one under
        way: a process must not exit while a probe thread is inside the model's native code
        (it aborts with "terminate called without an active exception")."""
        self._stopping.set()
        end = time.monotonic() + timeout
        for thread in [self._thread, *self._wide_threads]:
            if thread is not None:
                thread.join(max(0.0, end - time.monotonic()))

    def _run(self) -> None:
        try:
            self.figures = self.measure()
            if self._on_done is not None:
                self._on_done(self.figures)
        except ProbeStopped:
            self.failure = "stopped before it finished"
        except Exception as error:  # noqa: BLE001 (telemetry: writes report the embedder)
            self.failure = f"{type(error).__name__}: {error}"
            log.warning("the startup probe could not time a write: %s", self.failure)
        finally:
            self._done.set()

    def measure(self) -> ProbeFigures:
        texts = probe_texts()
        self._embed_unless_stopping(texts)  # untimed: a lazy model loads here
        start = time.monotonic()
        deadline = start + self._budget
        runs: list[float] = []
        for _ in range(SERIAL_RUNS):
            began = time.monotonic()
            self._embed_unless_stopping(texts)
            runs.append(time.monotonic() - began)
            if time.monotonic() >= deadline:
                break
        each = max(statistics.median(runs), 1e-6)  # a clock tick at least
        wide = None
        if deadline - time.monotonic() >= each * WIDTH:  # fits even if nothing overlaps
            wide = self._wide(texts, deadline)
        return ProbeFigures(round(1 / each, 1), wide)

    def _wide(self, texts: list[str], deadline: float) -> float | None:
        """Four writes at once, each on its own thread; None unless all finish by the
        deadline (the threads are daemons: one still running is left to finish alone)."""
        finished: list[float] = []
        lock = threading.Lock()

        def one() -> None:
            try:
                self._embed_unless_stopping(texts)
            except ProbeStopped:
                return
            with lock:
                finished.append(time.monotonic())

        began = time.monotonic()
        threads = [
            threading.Thread(target=one, name=f"lcg-probe-{n}", daemon=True) for n in range(WIDTH)
        ]
        self._wide_threads = threads
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        with lock:
            if len(finished) < WIDTH:
                return None
            took = max(finished) - began
        return round(WIDTH / max(took, 1e-6), 1)

    def _embed_unless_stopping(self, texts: list[str]) -> None:
        if self._stopping.is_set():
            raise ProbeStopped("the process is stopping")
        self._embed(texts)


class ProbeStopped(Exception):
    """The probe was stopped before it finished: it reports nothing."""
