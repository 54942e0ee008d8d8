"""Handlers run without savepoints (ADR 0017): a failure after appending re-runs the batch."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial

from lcg.commands import handlers
from lcg.commands.writer import WriteContext
from lcg.domain.commands import AddEpisode
from lcg.domain.errors import Conflict
from lcg.domain.events import EpisodeDeleted
from lcg.domain.ids import EpisodeUuid, GroupId
from lcg.interfaces.workspace import Workspace

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def episode(n: int) -> AddEpisode:
    return AddEpisode(
        GroupId("g"), f"e{n}", f"body {n}", "text", "", NOW, EpisodeUuid(f"ep-{n}"), NOW
    )


def append_then_fail(ctx: WriteContext) -> object:
    ctx.append(GroupId("g"), [EpisodeDeleted(NOW, EpisodeUuid("ep-0"))])
    raise Conflict("refused after appending", field="x", rule="y")


def refuse(ctx: WriteContext) -> object:
    raise Conflict("refused before appending", field="x", rule="y")


def test_a_handler_failing_after_its_append_leaves_the_rest_of_the_batch_intact(
    workspace: Workspace,
) -> None:
    batch: list[Callable[[WriteContext], object]] = [
        partial(handlers.add_episode, command=episode(0)),
        append_then_fail,
        refuse,
        partial(handlers.add_episode, command=episode(1)),
    ]
    outcomes = workspace.writer.execute_many(batch)
    assert isinstance(outcomes[1], Conflict)
    assert isinstance(outcomes[2], Conflict)
    assert outcomes[0] == {"episode_uuid": "ep-0"}
    assert outcomes[3] == {"episode_uuid": "ep-1"}
    stored = [r for page in workspace.log.read(GroupId("g")) for r in page]
    assert [(r.seq, r.event.wire_name) for r in stored] == [
        (1, "episode_added"),
        (2, "episode_added"),
    ]
    rows = workspace.runner.conn.execute("SELECT uuid, seq FROM episodes ORDER BY seq").fetchall()
    assert [tuple(row) for row in rows] == [("ep-0", 1), ("ep-1", 2)]
    position = workspace.runner.position(GroupId("g")).position
    assert position == 2
    again = workspace.writer.execute(partial(handlers.add_episode, command=episode(2)))
    assert again == {"episode_uuid": "ep-2"}
    assert workspace.log.head(GroupId("g")) == 3
