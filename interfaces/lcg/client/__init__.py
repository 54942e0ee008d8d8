"""lcg's Python API: `from lcg.client import Memory` (issue 26 item 4; docs/python-api.md).

`Memory.open(workspace=...)` works on a workspace in this process (or, when `lcg serve` holds
it, through that service's socket, as every `lcg` command does); `Memory.connect(...)` talks to
a running service. Both run the same tools of the operation table and answer alike; a failed
call raises `ToolError` with the tool's message and error kind.
"""

from lcg.client.memory import (
    DEFAULT_AGENT,
    Entity,
    Fact,
    Memory,
    Passage,
    Recalled,
    ToolError,
)

__all__ = ["DEFAULT_AGENT", "Entity", "Fact", "Memory", "Passage", "Recalled", "ToolError"]
