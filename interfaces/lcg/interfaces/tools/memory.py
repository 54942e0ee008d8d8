"""Agent memory, write side (seed 001): lambo_derive, lambo_record_action, lambo_reserve,
lambo_stats.

Each tool answers the way the seed's MCP results read: `text` (the first text content) and
`structuredContent`; over MCP they become exactly those, over the socket and the CLI the two
keys are the result. Each tool function turns its parameters into the application's
arguments and makes one call on `app.memory_writes` (lcg.commands.memory_admission, ADR 0059),
which checks every argument rule before anything is written; a write is acknowledged once its
intent is durable in the session's stream (ADR 0026). Every response
carries the caller's settled receipts (at most 8), as the `write receipts:` block and
`structuredContent.write_receipts`.
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Self, TypedDict

from pydantic import BaseModel, Field, model_validator

from lcg.commands.memory_admission import MemoryReply, MemoryService
from lcg.domain.errors import InvalidParams
from lcg.domain.memory import arguments, images, layers, limits, text
from lcg.domain.memory.arguments import ActionArgs, DeriveArgs
from lcg.domain.memory.calls import ConceptIn
from lcg.domain.memory.limits import IntRange
from lcg.domain.memory.text import ConceptType
from lcg.interfaces.app import App
from lcg.interfaces.params import Params


def capped(cap: int) -> dict[str, Any]:
    """A string's published cap. Published, not enforced by the parser: MemoryParams checks
    every published bound itself, so the refusal is the seed's sentence (ADR 0052)."""
    return {"maxLength": cap}


def ranged(bounds: IntRange) -> dict[str, Any]:
    """An integer's published range, enforced as `capped` is: `top_k must be in 1..=100`."""
    return {"minimum": bounds.minimum, "maximum": bounds.maximum}


AgentId = Annotated[
    str,
    Field(
        json_schema_extra=capped(limits.MAX_AGENT_ID_CHARS),
        description="Your stable agent id (model or client id), one line, at most 256 "
        "characters. Every write is recorded under it and locks are held under it.",
    ),
]
MemoryText = Annotated[str, Field(json_schema_extra=capped(limits.MAX_STRING_BYTES))]
EventTime = Annotated[
    str,
    Field(
        json_schema_extra=capped(limits.MAX_EVENT_TIME_BYTES),
        description="RFC3339 historical about-time (a commit or document date); omit for a "
        "live fact, which is about now.",
    ),
]
Scope = Annotated[
    str,
    Field(
        json_schema_extra=capped(limits.MAX_STRING_BYTES),
        description="The session to act on: omit it (or send this session's name) for this "
        "session, or name one of its layers, such as general (a layered session's reads "
        "without it read the session and its layers together).",
    ),
]
RepoScope = Annotated[
    str,
    Field(
        json_schema_extra=capped(limits.MAX_REPO_SCOPE_BYTES),
        description="The repository this call's path-like resource concepts, action targets "
        "and parent_of ends belong to, such as github.com/acme/widgets (no scheme, "
        "credentials or .git): README.md in two repositories is then two concepts. At most "
        "512 bytes, no whitespace, control or invisible character inside.",
    ),
]
CONCEPT_TYPES = [kind.value for kind in ConceptType]


class MemoryParams(Params):
    """Lambo's argument rules around the generic ones: a timestamp argument other than
    `event_time` is refused by name (M-ARG-003/004) before them; after them, every bound the
    schema publishes is enforced in the seed's words (M-ARG-010, M-ARG-021, M-ARG-053,
    M-REC-007)."""

    @model_validator(mode="before")
    @classmethod
    def _no_client_timestamps(cls, data: Any) -> Any:
        if isinstance(data, dict):
            accepted = "event_time" in cls.model_fields
            text.check_no_timestamp_arguments(
                [str(key) for key in data if key not in cls.model_fields],
                event_time_accepted=accepted,
            )
            if not accepted and "event_time" in data:
                text.check_no_timestamp_arguments(["event_time"], event_time_accepted=False)
        return data

    @model_validator(mode="after")
    def _published_bounds(self) -> Self:
        _check_bounds(self, "")
        return self


@functools.cache
def _published(model: type[BaseModel]) -> dict[str, Any]:
    properties: dict[str, Any] = model.model_json_schema().get("properties", {})
    return properties


def _check_bounds(model: BaseModel, prefix: str) -> None:
    """Each field of `model` against the bound its schema publishes, nested ones included
    (`concepts[0].depends_on[1]`): what a client validating against the schema checks is
    exactly what the call is refused for, in the domain's sentence."""
    properties = _published(type(model))
    for name in type(model).model_fields:
        _check_value(f"{prefix}{name}", getattr(model, name), properties.get(name, {}))


def _check_value(field: str, value: object, spec: dict[str, Any]) -> None:
    options = [o for o in spec.get("anyOf", []) if o != {"type": "null"}]
    spec = {**spec, **options[0]} if len(options) == 1 else spec  # an optional nested field
    if isinstance(value, BaseModel):
        _check_bounds(value, f"{field}.")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(f"{field}[{i}]", item, spec.get("items", {}))
    elif isinstance(value, str) and "maxLength" in spec:
        if field == "agent_id":  # the one string the seed caps in characters, with its rules
            text.check_agent_id(value)
        elif field == "image_id":  # lambo_derive_image's id: its cap, then its own rule
            text.check_size(field, value, cap=int(spec["maxLength"]))
            images.check_image_id(field, value)
        else:
            text.check_size(field, value, cap=int(spec["maxLength"]))
    elif isinstance(value, int) and not isinstance(value, bool) and "maximum" in spec:
        text.check_int_range(field, value, IntRange(int(spec["minimum"]), int(spec["maximum"])))


class ConceptParams(Params):
    content: MemoryText
    concept_type: str = Field(
        json_schema_extra={"enum": list[Any](CONCEPT_TYPES)},
        description="entity, logic, constraint, resource or observation (lower case).",
    )
    depends_on: list[MemoryText] | None = Field(
        None,
        max_length=limits.MAX_DEPENDS_ON_PER_CONCEPT,
        description="Existing concepts this one rests on: the 8-hex short id, the full node "
        "id or the exact content. Each must name exactly one concept of the session.",
    )
    against: list[MemoryText] | None = Field(
        None,
        max_length=limits.MAX_AGAINST_PER_CONCEPT,
        description="Existing concepts this one contradicts, named like depends_on.",
    )


class PairParams(Params):
    parent: MemoryText
    child: MemoryText


class DeriveParams(MemoryParams):
    agent_id: AgentId
    concepts: list[ConceptParams] = Field(
        min_length=1,
        max_length=limits.MAX_CONCEPTS_PER_DERIVE,
        description="One fact each, stated atomically and short.",
    )
    event_time: EventTime | None = None
    parent_of: list[PairParams] | None = Field(
        None,
        max_length=limits.MAX_PARENT_OF_PAIRS,
        description="Hierarchy links {parent, child}; either end may be created; acyclic.",
    )
    scope: Scope | None = None
    repo_scope: RepoScope | None = None


class RecordActionParams(MemoryParams):
    agent_id: AgentId
    action: MemoryText = Field(description="The act, in a short line (merged PR #52).")
    event_time: EventTime | None = None
    against: list[MemoryText] | None = Field(
        None,
        max_length=limits.MAX_ACTION_AGAINST,
        description="Existing concepts this action shows to be wrong.",
    )
    produces: list[MemoryText] | None = Field(
        None,
        max_length=limits.MAX_ACTION_TARGETS,
        description="What the action produced: concepts by id or text (created if new).",
    )
    modifies: list[MemoryText] | None = Field(
        None,
        max_length=limits.MAX_ACTION_TARGETS,
        description="What the action changed: concepts by id or text (created if new).",
    )
    depends_on: list[MemoryText] | None = Field(
        None,
        max_length=limits.MAX_ACTION_TARGETS,
        description="What the action relied on: an id cites that concept; text names a "
        "concept by its canonical text and creates it if new. At most 64 entries across "
        "produces, modifies and depends_on.",
    )
    scope: Scope | None = None
    repo_scope: RepoScope | None = None


class ReserveParams(MemoryParams):
    agent_id: AgentId
    node_id: str = Field(
        json_schema_extra=capped(limits.MAX_NODE_ID_BYTES),
        description="The node's full id, as a write's receipt (created, matched) gives it.",
    )
    ttl_seconds: int | None = Field(
        None, json_schema_extra=ranged(limits.TTL_SECONDS), description="1 to 3600; default 30."
    )
    release: bool | None = Field(None, description="Release instead of reserve.")
    scope: Scope | None = None


class StatsParams(MemoryParams):
    agent_id: AgentId
    receipt: str | None = Field(
        None,
        json_schema_extra=capped(limits.MAX_RECEIPT_BYTES),
        description="A receipt id from a write's ack.",
    )
    wait_ms: int | None = Field(
        None,
        json_schema_extra=ranged(limits.WAIT_MS_ARGUMENT),
        description="With receipt: wait up to this long (0..34000; larger is clamped).",
    )


class MemoryResult(TypedDict):
    """A lambo tool's answer: the text models read, and the structured content. A write
    dropped at a bound is an answer too, not an error (M-DER-094, ADR 0047)."""

    text: str
    structuredContent: dict[str, Any]


# -- shared checks ---------------------------------------------------------------------------


def service_of(app: App, agent_id: str, scope: str | None) -> MemoryService:
    """The read tools' memory service, once the caller and the scope are checked."""
    return scoped(app, agent_id, scope)[1]


def scoped(app: App, agent_id: str, scope: str | None) -> tuple[MemoryService, MemoryService]:
    """(the service of the session called, the service of the session `scope` names): the
    same one unless the scope names one of the call's layers (ADR 0080). Replies piggyback
    the first's receipts; the read runs on the second."""
    text.check_agent_id(agent_id)
    service = app.memory
    if not app.layers:
        arguments.check_caller(service.session, agent_id, scope)
        return service, service
    target = layers.resolve_scope(service.session, app.layers, scope)
    if target == service.session:
        return service, service
    try:
        layer = app.memory_of(target)
    except (InvalidParams, RuntimeError) as error:
        raise layers.layer_not_serving(target, service.session, str(error)) from error
    service.draw_layer(target, "read")  # the layer's own rate (ADR 0088)
    return service, layer


def answer(
    service: MemoryService,
    agent_id: str,
    body: str,
    content: dict[str, Any],
) -> MemoryResult:
    """The response, with the caller's settled receipts piggybacked on it."""
    return result(service.reply(agent_id, body, content))


def result(reply: MemoryReply) -> MemoryResult:
    """The application's reply as the tool's result."""
    return MemoryResult(text=reply.text, structuredContent=reply.content)


# -- the tools -------------------------------------------------------------------------------


def lambo_derive(app: App, params: DeriveParams) -> MemoryResult:
    """Store new concepts learned from the current interaction: one fact each, stated
    atomically and short (a decision with its reason). Returns before the write is applied,
    with a receipt; the outcome arrives on your next tool response, or ask lambo_stats with
    the receipt (add wait_ms to block). Cite what a concept rests on in depends_on and what it
    shows to be wrong in against, by its 8-hex id."""
    args = DeriveArgs(
        params.agent_id,
        tuple(
            ConceptIn(c.content, c.concept_type, tuple(c.depends_on or ()), tuple(c.against or ()))
            for c in params.concepts
        ),
        tuple((p.parent, p.child) for p in params.parent_of or ()),
        params.event_time,
        params.scope,
        params.repo_scope,
    )
    return result(app.memory_writes.derive(args, app.layers))


def lambo_record_action(app: App, params: RecordActionParams) -> MemoryResult:
    """Record something the agent did (a short line such as `merged PR #52`), with what it
    produces, modifies and depends on. The action becomes a Resource concept; produces and
    modifies become causal edges, depends_on dependency edges. Returns before the write is
    applied, with a receipt, exactly as lambo_derive does; both write tools feed one ordered
    queue per agent."""
    args = ActionArgs(
        params.agent_id,
        params.action,
        tuple(params.produces or ()),
        tuple(params.modifies or ()),
        tuple(params.depends_on or ()),
        tuple(params.against or ()),
        params.event_time,
        params.scope,
        params.repo_scope,
    )
    return result(app.memory_writes.record_action(args, app.layers))


def lambo_reserve(app: App, params: ReserveParams) -> MemoryResult:
    """Take an advisory soft lock on a memory node before you edit it, so two agents do not
    edit one concept at once; release: true releases it. Locks live in memory only and do not
    survive a restart; callers sending the same agent_id share a lock."""
    return result(
        app.memory_writes.reserve(
            params.agent_id,
            params.node_id,
            params.ttl_seconds,
            bool(params.release),
            params.scope,
            app.layers,
        )
    )


def lambo_stats(app: App, params: StatsParams) -> MemoryResult:
    """Session health: flush lag, log and write-queue depth, node, edge and concept counts,
    canonization progress, degraded, the promotion policy and the embedding contract. With
    receipt, what happened to that one write; add wait_ms (0..34000, clamped) to wait for it
    to be applied (read-your-writes)."""
    down = (
        None
        if params.receipt is None
        else next(filter(functools.partial(_down, app), app.layers), None)
    )
    return result(app.memory_writes.stats(params.agent_id, params.receipt, params.wait_ms, down))


def _down(app: App, layer: str) -> bool:
    """Whether the layer is not serving now (its receipts cannot be answered, M-STA-089)."""
    try:
        app.memory_of(layer)
    except (InvalidParams, RuntimeError):
        return True
    return False
