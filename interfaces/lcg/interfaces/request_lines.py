"""Request lines split from a byte stream in linear time and bounded memory, and the id of a
line that cannot be parsed whole (an oversized or malformed request), read from its ends.

Both line transports use it: MCP over stdio and the socket service (ADR 0050).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MAX_REQUEST_BYTES = 4 * 1024 * 1024  # one request line, every transport (seed 001, M-TRN-060)
ID_WINDOW = 64 * 1024  # bytes of an oversized line's start and end kept to read its id

RequestId = str | int | None


@dataclass(frozen=True, slots=True)
class Oversized:
    """A request line over the limit: its bytes were discarded unread past the limit."""

    size: int  # bytes of the line, without its newline
    request_id: RequestId  # read from the line's start or end; None when it cannot be


class RequestLines:
    """Lines fed as chunks come out whole up to `limit` bytes; a longer line comes out as
    one Oversized, holding only the bytes read before the limit was crossed and a window of
    its end, so a line of any length costs bounded memory and one pass over its bytes."""

    def __init__(self, limit: int = MAX_REQUEST_BYTES, window: int = ID_WINDOW) -> None:
        self._limit = limit
        self._window = window
        self._partial = bytearray()  # the current line, up to the limit; never a newline
        self._discarding = False
        self._head = b""
        self._tail = bytearray()
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines (without their newline) that `chunk` completes, in order."""
        lines: list[bytes | Oversized] = []
        start = 0
        while start < len(chunk):
            newline = chunk.find(b"\n", start)  # only new bytes are scanned: linear time
            end = len(chunk) if newline < 0 else newline
            if self._discarding:
                self._size += end - start
                self._keep_tail(chunk[max(start, end - self._window) : end])
            elif len(self._partial) + end - start > self._limit:
                self._start_discarding(chunk[start:end])
            elif newline >= 0:
                lines.append(bytes(self._partial) + chunk[start:end])
                self._partial.clear()
            else:
                self._partial += chunk[start:]
            if newline < 0:
                break
            if self._discarding:
                lines.append(self._oversized())
            start = newline + 1
        return lines

    def end(self) -> bytes | None:
        """At end of input: the last line if it had no newline and is within the limit. An
        oversized line cut off by the end of input is not answered (M-TRN-067)."""
        if self._discarding or not self._partial.strip():
            return None
        return bytes(self._partial)

    @property
    def discarding(self) -> int | None:
        """The size read so far of an oversized line still being discarded, else None."""
        return self._size if self._discarding else None

    def _start_discarding(self, piece: bytes) -> None:
        line = self._partial + piece
        self._partial = bytearray()
        self._discarding = True
        self._size = len(line)
        self._head = bytes(line[: self._window])
        self._tail = bytearray()
        self._keep_tail(line[-self._window :])

    def _keep_tail(self, piece: bytes | bytearray) -> None:
        self._tail += piece
        if len(self._tail) > self._window:
            del self._tail[: len(self._tail) - self._window]

    def _oversized(self) -> Oversized:
        found = request_id_of(self._head, bytes(self._tail))
        self._discarding = False
        self._head = b""
        self._tail = bytearray()
        return Oversized(self._size, found)


# --- the id of a line that cannot be parsed whole -------------------------------------------

_WS = " \t\r\n"
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_SCALAR = re.compile(r"[-+0-9A-Za-z.]+")
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|"', re.DOTALL)
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
_SCALAR_CHARS = frozenset("-+0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.")


def request_id_of(head: bytes, tail: bytes | None = None) -> RequestId:
    """The top-level `id` of a JSON object whose line starts with `head` and ends with
    `tail` (the same bytes for a short line), read member by member from the start, then
    from the end, whether `id` comes before or after `params` (M-TRN-064). None when it
    cannot be read, or is not a valid JSON-RPC id (M-TRN-065)."""
    found = _id_from_start(_text(head))
    if isinstance(found, _Unread):
        found = _id_from_end(_text(head if tail is None else tail))
    return None if isinstance(found, _Unread) else found


def request_id_of_line(line: bytes) -> RequestId:
    """`request_id_of` for a line held whole (within the limit), reading its two ends."""
    return request_id_of(line[:ID_WINDOW], line[-ID_WINDOW:])


class _Unread:
    """No top-level id could be read from this end of the line."""


_UNREAD = _Unread()


def _text(data: bytes) -> str:
    # an invalid byte stays a lone surrogate: it fails only the value it sits in
    return data.decode("utf-8", "surrogateescape")


def _id_from_start(text: str) -> RequestId | _Unread:
    at = _skip_ws(text, 0)
    if not text.startswith("{", at):
        return _UNREAD
    at += 1
    while True:
        at = _skip_ws(text, at)
        key = _STRING.match(text, at)
        if key is None:
            return _UNREAD
        at = _skip_ws(text, key.end())
        if not text.startswith(":", at):
            return _UNREAD
        value_start = _skip_ws(text, at + 1)
        value_end = _value_end(text, value_start)
        if value_end is None:
            return _UNREAD
        if _key(key.group()) == "id":
            return _id_value(text[value_start:value_end])
        at = _skip_ws(text, value_end)
        if not text.startswith(",", at):
            return _UNREAD
        at += 1


def _id_from_end(text: str) -> RequestId | _Unread:
    at = _skip_ws_back(text, len(text))
    if not text.endswith("}", 0, at):
        return _UNREAD
    at -= 1
    while True:
        value_end = _skip_ws_back(text, at)
        value_start = _value_start(text, value_end)
        if value_start is None:
            return _UNREAD
        at = _skip_ws_back(text, value_start)
        if not text.endswith(":", 0, at):
            return _UNREAD
        key_end = _skip_ws_back(text, at - 1)
        key_start = _string_start(text, key_end)
        if key_start is None:
            return _UNREAD
        if _key(text[key_start:key_end]) == "id":
            return _id_value(text[value_start:value_end])
        at = _skip_ws_back(text, key_start)
        if not text.endswith(",", 0, at):
            return _UNREAD  # the object's `{`, or not JSON
        at -= 1


def _value_end(text: str, at: int) -> int | None:
    """Where the JSON value starting at `at` ends; None if it is cut off or not a value."""
    if text.startswith('"', at):
        string = _STRING.match(text, at)
        return None if string is None else string.end()
    if not text.startswith(("{", "["), at):
        scalar = _SCALAR.match(text, at)
        return None if scalar is None else scalar.end()
    depth = 0
    for token in _STRUCTURE.finditer(text, at):
        mark = token.group()
        if mark == '"':
            return None  # a string cut off by the window
        if mark in "{[":
            depth += 1
        elif mark in "}]":
            depth -= 1
            if depth == 0:
                return token.end()
    return None


def _value_start(text: str, end: int) -> int | None:
    """Where the JSON value ending at `end` starts, walking back; None if not found."""
    if end <= 0:
        return None
    last = text[end - 1]
    if last == '"':
        return _string_start(text, end)
    if last not in "}]":
        at = end
        while at > 0 and text[at - 1] in _SCALAR_CHARS:
            at -= 1
        return at if at < end else None
    depth = 0
    at = end
    while at > 0:
        char = text[at - 1]
        if char == '"':
            start = _string_start(text, at)
            if start is None:
                return None
            at = start
            continue
        at -= 1
        if char in "}]":
            depth += 1
        elif char in "{[":
            depth -= 1
            if depth == 0:
                return at
    return None


def _string_start(text: str, end: int) -> int | None:
    """The opening quote of the string whose closing quote ends at `end`: the first quote
    back that is not escaped (an even run of backslashes before it)."""
    if end < 2 or text[end - 1] != '"':
        return None
    at = end - 1
    while True:
        quote = text.rfind('"', 0, at)
        if quote < 0:
            return None
        slashes = 0
        while quote - slashes > 0 and text[quote - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2 == 0:
            return quote
        at = quote


def _key(literal: str) -> str | None:
    try:
        key = json.loads(literal)
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def _id_value(literal: str) -> RequestId:
    """A JSON-RPC id (a string, or an integer a frame can carry), or None for anything
    else: null, a fraction, a boolean, a string that is not Unicode."""
    if literal.startswith('"'):
        try:
            value = json.loads(literal)
            value.encode("utf-8")  # a lone surrogate could not be written back
        except (ValueError, UnicodeError):
            return None
        return value if isinstance(value, str) else None
    if len(literal) <= 20 and _INTEGER.fullmatch(literal):
        number = int(literal)
        return number if -(2**63) <= number < 2**64 else None
    return None


def _skip_ws(text: str, at: int) -> int:
    while at < len(text) and text[at] in _WS:
        at += 1
    return at


def _skip_ws_back(text: str, at: int) -> int:
    while at > 0 and text[at - 1] in _WS:
        at -= 1
    return at
