"""knowledge_backfill_summary_embeddings items no other test names (seed 000, K-SEM): which
entities are candidates, re-running, a null group, and the summary embedded at creation."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from lcg.commands import indexing
from lcg.domain import deciders
from lcg.domain.errors import InvalidParams
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.conftest import Call
from tests.helpers.memory_log import session_events


def test_k_sem_002_an_entity_with_an_empty_summary_is_not_a_candidate(call: Call) -> None:
    call("knowledge_assert_entity", name="Ada", summary="", group_id="g")
    call("knowledge_assert_entity", name="Bob", summary="a sailor from Lisbon", group_id="g")
    dry = call("knowledge_backfill_summary_embeddings", group_id="g", dry_run=True)
    assert (dry["total_entities"], dry["backfilled"]) == (2, 1)  # the candidate count


def test_k_sem_008_009_a_second_run_processes_the_same_candidates_to_the_same_effect(
    call: Call, workspace: Workspace
) -> None:
    call("knowledge_assert_entity", name="Bob", summary="a sailor from Lisbon", group_id="g")
    call("knowledge_assert_entity", name="Cy", summary="a baker in Porto", group_id="g")
    first = call("knowledge_backfill_summary_embeddings", group_id="g")
    found = call("knowledge_find_entities", query="sailor Lisbon", group_ids=["g"])["nodes"]
    second = call("knowledge_backfill_summary_embeddings", group_id="g")
    assert (
        first
        == second
        == {
            "group_id": "g",
            "total_entities": 2,
            "backfilled": 2,
            "dry_run": False,
        }
    )
    again = call("knowledge_find_entities", query="sailor Lisbon", group_ids=["g"])["nodes"]
    assert again == found  # the same vectors: the same scores and ranks


def test_k_sem_014_a_null_group_is_refused(call: Call) -> None:
    with pytest.raises(InvalidParams) as error:
        call("knowledge_backfill_summary_embeddings", group_id=None)
    assert error.value.field == "group_id"


def test_k_sem_006_an_entity_asserted_with_a_summary_is_found_by_it(call: Call) -> None:
    call("knowledge_assert_entity", name="Zed", summary="a sailor from Lisbon", group_id="g")
    nodes = call("knowledge_find_entities", query="sailor Lisbon", group_ids=["g"])["nodes"]
    (zed,) = [node for node in nodes if node["name"] == "Zed"]
    assert "summary_vector" in zed["ranks"]


def test_k_sem_017_a_14_a_partly_completed_backfill_leaves_a_usable_group_and_a_rerun_finishes(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pages of one entity; the run stops after its first page (the second page's batch
    fails, injected). What the first page wrote stays; the entity not yet processed is still
    found by its name; running the tool again covers the whole group. A-14: the tool has no
    batch or limit parameter, so "partial" can only be such an interrupted run, and the
    summary vectors it left answer searches at once (nothing to heal by hand)."""
    params = operations.BY_NAME["knowledge_backfill_summary_embeddings"].params.model_fields
    assert set(params) == {"group_id", "dry_run"}
    call("knowledge_assert_entity", name="Bob", summary="a sailor from Lisbon", group_id="g")
    call("knowledge_assert_entity", name="Cy", summary="a baker in Porto", group_id="g")
    decide = deciders.decide_backfill_summaries
    pages: list[int] = []

    def second_page_fails(*args: Any) -> Any:
        pages.append(1)
        if len(pages) == 2:
            raise RuntimeError("the run was cut short")
        return decide(*args)

    monkeypatch.setattr(indexing, "BATCH", 1)
    monkeypatch.setattr(deciders, "decide_backfill_summaries", second_page_fails)
    head = call("knowledge_status")["wal_groups"]["g"]["max_seq"]
    with pytest.raises(RuntimeError, match="cut short"):
        call("knowledge_backfill_summary_embeddings", group_id="g")
    assert call("knowledge_status")["wal_groups"]["g"]["max_seq"] == head + 1  # page one's
    monkeypatch.setattr(deciders, "decide_backfill_summaries", decide)
    for name in ("Bob", "Cy"):
        found = call("knowledge_find_entities", query=name, group_ids=["g"])["nodes"]
        assert name in [node["name"] for node in found]
    sailors = call("knowledge_find_entities", query="sailor Lisbon", group_ids=["g"])["nodes"]
    assert "summary_vector" in next(n for n in sailors if n["name"] == "Bob")["ranks"]
    again = call("knowledge_backfill_summary_embeddings", group_id="g")
    assert (again["total_entities"], again["backfilled"]) == (2, 2)


SAILORS = ("Ana", "Bea", "Cid", "Dan", "Eva")


def test_k_sem_011_reads_and_writes_issued_during_a_run_wait_until_it_finishes(
    call: Call, app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five entities, pages of one. While the run decides its first page, another caller
    asserts an entity in the same group and a third reads knowledge_status; the test goes on
    once the write waits in the writer's queue and the read has either answered or waits
    for the run. The write is applied only after the run: every summary the run embedded
    comes before it in the group's log, and the run backfilled the five it started with. The
    read answered after the run too: the group's head it saw is past every summary."""
    for name in SAILORS:
        summary = f"{name} sails from Lisbon"
        call("knowledge_assert_entity", name=name, summary=summary, group_id="g")
    writer, hold = app.writes.writer, app.writes.read_hold
    decide = deciders.decide_backfill_summaries
    answers: list[dict[str, Any]] = []
    heads: list[int] = []
    late_write = threading.Thread(
        target=lambda: answers.append(
            call("knowledge_assert_entity", name="Zoe", summary="a pilot in Faro", group_id="g")
        )
    )
    late_read = threading.Thread(
        target=lambda: heads.append(call("knowledge_status")["wal_groups"]["g"]["max_seq"])
    )

    def first_page_waits_for_a_write_and_a_read(*args: Any) -> Any:
        if not late_write.is_alive() and not answers:
            late_write.start()
            late_read.start()
            while not writer._queue and late_write.is_alive():  # queued: it waits for the run
                time.sleep(0.001)
            while not hold.waiting and late_read.is_alive():  # held off, or answered already
                time.sleep(0.001)
        return decide(*args)

    monkeypatch.setattr(indexing, "BATCH", 1)
    monkeypatch.setattr(
        deciders, "decide_backfill_summaries", first_page_waits_for_a_write_and_a_read
    )
    result = call("knowledge_backfill_summary_embeddings", group_id="g")
    late_write.join()
    late_read.join()
    assert result["backfilled"] == len(SAILORS)
    (answer,) = answers
    assert answer["created"] is True
    events = session_events(app.workspace.settings.workspace, "g")
    (zoe,) = [e.seq for e in events if e.topic == "entity_created" and e.payload["name"] == "Zoe"]
    embedded = [e.seq for e in events if e.topic == "summary_embedded"]
    assert len(embedded) == len(SAILORS)
    assert max(embedded) < zoe
    (head,) = heads
    assert head >= max(embedded)
