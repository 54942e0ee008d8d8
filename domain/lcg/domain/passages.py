"""Splitting an episode's body into passages: the units that are embedded and searched."""

from __future__ import annotations

import re

MAX_PASSAGE = 1_000  # characters; MiniLM reads ~256 tokens, about this much English
_BREAK = re.compile(r"(?<=[.!?\n])\s+")


def split(body: str, max_len: int = MAX_PASSAGE) -> list[str]:
    """Consecutive passages of at most `max_len` characters, cut at sentence ends if possible."""
    text = body.strip()
    if len(text) <= max_len:
        return [text] if text else []
    passages: list[str] = []
    current = ""
    for piece in _BREAK.split(text):
        sentence = piece
        while len(sentence) > max_len:  # a sentence longer than a passage: cut at a space
            cut = sentence.rfind(" ", 0, max_len)
            cut = cut if cut > max_len // 2 else max_len
            if current:
                passages.append(current)
                current = ""
            passages.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > max_len:
            passages.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        passages.append(current)
    return [p for p in passages if p]
