"""Projections declare what they fold; a page applied at once equals the same events one by one."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.events import (
    EVENT_TYPES,
    GROUP_FAMILY,
    KNOWLEDGE_FAMILY,
    DomainEvent,
    EntityCreated,
    EntityRevised,
    EpisodeAdded,
    EpisodeDeleted,
    EventCodec,
    GroupPurged,
    RelationshipCreated,
    RelationshipRevised,
    SummaryEmbedded,
)
from lcg.domain.ids import EdgeUuid, EntityUuid, EpisodeUuid, GroupId, Seq
from lcg.projections import registry
from lcg.projections.cypher import store as cypher_store
from lcg.projections.dispatch import EventTable, Subscription, UnhandledEvent
from lcg.projections.graph import schema
from lcg.projections.runner import ProjectionError, ProjectionRunner
from lcg.projections.wal.store import EventLog, RecordedEvent
from tests.helpers.projection_state import SEARCH_ROWS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


SUBSCRIPTIONS = [p.subscription for p in registry.projections()] + [cypher_store.SUBSCRIPTION]


@pytest.mark.parametrize("subscription", SUBSCRIPTIONS, ids=lambda s: s.name)
def test_every_event_type_is_handled_or_explicitly_ignored_by_each_projection(
    subscription: Subscription,
) -> None:
    """Of the families it reads, by name; of the others, by not reading them."""
    assert subscription.unclaimed == frozenset()
    assert subscription.handles.isdisjoint(subscription.ignores)
    assert subscription.handles | subscription.ignores == set(EVENT_TYPES)


def test_an_event_neither_handled_nor_ignored_is_an_error() -> None:
    table = EventTable("partial", reads=(KNOWLEDGE_FAMILY, GROUP_FAMILY))

    @table.on(EpisodeDeleted)
    def _deleted(conn: sqlite3.Connection, group: GroupId, run: Any) -> None:
        return None

    event = RecordedEvent(GroupId("g"), Seq(1), GroupPurged(occurred_at=T0))
    with pytest.raises(UnhandledEvent, match="neither handles nor ignores GroupPurged"):
        table.apply(sqlite3.connect(":memory:"), [event])


def test_declaring_an_event_type_twice_is_refused() -> None:
    table = EventTable("twice", reads=(GROUP_FAMILY,), ignores=(GroupPurged,))
    with pytest.raises(ValueError, match="declared twice"):
        table.on(GroupPurged)(lambda conn, group, run: None)


def mixed_events() -> list[DomainEvent]:
    """Every event type, runs of the same type broken up, chat and plain episodes mixed."""
    at = [T0 + timedelta(seconds=n) for n in range(64)]
    ada, bob = EntityUuid("ent-ada"), EntityUuid("ent-bob")
    knew = EdgeUuid("edge-knew")

    def episode(n: int, source: str) -> EpisodeAdded:
        body = f"turn {n} about ada and bob " + ("long words here. " * 70 if n == 3 else "")
        return EpisodeAdded(
            at[n], EpisodeUuid(f"ep-{n}"), f"e{n}", body, source, "", at[n], None, None
        )

    return [
        EntityCreated(at[0], ada, "Ada", ("Person",), "a summary", "{}"),
        EntityCreated(at[1], bob, "Bob", (), "", "{}"),
        RelationshipCreated(at[2], knew, ada, bob, "KNEW", "ada knew bob", None, "{}", None),
        EntityRevised(at[3], ada, "Ada L", ("Person",), "revised", "{}"),
        episode(4, "text"),
        episode(5, "message"),
        episode(3, "text"),
        episode(6, "message"),
        episode(7, "text"),
        episode(8, "message"),
        RelationshipRevised(at[9], knew, "ada met bob", "MET", "{}", at[9]),
        EpisodeDeleted(at[10], EpisodeUuid("ep-6")),
        SummaryEmbedded(at[11], ada, "revised"),
        EpisodeDeleted(at[12], EpisodeUuid("ep-4")),
        episode(13, "message"),
        episode(14, "text"),
        EntityCreated(at[15], EntityUuid("ent-cy"), "Cy", (), "x", "{}"),
        GroupPurged(at[16]),
        episode(17, "message"),
        episode(18, "text"),
        EntityCreated(at[19], EntityUuid("ent-di"), "Di", (), "y", "{}"),
    ]


@pytest.fixture
def log(tmp_path: Path) -> Iterator[EventLog]:
    wal = EventLog(tmp_path / "wal.sqlite", EventCodec())
    yield wal
    wal.close()


def fresh_runner(path: Path, log: EventLog) -> ProjectionRunner:
    runner = ProjectionRunner(schema.connect(str(path)), log, registry.projections())
    runner.install()
    return runner


def dump(conn: sqlite3.Connection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row, row ids included: the page path must give the very same doc_ids and vec_ids."""
    tables = [
        "entities", "relationships", "episodes", "mentions",
        "text_docs", "text_changes", "vector_catalog", "fts_entities", "fts_edges",
    ]  # fmt: skip
    rows = {
        t: [tuple(r) for r in conn.execute(f"SELECT rowid, * FROM {t} ORDER BY 1")] for t in tables
    }
    rows["projection_positions"] = [
        tuple(r) for r in conn.execute("SELECT * FROM projection_positions ORDER BY 1, 2")
    ]
    rows["fts_passages"] = [
        tuple(r) for r in conn.execute("SELECT rowid, * FROM fts_passages ORDER BY 1")
    ]
    for name, query in SEARCH_ROWS.items():
        rows[f"search:{name}"] = sorted(tuple(r) for r in conn.execute(query))
    return rows


@pytest.mark.parametrize("groups", [("g",), ("g", "h")], ids=["one group", "two groups"])
def test_a_mixed_page_applied_at_once_equals_the_events_applied_one_by_one(
    tmp_path: Path, log: EventLog, groups: tuple[str, ...]
) -> None:
    seqs = dict.fromkeys(groups, 0)
    batch = []
    for index, event in enumerate(mixed_events()):
        group = groups[index % len(groups)] if index < 16 else groups[0]
        seqs[group] += 1
        batch.append(RecordedEvent(GroupId(group), Seq(seqs[group]), event))
    paged = fresh_runner(tmp_path / "paged.sqlite", log)
    single = fresh_runner(tmp_path / "single.sqlite", log)
    for runner, pages in ((paged, [batch]), (single, [[r] for r in batch])):
        runner.conn.execute("BEGIN")
        for page in pages:
            runner.apply(page)
        runner.conn.execute("COMMIT")
    assert dump(paged.conn) == dump(single.conn)
    assert paged.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0] > 0


def test_a_page_with_a_gap_is_refused_before_anything_is_applied(
    tmp_path: Path, log: EventLog
) -> None:
    runner = fresh_runner(tmp_path / "graph.sqlite", log)
    events = mixed_events()[:3]
    page = [
        RecordedEvent(GroupId("g"), Seq(seq), e) for seq, e in zip((1, 2, 4), events, strict=True)
    ]
    runner.conn.execute("BEGIN")
    with pytest.raises(ProjectionError, match="cannot apply seq"):
        runner.apply(page)
    runner.conn.execute("ROLLBACK")
