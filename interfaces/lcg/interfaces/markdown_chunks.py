"""`lcg ingest`'s chunks of a Markdown note: sections under their heading path (issue 26).

A note is parsed with markdown-it-py (CommonMark plus tables), not with patterns: a `#` inside
a fenced code block is code, not a heading. Headings are not content: each chunk holds the
blocks of one section and carries that section's heading path ("People > Team"), which the
ingest command puts in the chunk's id, the episode's name. Lists, tables, block quotes and
code blocks are kept whole in one chunk; paragraphs gather up to the chunk limit, and a
paragraph longer than the limit is split at sentence ends (`lcg.domain.extraction.split_text`).
YAML front matter (between `---` lines at the very top) is read as the note's attributes, not
as text.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from lcg.domain.errors import InvalidParams
from lcg.domain.extraction import split_text

FENCE = "---"


@dataclass(frozen=True, slots=True)
class Section:
    """One chunk of a note: its text and the headings it sits under, outermost first."""

    text: str
    headings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Note:
    attributes: dict[str, Any]
    sections: tuple[Section, ...]


def front_matter(text: str, where: str) -> tuple[dict[str, Any], str]:
    """The YAML mapping between a first line `---` and the next `---` (or `...`) line, and
    the rest of the text; ({}, text) when the note has none."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != FENCE:
        return {}, text
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() in (FENCE, "...")), 0)
    if not end:
        return {}, text  # a thematic break at the top, not front matter
    try:
        loaded = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as error:
        raise InvalidParams(
            "FILE", "front matter must be valid YAML", f"{where}: {error}"
        ) from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise InvalidParams("FILE", "front matter must be a YAML mapping", where)
    return {str(k): _plain(v) for k, v in loaded.items()}, "\n".join(lines[end + 1 :])


def _plain(value: Any) -> Any:
    """A YAML value as JSON can carry it: dates stay dates (orjson writes them in ISO 8601),
    and anything else that is not a JSON type (binary) becomes its text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool | dt.date):
        return value
    return str(value)


def read_note(text: str, max_chars: int, where: str) -> Note:
    """A Markdown note's attributes and its sections, each at most `max_chars` characters
    unless one list, table, quote or code block alone is longer (kept whole)."""
    attributes, body = front_matter(text.replace("\r\n", "\n"), where)
    lines = body.split("\n")
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    path: list[tuple[int, str]] = []
    blocks: list[tuple[tuple[str, ...], str, bool]] = []  # (headings, text, may be split)
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.type.endswith("_close"):
            continue
        if token.type == "heading_open":
            level = int(token.tag[1:])
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, _plain_text(tokens[index + 1])))
            continue
        if token.type == "hr":
            continue
        block = "\n".join(lines[token.map[0] : token.map[1]]).strip()
        if block:
            heads = tuple(title for _, title in path if title)
            blocks.append((heads, block, token.type == "paragraph_open"))
    return Note(attributes, tuple(_gather(blocks, max_chars)))


def _plain_text(inline: Token) -> str:
    """A heading's words without their Markdown (`## The **Kestrel** [docs](url)` -> "The
    Kestrel docs")."""
    words = [
        child.content for child in inline.children or () if child.type in ("text", "code_inline")
    ]
    return " ".join("".join(words).split())


def _gather(blocks: list[tuple[tuple[str, ...], str, bool]], max_chars: int) -> list[Section]:
    sections: list[Section] = []
    current: list[str] = []
    heads: tuple[str, ...] = ()

    def close() -> None:
        if current:
            sections.append(Section("\n\n".join(current), heads))
            current.clear()

    for block_heads, block, splittable in blocks:
        if block_heads != heads:
            close()
            heads = block_heads
        pieces = split_text(block, max_chars) if splittable else [block]
        for piece in pieces:
            if current and len("\n\n".join([*current, piece])) > max_chars:
                close()
            current.append(piece)
    close()
    return sections
