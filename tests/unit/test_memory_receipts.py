"""Write receipts (M-STA receipts, M-DER/M-ACT acks, canonization.md §9): ids, book, piggyback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lcg.domain.errors import InvalidParams
from lcg.domain.memory.acks import action_ack, derive_ack
from lcg.domain.memory.receipts import (
    RETAINED_RECEIPTS,
    STATE_DETAILS,
    DropCause,
    IntentRecord,
    JsonValue,
    ReceiptAnswer,
    ReceiptBook,
    ReceiptId,
    ReceiptState,
    write_receipts_block,
)

SEED_EPOCH = 0x708217EBBF356946
SEED_ISSUED = datetime(2026, 8, 20, 14, 49, 2, 647_000, tzinfo=UTC)  # 0x1a01fa59db7 ms
SEED_RECEIPT = "lwr1.708217ebbf356946.1a01fa59db7.16"
T0 = datetime(2026, 8, 15, 12, 0, 0, tzinfo=UTC)
PREVIOUS_EPOCH = 0x0123456789ABCDEF


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def book(capacity: int = RETAINED_RECEIPTS) -> ReceiptBook:
    return ReceiptBook(SEED_EPOCH, capacity=capacity)


def test_receipt_id_formats_as_canonization_section_9() -> None:
    receipt = ReceiptId(SEED_EPOCH, 0x1A01FA59DB7, 0x16)
    assert receipt.format() == SEED_RECEIPT
    assert str(ReceiptId(1, 0, 1)) == "lwr1.0000000000000001.0.1"


def test_m_der_085_a_book_issues_the_seeds_id_and_successive_sequence_numbers() -> None:
    receipts = book()
    issued = [receipts.issue("agent-a", "lambo", SEED_ISSUED) for _ in range(22)]
    assert [r.seq for r in issued] == list(range(1, 23))
    assert str(issued[-2]) == "lwr1.708217ebbf356946.1a01fa59db7.15"
    assert str(issued[-1]) == SEED_RECEIPT


def test_receipt_id_parse_reads_back_what_format_wrote() -> None:
    receipt = ReceiptId(SEED_EPOCH, 0x1A01FA59DB7, 0xFFFF)
    assert ReceiptId.parse(receipt.format()) == receipt


@pytest.mark.parametrize(
    "text",
    [
        "",
        "lwr1",
        "lwr2.708217ebbf356946.1a01fa59db7.16",
        "LWR1.708217ebbf356946.1a01fa59db7.16",
        "lwr1.708217EBBF356946.1a01fa59db7.16",
        "lwr1.708217ebbf35694.1a01fa59db7.16",
        "lwr1.708217ebbf356946.01a01fa59db7.16",
        "lwr1.708217ebbf356946.1a01fa59db7.0",
        "lwr1.708217ebbf356946.1a01fa59db7.016",
        "lwr1.708217ebbf356946.1a01fa59db7.16.1",
        "lwr1.708217ebbf356946.1a01fa59db7.10000000000000000",
        " lwr1.708217ebbf356946.1a01fa59db7.16",
        "lwr1.708217ebbf356946.1a01fa59db7.16\n",
    ],
)
def test_oq_17_an_unparseable_receipt_is_a_parameter_error_naming_receipt(text: str) -> None:
    with pytest.raises(InvalidParams) as refused:
        ReceiptId.parse(text)
    assert refused.value.field == "receipt"
    assert "lwr1.<16 hex>.<hex>.<hex>" in refused.value.message
    with pytest.raises(InvalidParams):
        book().lookup(text, "agent-a", "lambo", T0)


def test_m_sta_100_there_are_exactly_twelve_states_and_none_is_unknown() -> None:
    assert [str(state) for state in ReceiptState] == [
        "applied",
        "pending",
        "pending_replay",
        "failed",
        "intent_durable",
        "close_unflushed",
        "applied_after_restart",
        "dropped",
        "expired",
        "restart_lost",
        "never_issued",
        "forbidden",
    ]
    assert set(STATE_DETAILS) == set(ReceiptState)


def test_m_sta_102_a_fresh_receipt_answers_pending_in_the_seeds_words() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    answer = receipts.lookup(str(receipt), "agent-a", "lambo", at(1))
    assert answer.text() == f"receipt {receipt}: pending — admitted, not yet applied; ask again"


def test_m_sta_080_m_sta_081_an_applied_receipt_object_carries_id_state_detail_and_counts() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    detail = "derived 1 concept(s): 1 created (1 embedded), 0 matched existing"
    counts: dict[str, JsonValue] = {
        "created": ["1a2b3c4d-0000-0000-0000-000000000000"],
        "created_count": 1,
    }
    receipts.settle(receipt, ReceiptState.APPLIED, at(1), detail=detail, fields=counts)
    answer = receipts.lookup(receipt, "agent-a", "lambo", at(2))
    assert answer.structured() == {
        "id": str(receipt),
        "state": "applied",
        "detail": detail,
        "created": ["1a2b3c4d-0000-0000-0000-000000000000"],
        "created_count": 1,
    }
    assert answer.text() == f"receipt {receipt}: applied — {detail}"


def test_m_sta_104_a_failed_receipt_says_why_and_defaults_to_nothing_was_written() -> None:
    receipts = book()
    first = receipts.issue("agent-a", "lambo", T0)
    second = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(first, ReceiptState.FAILED, at(1))
    why = "store error: the embedder did not answer in time; nothing was written"
    receipts.settle(second, ReceiptState.FAILED, at(1), detail=why)
    assert receipts.lookup(first, "agent-a", "lambo", at(2)).detail == (
        "attempted and rejected; nothing was written"
    )
    assert receipts.lookup(second, "agent-a", "lambo", at(2)).detail == why


def test_m_sta_085_another_agent_asking_is_forbidden() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    answer = receipts.lookup(receipt, "agent-b", "lambo", at(1))
    assert answer.state is ReceiptState.FORBIDDEN
    assert "agent-a" not in answer.text()


def test_m_sta_086_m_lay_021_another_session_asking_is_forbidden() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    assert receipts.lookup(receipt, "agent-a", "general", at(1)).state is ReceiptState.FORBIDDEN


def test_m_sta_087_a_forbidden_answer_does_not_consume_the_piggyback() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    receipts.lookup(receipt, "agent-b", "lambo", at(2))
    receipts.lookup(receipt, "agent-a", "general", at(2))
    assert receipts.take_piggyback("agent-b", "lambo", at(2)).receipts == ()
    delivered = receipts.take_piggyback("agent-a", "lambo", at(3))
    assert [a.receipt for a in delivered.receipts] == [str(receipt)]


def test_the_owner_asking_by_id_is_the_delivery_so_it_is_not_piggybacked_again() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    assert receipts.lookup(receipt, "agent-a", "lambo", at(2)).state is ReceiptState.APPLIED
    assert receipts.take_piggyback("agent-a", "lambo", at(3)).receipts == ()
    # Asking by id still answers while the outcome is retained.
    assert receipts.lookup(receipt, "agent-a", "lambo", at(4)).state is ReceiptState.APPLIED


def test_m_der_086_a_write_applied_before_its_ack_rides_on_the_next_response_not_the_ack() -> None:
    """The ack of a write says pending; when the processor applied it before the ack was
    written, the ack still does not carry its outcome (that is the *next* response's), while
    an earlier settled write rides on the ack as usual."""
    receipts = book()
    earlier = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(earlier, ReceiptState.APPLIED, at(1))
    acked = receipts.issue("agent-a", "lambo", at(1))
    receipts.settle(acked, ReceiptState.APPLIED, at(2))
    on_ack = receipts.take_piggyback("agent-a", "lambo", at(2), keep=acked)
    assert [a.receipt for a in on_ack.receipts] == [str(earlier)]
    assert on_ack.waiting == 1
    on_next = receipts.take_piggyback("agent-a", "lambo", at(3))
    assert [a.receipt for a in on_next.receipts] == [str(acked)]


def test_asking_about_a_pending_receipt_leaves_its_later_piggyback_owed() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.lookup(receipt, "agent-a", "lambo", at(1))
    receipts.settle(receipt, ReceiptState.APPLIED, at(2))
    assert len(receipts.take_piggyback("agent-a", "lambo", at(3)).receipts) == 1


def test_m_sta_113_m_sta_091_an_outcome_is_kept_300_seconds_from_settlement_then_expired() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.APPLIED, at(10))
    assert receipts.lookup(receipt, "agent-a", "lambo", at(309.999)).state is ReceiptState.APPLIED
    expired = receipts.lookup(receipt, "agent-a", "lambo", at(310))
    assert expired.state is ReceiptState.EXPIRED
    assert expired.detail == (
        "this server issued the receipt and no longer holds its outcome (receipts are kept"
        " for 300 seconds); recall to see whether the write is there"
    )
    assert receipts.retained(at(310)) == 0


def test_m_sta_091_an_unsettled_receipt_is_never_expired() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    assert receipts.lookup(receipt, "agent-a", "lambo", at(3600)).state is ReceiptState.PENDING


def test_m_sta_091_m_sta_140_at_most_4096_receipts_are_retained_oldest_settled_first() -> None:
    receipts = book()
    issued = [receipts.issue("agent-a", "lambo", T0) for _ in range(4097)]
    for receipt in issued:
        receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    assert receipts.retained(at(1)) == 4096
    assert receipts.lookup(issued[0], "agent-a", "lambo", at(1)).state is ReceiptState.EXPIRED
    assert receipts.lookup(issued[1], "agent-a", "lambo", at(1)).state is ReceiptState.APPLIED


def test_m_sta_091_capacity_evicts_settled_receipts_before_pending_ones() -> None:
    receipts = book(capacity=2)
    pending = receipts.issue("agent-a", "lambo", T0)
    settled = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(settled, ReceiptState.APPLIED, at(1))
    receipts.issue("agent-a", "lambo", at(2))
    assert receipts.lookup(pending, "agent-a", "lambo", at(2)).state is ReceiptState.PENDING
    assert receipts.lookup(settled, "agent-a", "lambo", at(2)).state is ReceiptState.EXPIRED


def test_an_expired_receipt_is_no_longer_piggybacked() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    assert receipts.take_piggyback("agent-a", "lambo", at(301)).receipts == ()


def test_m_sta_115_a_well_formed_id_above_the_highest_issued_was_never_issued() -> None:
    receipts = book()
    receipts.issue("agent-a", "lambo", T0)
    unknown = ReceiptId(SEED_EPOCH, 0x1A01FA59DB7, 2)
    answer = receipts.lookup(str(unknown), "agent-a", "lambo", at(1))
    assert answer.state is ReceiptState.NEVER_ISSUED
    assert answer.detail == "this server has never handed out that id"


def test_m_sta_115_a_held_sequence_number_with_another_issue_time_was_never_issued() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    forged = ReceiptId(receipt.epoch, receipt.issued_unix_ms + 1, receipt.seq)
    assert receipts.lookup(forged, "agent-a", "lambo", at(1)).state is ReceiptState.NEVER_ISSUED


def test_oq_17_once_not_held_a_receipt_answers_expired_whoever_asks() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    assert receipts.lookup(receipt, "agent-b", "lambo", at(400)).state is ReceiptState.EXPIRED


def test_m_sta_114_a_foreign_epoch_with_no_durable_record_is_restart_lost() -> None:
    receipts = book()
    foreign = ReceiptId(PREVIOUS_EPOCH, 0x1A01FA59DB7, 1)
    answer = receipts.lookup(foreign, "agent-a", "lambo", T0)
    assert answer.state is ReceiptState.RESTART_LOST
    assert answer.receipt == str(foreign)


@pytest.mark.parametrize(
    "state",
    [
        ReceiptState.PENDING_REPLAY,
        ReceiptState.APPLIED_AFTER_RESTART,
        ReceiptState.FAILED,
        ReceiptState.INTENT_DURABLE,
    ],
)
def test_m_sta_103_m_sta_108_m_sta_111_a_previous_process_intent_answers_its_state(
    state: ReceiptState,
) -> None:
    foreign = ReceiptId(PREVIOUS_EPOCH, 0x1A01FA59DB7, 7)
    log = {foreign: IntentRecord(state, "agent-a", "lambo")}
    receipts = ReceiptBook(SEED_EPOCH, intents=log.get)
    answer = receipts.lookup(foreign, "agent-a", "lambo", T0)
    assert (answer.state, answer.detail) == (state, STATE_DETAILS[state])


def test_m_sta_111_applied_after_restart_carries_the_applied_summary() -> None:
    foreign = ReceiptId(PREVIOUS_EPOCH, 0x1A01FA59DB7, 7)
    summary = "derived 2 concept(s): 2 created (2 embedded), 0 matched existing"
    record = IntentRecord(ReceiptState.APPLIED_AFTER_RESTART, "agent-a", "lambo", summary)
    receipts = ReceiptBook(SEED_EPOCH, intents={foreign: record}.get)
    assert receipts.lookup(foreign, "agent-a", "lambo", T0).detail == summary


def test_m_sta_088_an_intent_without_a_recorded_destination_is_forbidden() -> None:
    foreign = ReceiptId(PREVIOUS_EPOCH, 0x1A01FA59DB7, 7)
    record = IntentRecord(ReceiptState.PENDING_REPLAY, "agent-a", None)
    receipts = ReceiptBook(SEED_EPOCH, intents={foreign: record}.get)
    assert receipts.lookup(foreign, "agent-a", "lambo", T0).state is ReceiptState.FORBIDDEN


def test_m_sta_085_a_previous_process_intent_is_forbidden_to_another_agent() -> None:
    foreign = ReceiptId(PREVIOUS_EPOCH, 0x1A01FA59DB7, 7)
    record = IntentRecord(ReceiptState.PENDING_REPLAY, "agent-a", "lambo")
    receipts = ReceiptBook(SEED_EPOCH, intents={foreign: record}.get)
    assert receipts.lookup(foreign, "agent-b", "lambo", T0).state is ReceiptState.FORBIDDEN


def test_a_held_receipt_is_answered_before_the_log_is_asked() -> None:
    asked: list[ReceiptId] = []

    def intents(receipt: ReceiptId) -> IntentRecord | None:
        asked.append(receipt)
        return None

    receipts = ReceiptBook(SEED_EPOCH, intents=intents)
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.lookup(receipt, "agent-a", "lambo", at(1))
    assert asked == []


def test_m_sta_107_m_sta_109_m_sta_110_a_shutdown_settles_outstanding_receipts() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    assert receipts.outstanding() == (receipt,)
    receipts.settle(receipt, ReceiptState.CLOSE_UNFLUSHED, at(1))
    assert receipts.outstanding() == ()
    assert receipts.lookup(receipt, "agent-a", "lambo", at(1)).state is (
        ReceiptState.CLOSE_UNFLUSHED
    )
    receipts.settle(receipt, ReceiptState.INTENT_DURABLE, at(2))  # the retried flush completed
    assert receipts.lookup(receipt, "agent-a", "lambo", at(2)).state is (
        ReceiptState.INTENT_DURABLE
    )


def test_a_receipt_settles_once() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    with pytest.raises(ValueError, match="already settled"):
        receipts.settle(receipt, ReceiptState.FAILED, at(2))
    with pytest.raises(ValueError, match="cannot settle"):
        receipts.settle(receipts.issue("a", "s", T0), ReceiptState.EXPIRED, at(2))
    with pytest.raises(ValueError, match="not held"):
        receipts.settle(ReceiptId(PREVIOUS_EPOCH, 1, 1), ReceiptState.APPLIED, at(2))


def test_settle_fields_cannot_replace_the_receipt_objects_own_keys() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    with pytest.raises(ValueError, match="id, state or detail"):
        receipts.settle(receipt, ReceiptState.APPLIED, at(1), fields={"state": "failed"})


def test_m_sta_112_m_der_095_a_dropped_receipt_says_which_bound_refused_it() -> None:
    receipts = book()
    lane = receipts.drop("agent-a", "lambo", DropCause.LANE, T0)
    queue = receipts.drop("agent-a", "lambo", DropCause.QUEUE, T0)
    lane_answer = receipts.lookup(lane, "agent-a", "lambo", at(1))
    assert lane_answer.state is ReceiptState.DROPPED
    assert "write_queue_lane_bound" in lane_answer.detail
    assert "nothing was written" in lane_answer.detail
    assert "write_queue_bound" in receipts.lookup(queue, "agent-a", "lambo", at(1)).detail
    # The ack already said dropped: nothing is piggybacked for it.
    assert receipts.take_piggyback("agent-a", "lambo", at(1)).receipts == ()


def test_m_sta_170_m_der_086_a_settled_receipt_is_piggybacked_once_to_its_owner() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    assert receipts.take_piggyback("agent-a", "lambo", at(1)).receipts == ()  # still pending
    receipts.settle(receipt, ReceiptState.APPLIED, at(2), detail="derived 1 concept(s)")
    assert receipts.take_piggyback("agent-a", "general", at(3)).receipts == ()
    first = receipts.take_piggyback("agent-a", "lambo", at(3))
    assert first.receipts == (
        ReceiptAnswer(str(receipt), ReceiptState.APPLIED, "derived 1 concept(s)"),
    )
    assert receipts.take_piggyback("agent-a", "lambo", at(4)).receipts == ()


def test_m_sta_171_a_response_carries_at_most_8_receipts_oldest_write_first() -> None:
    """Also M-LIM-038."""
    receipts = book()
    issued = [receipts.issue("agent-a", "lambo", T0) for _ in range(11)]
    for receipt in reversed(issued):  # settled newest first: delivery still follows the writes
        receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    first = receipts.take_piggyback("agent-a", "lambo", at(2))
    assert [a.receipt for a in first.receipts] == [str(r) for r in issued[:8]]
    assert first.waiting == 3
    second = receipts.take_piggyback("agent-a", "lambo", at(3))
    assert [a.receipt for a in second.receipts] == [str(r) for r in issued[8:]]
    assert second.waiting == 0


def test_oq_54_piggybacked_receipts_are_kept_per_agent_id_not_per_connection() -> None:
    """The book knows agents and sessions, no connection: another agent_id never receives
    agent-a's outcomes, and agent-a receives them on whichever response (any tool, any
    connection) it gets next; of more than 8, the oldest writes first (M-STA-171)."""
    receipts = book()
    mine = receipts.issue("agent-a", "lambo", T0)
    theirs = receipts.issue("agent-b", "lambo", T0)
    for receipt in (mine, theirs):
        receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    assert [a.receipt for a in receipts.take_piggyback("agent-b", "lambo", at(2)).receipts] == [
        str(theirs)
    ]
    assert [a.receipt for a in receipts.take_piggyback("agent-a", "lambo", at(3)).receipts] == [
        str(mine)
    ]


def test_m_der_087_piggybacked_receipts_have_the_receipt_object_shape() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    fields: dict[str, JsonValue] = {"replacement_candidates": {"candidates": [], "total": 0}}
    receipts.settle(receipt, ReceiptState.APPLIED, at(1), detail="derived", fields=fields)
    assert receipts.take_piggyback("agent-a", "lambo", at(2)).structured() == [
        {
            "id": str(receipt),
            "state": "applied",
            "detail": "derived",
            "replacement_candidates": {"candidates": [], "total": 0},
        }
    ]


def test_m_der_086_oq_21_the_write_receipts_block_lists_receipts_as_lambo_stats_does() -> None:
    applied = ReceiptAnswer(
        "lwr1.708217ebbf356946.1a01fa59db7.15",
        ReceiptState.APPLIED,
        "derived 1 concept(s): 1 created (1 embedded), 0 matched existing; 1 replacement"
        " candidate(s): existing concepts this write may replace (nothing recorded; cite one"
        " in against on a later call only if it really is replaced)",
        ('  - 5e6f7a8b "the embedder listens on port 8080" (cosine 0.8684, for 1a2b3c4d)',),
    )
    failed = ReceiptAnswer(SEED_RECEIPT, ReceiptState.FAILED, STATE_DETAILS[ReceiptState.FAILED])
    assert write_receipts_block((applied, failed), waiting=2) == (
        "write receipts:\n"
        "receipt lwr1.708217ebbf356946.1a01fa59db7.15: applied — derived 1 concept(s): 1 created"
        " (1 embedded), 0 matched existing; 1 replacement candidate(s): existing concepts this"
        " write may replace (nothing recorded; cite one in against on a later call only if it"
        " really is replaced)\n"
        '  - 5e6f7a8b "the embedder listens on port 8080" (cosine 0.8684, for 1a2b3c4d)\n'
        f"receipt {SEED_RECEIPT}: failed — attempted and rejected; nothing was written\n"
        "2 more receipt(s) waiting; they arrive on your next tool responses"
    )
    assert write_receipts_block(()) == ""
    assert "more receipt(s)" not in write_receipts_block((failed,))


def test_m_act_041_m_act_042_the_record_action_ack_is_the_seeds_text_and_content() -> None:
    receipt = ReceiptId.parse(SEED_RECEIPT)
    ack = action_ack("created migrations/003.sql", receipt, "agent-a")
    assert ack.text == (
        "accepted action 'created migrations/003.sql' for background write; validated and"
        " ordered, not yet applied\nreceipt lwr1.708217ebbf356946.1a01fa59db7.16: pending —"
        " admitted, not yet applied; ask again\nThe outcome arrives on your next tool response."
        " To wait for it, call lambo_stats with receipt=lwr1.708217ebbf356946.1a01fa59db7.16"
        ' (add wait_ms to block).\nRecorded under agent_id "agent-a"; send this same id on'
        " every call."
    )
    assert ack.structured() == {
        "summary": "accepted action 'created migrations/003.sql' for background write;"
        " validated and ordered, not yet applied",
        "receipt": SEED_RECEIPT,
        "receipt_state": "pending",
        "agent_id": "agent-a",
        "warnings": [],
    }


def test_m_der_081_m_der_082_m_der_084_the_derive_ack_is_four_lines_without_node_ids() -> None:
    receipt = ReceiptId.parse(SEED_RECEIPT)
    ack = derive_ack(2, receipt, "claude-opus-5-5")
    assert ack.text.split("\n") == [
        "accepted 2 concept(s) for background write; validated and ordered, not yet applied",
        f"receipt {SEED_RECEIPT}: pending — admitted, not yet applied; ask again",
        "The outcome arrives on your next tool response. To wait for it, call lambo_stats with"
        f" receipt={SEED_RECEIPT} (add wait_ms to block).",
        'Recorded under agent_id "claude-opus-5-5"; send this same id on every call.',
    ]
    content = ack.structured()
    assert content["summary"] == ack.text.split("\n")[0]
    assert set(content) == {"summary", "receipt", "receipt_state", "agent_id", "warnings"}


def test_m_arg_063_m_arg_064_every_write_ack_names_the_recorded_agent_id() -> None:
    receipt = ReceiptId.parse(SEED_RECEIPT)
    for ack in (derive_ack(1, receipt, "gpt-5.6"), action_ack("ran tests", receipt, "gpt-5.6")):
        assert ack.text.endswith(
            'Recorded under agent_id "gpt-5.6"; send this same id on every call.'
        )
        assert ack.structured()["agent_id"] == "gpt-5.6"


def test_m_act_042_an_action_with_line_breaks_keeps_the_summary_on_the_first_line() -> None:
    ack = action_ack(
        "merged\nPR #52\tand\u2028more\u2029end", ReceiptId.parse(SEED_RECEIPT), "agent-a"
    )
    assert ack.summary == ack.text.splitlines()[0]
    assert ack.summary.startswith("accepted action 'merged\\nPR #52\\tand\\u2028more\\u2029end'")
    assert len(ack.text.splitlines()) == 4


def test_m_der_094_a_dropped_write_gets_the_same_ack_shape_saying_nothing_was_written() -> None:
    receipts = book()
    receipt = receipts.drop("agent-a", "lambo", DropCause.LANE, T0)
    ack = derive_ack(3, receipt, "agent-a", dropped=DropCause.LANE)
    lines = ack.text.split("\n")
    assert lines[0] == "dropped 3 concept(s); never attempted, nothing was written"
    assert lines[1] == (
        f"receipt {receipt}: dropped — " + receipts.lookup(receipt, "agent-a", "lambo", T0).detail
    )
    assert lines[3] == 'Recorded under agent_id "agent-a"; send this same id on every call.'
    assert ack.structured()["receipt_state"] == "dropped"
    assert ack.structured()["summary"] == lines[0]


def test_m_lay_017_m_lay_018_a_scoped_write_ack_names_the_session_it_went_to() -> None:
    warning = "layer general closed after admitting this write; do not resend it"
    ack = action_ack(
        "ran tests",
        ReceiptId.parse(SEED_RECEIPT),
        "agent-a",
        written_to="general",
        warnings=(warning,),
    )
    assert ack.text.split("\n")[-1] == (
        "written to session 'general'; writes to different sessions have no ordering between them"
    )
    assert ack.structured()["session"] == "general"
    assert ack.structured()["warnings"] == [warning]


def test_a_fresh_book_draws_a_random_64_bit_epoch() -> None:
    first, second = ReceiptBook(), ReceiptBook()
    assert 0 <= first.epoch < 1 << 64
    assert first.epoch != second.epoch  # 2**-64 chance of a false failure
    assert first.lookup(second.issue("a", "s", T0), "a", "s", T0).state is (
        ReceiptState.RESTART_LOST
    )


def test_adr_0047_a_dropped_ack_says_when_to_send_it_again() -> None:
    """Issue 24: M-DER-094's ack shape, with the time to wait in the text and as
    `retry_after_ms`; a pending ack has neither."""
    receipts = book()
    dropped = derive_ack(
        1,
        receipts.drop("agent-a", "lambo", DropCause.LANE, T0),
        "agent-a",
        dropped=DropCause.LANE,
        retry_after_ms=1200,
    )
    assert dropped.text.split("\n")[2].startswith(
        "Nothing was written: send it again in about 1200 ms, once one of your earlier writes"
    )
    assert dropped.structured()["retry_after_ms"] == 1200
    closed = derive_ack(
        1,
        receipts.drop("agent-a", "lambo", DropCause.CLOSED, T0),
        "agent-a",
        dropped=DropCause.CLOSED,
    )
    assert "retry_after_ms" not in closed.structured()
    pending = derive_ack(1, receipts.issue("agent-a", "lambo", T0), "agent-a")
    assert "retry_after_ms" not in pending.structured()


@pytest.mark.parametrize(
    ("receipt", "text"),
    [
        (ReceiptId(0, 0, 1), "lwr1.0000000000000000.0.1"),
        (
            ReceiptId(2**64 - 1, 2**64 - 1, 2**64 - 1),
            "lwr1.ffffffffffffffff.ffffffffffffffff.ffffffffffffffff",
        ),
    ],
)
def test_receipt_ids_at_both_ends_of_64_bits_format_and_parse_back(
    receipt: ReceiptId, text: str
) -> None:
    assert receipt.format() == text
    assert ReceiptId.parse(text) == receipt


@pytest.mark.parametrize(
    "parts", [(2**64, 0, 1), (0, 2**64, 1), (0, 0, 2**64), (-1, 0, 1), (0, -1, 1), (0, 0, 0)]
)
def test_a_receipt_id_part_past_either_end_is_refused(parts: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError, match="64 bits"):
        ReceiptId(*parts)


@pytest.mark.parametrize("epoch", [0, 2**64 - 1])
def test_a_book_at_either_end_of_the_epoch_range_issues_and_answers_its_receipts(
    epoch: int,
) -> None:
    receipts = ReceiptBook(epoch)
    receipt = receipts.issue("agent-a", "lambo", SEED_ISSUED)
    assert str(receipt) == f"lwr1.{epoch:016x}.1a01fa59db7.1"
    asked = receipts.lookup(str(receipt), "agent-a", "lambo", SEED_ISSUED)
    assert asked.state is ReceiptState.PENDING


@pytest.mark.parametrize("epoch", [-1, 2**64])
def test_a_book_epoch_outside_64_bits_is_refused(epoch: int) -> None:
    with pytest.raises(ValueError, match=r"^epoch must fit in 64 bits$"):
        ReceiptBook(epoch)


@pytest.mark.parametrize("limit", [0, -1])
def test_a_piggyback_limit_of_0_carries_nothing_and_keeps_every_receipt_owed(limit: int) -> None:
    receipts = book()
    issued = [receipts.issue("agent-a", "lambo", T0) for _ in range(2)]
    for receipt in issued:
        receipts.settle(receipt, ReceiptState.APPLIED, at(1))
    nothing = receipts.take_piggyback("agent-a", "lambo", at(2), limit=limit)
    assert (nothing.receipts, nothing.waiting) == ((), 2)
    later = receipts.take_piggyback("agent-a", "lambo", at(3))
    assert [a.receipt for a in later.receipts] == [str(r) for r in issued]
    assert later.waiting == 0


def test_m_sta_091_retained_counts_after_expiring_what_is_due() -> None:
    """receipts_retained is asked alone (lambo_stats): it expires what is due itself."""
    receipts = book()
    receipts.settle(receipts.issue("agent-a", "lambo", T0), ReceiptState.APPLIED, at(10))
    assert receipts.retained(at(309.999)) == 1
    assert receipts.retained(at(310)) == 0


def test_m_sta_091_issuing_a_receipt_expires_what_is_due_then() -> None:
    """A receipt expired when a later write was issued stays expired, even for a question
    that carries an earlier clock reading (calls race their clock reads)."""
    receipts = book()
    old = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(old, ReceiptState.APPLIED, at(10))
    receipts.issue("agent-a", "lambo", at(310))
    assert receipts.lookup(old, "agent-a", "lambo", at(309)).state is ReceiptState.EXPIRED


def test_m_sta_085_the_forbidden_answer_says_whose_receipt_it_is_in_the_seeds_words() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    assert receipts.lookup(receipt, "agent-b", "lambo", at(1)).detail == (
        "this receipt belongs to another agent_id or another session; ask with the agent_id"
        " that made the write, at the session it was written through"
    )


def test_m_sta_109_m_sta_110_a_shutdowns_two_answers_in_the_seeds_words() -> None:
    receipts = book()
    receipt = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(receipt, ReceiptState.CLOSE_UNFLUSHED, at(1))
    assert receipts.lookup(receipt, "agent-a", "lambo", at(1)).detail == (
        "the session closed before this write was applied and the close could not complete"
        " its final flush; the write may or may not have been saved as an intent (if an"
        " earlier flush took it, the next server re-attempts it; if not, it is lost);"
        " recall before re-deriving"
    )
    receipts.settle(receipt, ReceiptState.INTENT_DURABLE, at(2))
    assert receipts.lookup(receipt, "agent-a", "lambo", at(2)).detail == (
        "the session closed before this write was applied and the close's final flush"
        " completed, so the write is not lost: it is recorded as a durable intent, and the"
        " next server on this session re-attempts it in the order you sent it;"
        " ask about this receipt id there"
    )


@pytest.mark.parametrize(
    ("cause", "detail", "hint"),
    [
        (
            DropCause.LANE,
            "never attempted: your lane was full (write_queue_lane_bound, 64 outstanding"
            " writes per agent_id) when you were acked; nothing was written",
            "Nothing was written: send it again in about 1200 ms, once one of your earlier writes"
            " has settled (lambo_stats with its receipt and wait_ms waits for it); this receipt"
            " will not change.",
        ),
        (
            DropCause.QUEUE,
            "never attempted: the write queue was full (write_queue_bound, 1024 outstanding"
            " writes across every agent) when you were acked; nothing was written",
            "Nothing was written: send it again in about 1200 ms, once the queue has room; this"
            " receipt will not change.",
        ),
        (
            DropCause.CLOSED,
            "never attempted: the session was shutting down when you were acked; nothing was"
            " written",
            "Nothing was written: send it again once a lambo serve holds the session again; this"
            " receipt will not change.",
        ),
    ],
)
def test_m_der_094_095_a_dropped_ack_says_which_bound_refused_it_and_what_to_do(
    cause: DropCause, detail: str, hint: str
) -> None:
    receipts = book()
    receipt = receipts.drop("agent-a", "lambo", cause, T0)
    lines = derive_ack(1, receipt, "agent-a", dropped=cause, retry_after_ms=1200).text.split("\n")
    assert lines[1:3] == [f"receipt {receipt}: dropped — {detail}", hint]
    assert receipts.lookup(receipt, "agent-a", "lambo", T0).detail == detail


@pytest.mark.parametrize(
    ("state", "detail"),
    [
        (
            ReceiptState.PENDING_REPLAY,
            "admitted by an earlier server on this session, recorded as a durable intent,"
            " and still owed a replay; ask again, and recall rather than re-deriving",
        ),
        (
            ReceiptState.APPLIED_AFTER_RESTART,
            "the write was applied across a restart; recall finds the concepts",
        ),
        (
            ReceiptState.DROPPED,
            "never attempted: the queue was full when you were acked; nothing was written",
        ),
    ],
)
def test_m_sta_100_a_previous_process_intents_state_is_told_in_the_seeds_words(
    state: ReceiptState, detail: str
) -> None:
    foreign = ReceiptId(PREVIOUS_EPOCH, 0x1A01FA59DB7, 7)
    receipts = ReceiptBook(SEED_EPOCH, intents={foreign: IntentRecord(state, "a", "s")}.get)
    assert receipts.lookup(foreign, "a", "s", T0).detail == detail


def test_withdrawing_forgets_only_a_pending_receipt_this_book_issued() -> None:
    receipts = book()
    settled = receipts.issue("agent-a", "lambo", T0)
    receipts.settle(settled, ReceiptState.APPLIED, at(1))
    receipts.withdraw(settled)  # settled: its outcome stays
    assert receipts.lookup(settled, "agent-a", "lambo", at(1)).state is ReceiptState.APPLIED
    pending = receipts.issue("agent-a", "lambo", T0)
    receipts.withdraw(ReceiptId(SEED_EPOCH, pending.issued_unix_ms + 1, pending.seq))
    assert receipts.lookup(pending, "agent-a", "lambo", at(1)).state is ReceiptState.PENDING
    receipts.withdraw(pending)
    assert receipts.lookup(pending, "agent-a", "lambo", at(1)).state is ReceiptState.EXPIRED
