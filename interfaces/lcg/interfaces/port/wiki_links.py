"""A basic-memory note's `[[Wiki Links]]` as basic-memory itself reads them (ADR 0089).

The body is parsed as Markdown (markdown-it, CommonMark, as basic-memory does) and every
inline text (a paragraph, a heading, a list item) is looked at:
- in a list item, `relation_type [[Target]]` (a type of one word, or quoted:
  `"some type" [[Target]]`), with nothing after the link but one `(context)`, is an
  explicit relation of that type;
- any other `[[Target]]`, in prose or in a list item that is a sentence, is a relation of
  type `links_to` from the note to Target, one per link.
A link inside a code span (`` `[[x]]` ``) or a code block, or written `\\[[x]]`, is not a link.
`[[Target|shown text]]` names Target.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it import MarkdownIt

LINKS_TO = "links_to"  # basic-memory's type for a link in prose
CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.DOTALL)
_PARSER = MarkdownIt("commonmark")


@dataclass(frozen=True, slots=True)
class Link:
    predicate: str
    target: str
    line: int  # 0-based, in the body given


def links(body: str) -> Iterator[Link]:
    """Each relation the body's links make, in order."""
    in_item = False
    for token in _PARSER.parse(body):
        if token.type == "list_item_open":
            in_item = True
        elif token.type == "list_item_close":
            in_item = False
        elif token.type == "inline" and "[[" in token.content:
            line = token.map[0] if token.map else 0
            text = CODE_SPAN.sub(lambda m: " " * len(m[0]), token.content)
            explicit = _explicit(text) if in_item else None
            if explicit is not None:
                yield Link(explicit[0], explicit[1], line)
                continue
            for target in _inline(text):
                yield Link(LINKS_TO, target, line)


def _explicit(text: str) -> tuple[str, str] | None:
    """(type, target) of `type [[Target]] (context)`; None when the line is prose."""
    before, _, _ = text.partition("[[")
    before = before.strip()
    if not before:
        return None
    if before[0] in "'\"" and len(before) > 1 and before.endswith(before[0]):
        kind = before[1:-1].strip()
    elif any(char.isspace() for char in before):
        return None
    else:
        kind = before
    start = text.find("[[")
    end = text.find("]]", start + 2)
    target = _target(text[start + 2 : end]) if end != -1 else ""
    if not kind or not target:
        return None
    after = text[end + 2 :].strip()
    if after and not _one_group(after):
        return None
    return kind, target


def _one_group(text: str) -> bool:
    """Whether the text is one balanced `(...)` and nothing more."""
    if not text.startswith("("):
        return False
    depth = 0
    for position, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return position == len(text) - 1
    return False


def _inline(text: str) -> Iterator[str]:
    """The targets of the outermost `[[...]]` links (an escaped `\\[[` is no link)."""
    start = 0
    while (start := text.find("[[", start)) != -1:
        if _escaped(text, start):
            start += 2
            continue
        depth, position, end = 1, start + 2, -1
        while position < len(text):
            pair = text[position : position + 2]
            if pair == "[[" and not _escaped(text, position):
                depth, position = depth + 1, position + 2
            elif pair == "]]" and not _escaped(text, position):
                depth -= 1
                if depth == 0:
                    end = position
                    break
                position += 2
            else:
                position += 1
        if end == -1:
            return
        target = _target(text[start + 2 : end])
        if target:
            yield target
        start = end + 2


def _escaped(text: str, position: int) -> bool:
    slashes = len(text[:position]) - len(text[:position].rstrip("\\"))
    return slashes % 2 == 1


def _target(inside: str) -> str:
    return inside.split("|", maxsplit=1)[0].strip()
