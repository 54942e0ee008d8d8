"""Typed identifiers shared by every layer."""

from __future__ import annotations

from typing import NewType

GroupId = NewType("GroupId", str)
EntityUuid = NewType("EntityUuid", str)
EdgeUuid = NewType("EdgeUuid", str)
EpisodeUuid = NewType("EpisodeUuid", str)
Seq = NewType("Seq", int)

DEFAULT_GROUP = GroupId("liminis")
