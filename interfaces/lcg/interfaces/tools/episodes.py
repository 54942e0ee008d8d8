"""Episodes: store content as given or extract a graph from it, read, delete (K-EPI, K-ING)."""

from __future__ import annotations

from pydantic import Field

from lcg.commands import handlers
from lcg.domain import rules
from lcg.domain.commands import AddEpisode, DeleteEpisode
from lcg.domain.ids import DEFAULT_GROUP, EpisodeUuid, GroupId
from lcg.domain.rules import EpisodeSource
from lcg.interfaces.app import App
from lcg.interfaces.params import (
    GroupIdField,
    NumResults,
    Params,
    Timestamp,
    UuidField,
    required_text,
)
from lcg.interfaces.read_after import ReadAfterParams
from lcg.queries import graph_reads


class AddEpisodeParams(Params):
    name: str = required_text(rules.MAX_EPISODE_NAME, "The episode's name.")
    episode_body: str = required_text(rules.MAX_EPISODE_BODY, "The content, stored as given.")
    source: EpisodeSource = Field("text", description="What the content is.")
    source_description: str = Field(
        "",
        max_length=rules.MAX_SOURCE_DESCRIPTION,
        description="Where it came from (knowledge_get_entities_by_source matches it).",
    )
    reference_time: Timestamp | None = Field(
        None, description="RFC 3339 time, or a date (midnight UTC); default: now."
    )
    group_id: GroupIdField = DEFAULT_GROUP


class GetEpisodesParams(ReadAfterParams):
    group_id: GroupIdField = DEFAULT_GROUP
    last_n: NumResults = Field(50, description="How many of the newest episodes.")


class DeleteEpisodeParams(Params):
    episode_uuid: UuidField = Field(description="The episode to delete; unknown: a no-op.")


def add_episode(app: App, q: AddEpisodeParams) -> handlers.AddEpisodeResult:
    """Store a piece of content (text, message or json) as an episode of a group."""
    now = app.now()
    command = AddEpisode(
        group_id=GroupId(q.group_id),
        name=q.name,
        body=q.episode_body,
        source=q.source,
        source_description=q.source_description,
        reference_time=(
            now if q.reference_time is None else rules.timestamp(q.reference_time, "reference_time")
        ),
        new_uuid=EpisodeUuid(app.new_id()),
        now=now,
    )
    return app.writes.writer.execute(lambda ctx: handlers.add_episode(ctx, command))


def get_episodes(app: App, q: GetEpisodesParams) -> graph_reads.EpisodesResult:
    """The newest episodes of one group, newest first."""
    return graph_reads.get_episodes(app.reads.reader(), GroupId(q.group_id), q.last_n)


def delete_episode(app: App, q: DeleteEpisodeParams) -> handlers.DeleteEpisodeResult:
    """Delete one episode in its own group; entities it mentioned stay. Unknown: no-op."""
    command = DeleteEpisode(EpisodeUuid(q.episode_uuid), app.now())
    return app.writes.writer.execute(lambda ctx: handlers.delete_episode(ctx, command))
