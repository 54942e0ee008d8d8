"""Where the read tools (tools/memory_read.py, tools/memory_recall.py) still import the memory
service from: it is the application service `lcg.commands.memory_admission.MemoryService`
(ADR 0059). Nothing else lives here; import it from commands."""

from __future__ import annotations

from lcg.commands.memory_admission import MemoryService

__all__ = ["MemoryService"]
