"""lambo_derive_image's image argument rules (seed 001 "lambo_derive_image", M-IMG-012..020,
M-IMG-022..026, M-LIM-021..025/037; ADR 0093): `{mime, data}`, the base64 text, the decoded
size, the type the bytes are against the declared one, the pixel size; the image id; the
caption's limit.

Pure rules, not yet wired to a tool (lambo_derive_image is not served yet). Every limit is
checked on the text before it is decoded, so nothing past a limit is read. A refusal names the
field and the rule; it never repeats the base64, the bytes or a sent value (M-IMG-058).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass

from lcg.domain.memory import limits
from lcg.domain.memory.text import MemoryArgumentError, check_no_image_suffix

IMAGE_KEYS = ("mime", "data")
MIMES = ("image/png", "image/jpeg", "image/webp")
DEFAULT_ID_CHARS = 16  # the digest id's length (M-IMG-015)
_IMAGE_ID = re.compile(r"[a-z0-9]{1,64}", re.ASCII)
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}", re.ASCII)
_PNG = b"\x89PNG\r\n\x1a\n"
# JPEG start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) do not.
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


@dataclass(frozen=True, slots=True)
class CheckedImage:
    """An image whose bytes are what was declared, within every limit."""

    mime: str
    data: bytes
    width: int
    height: int

    @property
    def default_id(self) -> str:
        """The id an image sent without image_id gets: a digest of its bytes (M-IMG-020)."""
        return hashlib.sha256(self.data).hexdigest()[:DEFAULT_ID_CHARS]


def _refuse(field: str, rule: str, message: str) -> MemoryArgumentError:
    return MemoryArgumentError(f"{field}: {message}", field=field, rule=rule)


def _not_base64(field: str, why: str) -> MemoryArgumentError:
    """The seed's sentence, `image.data is not valid base64`, and why."""
    return MemoryArgumentError(f"{field} is not valid base64 ({why})", field=field, rule="base64")


def check_image(field: str, raw: object) -> CheckedImage:
    """`raw` as sent (`{mime, data}`) checked against every rule of the seed, or a
    MemoryArgumentError naming the field and the rule."""
    if not isinstance(raw, Mapping):
        raise _refuse(field, "shape", "must be an object {mime, data}")
    if any(key not in IMAGE_KEYS for key in raw):
        raise _refuse(
            field, "shape", "has keys other than mime and data (no file path or URL argument)"
        )
    for key in IMAGE_KEYS:
        if key not in raw:
            raise _refuse(f"{field}.{key}", "required", "is required")
    mime = raw["mime"]
    if not isinstance(mime, str) or mime not in MIMES:
        raise _refuse(f"{field}.mime", "mime", f"must be one of {', '.join(MIMES)}")
    data = _decoded(f"{field}.data", raw["data"])
    sniffed = sniff(data)
    if sniffed is None:
        raise _refuse(f"{field}.data", "mime", "the bytes are not a PNG, JPEG or WebP image")
    if sniffed != mime:
        raise _refuse(f"{field}.mime", "mime", f"declared {mime} but the bytes are {sniffed}")
    size = pixel_size(sniffed, data)
    if size is None:
        raise _refuse(f"{field}.data", "image", f"the {sniffed} header is cut short or damaged")
    width, height = size
    side = limits.MAX_IMAGE_SIDE_PIXELS
    if width > side or height > side or width < 1 or height < 1:
        raise _refuse(
            f"{field}.data",
            "pixels",
            f"is {width}x{height} pixels; at most {side} pixels a side (and at least 1)",
        )
    return CheckedImage(mime, data, width, height)


def _decoded(field: str, text: object) -> bytes:
    """Standard-alphabet, padded base64 on one line without a data: URI prefix, at most
    2,796,204 characters and 2 MiB decoded (M-IMG-024/025)."""
    if not isinstance(text, str):
        raise _not_base64(field, "it must be a string")
    if len(text) > limits.MAX_IMAGE_BASE64_CHARS:
        raise _refuse(
            field,
            "size",
            f"is {len(text):,} characters; at most {limits.MAX_IMAGE_BASE64_CHARS:,} "
            f"({limits.MAX_IMAGE_DECODED_BYTES // limits.MIB} MiB decoded)",
        )
    if text.startswith("data:"):
        raise _not_base64(field, "send the bytes without a data: URI prefix")
    if "\n" in text or "\r" in text:
        raise _not_base64(field, "it must be on one line")
    if not text:
        raise _not_base64(field, "it is empty")
    if len(text) % 4 or _BASE64.fullmatch(text) is None:
        raise _not_base64(field, "standard alphabet, padded, on one line")
    try:
        data = base64.b64decode(text, validate=True)
    except binascii.Error as error:
        raise _not_base64(field, "standard alphabet, padded, on one line") from error
    if len(data) > limits.MAX_IMAGE_DECODED_BYTES:
        raise _refuse(
            field,
            "size",
            f"decodes to {len(data):,} bytes; at most {limits.MAX_IMAGE_DECODED_BYTES:,}",
        )
    return data


def sniff(data: bytes) -> str | None:
    """The image type the bytes are, by their signature; None if none of the three."""
    if data.startswith(_PNG):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def pixel_size(mime: str, data: bytes) -> tuple[int, int] | None:
    """(width, height) from the header, or None when it is cut short or damaged."""
    if mime == "image/png":
        return _png_size(data)
    if mime == "image/jpeg":
        return _jpeg_size(data)
    return _webp_size(data)


def _png_size(data: bytes) -> tuple[int, int] | None:
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """The first start-of-frame's size, walking the marker segments from SOI."""
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        if marker in _SOF:
            if at + 9 > len(data) or length < 7:
                return None
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return int(width), int(height)
        if marker == 0xDA or length < 2:  # scan data before any frame: damaged
            return None
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return int(width) & 0x3FFF, int(height) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def check_image_id(field: str, image_id: object) -> str:
    """1 to 64 lowercase letters and digits (M-IMG-019)."""
    if not isinstance(image_id, str) or _IMAGE_ID.fullmatch(image_id) is None:
        raise _refuse(
            field,
            "image id",
            f"must be 1 to {limits.MAX_IMAGE_ID_CHARS} lowercase letters and digits "
            "(^[a-z0-9]{1,64}$)",
        )
    return image_id


def image_content(caption: str, image_id: str) -> str:
    """The stored content: the caption plus its image suffix (M-IMG-013)."""
    return f"{caption} [image:{image_id}]"


def check_caption(field: str, caption: str, image_id: str) -> str:
    """No image suffix of its own (M-IMG-012); the content within 16,384 bytes, so the
    caption within 16,375 bytes less the id's length (M-IMG-013..017). Returns the content."""
    check_no_image_suffix(field, caption)
    cap = limits.max_caption_bytes(image_id)
    size = len(caption.encode("utf-8"))
    if size > cap:
        raise _refuse(
            field,
            "size",
            f"is {size:,} bytes; at most {cap:,} with image_id of {len(image_id)} "
            f"character(s) (the caption plus [image:<image_id>] must fit in "
            f"{limits.MAX_IMAGE_CONTENT_BYTES:,} bytes)",
        )
    return image_content(caption, image_id)


def check_image_concept_type(field: str, concept_type: object) -> str:
    """entity, logic, constraint or resource: an image cannot be an observation (M-IMG-018)."""
    allowed = ("entity", "logic", "constraint", "resource")
    if concept_type not in allowed:
        raise _refuse(
            field,
            "concept type",
            f"must be one of {', '.join(allowed)} (an image cannot be an observation)",
        )
    assert isinstance(concept_type, str)
    return concept_type
