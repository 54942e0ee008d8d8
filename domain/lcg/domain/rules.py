"""Validation rules and limits for values that enter the log; each failure names field and rule."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any, Final, Literal, get_args

from lcg.domain.errors import InvalidParams
from lcg.domain.ids import GroupId

# Limits: generous enough for real agent memory, small enough that one request cannot
# exhaust the 4 MiB socket frame or bloat every replay (docs/adr/0006-limits.md).
MAX_GROUP_ID = 128
MAX_NAME = 512
MAX_LABELS = 32
MAX_LABEL = 128
MAX_SUMMARY = 65_536
MAX_ATTRIBUTES = 65_536
MAX_ATTRIBUTES_DEPTH = 32  # nested objects/arrays: deep enough for real data, far from recursion
MAX_PREDICATE = 256
MAX_FACT = 16_384
MAX_RELATION_TYPE = 128
MAX_EPISODE_NAME = 512
MAX_EPISODE_BODY = 1_048_576
MAX_SOURCE_DESCRIPTION = 1_024
MAX_NUM_RESULTS = 10_000
MAX_GROUP_IDS = 1_024  # groups named in one read
MAX_UUID = 64
MAX_MARK_NAME = 200  # P-135: upstream made a mark a directory name

EpisodeSource = Literal["text", "message", "json"]
EPISODE_SOURCES: tuple[EpisodeSource, ...] = get_args(EpisodeSource)

# knowledge_recover's strategies (ADR 0038), named here so `lcg recover`'s argument is typed
# without importing the recovery code (fast start, ADR 0053).
RecoveryStrategy = Literal["drop_lbug_wal", "rebuild_from_workspace_wal", "restore_from_backup"]

# Patterns are written once, here; the parameter models derive their constraints from them,
# and PATTERN_RULES turns a mismatch into the rule a caller reads.
GROUP_ID_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$"
GROUP_ID_RULE: Final = (
    "must start with a letter or digit and contain only letters, digits and _.:@-"
)
NOT_BLANK_PATTERN: Final = r"\S"
NOT_BLANK_RULE: Final = "is required and must not be blank"
MARK_NAME_PATTERN: Final = r"^[A-Za-z0-9_-]+$"
MARK_NAME_RULE: Final = "must contain only letters, digits, _ and - (1-200 characters)"
PATTERN_RULES: dict[str, str] = {
    GROUP_ID_PATTERN: GROUP_ID_RULE,
    NOT_BLANK_PATTERN: NOT_BLANK_RULE,
    MARK_NAME_PATTERN: MARK_NAME_RULE,
}

_GROUP_ID = re.compile(GROUP_ID_PATTERN)
_SPACE_FORM = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d+)?$")
_DATE_FORM = re.compile(r"^\d{4}-\d{2}-\d{2}$")  # an RFC 3339 full-date: midnight UTC


def group_id(value: str, field: str = "group_id") -> GroupId:
    """A group id: 1-128 characters, a letter or digit first, then letters, digits, _.:@-."""
    if not value:
        raise InvalidParams(field, "must be a non-empty string")
    if len(value) > MAX_GROUP_ID:
        raise InvalidParams(field, f"must be at most {MAX_GROUP_ID} characters")
    if not _GROUP_ID.match(value):
        raise InvalidParams(field, GROUP_ID_RULE)
    return GroupId(value)


def text(value: str, field: str, *, max_len: int, required: bool = False) -> str:
    """A string within `max_len` characters; `required` also refuses blank text."""
    if required and not value.strip():
        raise InvalidParams(field, NOT_BLANK_RULE)
    if len(value) > max_len:
        raise InvalidParams(field, f"must be at most {max_len} characters", f"got {len(value)}")
    return value


def name_key(name: str) -> str:
    """The identity form of a name: whitespace collapsed, case folded (P-108)."""
    return " ".join(name.split()).casefold()


def labels(values: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """Labels in order, de-duplicated; `["Entity"]` when none are given (A-18)."""
    return tuple(dict.fromkeys(values)) if values else ("Entity",)


def attributes(value: Any) -> str:
    """Attributes as JSON object text; anything that is not an object becomes "{}" (K-AST-011)."""
    if not isinstance(value, dict):
        return "{}"
    if _depth(value) > MAX_ATTRIBUTES_DEPTH:
        raise InvalidParams(
            "attributes", f"must nest objects and arrays at most {MAX_ATTRIBUTES_DEPTH} deep"
        )
    try:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidParams("attributes", "must be JSON-serialisable", str(error)) from error
    return text(encoded, "attributes", max_len=MAX_ATTRIBUTES)


def _depth(value: Any) -> int:
    """How deep objects and arrays nest in `value` (iterative: no recursion to exhaust)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth <= MAX_ATTRIBUTES_DEPTH:  # beyond it the answer is already "too deep"
                children = item.values() if isinstance(item, dict) else item
                stack.extend((child, depth + 1) for child in children)
    return deepest


def edge_fact(fact: str | None, source_name: str, predicate: str, target_name: str) -> str:
    """The fact as stored: the given one, or 'SOURCE PREDICATE TARGET' (K-AST-026) when it
    is missing or blank."""
    if fact is None or not fact.strip():
        return f"{source_name} {predicate} {target_name}"
    return fact


def timestamp(value: str, field: str) -> datetime:
    """An RFC 3339 time, a date (midnight UTC) or the `YYYY-MM-DD HH:MM:SS` read-back form;
    naive times are UTC."""
    candidate = value.strip()
    if not candidate or not (
        _SPACE_FORM.match(candidate)
        or _DATE_FORM.match(candidate)
        or re.match(r"^\d{4}-\d{2}-\d{2}[Tt]", candidate)
    ):
        raise InvalidParams(field, "must be an RFC 3339 timestamp", f"got {value!r}")
    try:
        parsed = datetime.fromisoformat(candidate.replace("z", "Z"))
    except ValueError as error:
        raise InvalidParams(field, "must be an RFC 3339 timestamp", f"got {value!r}") from error
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def json_body(body: str, field: str = "episode_body") -> None:
    """A body declared as JSON must parse as JSON."""
    try:
        json.loads(body)
    except ValueError as error:
        raise InvalidParams(
            field, "must be valid JSON when source is 'json'", str(error)
        ) from error
