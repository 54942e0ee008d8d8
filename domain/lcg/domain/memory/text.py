"""Argument rules of the Lambo memory tools: text, agent_id, event_time, concept_type, framing.

Pure functions; each refuses with a MemoryArgumentError whose message is the sentence the caller
sees. A refusal names a character by its codepoint (U+XXXX) and never repeats the raw character.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum

import snowballstemmer  # type: ignore[import-untyped, unused-ignore]

from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.memory.limits import (
    MAX_AGENT_ID_CHARS,
    MAX_EMBEDDING_TEXT_BYTES,
    MAX_EVENT_TIME_BYTES,
    MAX_STRING_BYTES,
    WAIT_MS,
    IntRange,
)


class MemoryArgumentError(InvalidParams):
    """An argument of a memory tool breaks a rule; nothing was written. A parameter error
    (invalid params on every surface) whose message is the seed's own sentence."""

    def __init__(self, message: str, *, field: str, rule: str) -> None:
        DomainError.__init__(self, message, field=field, rule=rule)


# --- characters -------------------------------------------------------------------------------

CONTROL_CHARACTER = "control character"
INVISIBLE_CHARACTER = "invisible formatting character"
LONE_SURROGATE = "lone surrogate"

BIDI_CONTROL = "bidi control"
ZERO_WIDTH = "zero-width character"
BLANK_FILLER = "blank filler"
BYTE_ORDER_MARK = "byte order mark"
TAG_CHARACTER = "tag character"
OTHER_IGNORABLE = "other default-ignorable character"

# Invisible characters real writing needs (Persian, Indic, Mongolian, emoji): accepted, kept in
# stored content, and dropped when identity or the image-suffix rule reads the text.
ALLOWED_INVISIBLE: tuple[tuple[int, int], ...] = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x180B, 0x180D),  # Mongolian free variation selectors 1-3
    (0x180F, 0x180F),  # Mongolian free variation selector 4
    (0x200C, 0x200D),  # zero-width non-joiner, zero-width joiner
    (0xFE00, 0xFE0F),  # variation selectors
    (0xE0100, 0xE01EF),  # variation selectors supplement
)

# Refused: every Default_Ignorable_Code_Point of Unicode outside ALLOWED_INVISIBLE, plus the
# interlinear annotation controls (U+FFF9-FFFB, format characters that hide annotation text).
# Visible format characters (Arabic number signs, Egyptian hieroglyph format controls) pass, and
# so does U+2800 BRAILLE PATTERN BLANK: it is a Braille cell, not a filler or default-ignorable.
REFUSED_INVISIBLE: tuple[tuple[int, int, str], ...] = (
    (0x00AD, 0x00AD, ZERO_WIDTH),  # soft hyphen: zero width except at a line break
    (0x061C, 0x061C, BIDI_CONTROL),  # Arabic letter mark
    (0x115F, 0x1160, BLANK_FILLER),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5, OTHER_IGNORABLE),  # Khmer inherent vowels
    (0x180E, 0x180E, ZERO_WIDTH),  # Mongolian vowel separator
    (0x200B, 0x200B, ZERO_WIDTH),  # zero-width space
    (0x200E, 0x200F, BIDI_CONTROL),  # left-to-right and right-to-left marks
    (0x202A, 0x202E, BIDI_CONTROL),  # embeddings, pop, overrides
    (0x2060, 0x2064, ZERO_WIDTH),  # word joiner, invisible operators
    (0x2065, 0x2065, OTHER_IGNORABLE),
    (0x2066, 0x2069, BIDI_CONTROL),  # isolates
    (0x206A, 0x206F, OTHER_IGNORABLE),  # deprecated shaping and digit controls
    (0x3164, 0x3164, BLANK_FILLER),  # Hangul filler
    (0xFEFF, 0xFEFF, BYTE_ORDER_MARK),
    (0xFFA0, 0xFFA0, BLANK_FILLER),  # halfwidth Hangul filler
    (0xFFF0, 0xFFFB, OTHER_IGNORABLE),  # reserved, interlinear annotation controls
    (0x1BCA0, 0x1BCA3, OTHER_IGNORABLE),  # shorthand format controls
    (0x1D173, 0x1D17A, OTHER_IGNORABLE),  # musical symbol format controls
    (0xE0000, 0xE007F, TAG_CHARACTER),
    (0xE0080, 0xE00FF, OTHER_IGNORABLE),
    (0xE01F0, 0xE0FFF, OTHER_IGNORABLE),
)

_LINE_SEPARATORS = (0x2028, 0x2029)


def _escape(codepoint: int) -> str:
    return f"\\U{codepoint:08x}"


def _character_class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(f"{_escape(start)}-{_escape(end)}" for start, end in ranges)


_CONTROLS = ((0x00, 0x08), (0x0B, 0x1F), (0x7F, 0x9F))
_SURROGATES = ((0xD800, 0xDFFF),)
_INVISIBLE_SPANS = tuple((start, end) for start, end, _ in REFUSED_INVISIBLE)
_REFUSED = re.compile(f"[{_character_class(_CONTROLS + _SURROGATES + _INVISIBLE_SPANS)}]")
_NOT_ONE_LINE = re.compile(
    f"[{_character_class(((0x00, 0x1F), (0x7F, 0x9F), *((c, c) for c in _LINE_SEPARATORS)))}]"
)
_ANY_INVISIBLE = re.compile(f"[{_character_class(ALLOWED_INVISIBLE + _INVISIBLE_SPANS)}]")
_ALLOWED_INVISIBLE = re.compile(f"[{_character_class(ALLOWED_INVISIBLE)}]")


def codepoint(character: str) -> str:
    """A character as the refusals name it: U+XXXX."""
    return f"U+{ord(character):04X}"


def refused_character_class(character: str) -> tuple[str, str] | None:
    """(class, subclass) of a character every string refuses, or None if strings accept it."""
    value = ord(character)
    if any(start <= value <= end for start, end in _CONTROLS):
        return CONTROL_CHARACTER, CONTROL_CHARACTER
    if 0xD800 <= value <= 0xDFFF:
        return LONE_SURROGATE, LONE_SURROGATE
    for start, end, subclass in REFUSED_INVISIBLE:
        if start <= value <= end:
            return INVISIBLE_CHARACTER, subclass
    return None


def drop_invisible_characters(text: str) -> str:
    """`text` without its invisible characters, accepted or refused, as the key rules read it."""
    return _ANY_INVISIBLE.sub("", text)


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8 (a lone surrogate counts its three bytes; it is refused anyway)."""
    return len(text.encode("utf-8", "surrogatepass"))


# --- any string -------------------------------------------------------------------------------

_CONCEPT_CONTENT = re.compile(r"concepts?(\[\d*\])?\.content")


def _invisible_message(field: str, character: str) -> str:
    # The seed prints this sentence for a derived concept as `concept.content ...` whatever the
    # concept's index (M-ARG-037), so every content field is named that way here.
    name = "concept.content" if _CONCEPT_CONTENT.fullmatch(field) else field
    return (
        f"{name} contains a disallowed invisible formatting character ({codepoint(character)}); "
        "bidi overrides, zero-width characters, blank fillers, the BOM and tag characters are "
        "refused because they are invisible in review but not to the model (zero-width joiner "
        "and non-joiner are allowed, and are stripped from canonical keys)"
    )


def _refuse_character(field: str, character: str) -> MemoryArgumentError:
    kind = refused_character_class(character)
    assert kind is not None  # only called on a character _REFUSED matched
    klass, subclass = kind
    if klass == CONTROL_CHARACTER:
        message = (
            f"{field} contains a disallowed control character ({codepoint(character)}); "
            "tab and newline are the only control characters accepted"
        )
    elif klass == LONE_SURROGATE:
        message = (
            f"{field} contains a lone surrogate ({codepoint(character)}), which is not "
            "Unicode text; send the text as valid UTF-8"
        )
    else:
        message = _invisible_message(field, character)
    rule = klass if klass == subclass else f"{klass}: {subclass}"
    return MemoryArgumentError(message, field=field, rule=rule)


def check_size(field: str, value: str, *, cap: int = MAX_STRING_BYTES) -> None:
    """Refuse a string over `cap` UTF-8 bytes, naming the field, the cap and the size given."""
    if len(value) * 4 <= cap:
        return
    size = utf8_size(value)
    if size > cap:
        unit = " (16 KB)" if cap == MAX_STRING_BYTES else ""
        raise MemoryArgumentError(
            f"{field} is too long: the cap is {cap:,} bytes{unit} and {size:,} bytes were given",
            field=field,
            rule="size cap",
        )


def check_text(field: str, value: str) -> None:
    """Refuse a string over 16 KB, or carrying a control or invisible formatting character."""
    check_size(field, value)
    refused = _REFUSED.search(value)
    if refused is not None:
        raise _refuse_character(field, refused.group())


# --- agent_id ---------------------------------------------------------------------------------

_LINE_BREAK_NAMES = {
    0x09: "tab",
    0x0A: "newline",
    0x0D: "carriage return",
    0x2028: "line separator",
    0x2029: "paragraph separator",
}


def check_agent_id(value: str) -> None:
    """Refuse an agent_id that is blank, over 256 characters, not one line, or hides characters."""
    if len(value) > MAX_AGENT_ID_CHARS:
        raise MemoryArgumentError(
            f"agent_id is too long: the cap is {MAX_AGENT_ID_CHARS} characters "
            f"and {len(value):,} were given",
            field="agent_id",
            rule="length cap",
        )
    broken = _NOT_ONE_LINE.search(value)
    if broken is not None:
        character = broken.group()
        name = _LINE_BREAK_NAMES.get(ord(character), "control character")
        raise MemoryArgumentError(
            "agent_id must be one line with no tabs, control or line-separator characters; "
            f"found {codepoint(character)} ({name})",
            field="agent_id",
            rule="one line",
        )
    check_text("agent_id", value)
    if not _ALLOWED_INVISIBLE.sub("", value).strip():
        raise MemoryArgumentError(
            "agent_id must not be blank: send one stable id for the agent making the call, "
            "such as your model or client id",
            field="agent_id",
            rule="required",
        )


# --- integers ---------------------------------------------------------------------------------


def check_int_range(field: str, value: int, bounds: IntRange) -> int:
    """Refuse a value outside `bounds` with the seed's sentence, `top_k must be in 1..=100`."""
    if not bounds.contains(value):
        raise MemoryArgumentError(bounds.describe(field), field=field, rule="range")
    return value


def clamp_wait_ms(value: int) -> int:
    """wait_ms clamps rather than refuses: a larger value waits the maximum."""
    if value < WAIT_MS.minimum:
        raise MemoryArgumentError(WAIT_MS.describe("wait_ms"), field="wait_ms", rule="range")
    return min(value, WAIT_MS.maximum)


# --- time -------------------------------------------------------------------------------------

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?",
    re.ASCII,
)
_MAX_TIMESTAMP_CHARS = MAX_EVENT_TIME_BYTES  # ASCII: characters are bytes


def _bad_time(field: str, detail: str) -> MemoryArgumentError:
    return MemoryArgumentError(
        f"{field} must be an RFC3339 timestamp with a timezone, such as 2024-06-12T14:30:00Z "
        f"({detail})",
        field=field,
        rule="RFC3339 timestamp",
    )


def parse_event_time(value: str, *, field: str = "event_time") -> datetime:
    """An RFC3339 timestamp (timezone required) as an aware UTC datetime.

    A leap second (:60) reads as the next second; digits past microseconds are dropped.
    """
    match = _RFC3339.fullmatch(value) if len(value) <= _MAX_TIMESTAMP_CHARS else None
    if match is None:
        raise _bad_time(field, "the value is not in that format")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    if zulu is None and sign is None:
        raise _bad_time(field, "the timezone is missing: end it with Z or an offset like +02:00")
    offset = timedelta(0)
    if sign is not None:
        if int(off_h) > 23 or int(off_m) > 59:
            raise _bad_time(field, "the timezone offset is out of range")
        offset = timedelta(hours=int(off_h), minutes=int(off_m))
        offset = -offset if sign == "-" else offset
    try:
        micro = int((fraction or "0")[:6].ljust(6, "0"))
        leap = int(second) == 60
        stamp = datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            59 if leap else int(second),
            micro,
            tzinfo=timezone(offset),
        )
        stamp = stamp + timedelta(seconds=1) if leap else stamp
        return stamp.astimezone(UTC)
    except (ValueError, OverflowError):
        raise _bad_time(field, "a date or time field is out of range") from None


def about_time(event_time: datetime | None, written_at: datetime) -> datetime:
    """A write's about-time: its event_time if given, but never later than when it was written."""
    if written_at.tzinfo is None or (event_time is not None and event_time.tzinfo is None):
        raise ValueError("about_time needs timezone-aware datetimes")
    written = written_at.astimezone(UTC)
    return written if event_time is None else min(event_time.astimezone(UTC), written)


# A timestamp argument is an identifier-like name that, in snake_case, is one of these words or
# ends in `_<word>`: created_at, flush_timestamp, updatedAt, client-time, ts. Durations such as
# wait_ms and ttl_seconds, and names like depends_on, are not timestamps.
TIMESTAMP_WORDS = frozenset({"at", "time", "ts", "timestamp", "date", "datetime"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", re.ASCII)
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def is_timestamp_argument(name: str) -> bool:
    """Whether an argument name reads as a timestamp (see TIMESTAMP_WORDS)."""
    if _IDENTIFIER.fullmatch(name) is None:
        return False
    words = _CAMEL_HUMP.sub("_", name).replace("-", "_").lower().strip("_").split("_")
    return words[-1] in TIMESTAMP_WORDS and words != ["at"]


def check_no_timestamp_arguments(names: Iterable[str], *, event_time_accepted: bool = True) -> None:
    """Refuse created_at and every other timestamp argument by name; event_time only if taken."""
    for name in names:
        if name == "event_time" and event_time_accepted:
            continue
        if is_timestamp_argument(name):
            raise MemoryArgumentError(
                f"{name} is refused: Lambo stamps flush time itself, so do not send created_at "
                "or another client timestamp; only lambo_derive and lambo_record_action take "
                "event_time, an optional RFC3339 historical about-time",
                field=name,
                rule="timestamp argument",
            )


# --- concept_type -----------------------------------------------------------------------------


class ConceptType(StrEnum):
    """A concept's type: lower case on the wire, capitalised where recall renders it."""

    ENTITY = "entity"
    LOGIC = "logic"
    CONSTRAINT = "constraint"
    RESOURCE = "resource"
    OBSERVATION = "observation"

    @property
    def display(self) -> str:
        """The rendered name, as in `[Entity]`."""
        return self.value.capitalize()


ALL_CONCEPT_TYPES = tuple(ConceptType)
IMAGE_CONCEPT_TYPES = (
    ConceptType.ENTITY,
    ConceptType.LOGIC,
    ConceptType.CONSTRAINT,
    ConceptType.RESOURCE,
)
_MAX_ECHOED_VARIANT_CHARS = 40


def check_concept_type(
    value: str,
    *,
    field: str = "concept_type",
    accepted: Sequence[ConceptType] = ALL_CONCEPT_TYPES,
) -> ConceptType:
    """The ConceptType a wire value names; otherwise serde's `unknown variant` sentence."""
    if value in accepted:
        return ConceptType(value)
    check_text(field, value)  # a variant is echoed, so it must be safe to echo
    shown = value
    if len(shown) > _MAX_ECHOED_VARIANT_CHARS:
        shown = shown[:_MAX_ECHOED_VARIANT_CHARS] + "…"
    expected = ", ".join(kind.value for kind in accepted)
    raise MemoryArgumentError(
        f"unknown variant {shown}, expected one of {expected}", field=field, rule="enum"
    )


# --- image suffix -----------------------------------------------------------------------------

_IMAGE_SUFFIX = re.compile(r"\[image:[a-z0-9]{1,64}\]", re.ASCII)


def porter_stems(words: Sequence[str]) -> list[str]:
    """The Porter stems of `words` (the one stemmer of canonical keys and image suffixes)."""
    return [_porter_stem(word) for word in words]


@functools.lru_cache(maxsize=32_768)
def _porter_stem(word: str) -> str:
    """One word's stem, remembered: the pure-Python stemmer takes ~15 us a word, so a
    60-byte fact's key cost ~150 us, as much as a whole in-process knowledge_status call, on
    every derive's ack (bench/bench_memory.py). A snowballstemmer object keeps scratch state
    between calls, so one is made per word stemmed (~0.3 us): safe from any thread."""
    stem: str = snowballstemmer.stemmer("porter").stemWord(word)
    return stem


def _stem(word: str) -> str:
    """The Porter stem of a case-folded word; a word with a digit, / or . stays as it is."""
    if "/" in word or "." in word or any(character.isdigit() for character in word):
        return word
    return porter_stems([word])[0]


def has_image_suffix(text: str) -> bool:
    """Whether any word reads as [image:<id>] once case-folded, stripped of invisibles, stemmed."""
    folded = drop_invisible_characters(text.casefold())
    # Stemming rewrites a word's ending only, so a stem that starts "[image:" came from a word
    # that does: only those words are stemmed.
    return any(
        _IMAGE_SUFFIX.fullmatch(_stem(word)) is not None
        for word in folded.split()
        if word.startswith("[image:")
    )


def check_no_image_suffix(field: str, text: str) -> None:
    """Refuse text carrying an image suffix, which only lambo_derive_image builds."""
    if has_image_suffix(text):
        raise MemoryArgumentError(
            f"{field} contains an image suffix ([image:<id>] in some case or spelling), which "
            "only lambo_derive_image builds; to link to an image concept, name it as "
            "caption [image:<image_id>] in parent_of or in an action's produces, modifies or "
            "depends_on",
            field=field,
            rule="image suffix",
        )


# --- the embedding-text limit -----------------------------------------------------------------

EMBEDDING_FRAME_SEPARATOR = " — "
CALL_TEXT_SEPARATOR = "; "


def call_text(concept_contents: Sequence[str]) -> str:
    """The call's text: all of the call's concepts joined by `; `."""
    return CALL_TEXT_SEPARATOR.join(concept_contents)


def embedding_text(item: str, call_text: str) -> str:
    """The text embedded for a concept or parent_of end: the item, ` — `, the call's text."""
    return f"{item}{EMBEDDING_FRAME_SEPARATOR}{call_text}"


def _too_long_to_embed(part: str, size: int) -> MemoryArgumentError:
    return MemoryArgumentError(
        f"{part} is too long to embed: framed with the call's text it is {size:,} bytes, over "
        f"the {MAX_EMBEDDING_TEXT_BYTES:,}-byte embedding-text limit; shorten the text or "
        "split the call",
        field=part,
        rule="embedding-text limit",
    )


def check_embedding_text_limit(
    contents: Sequence[str],
    parent_of_ends: Sequence[tuple[str, str]] = (),
    *,
    frame_concepts: bool = True,
) -> None:
    """Refuse a call whose text, or any framed concept or parent_of end, is over 16,384 bytes.

    lambo_derive_image passes its caption with suffix as `contents` and frame_concepts=False:
    only its parent_of ends are framed.
    """
    call_size = sum(map(utf8_size, contents)) + utf8_size(CALL_TEXT_SEPARATOR) * max(
        len(contents) - 1, 0
    )
    if call_size > MAX_EMBEDDING_TEXT_BYTES:
        raise MemoryArgumentError(
            f"the whole call is too long to embed: its concepts joined by '; ' are "
            f"{call_size:,} bytes, over the {MAX_EMBEDDING_TEXT_BYTES:,}-byte embedding-text "
            "limit; shorten the text or split the call",
            field="concepts",
            rule="embedding-text limit",
        )
    frame = utf8_size(EMBEDDING_FRAME_SEPARATOR) + call_size
    items: list[tuple[str, str]] = []
    if frame_concepts:
        items += [(f"concepts[{i}]", content) for i, content in enumerate(contents)]
    for i, (parent, child) in enumerate(parent_of_ends):
        items += [(f"parent_of[{i}].parent", parent), (f"parent_of[{i}].child", child)]
    for part, text in items:
        size = utf8_size(text) + frame
        if size > MAX_EMBEDDING_TEXT_BYTES:
            raise _too_long_to_embed(part, size)
