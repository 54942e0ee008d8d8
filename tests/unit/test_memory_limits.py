"""The Lambo memory limits (seed 001 "Limits", checklist M-LIM) as named constants and checks."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from lcg.domain.ids import GroupId
from lcg.domain.memory import limits
from lcg.domain.memory.arguments import DeriveArgs, check_derive
from lcg.domain.memory.calls import ConceptIn
from lcg.domain.memory.limits import IntRange
from lcg.domain.memory.text import (
    CALL_TEXT_SEPARATOR,
    EMBEDDING_FRAME_SEPARATOR,
    MemoryArgumentError,
    check_int_range,
    check_text,
    clamp_wait_ms,
)


def test_m_lim_001_oq_10_any_single_string_is_16_kb_of_utf8_bytes() -> None:
    """OQ-10: "16 KB" is 16,384 bytes of UTF-8, not characters."""
    assert limits.MAX_STRING_BYTES == 16_384
    check_text("query", "x" * 16_384)
    with pytest.raises(MemoryArgumentError):
        check_text("query", "x" * 16_385)
    check_text("query", "é" * 8_192)  # 16,384 bytes in 8,192 characters
    with pytest.raises(MemoryArgumentError):
        check_text("query", "é" * 8_192 + "x")  # 8,193 characters: one byte over


@pytest.mark.parametrize(
    ("field", "bounds", "minimum", "maximum", "default"),
    [
        ("top_k", limits.TOP_K, 1, 100, 5),  # M-LIM-002
        ("traversal_depth", limits.TRAVERSAL_DEPTH, 0, 5, 2),  # M-LIM-003
        ("depth", limits.INSPECT_DEPTH, 0, 5, 2),  # M-LIM-004
        ("max_tokens", limits.MAX_TOKENS, 1, 100_000, 500),  # M-LIM-005
        ("ttl_seconds", limits.TTL_SECONDS, 1, 3600, 30),  # M-LIM-016
    ],
)
def test_m_lim_002_to_005_and_016_integer_bounds_accept_the_ends_and_refuse_beyond(
    field: str, bounds: IntRange, minimum: int, maximum: int, default: int
) -> None:
    """Also M-LIM-003..005 and M-LIM-016: each bound's ends pass and one beyond is refused."""
    assert (bounds.minimum, bounds.maximum, bounds.default) == (minimum, maximum, default)
    assert check_int_range(field, minimum, bounds) == minimum
    assert check_int_range(field, maximum, bounds) == maximum
    for outside in (minimum - 1, maximum + 1):
        with pytest.raises(MemoryArgumentError) as refused:
            check_int_range(field, outside, bounds)
        assert refused.value.message == f"{field} must be in {minimum}..={maximum}"
        assert refused.value.field == field
        assert refused.value.rule == "range"


def test_m_err_013_a_value_outside_its_range_gives_the_bound_in_the_seeds_words() -> None:
    with pytest.raises(MemoryArgumentError, match=r"^top_k must be in 1\.\.=100$"):
        check_int_range("top_k", 101, limits.TOP_K)


def test_m_lim_028_top_k_max_tokens_and_ttl_seconds_refuse_zero() -> None:
    for field, bounds in (
        ("top_k", limits.TOP_K),
        ("max_tokens", limits.MAX_TOKENS),
        ("ttl_seconds", limits.TTL_SECONDS),
    ):
        with pytest.raises(MemoryArgumentError):
            check_int_range(field, 0, bounds)


def test_the_configured_defaults_are_the_seeds() -> None:
    """M-CFG-044/045: lambo_inspect's depth defaults to 2, lambo_reserve's ttl_seconds to 30."""
    assert limits.TOP_K_DEFAULT == 5
    assert limits.MAX_TOKENS_DEFAULT == 500
    assert limits.TRAVERSAL_DEPTH_DEFAULT == 2
    assert limits.INSPECT_DEPTH_DEFAULT == 2
    assert limits.TTL_SECONDS_DEFAULT == 30


def test_m_lim_006_to_015_per_call_counts() -> None:
    assert limits.MAX_CONCEPTS_PER_DERIVE == 64  # M-LIM-006
    assert limits.MAX_PARENT_OF_PAIRS == 256  # M-LIM-007, M-LIM-008
    assert limits.MAX_CONCEPTS_AND_PAIRS == 512  # M-LIM-009 (OQ-06 open)
    assert limits.MAX_ACTION_TARGETS == 64  # M-LIM-010
    assert limits.MAX_DEPENDS_ON_PER_CONCEPT == 8  # M-LIM-011
    assert limits.MAX_DEPENDS_ON_PER_CALL == 32  # M-LIM-012
    assert limits.MAX_AGAINST_PER_CONCEPT == 8  # M-LIM-013
    assert limits.MAX_AGAINST_PER_CALL == 32  # M-LIM-014
    assert limits.MAX_ACTION_AGAINST == 8  # M-LIM-015


def test_m_der_072_concepts_and_parent_of_pairs_are_at_most_512_combined() -> None:
    """The rule as the domain checks it. Over the tools it cannot bind (the checklist's open
    question on this bound): 64 concepts and 256 pairs, each refused beyond by its own bound
    first, make 320; so the pairs here are past the parameter model's 256, which the domain
    does not re-check."""
    concepts = tuple(ConceptIn(f"c{n}", "entity") for n in range(64))
    pairs = tuple((f"p{n}", f"q{n}") for n in range(449))

    def derive(count: int) -> None:
        args = DeriveArgs("agent-a", concepts, pairs[:count])
        check_derive(args, GroupId("liminis"), lambda: datetime(2026, 1, 1, tzinfo=UTC))

    derive(448)  # 512 combined: accepted
    with pytest.raises(MemoryArgumentError) as refused:
        derive(449)
    assert (refused.value.field, refused.value.rule) == ("parent_of", "combined limit")
    assert refused.value.message == "concepts and parent_of: at most 512 combined (513 given)"


def test_m_lim_017_018_inspect_renders_200_neighbours_and_lists_10_candidates() -> None:
    assert limits.MAX_INSPECT_NEIGHBOURS == 200
    assert limits.MAX_FOCUS_CANDIDATES == 10


def test_m_lim_019_029_wait_ms_clamps_to_34000_rather_than_refusing() -> None:
    assert (limits.WAIT_MS.minimum, limits.WAIT_MS.maximum) == (0, 34_000)
    assert clamp_wait_ms(0) == 0
    assert clamp_wait_ms(34_000) == 34_000
    assert clamp_wait_ms(34_001) == 34_000
    assert clamp_wait_ms(10**9) == 34_000
    with pytest.raises(MemoryArgumentError, match=r"^wait_ms must be in 0\.\.=34000$"):
        clamp_wait_ms(-1)


def test_m_lim_020_receipts_are_kept_300_seconds_or_4096_receipts() -> None:
    """Also M-CFG-043."""
    assert limits.RECEIPT_RETENTION_SECONDS == 300
    assert limits.MAX_RECEIPTS_KEPT == 4096


def test_m_lim_021_to_024_image_and_vector_bounds() -> None:
    assert limits.MAX_IMAGES_PER_CALL == 1
    assert limits.MAX_IMAGE_DECODED_BYTES == 2_097_152
    # Padded base64 of 2 MiB: 4 characters per 3 bytes, rounded up to a whole quantum.
    assert limits.MAX_IMAGE_BASE64_CHARS == 4 * -(-limits.MAX_IMAGE_DECODED_BYTES // 3)
    assert limits.MAX_IMAGE_SIDE_PIXELS == 4096
    assert limits.MAX_VECTOR_VALUES == 4096


def test_m_lim_025_a_caption_fits_16384_bytes_with_its_image_suffix() -> None:
    assert limits.MAX_IMAGE_CONTENT_BYTES == 16_384
    assert limits.max_caption_bytes("a") == 16_374
    assert limits.max_caption_bytes("r17") == 16_372
    assert limits.max_caption_bytes("0123456789abcdef") == 16_359
    caption = "c" * limits.max_caption_bytes("r17")
    assert len(f"{caption} [image:r17]".encode()) == limits.MAX_IMAGE_CONTENT_BYTES


def test_m_lim_026_a_concept_sent_alone_may_be_8189_bytes_of_embedding_text() -> None:
    assert limits.MAX_EMBEDDING_TEXT_BYTES == 16_384
    frame = len(EMBEDDING_FRAME_SEPARATOR.encode())
    assert frame == 5
    assert len(CALL_TEXT_SEPARATOR.encode()) == 2
    alone = limits.MAX_SOLO_CONCEPT_EMBEDDING_BYTES
    assert alone == (limits.MAX_EMBEDDING_TEXT_BYTES - frame) // 2 == 8_189


def test_m_lim_027_one_request_is_4_mib() -> None:
    assert limits.MAX_REQUEST_BYTES == 4 * 1024 * 1024


def test_m_lim_035_to_040_identity_receipt_and_queue_bounds() -> None:
    """Also M-CFG-042: the write queue's bounds are fixed shares, lane 64 and queue 1024."""
    assert limits.MAX_AGENT_ID_CHARS == 256  # M-LIM-035
    assert limits.MAX_REPO_SCOPE_BYTES == 512  # M-LIM-036
    assert limits.MAX_IMAGE_ID_CHARS == 64  # M-LIM-037
    assert limits.MAX_PIGGYBACKED_RECEIPTS == 8  # M-LIM-038
    assert limits.MAX_WAITS_PER_SERVER == 16  # M-LIM-039
    assert limits.MAX_WAITS_PER_AGENT == 8  # M-LIM-039
    assert limits.WRITE_QUEUE_LANE_BOUND == 64  # M-LIM-040
    assert limits.WRITE_QUEUE_BOUND == 1024  # M-LIM-040
    # The lane is one agent's fair share: a sixteenth of the queue.
    assert limits.WRITE_QUEUE_BOUND // limits.WRITE_QUEUE_LANE_BOUND == 16


def test_an_int_range_describes_itself_in_the_seeds_form() -> None:
    bounds = IntRange(1, 100)
    assert bounds.describe("top_k") == "top_k must be in 1..=100"
    assert bounds.contains(1)
    assert not bounds.contains(101)


def test_adr_0052_wait_ms_and_offset_take_any_signed_32_bit_count() -> None:
    """The two arguments the seed gives no upper bound accept what a JSON client's signed
    32-bit integer holds, and no more (wait_ms then clamps to its 34 s wait)."""
    for bound in (limits.WAIT_MS_ARGUMENT, limits.STALE_OFFSET):
        assert bound.contains(2_147_483_647)
        assert not bound.contains(2_147_483_648)
        assert bound.contains(0)
        assert not bound.contains(-1)
    assert limits.WAIT_MS_ARGUMENT.describe("wait_ms") == "wait_ms must be in 0..=2147483647"
