"""lambo_derive_image's argument rules as pure domain rules (lcg.domain.memory.images, ADR
0093), over real PNG, JPEG and WebP bytes: the PNGs are written here (zlib, real CRCs), the
JPEG and WebP ones were made by ImageMagick 6.9 (5x3 red baseline JPEG, 7x2 blue progressive
JPEG, 5x3 lossy and 7x2 lossless WebP)."""

from __future__ import annotations

import base64
import hashlib

import pytest

from lcg.domain.memory import images, limits
from lcg.domain.memory.images import (
    check_caption,
    check_image,
    check_image_concept_type,
    check_image_id,
)
from lcg.domain.memory.text import MemoryArgumentError
from tests.helpers.images import (
    JPEG_5X3,
    JPEG_PROGRESSIVE_7X2,
    WEBP_5X3,
    WEBP_LOSSLESS_7X2,
    b64,
    png,
)


def _refused(raw: object) -> MemoryArgumentError:
    with pytest.raises(MemoryArgumentError) as error:
        check_image("image", raw)
    return error.value


@pytest.mark.parametrize(
    ("mime", "data", "size"),
    [
        ("image/png", b64(png(4, 3)), (4, 3)),
        ("image/jpeg", JPEG_5X3, (5, 3)),
        ("image/jpeg", JPEG_PROGRESSIVE_7X2, (7, 2)),
        ("image/webp", WEBP_5X3, (5, 3)),
        ("image/webp", WEBP_LOSSLESS_7X2, (7, 2)),
    ],
)
def test_m_img_022_023_024_real_images_pass_with_their_size(
    mime: str, data: str, size: tuple[int, int]
) -> None:
    checked = check_image("image", {"mime": mime, "data": data})
    assert (checked.mime, (checked.width, checked.height)) == (mime, size)
    assert checked.data == base64.b64decode(data)


@pytest.mark.parametrize(
    ("declared", "data", "said"),
    [
        ("image/jpeg", b64(png(2, 2)), "declared image/jpeg but the bytes are image/png"),
        ("image/png", JPEG_5X3, "declared image/png but the bytes are image/jpeg"),
        ("image/png", WEBP_5X3, "declared image/png but the bytes are image/webp"),
        ("image/webp", JPEG_5X3, "declared image/webp but the bytes are image/jpeg"),
    ],
)
def test_m_img_023_the_declared_type_must_match_the_bytes(
    declared: str, data: str, said: str
) -> None:
    error = _refused({"mime": declared, "data": data})
    assert error.message == f"image.mime: {said}"
    assert data[:12] not in error.message


@pytest.mark.parametrize(
    ("raw", "field", "rule"),
    [
        ("iVBORw0KGgo=", "image", "shape"),
        ({"mime": "image/png"}, "image.data", "required"),
        ({"mime": "image/png", "data": "AA==", "path": "/x.png"}, "image", "shape"),
        ({"mime": "image/png", "data": "AA==", "url": "https://x"}, "image", "shape"),
        ({"mime": "image/gif", "data": "R0lGODlh"}, "image.mime", "mime"),
        ({"mime": "IMAGE/PNG", "data": "AA=="}, "image.mime", "mime"),
        ({"mime": "image/png", "data": 12}, "image.data", "base64"),
        ({"mime": "image/png", "data": ""}, "image.data", "base64"),
        ({"mime": "image/png", "data": "data:image/png;base64,iVBO"}, "image.data", "base64"),
        ({"mime": "image/png", "data": b64(png(2, 2))[:8] + "\n"}, "image.data", "base64"),
        ({"mime": "image/png", "data": "iVBORw0KGgo"}, "image.data", "base64"),  # unpadded
        ({"mime": "image/png", "data": "iVBO-w0KGgo="}, "image.data", "base64"),  # url-safe
        ({"mime": "image/png", "data": "AA=A"}, "image.data", "base64"),
        ({"mime": "image/png", "data": b64(b"GIF89a not one")}, "image.data", "mime"),
        ({"mime": "image/png", "data": b64(png(2, 2)[:20])}, "image.data", "image"),
        ({"mime": "image/jpeg", "data": b64(b"\xff\xd8\xff\xdb")}, "image.data", "image"),
    ],
)
def test_m_img_022_024_059_each_rule_is_refused_by_field_and_rule(
    raw: object, field: str, rule: str
) -> None:
    error = _refused(raw)
    assert (error.field, error.rule) == (field, rule)
    assert "iVBO" not in error.message
    assert "R0lGOD" not in error.message


def test_m_img_024_the_seeds_not_valid_base64_text() -> None:
    error = _refused({"mime": "image/png", "data": "not base64!"})
    assert error.message == (
        "image.data is not valid base64 (standard alphabet, padded, on one line)"
    )


def test_m_img_025_m_lim_022_too_many_characters_are_refused_before_decoding() -> None:
    text = "A" * (limits.MAX_IMAGE_BASE64_CHARS + 4)
    error = _refused({"mime": "image/png", "data": text})
    assert error.rule == "size"
    assert "at most 2,796,204 (2 MiB decoded)" in error.message


def test_m_img_025_m_lim_022_more_than_2_mib_decoded_is_refused() -> None:
    data = png(1, 1) + b"\x00" * (limits.MAX_IMAGE_DECODED_BYTES + 1 - len(png(1, 1)))
    text = b64(data)
    assert len(text) == limits.MAX_IMAGE_BASE64_CHARS  # within the characters, over the bytes
    error = _refused({"mime": "image/png", "data": text})
    assert error.rule == "size"
    assert "at most 2,097,152" in error.message


@pytest.mark.parametrize(("width", "height"), [(4097, 1), (1, 4097)])
def test_m_img_026_m_lim_023_more_than_4096_pixels_a_side_is_refused(
    width: int, height: int
) -> None:
    error = _refused({"mime": "image/png", "data": b64(png(width, height))})
    assert error.rule == "pixels"
    assert "at most 4096 pixels a side" in error.message


def test_m_img_026_4096_pixels_a_side_is_accepted() -> None:
    assert check_image("image", {"mime": "image/png", "data": b64(png(4096, 1))}).width == 4096


def test_m_img_020_oq_52_the_default_id_is_a_16_character_digest_of_the_bytes() -> None:
    """OQ-52: SHA-256 of the image's bytes, the first 16 lower-case hex digits."""
    first = check_image("image", {"mime": "image/jpeg", "data": JPEG_5X3})
    assert first.default_id == hashlib.sha256(base64.b64decode(JPEG_5X3)).hexdigest()[:16]
    again = check_image("image", {"mime": "image/jpeg", "data": JPEG_5X3})
    other = check_image("image", {"mime": "image/jpeg", "data": JPEG_PROGRESSIVE_7X2})
    assert first.default_id == again.default_id != other.default_id
    assert len(first.default_id) == images.DEFAULT_ID_CHARS
    assert check_image_id("image_id", first.default_id) == first.default_id


@pytest.mark.parametrize("image_id", ["R17", "r-17", "", "a" * 65, "r 17", 17, "é"])
def test_m_img_019_m_lim_037_an_image_id_outside_the_rule_is_refused(image_id: object) -> None:
    with pytest.raises(MemoryArgumentError) as error:
        check_image_id("image_id", image_id)
    assert error.value.rule == "image id"
    assert "^[a-z0-9]{1,64}$" in error.value.message


def test_m_img_019_one_to_64_lowercase_letters_and_digits_are_accepted() -> None:
    assert check_image_id("image_id", "r17") == "r17"
    assert check_image_id("image_id", "a" * 64) == "a" * 64


@pytest.mark.parametrize(
    ("image_id", "longest"),
    [("r17", 16_372), ("a" * 16, 16_359), ("x", 16_374)],
)
def test_m_img_013_014_015_016_017_m_lim_025_the_caption_limit_depends_on_the_id(
    image_id: str, longest: int
) -> None:
    content = check_caption("caption", "c" * longest, image_id)
    assert content.endswith(f" [image:{image_id}]")
    assert len(content.encode()) == limits.MAX_IMAGE_CONTENT_BYTES
    with pytest.raises(MemoryArgumentError) as error:
        check_caption("caption", "c" * (longest + 1), image_id)
    assert f"at most {longest:,}" in error.value.message


def test_m_img_012_a_caption_with_an_image_suffix_of_its_own_is_refused() -> None:
    with pytest.raises(MemoryArgumentError) as error:
        check_caption("caption", "the saree [IMAGE:R17]", "r18")
    assert error.value.rule == "image suffix"
    assert check_caption("caption", "see [image: diagram]", "r18") == (
        "see [image: diagram] [image:r18]"
    )


@pytest.mark.parametrize("kind", ["entity", "logic", "constraint", "resource"])
def test_m_img_018_the_four_concept_types_are_accepted(kind: str) -> None:
    assert check_image_concept_type("concept_type", kind) == kind


@pytest.mark.parametrize("kind", ["observation", "Entity", None])
def test_m_img_018_an_image_cannot_be_an_observation(kind: object) -> None:
    with pytest.raises(MemoryArgumentError) as error:
        check_image_concept_type("concept_type", kind)
    assert "an image cannot be an observation" in error.value.message
