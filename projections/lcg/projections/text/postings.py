"""The in-memory scorer's postings: their arrays, compaction, and the checkpoint file's layout.

Postings live in `array.array`s (cheap appends). numpy reads them through `np.frombuffer`, but
only for the length of one expression (`copy`, `take`): a view that outlived it (one kept by a
traceback) would pin the array's buffer and make the next append fail.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(slots=True)
class Postings:
    """Every document of one FTS5 table, as slots; a replaced document gets a new slot."""

    term_ids: dict[str, int] = field(default_factory=dict)
    # Per term: the slots holding it (int32) and its column-weighted frequency there (float32,
    # exact: sums of small counts times weights 1 and 2). A term's document frequency is the
    # number of its slots still alive, counted when a query needs it.
    slots: list[array[int]] = field(default_factory=list)
    freqs: list[array[float]] = field(default_factory=list)
    slot_doc: array[int] = field(default_factory=lambda: array("q"))
    slot_group: array[int] = field(default_factory=lambda: array("i"))
    slot_len: array[float] = field(default_factory=lambda: array("d"))  # tokens, all columns
    slot_alive: bytearray = field(default_factory=bytearray)
    doc_slot: dict[int, int] = field(default_factory=dict)
    total_tokens: float = 0.0

    @property
    def live(self) -> int:
        return len(self.doc_slot)


def take(values: array[Any] | bytearray, dtype: type[np.generic], index: np.ndarray) -> np.ndarray:
    """values[index] as a new array; the buffer view it is read through dies on return."""
    taken: np.ndarray = np.frombuffer(values, dtype=dtype)[index]
    return taken


def copy(values: array[Any] | bytearray, dtype: type[np.generic]) -> np.ndarray:
    """The values as a numpy array of their own: a view (np.frombuffer) would pin the array's
    buffer, and an append to it while the view lives (one kept by a traceback) would fail."""
    return np.frombuffer(values, dtype=dtype).copy()


def compact(postings: Postings) -> Postings:
    """Drop dead slots (renumbering the live ones)."""
    alive = np.frombuffer(postings.slot_alive, dtype=np.uint8).astype(bool)
    renumber = np.cumsum(alive) - 1
    fresh = Postings(term_ids=dict(postings.term_ids))
    for term_slots, term_freqs in zip(postings.slots, postings.freqs, strict=True):
        slots = copy(term_slots, np.int32)
        keep = alive[slots]
        fresh.slots.append(array("i", renumber[slots[keep]].astype(np.int32).tobytes()))
        fresh.freqs.append(array("f", copy(term_freqs, np.float32)[keep].tobytes()))
    live = np.flatnonzero(alive)
    fresh.slot_doc = array("q", take(postings.slot_doc, np.int64, live).tobytes())
    fresh.slot_group = array("i", take(postings.slot_group, np.int32, live).tobytes())
    fresh.slot_len = array("d", take(postings.slot_len, np.float64, live).tobytes())
    fresh.slot_alive = bytearray(b"\x01" * len(live))
    fresh.doc_slot = {int(fresh.slot_doc[i]): i for i in range(len(live))}
    fresh.total_tokens = postings.total_tokens
    return fresh


def flat(parts: Sequence[array[Any]], dtype: type[np.generic]) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.fromiter((len(part) for part in parts), dtype=np.int64, count=len(parts))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = (
        np.concatenate([np.frombuffer(part, dtype=dtype) for part in parts])
        if parts and offsets[-1]
        else np.zeros(0, dtype=dtype)
    )
    return offsets, values


def pack(kind: str, postings: Postings) -> dict[str, Any]:
    live = compact(postings)
    terms = sorted(live.term_ids, key=live.term_ids.__getitem__)
    offsets, slots = flat(live.slots, np.int32)
    _, freqs = flat(live.freqs, np.float32)
    return {
        f"{kind}.terms": np.array(terms or [""]),
        f"{kind}.offsets": offsets,
        f"{kind}.slots": slots,
        f"{kind}.freqs": freqs,
        f"{kind}.slot_doc": np.frombuffer(live.slot_doc, dtype=np.int64),
        f"{kind}.slot_group": np.frombuffer(live.slot_group, dtype=np.int32),
        f"{kind}.slot_len": np.frombuffer(live.slot_len, dtype=np.float64),
        f"{kind}.total": np.array([live.total_tokens]),
    }


def unpack(kind: str, data: Any) -> Postings:
    terms = [str(term) for term in data[f"{kind}.terms"]]
    offsets = data[f"{kind}.offsets"]
    slots, freqs = data[f"{kind}.slots"], data[f"{kind}.freqs"]
    slot_doc = data[f"{kind}.slot_doc"]
    postings = Postings()
    count = len(offsets) - 1
    postings.term_ids = {term: i for i, term in enumerate(terms[:count])}
    postings.slots = [
        array("i", slots[offsets[i] : offsets[i + 1]].astype(np.int32).tobytes())
        for i in range(count)
    ]
    postings.freqs = [
        array("f", freqs[offsets[i] : offsets[i + 1]].astype(np.float32).tobytes())
        for i in range(count)
    ]
    postings.slot_doc = array("q", slot_doc.astype(np.int64).tobytes())
    postings.slot_group = array("i", data[f"{kind}.slot_group"].astype(np.int32).tobytes())
    postings.slot_len = array("d", data[f"{kind}.slot_len"].astype(np.float64).tobytes())
    postings.slot_alive = bytearray(b"\x01" * len(slot_doc))
    postings.doc_slot = {int(doc): i for i, doc in enumerate(slot_doc)}
    postings.total_tokens = float(data[f"{kind}.total"][0])
    if (
        offsets[-1] != len(slots)
        or len(freqs) != len(slots)
        or len(slot_doc) != len(postings.slot_len)
    ):
        raise ValueError(f"{kind}: inconsistent arrays")
    if len(slots) and int(slots.max()) >= len(slot_doc):
        raise ValueError(f"{kind}: a posting names a missing slot")
    return postings
