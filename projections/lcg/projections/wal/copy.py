"""Copying a log from one store to another, and comparing two logs (`lcg store copy`,
`lcg store verify`; docs/adr/0073-the-workspace-on-a-log-store.md).

A copy is the same log in another store: every group's stream with its seqs, the checksums
(ADR 0049, recomputed by the target's append from the same bytes), the pins, the active
marks with their generation, and the identity, so that the projections built from the source
serve the copy unchanged. Events go through the codec (read, checked against their sums,
written): the bytes are this build's encoding of each event, which for every event this build
writes is the bytes it wrote. A verify compares, group by group, the heads, the counts and a
digest of every event (seq, type and encoded state), and names the first difference.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from lcg.domain.ids import GroupId
from lcg.projections.wal.port import LogStore
from lcg.projections.wal.store import RecordedEvent

Progress = Callable[[GroupId, int, int], None]  # group, events copied so far, of how many


class TargetNotEmpty(Exception):
    """The target log holds events already; nothing was copied."""


@dataclass
class Copied:
    """What a copy did."""

    groups: int = 0
    events: int = 0
    marks: int = 0
    pins: int = 0
    identity: str = ""


@dataclass
class Difference:
    """The first place two logs differ: a group, and the seq there (0: the group itself)."""

    group_id: GroupId
    seq: int
    what: str


@dataclass
class Compared:
    """What a verify saw: per group (count, head) on each side, and the first difference."""

    groups: dict[GroupId, tuple[int, int]] = field(default_factory=dict)
    events: int = 0
    difference: Difference | None = None


def copy_log(source: LogStore, target: LogStore, progress: Progress | None = None) -> Copied:
    """Every group's stream, then the pins, marks, generation and identity, into an empty
    `target`. The caller erases a non-empty target first (`--force`) or is refused."""
    if any(target.heads().values()):
        raise TargetNotEmpty(f"{target.where} already holds events")
    heads = {group: head for group, head in source.heads().items() if head}
    total = sum(heads.values())
    done = Copied(identity=source.identity)
    for group in sorted(heads):
        for page in source.read(group):
            target.append(page)
            done.events += len(page)
            if progress is not None:
                progress(group, done.events, total)
        done.groups += 1
    active = [mark for group in source.groups() for mark in source.marks(group)]
    target.adopt(source.identity, source.generation(), active)
    done.marks = len(active)
    pins = source.pins()
    if pins:
        target.set_pins(dict(pins))
        done.pins = len(pins)
    return done


def digest(log_: LogStore, event: RecordedEvent) -> bytes:
    """An event's digest: its seq, type and encoded state."""
    state = orjson.dumps(log_.codec.encode(event.event))
    head = f"{event.seq}:{event.event.wire_name}:".encode()
    return hashlib.sha256(head + state).digest()


def compare(one: LogStore, other: LogStore, progress: Progress | None = None) -> Compared:
    """Group by group: the heads and counts, then every event's digest, in seq order; stops
    at the first difference."""
    mine, theirs = one.heads(), other.heads()
    found = Compared()
    groups = sorted({g for g, h in mine.items() if h} | {g for g, h in theirs.items() if h})
    total = sum(mine.values())
    for group in groups:
        left, right = one.bounds(group), other.bounds(group)
        count = (0 if left is None else left[1] - left[0] + 1, mine.get(group, 0))
        found.groups[group] = count
        if left != right or mine.get(group, 0) != theirs.get(group, 0):
            found.difference = Difference(
                group,
                min(mine.get(group, 0), theirs.get(group, 0)) + 1,
                f"seqs {_span(left)} here, {_span(right)} there",
            )
            return found
        pages = other.read(group)
        buffered: list[RecordedEvent] = []
        for page in one.read(group):
            for event in page:
                if not buffered:
                    buffered = list(next(pages, []))
                    if not buffered:
                        found.difference = Difference(group, event.seq, "missing there")
                        return found
                theirs_event = buffered.pop(0)
                if theirs_event.seq != event.seq:
                    found.difference = Difference(group, event.seq, "missing there")
                    return found
                if digest(one, event) != digest(other, theirs_event):
                    found.difference = Difference(group, event.seq, "the events differ")
                    return found
                found.events += 1
            if progress is not None:
                progress(group, found.events, total)
    return found


def _span(bounds: tuple[int, int] | None) -> str:
    return "none" if bounds is None else f"{bounds[0]}-{bounds[1]}"
