"""The two memory writes as commands: what an agent asked for, already validated."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from lcg.domain.ids import GroupId

DERIVE = "lambo_derive"
RECORD_ACTION = "lambo_record_action"


@dataclass(frozen=True, slots=True)
class ConceptIn:
    """One element of lambo_derive's `concepts`."""

    content: str
    concept_type: str  # entity | logic | constraint | resource | observation
    depends_on: tuple[str, ...] = ()
    against: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Derive:
    """lambo_derive: concepts learned in one interaction, with hierarchy links."""

    session: GroupId
    agent_id: str
    concepts: tuple[ConceptIn, ...]
    parent_of: tuple[tuple[str, str], ...]
    event_time: datetime | None
    receipt: str
    now: datetime
    repo_scope: str | None = None  # trimmed, NFC (lcg.domain.memory.repo_paths)


@dataclass(frozen=True, slots=True)
class RecordAction:
    """lambo_record_action: something the agent did, what it produced, modified, rested on."""

    session: GroupId
    agent_id: str
    action: str
    produces: tuple[str, ...]
    modifies: tuple[str, ...]
    depends_on: tuple[str, ...]
    against: tuple[str, ...]
    event_time: datetime | None
    receipt: str
    now: datetime
    repo_scope: str | None = None  # trimmed, NFC (lcg.domain.memory.repo_paths)


DERIVE_IMAGE = "lambo_derive_image"


@dataclass(frozen=True, slots=True)
class DeriveImage:
    """lambo_derive_image by a client vector (ADR 0095): one image concept, its content the
    caption plus `[image:<image_id>]`, its vector checked and unit-length."""

    session: GroupId
    agent_id: str
    caption: str
    concept_type: str
    image_id: str
    vector: tuple[float, ...]
    contract: tuple[str, str | None, int]  # the session's (kind, model, dim) it was held to
    parent_of: tuple[tuple[str, str], ...]
    event_time: datetime | None
    receipt: str
    now: datetime

    @property
    def content(self) -> str:
        return f"{self.caption} [image:{self.image_id}]"
