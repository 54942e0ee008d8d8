"""The Extractor port: a chunk of text in, an Extraction out (issue 14).

What an extractor returns is recorded in the events process_chunk appends (the entities,
edges and mentions it decided), so a replay never calls an extractor.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from lcg.domain.extraction import Extraction


class Extractor(Protocol):
    """Turns text into entities and edges. `name` and `model` are reported by knowledge_status
    and recorded with each chunk's extraction."""

    name: str
    model: str

    def extract(self, text: str, reference_time: datetime) -> Extraction: ...
