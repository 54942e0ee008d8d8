"""Request lines split from chunks, the 4 MiB limit, and the id read from a line's ends."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from lcg.interfaces.jsonrpc import request_too_large
from lcg.interfaces.request_lines import (
    MAX_REQUEST_BYTES,
    Oversized,
    RequestLines,
    request_id_of,
    request_id_of_line,
)


def _split(chunks: list[bytes], limit: int = 16, window: int = 16) -> list[bytes | Oversized]:
    lines = RequestLines(limit, window)
    out: list[bytes | Oversized] = []
    for chunk in chunks:
        out += lines.feed(chunk)
    return out


def test_m_trn_060_the_limit_is_4_mib_of_one_line() -> None:
    assert MAX_REQUEST_BYTES == 4 * 1024 * 1024


def test_lines_come_out_whole_whatever_the_chunks() -> None:
    data = b'{"id":1}\n\n{"id":2}\n{"id":3}\n'
    for size in (1, 2, 5, len(data)):
        chunks = [data[i : i + size] for i in range(0, len(data), size)]
        assert _split(chunks) == [b'{"id":1}', b"", b'{"id":2}', b'{"id":3}']


def test_a_line_of_exactly_the_limit_is_kept_and_one_byte_more_is_oversized() -> None:
    assert _split([b"x" * 16 + b"\n"]) == [b"x" * 16]
    assert _split([b"x" * 17 + b"\n", b"ok\n"]) == [Oversized(17, None), b"ok"]


def test_m_trn_061_an_oversized_line_is_discarded_to_its_newline_and_its_id_read() -> None:
    """The id from the start, or from the end, however the line was cut into chunks."""
    head = b'{"id":3,"x":"' + b"a" * 40 + b'"}\n'
    tail = b'{"x":"' + b"a" * 40 + b'","id":"t"}\n{"id":4}\n'
    assert _split([head[:20], head[20:]]) == [Oversized(len(head) - 1, 3)]
    chunks = [tail[i : i + 7] for i in range(0, len(tail), 7)]
    assert _split(chunks) == [Oversized(len(tail) - 10, "t"), b'{"id":4}']


def test_a_huge_line_is_read_in_one_pass_with_bounded_memory() -> None:
    lines = RequestLines()
    body = b"x" * (64 * 1024)
    start, end = b'{"jsonrpc":"2.0","id":42,"params":"', b'"}'
    out = lines.feed(start)
    for _ in range(320):  # 20 MiB
        out += lines.feed(body)
        assert len(lines._partial) <= MAX_REQUEST_BYTES  # what it holds of the line
    out += lines.feed(end + b"\n")
    assert out == [Oversized(len(start) + 320 * len(body) + len(end), 42)]


def test_m_trn_067_an_oversized_line_cut_off_by_the_end_is_not_given_back() -> None:
    lines = RequestLines(16, 16)
    lines.feed(b"y" * 40)
    assert lines.discarding == 40
    assert lines.end() is None
    short = RequestLines(16, 16)
    short.feed(b'{"id":1}')
    assert short.end() == b'{"id":1}'


@pytest.mark.parametrize(
    ("line", "found"),
    [
        (b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"a":[1,{"b":"}"}]}}', 7),
        (b'{"method":"m","params":{"a":"\\"}]"},"id":"abc"}', "abc"),
        (b'{"params":{"a":"x\\\\"},"id":5,"jsonrpc":"2.0"}', 5),
        (b'  { "id" : -4 }  ', -4),
        (b'{"jsonrpc":"2.0","id":7,"params":{"a":NaN}}', 7),
        (b'{"params":{"a":1e400},"id":8}', 8),
        (b'{"params":{"a":"\xff"},"id":9}', 9),
        (b'{"a":' + b"[" * 3000 + b"]" * 3000 + b',"id":3}', 3),
        (b'{"jsonrpc":"2.0","id":true}', None),
        (b'{"jsonrpc":"2.0","id":1.5}', None),
        (b'{"jsonrpc":"2.0","id":{"x":1}}', None),
        (b'{"jsonrpc":"2.0","id":"\\ud800"}', None),
        (b'{"jsonrpc":"2.0","id":"\xff"}', None),
        (b'{"jsonrpc":"2.0","id":' + b"9" * 30 + b"}", None),
        (b'{"params":{"arguments":{"id":5}}}', None),
        (b"{not json", None),
        (b"[1,2]", None),
        (b"", None),
    ],
)
def test_m_trn_064_065_the_id_is_read_from_either_end_or_is_null(
    line: bytes, found: object
) -> None:
    assert request_id_of_line(line) == found


def test_m_trn_065_an_id_between_two_large_values_cannot_be_read() -> None:
    head = b'{"a":"' + b"q" * 100
    tail = b"q" * 100 + b'"}'
    assert request_id_of(head, tail) is None


def test_m_trn_062_063_an_oversized_request_is_logged_at_warn_with_its_size_never_content(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO, logger="lcg.jsonrpc"):
        refusal = request_too_large(5_000_123)
    assert (refusal.code, refusal.message) == (-32600, "request too large (over 4 MiB)")
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert "5000123 bytes" in record.getMessage()


def _derive_line(content: str, *, ensure_ascii: bool, concepts: int = 1, pairs: int = 0) -> bytes:
    arguments = {
        "agent_id": "a",
        "concepts": [{"content": content, "concept_type": "logic"}] * concepts,
        "parent_of": [{"parent": content, "child": content}] * pairs,
    }
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    request["params"] = {"name": "lambo_derive", "arguments": arguments}
    return json.dumps(request, ensure_ascii=ensure_ascii).encode() + b"\n"


def test_m_lim_030_a_full_batch_is_refused_by_the_request_limit_before_any_field_rule() -> None:
    """64 concepts and 256 pairs, every string at 16 KB: about 9.5 MB, refused as too large
    while its lines are read, before anything parses its fields."""
    line = _derive_line("x" * 16_384, ensure_ascii=True, concepts=64, pairs=256)
    assert len(line) > 9_000_000
    (refused,) = RequestLines(MAX_REQUEST_BYTES, 64).feed(line)
    assert refused == Oversized(len(line) - 1, 7)


def test_m_lim_032_the_limit_counts_bytes_as_sent_so_escaped_text_hits_it_sooner() -> None:
    text = "é" * 1_000_000  # 2 MB as UTF-8, 6 MB as \\u00e9 escapes
    raw = _derive_line(text, ensure_ascii=False)
    escaped = _derive_line(text, ensure_ascii=True)
    assert RequestLines(MAX_REQUEST_BYTES, 64).feed(raw) == [raw[:-1]]
    (refused,) = RequestLines(MAX_REQUEST_BYTES, 64).feed(escaped)
    assert isinstance(refused, Oversized)


def test_m_lim_031_a_full_image_and_256_pairs_are_refused_by_the_request_limit() -> None:
    """A lambo_derive_image with a 2 MiB image (as base64) and 256 pairs, each end at 16 KB:
    about 11.2 MB, refused as too large while its line is read."""
    end = "x" * 16_384
    arguments = {
        "agent_id": "a",
        "caption": "a full image",
        "concept_type": "resource",
        "image": {"mime": "image/png", "data": "A" * (4 * -(-2_097_152 // 3))},
        "parent_of": [{"parent": end, "child": end}] * 256,
    }
    request = {"jsonrpc": "2.0", "id": 9, "method": "tools/call"}
    request["params"] = {"name": "lambo_derive_image", "arguments": arguments}
    line = json.dumps(request).encode() + b"\n"
    assert 11_000_000 < len(line) < 11_500_000
    (refused,) = RequestLines(MAX_REQUEST_BYTES, 64).feed(line)
    assert refused == Oversized(len(line) - 1, 9)
