"""The bounds of the Lambo memory tools (seed 001, "Limits"), one named constant each.

Sizes in bytes are UTF-8 bytes. "16 KB" in the seed is 16,384 bytes (OQ-10, as the checklist
resolves it in M-ARG-020 and as the derive_image caption arithmetic requires), which is also
16 KiB, so the dependency-question fall-through "over 16 KiB" (OQ-08) coincides with the cap.
The published schemas carry the same numbers (M-ARG-009/010): a string's `maxLength` is its
cap here, the integers' `minimum` and `maximum` their range. JSON Schema counts a string's
length in characters and cannot count bytes, so for a cap in bytes the schema is the looser
bound (every string over N characters is over N bytes; non-ASCII text can pass the schema and
still be refused). The runtime enforces each published bound itself, in bytes (characters for
agent_id, which the seed caps in characters), so its refusal names the field, the cap and the
size given, and a range refusal reads `top_k must be in 1..=100` (issue 24, ADR 0052).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IntRange:
    """An inclusive integer bound, with the default a tool uses when the argument is omitted."""

    minimum: int
    maximum: int
    default: int | None = None

    def contains(self, value: int) -> bool:
        """Whether `value` lies inside the bound."""
        return self.minimum <= value <= self.maximum

    def describe(self, field: str) -> str:
        """The refusal sentence, in the seed's form: `top_k must be in 1..=100`."""
        return f"{field} must be in {self.minimum}..={self.maximum}"


KIB = 1024
MIB = 1024 * KIB

# Any single string argument.
MAX_STRING_BYTES = 16 * KIB

# The configured defaults of the integer arguments.
TOP_K_DEFAULT = 5
MAX_TOKENS_DEFAULT = 500
TRAVERSAL_DEPTH_DEFAULT = 2
INSPECT_DEPTH_DEFAULT = 2
TTL_SECONDS_DEFAULT = 30

# Integer arguments: minimum, maximum, default.
TOP_K = IntRange(1, 100, default=TOP_K_DEFAULT)
MAX_TOKENS = IntRange(1, 100_000, default=MAX_TOKENS_DEFAULT)
TRAVERSAL_DEPTH = IntRange(0, 5, default=TRAVERSAL_DEPTH_DEFAULT)
INSPECT_DEPTH = IntRange(0, 5, default=INSPECT_DEPTH_DEFAULT)
TTL_SECONDS = IntRange(1, 3600, default=TTL_SECONDS_DEFAULT)
# wait_ms is the one bound that clamps: a larger value waits the maximum instead of erroring.
WAIT_MS = IntRange(0, 34_000)
# What the argument itself accepts (a signed 32-bit integer, clamped to WAIT_MS above).
WAIT_MS_ARGUMENT = IntRange(0, 2**31 - 1)
# lambo_stale's offset: a row number, 0 or more.
STALE_OFFSET = IntRange(0, 2**31 - 1)

# lambo_derive and lambo_derive_image.
MAX_CONCEPTS_PER_DERIVE = 64
MAX_PARENT_OF_PAIRS = 256
# As stated; with 64 concepts and 256 pairs it cannot bind unless pair ends count (OQ-06, open).
MAX_CONCEPTS_AND_PAIRS = 512
MAX_DEPENDS_ON_PER_CONCEPT = 8
MAX_DEPENDS_ON_PER_CALL = 32
MAX_AGAINST_PER_CONCEPT = 8
MAX_AGAINST_PER_CALL = 32

# lambo_record_action.
MAX_ACTION_TARGETS = 64  # produces + modifies + depends_on, combined
MAX_ACTION_AGAINST = 8

# lambo_inspect.
MAX_INSPECT_NEIGHBOURS = 200  # in total across every hop
MAX_FOCUS_CANDIDATES = 10

# Write receipts, waits and the write queue.
RECEIPT_RETENTION_SECONDS = 300
MAX_RECEIPTS_KEPT = 4096
MAX_PIGGYBACKED_RECEIPTS = 8
MAX_WAITS_PER_SERVER = 16
MAX_WAITS_PER_AGENT = 8
WRITE_QUEUE_LANE_BOUND = 64
WRITE_QUEUE_BOUND = 1024

# The embedding-text limit: each framed text, and the call's text alone.
MAX_EMBEDDING_TEXT_BYTES = 16 * KIB
# A concept sent alone is framed with itself: 2n + len(" — ") <= 16,384, so n <= 8,189.
MAX_SOLO_CONCEPT_EMBEDDING_BYTES = 8_189

# lambo_derive_image.
MAX_IMAGES_PER_CALL = 1
MAX_IMAGE_DECODED_BYTES = 2 * MIB
MAX_IMAGE_BASE64_CHARS = 2_796_204
MAX_IMAGE_SIDE_PIXELS = 4096
MAX_VECTOR_VALUES = 4096
MAX_IMAGE_ID_CHARS = 64
MAX_IMAGE_CONTENT_BYTES = 16 * KIB  # the caption with its " [image:<image_id>]" suffix
IMAGE_SUFFIX_FIXED_BYTES = len(" [image:]")

# Identity strings.
MAX_AGENT_ID_CHARS = 256  # Unicode code points (OQ-11)
MAX_REPO_SCOPE_BYTES = 512
MAX_NODE_ID_BYTES = 64  # a node's full id (a UUID is 36)
MAX_RECEIPT_BYTES = 128  # a write receipt's id
MAX_EVENT_TIME_BYTES = 64  # an RFC3339 timestamp

# One request, on every transport, before any of it is parsed.
MAX_REQUEST_BYTES = 4 * MIB


def max_caption_bytes(image_id: str) -> int:
    """The longest caption whose stored content, with its image suffix, fits the cap."""
    return MAX_IMAGE_CONTENT_BYTES - IMAGE_SUFFIX_FIXED_BYTES - len(image_id.encode("utf-8"))
