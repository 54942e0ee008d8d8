"""Write acks (seed 001): what lambo_derive and lambo_record_action answer at once, before the
write applies (M-DER-081/082, M-ACT-041/042), or for a write dropped at admission."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict, Unpack

from lcg.domain.memory.receipts import (
    DROP_DETAILS,
    DROP_HINTS,
    STATE_DETAILS,
    DropCause,
    ReceiptId,
    ReceiptState,
)


class AckContent(TypedDict):
    """A write ack's structuredContent (M-DER-082, M-ACT-042, M-LAY-018)."""

    summary: str
    receipt: str
    receipt_state: str
    agent_id: str
    warnings: list[str]
    session: NotRequired[str]
    retry_after_ms: NotRequired[int]  # a dropped write: when to send it again (ADR 0047)


@dataclass(frozen=True, slots=True)
class WriteAck:
    """The ack of lambo_derive or lambo_record_action: its text and structured content."""

    summary: str
    text: str
    receipt: ReceiptId
    receipt_state: ReceiptState
    agent_id: str
    warnings: tuple[str, ...] = ()
    session: str | None = None
    retry_after_ms: int | None = None

    def structured(self) -> AckContent:
        content: AckContent = {
            "summary": self.summary,
            "receipt": str(self.receipt),
            "receipt_state": str(self.receipt_state),
            "agent_id": self.agent_id,
            "warnings": list(self.warnings),
        }
        if self.session is not None:
            content["session"] = self.session
        if self.retry_after_ms is not None:
            content["retry_after_ms"] = self.retry_after_ms
        return content


class AckOptions(TypedDict, total=False):
    """write_ack's options, which derive_ack and action_ack pass on."""

    dropped: DropCause | None
    written_to: str | None
    warnings: tuple[str, ...]
    retry_after_ms: int


def derive_ack(
    concepts: int, receipt: ReceiptId, agent_id: str, **how: Unpack[AckOptions]
) -> WriteAck:
    """lambo_derive's ack (M-DER-081), or the same shape for a dropped write (M-DER-094),
    which says when to send it again; `how` as write_ack's."""
    return write_ack(f"{concepts} concept(s)", receipt, agent_id, **how)


def action_ack(
    action: str, receipt: ReceiptId, agent_id: str, **how: Unpack[AckOptions]
) -> WriteAck:
    """lambo_record_action's ack (M-ACT-041), or the same shape for a dropped write."""
    return write_ack(f"action '{_one_line(action)}'", receipt, agent_id, **how)


def image_subject(image_id: str) -> str:
    """What lambo_derive_image's ack says it accepted, exactly as lambo_derive's ack
    (M-IMG-053, M-IMG-061): the image id, never the caption's payload or a vector value."""
    return f"1 image concept ([image:{image_id}])"


def write_ack(
    what: str,
    receipt: ReceiptId,
    agent_id: str,
    *,
    dropped: DropCause | None = None,
    written_to: str | None = None,
    warnings: tuple[str, ...] = (),
    retry_after_ms: int = 0,
) -> WriteAck:
    """A write tool's ack for `what` it accepted: pending, or dropped (then when to resend)."""
    retry: int | None = None
    if dropped is None:
        state = ReceiptState.PENDING
        summary = f"accepted {what} for background write; validated and ordered, not yet applied"
        detail = STATE_DETAILS[state]
        hint = (
            "The outcome arrives on your next tool response. To wait for it, call lambo_stats"
            f" with receipt={receipt} (add wait_ms to block)."
        )
    else:
        state = ReceiptState.DROPPED
        summary = f"dropped {what}; never attempted, nothing was written"
        detail = DROP_DETAILS[dropped]
        hint = DROP_HINTS[dropped].format(retry_after_ms=retry_after_ms)
        retry = None if dropped is DropCause.CLOSED else retry_after_ms
    lines = [
        summary,
        f"receipt {receipt}: {state} — {detail}",
        hint,
        f'Recorded under agent_id "{agent_id}"; send this same id on every call.',
    ]
    if written_to is not None:
        lines.append(
            f"written to session '{written_to}';"
            " writes to different sessions have no ordering between them"
        )
    return WriteAck(
        summary, "\n".join(lines), receipt, state, agent_id, warnings, written_to, retry
    )


def _one_line(text: str) -> str:
    # The summary is the ack's first line (M-ACT-042); an action may hold line breaks.
    return (
        text.replace("\n", "\\n")
        .replace("\t", "\\t")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
