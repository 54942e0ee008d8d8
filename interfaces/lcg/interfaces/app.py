"""What a tool function receives: the open workspace's services, the id source and progress."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime

from lcg.commands.memory_admission import MemoryService, MemoryWrites
from lcg.interfaces.handles import Reads, Upkeep, Writes
from lcg.interfaces.workspace import Workspace
from lcg.projections.runner import Progress

NewId = Callable[[], str]


def uuid4_text() -> str:
    """Random (v4) ids: their first 8 hex digits serve as short ids (seed 001)."""
    return str(uuid.uuid4())


@dataclass(frozen=True, slots=True)
class App:
    """The services every tool may use; holds no per-tool logic and no state of its own.

    `new_id` mints the ids commands carry (tests pass a deterministic one); `progress`, set
    per call by the dispatch, receives (done, total) from long operations. `operator`: the
    calls are the operator's own command in this process (the CLI), not a serving process's
    clients: a dump may then be written anywhere the operator can (ADR 0048).

    Tools reach the workspace only through the narrow handles `reads`, `writes` and `upkeep`
    (`lcg.interfaces.handles`, ADR 0063); `workspace` is for the adapters that built the App.
    """

    workspace: Workspace
    new_id: NewId = uuid4_text
    progress: Progress | None = None
    operator: bool = False
    session: str | None = None  # the memory session the call is for (None: the process's own)
    layers: tuple[str, ...] = ()  # the shared sessions it is layered over (ADR 0080)

    @property
    def reads(self) -> Reads:
        return self.workspace

    @property
    def writes(self) -> Writes:
        return self.workspace

    @property
    def upkeep(self) -> Upkeep:
        return self.workspace

    @property
    def memory_writes(self) -> MemoryWrites:
        """The one handle the memory write tools use: what they may ask to be written, the
        receipts they may look up (ADR 0059)."""
        return self.memory

    @property
    def memory(self) -> MemoryService:
        """The call's session's memory application service, for the tools that are not writes: the
        read tools count accesses and hand back settled receipts through it, the operator's
        canon and gc tools run its jobs. The call's session's (ADR 0071), made on first use."""
        return self.workspace.memory_sessions.get(self.session)

    def now(self) -> datetime:
        """The workspace clock's reading: the one source of `now` for commands."""
        return self.workspace.clock()

    def with_progress(self, progress: Progress | None) -> App:
        return self if progress is None else replace(self, progress=progress)

    def for_session(self, session: str | None, layers: tuple[str, ...] = ()) -> App:
        """The same services, the memory tools answering for `session` (None: the default),
        layered over `layers`."""
        if session is None and not layers:
            return self
        return replace(self, session=session, layers=layers)

    def memory_of(self, session: str) -> MemoryService:
        """Another session's memory service (a layer of the call's session, ADR 0080)."""
        return self.workspace.memory_sessions.get(session)
