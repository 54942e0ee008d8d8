"""The two memory writes' tool names, as their receipts and the log's rows record them, are the
names the operation table publishes, both write tools (M-DER, M-ACT)."""

from __future__ import annotations

from lcg.domain.memory.calls import DERIVE, RECORD_ACTION
from lcg.interfaces.operations import BY_NAME


def test_the_memory_write_commands_name_the_published_write_tools() -> None:
    assert (DERIVE, RECORD_ACTION) == ("lambo_derive", "lambo_record_action")
    for name in (DERIVE, RECORD_ACTION):
        assert BY_NAME[name].name == name
        assert not BY_NAME[name].read_only
