"""Reads after a seq: `min_seq` on the read tools (issue 28 item 3, ADR 0076).

A client that wrote on one node and reads on another says what it must see: `min_seq`, an
integer (the seq of the tool's one group: its `group_id`, or the only group of its
`group_ids`) or an object `{group_id: seq}`. Before the read runs, the node waits until its
projections have applied each named group to that seq, at most `[store] min_seq_wait_ms`;
beyond it the read is refused, naming `min_seq` and how far this node has applied the group.
On a single node every seq the log holds is applied when its write is answered, so an
existing seq never waits, and a seq the log does not hold yet waits out the bound.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import field_validator

from lcg.domain.errors import Conflict, InvalidParams
from lcg.interfaces.params import Params

MIN_SEQ_RULE = "must be a seq (an integer, 0 or more) or an object {group_id: seq}"
_DESCRIPTION = (
    "Read your writes across nodes: {group_id: seq}, and the read waits (at most [store] "
    "min_seq_wait_ms) until this node has applied each group's events up to that seq (a "
    "write's group and seq), else it is refused. A bare integer is the seq of this tool's one "
    "group (group_id, or group_ids naming one)."
)


class ReadAfterParams(Params):
    """A read tool's parameters with `min_seq`."""

    min_seq: int | dict[str, int] | None = None

    @field_validator("min_seq", mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        if value is None or _is_seq(value):
            return value
        if (
            isinstance(value, dict)
            and value
            and all(isinstance(key, str) and key and _is_seq(seq) for key, seq in value.items())
        ):
            return value
        raise ValueError(MIN_SEQ_RULE)

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        schema = super().model_json_schema(*args, **kwargs)
        # published with one plain type (forms fill it: issue 10), the general form; the
        # integer short form is accepted too and said in the description
        schema["properties"].pop("min_seq")  # published last: after the tool's own parameters
        schema["properties"]["min_seq"] = {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 0},
            "minProperties": 1,
            "description": _DESCRIPTION,
        }
        return schema


def _is_seq(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def targets(params: ReadAfterParams) -> dict[str, int]:
    """The seq each group must be applied to; an integer needs the tool's one group."""
    wanted = params.min_seq
    if wanted is None:
        return {}
    if isinstance(wanted, dict):
        return dict(wanted)
    group = getattr(params, "group_id", None)
    if isinstance(group, str):
        return {group: wanted}
    groups = getattr(params, "group_ids", None)
    if isinstance(groups, list) and len(groups) == 1:
        return {groups[0]: wanted}
    raise InvalidParams(
        "min_seq",
        "an integer is the seq of the tool's one group (group_id, or group_ids naming one);"
        " give an object {group_id: seq} here",
    )


# A request's own `min_seq` (ADR 0086), beside its arguments: the MCP request's
# `_meta["lcg/min_seq"]`, the socket request's `min_seq` member. It applies to every read
# tool, the lambo_* reads too, whose arguments the seed fixes exactly.
MIN_SEQ_META = "lcg/min_seq"
_REQUESTED: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar(
    "lcg_min_seq", default=None
)


def request_min_seq(value: object) -> dict[str, int]:
    """A request's `min_seq` member, checked: an object {group_id: seq} (no bare integer:
    a request has no one group); anything else is the parameter error naming `min_seq`."""
    if (
        isinstance(value, dict)
        and value
        and all(isinstance(key, str) and key and _is_seq(seq) for key, seq in value.items())
    ):
        return {str(key): int(seq) for key, seq in value.items()}
    raise InvalidParams(
        "min_seq", "a request's min_seq must be an object {group_id: seq} (seqs 0 or more)"
    )


@contextmanager
def reading_after(wanted: dict[str, int] | None) -> Iterator[None]:
    """The read tools called in this block (this thread, or a context copied from it) wait
    for `wanted` first."""
    token = _REQUESTED.set(wanted or None)
    try:
        yield
    finally:
        _REQUESTED.reset(token)


def requested() -> dict[str, int]:
    """The calling request's own `min_seq` ({} when it gave none)."""
    return dict(_REQUESTED.get() or {})


def merged(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    """Both waits: each group's highest seq."""
    both = dict(first)
    for group, seq in second.items():
        both[group] = max(seq, both.get(group, 0))
    return both


class NotYetApplied(Conflict):
    """This node has not applied a group as far as `min_seq` asks, within the wait."""

    def __init__(self, behind: dict[str, tuple[int, int]], wait_ms: int) -> None:
        parts = ", ".join(
            f"group {group!r} to seq {applied}, not yet seq {seq}"
            for group, (applied, seq) in sorted(behind.items())
        )
        super().__init__(
            f"min_seq: this node has applied {parts} (waited {wait_ms} ms,"
            " [store] min_seq_wait_ms); nothing was read: retry, or read on the node that"
            " took the write",
            field="min_seq",
            rule="must be applied on this node within [store] min_seq_wait_ms",
        )
        self.behind = behind


def wait_applied(
    applied: Callable[[str], int],
    wanted: dict[str, int],
    wait_ms: int,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Return once `applied(group)` reaches each wanted seq; `NotYetApplied` after
    `wait_ms`."""
    deadline = clock() + wait_ms / 1000
    pause = 0.002
    while True:
        behind = {
            group: (position, seq)
            for group, seq in wanted.items()
            if (position := applied(group)) < seq
        }
        if not behind:
            return
        left = deadline - clock()
        if left <= 0:
            raise NotYetApplied(behind, wait_ms)
        sleep(min(pause, left))
        pause = min(pause * 2, 0.05)
