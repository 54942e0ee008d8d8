"""Sharing a response's piggybacked receipts fairly across sessions (ADR 0080, M-LAY-022)."""

from __future__ import annotations

from collections.abc import Callable


def fair_share(seqs: list[int], session_of: Callable[[int], str | None], limit: int) -> list[int]:
    """Up to `limit` of `seqs` (oldest first): the oldest of each written-to session first
    (each session with receipts waiting gets a slot), then the oldest of the rest; returned
    in write order."""
    firsts: dict[str | None, int] = {}
    for seq in seqs:
        firsts.setdefault(session_of(seq), seq)
    chosen = sorted(firsts.values())[:limit]
    rest = [seq for seq in seqs if seq not in set(chosen)]
    return sorted(chosen + rest[: limit - len(chosen)])
