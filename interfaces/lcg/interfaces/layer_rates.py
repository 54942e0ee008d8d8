"""Each layer's own request rate (seed 001 "Layered sessions", "Writing to a layer"; ADR 0088).

A call that `scope`s a layer acts on that layer, so it draws one request from the layer's own
`[serve] per_session_rps` (a token bucket of `[serve] burst`), shared by every session of the
holder layered over it: reads (a scoped `lambo_recall`, `lambo_inspect`, ...) on one bucket,
writes (a scoped `lambo_derive`, `lambo_record_action`, `lambo_reserve`) on another, as the
HTTP transport splits a credential's. A merged recall draws on no layer's bucket (only the
addressed session's rate, which over HTTP is the credential's, applies). Over the rate, the
scoped call is refused as retryable, and nothing is read or written.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Final, Literal

Kind = Literal["read", "write"]
RATE_KEY: Final = "per_session_rps"


class LayerRates:
    """One bucket per (layer, kind): `rate` tokens a second up to `burst`; thread-safe."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, Kind], tuple[float, float]] = {}  # (tokens, stamp)

    def draw(self, layer: str, kind: Kind) -> str | None:
        """Take one request from `layer`'s `kind` bucket: None when taken, else why not (the
        rate, and when the next request is free), for the refusal."""
        with self._lock:
            now = self._clock()
            tokens, stamp = self._buckets.get((layer, kind), (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - stamp) * self.rate)
            if tokens >= 1.0:
                self._buckets[(layer, kind)] = (tokens - 1.0, now)
                return None
            self._buckets[(layer, kind)] = (tokens, now)
        wait = math.ceil((1.0 - tokens) / self.rate)
        return (
            f"it is over its rate: {RATE_KEY} {self.rate:g} {kind}s a second, burst"
            f" {self.burst}; the next is free in {wait} s"
        )
