"""lambo_derive_image's admission (ADR 0095): checked, admitted and acknowledged exactly as a
lambo_derive, its intent carrying the image concept's vector.

The tool's one entry point is `MemoryService.derive_image`, which hands over to
`derive_image` here (memory_admission keeps its size). On a layered session `scope` names
the session written to, as for lambo_derive (ADR 0080): the layer's own rate is drawn, and a
write into a layer refuses a bare relative path among its parent_of ends.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from lcg.commands import memory as memory_commands
from lcg.domain.memory import layers
from lcg.domain.memory.acks import image_subject, write_ack
from lcg.domain.memory.client_vectors import Contract
from lcg.domain.memory.image_calls import DeriveImageArgs, check_derive_image

if TYPE_CHECKING:
    from lcg.commands.memory_admission import MemoryReply, MemoryService


def derive_image(
    service: MemoryService,
    args: DeriveImageArgs,
    stack: Sequence[str],
    contract: Contract,
    accept: bool,
) -> MemoryReply:
    """Check (every rule before anything is written), admit, append the intent; the ack."""
    into: str | None = None
    target = service.session
    if stack:
        target = service.write_target(args.agent_id, args.scope, stack)
        into = None if target == service.session else str(target)
        args = replace(args, scope=None)
    call = check_derive_image(args, target, service.clock, contract, accept_client_vectors=accept)
    if into is not None:
        entries = []
        for j, (parent, child) in enumerate(call.parent_of):
            entries += [(f"parent_of[{j}].parent", parent), (f"parent_of[{j}].child", child)]
        layers.refuse_relative_paths(entries, into)
    return service.write_call(
        call.agent_id,
        lambda ctx, receipt: memory_commands.accept_image(ctx, replace(call, receipt=receipt)),
        functools.partial(write_ack, image_subject(call.image_id), written_to=into),
        into,
    )
