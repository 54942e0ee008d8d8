"""The argument rules of the memory writes (seed 001), checked in one place (ADR 0059).

An adapter (the MCP/socket tool function, the CLI, an HTTP route later) hands the call's
arguments over as sent (`DeriveArgs`, `ActionArgs`); `check_derive` / `check_action` apply
every rule the seed states about them, in the seed's order and words, and return the command
(`Derive`, `RecordAction`) the application admits. Every refusal is raised before anything is
written. The generic bounds each schema publishes (sizes, list lengths) are the parameter
model's (ADR 0052); these are the rest: text rules, per-call limits, the session, repo_scope.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from lcg.domain.ids import GroupId
from lcg.domain.memory import limits, text
from lcg.domain.memory.calls import ConceptIn, Derive, RecordAction
from lcg.domain.memory.repo_paths import check_repo_scope
from lcg.domain.memory.text import MemoryArgumentError


@dataclass(frozen=True, slots=True)
class DeriveArgs:
    """lambo_derive's arguments as sent (concept types not yet checked)."""

    agent_id: str
    concepts: tuple[ConceptIn, ...]
    parent_of: tuple[tuple[str, str], ...] = ()
    event_time: str | None = None
    scope: str | None = None
    repo_scope: str | None = None


@dataclass(frozen=True, slots=True)
class ActionArgs:
    """lambo_record_action's arguments as sent."""

    agent_id: str
    action: str
    produces: tuple[str, ...] = ()
    modifies: tuple[str, ...] = ()
    depends_on: tuple[str, ...] = ()
    against: tuple[str, ...] = ()
    event_time: str | None = None
    scope: str | None = None
    repo_scope: str | None = None


def check_caller(session: str, agent_id: str, scope: str | None) -> None:
    """The agent id's rules, and a scope naming the session served (every lambo tool)."""
    text.check_agent_id(agent_id)
    if scope is not None and scope != session:
        raise MemoryArgumentError(
            f"scope must name this session or one of its layers: {session}",
            field="scope",
            rule="this session",
        )


def _refs(field: str, refs: tuple[str, ...]) -> tuple[str, ...]:
    for j, ref in enumerate(refs):
        text.check_text(f"{field}[{j}]", ref)
    return refs


def _event_time(sent: str | None) -> datetime | None:
    return None if sent is None else text.parse_event_time(sent)


def check_derive(args: DeriveArgs, session: GroupId, clock: Callable[[], datetime]) -> Derive:
    """lambo_derive's rules (M-DER, M-ARG); the command has no receipt yet, and its `now` is
    read from `clock` once every rule holds."""
    check_caller(session, args.agent_id, args.scope)
    repo_scope = check_repo_scope(args.repo_scope)
    concepts: list[ConceptIn] = []
    cited = contradicted = 0
    for i, concept in enumerate(args.concepts):
        where = f"concepts[{i}]"
        text.check_text(f"{where}.content", concept.content)
        text.check_no_image_suffix(f"{where}.content", concept.content)
        kind = text.check_concept_type(concept.concept_type, field=f"{where}.concept_type")
        depends_on = _refs(f"{where}.depends_on", concept.depends_on)
        against = _refs(f"{where}.against", concept.against)
        cited += len(depends_on)
        contradicted += len(against)
        concepts.append(ConceptIn(concept.content, kind.value, depends_on, against))
    if cited > limits.MAX_DEPENDS_ON_PER_CALL:
        raise MemoryArgumentError(
            f"depends_on: at most {limits.MAX_DEPENDS_ON_PER_CALL} references per call "
            f"({cited} given)",
            field="depends_on",
            rule="per-call limit",
        )
    if contradicted > limits.MAX_AGAINST_PER_CALL:
        raise MemoryArgumentError(
            f"against: at most {limits.MAX_AGAINST_PER_CALL} references per call "
            f"({contradicted} given)",
            field="against",
            rule="per-call limit",
        )
    pairs = args.parent_of
    for j, (parent, child) in enumerate(pairs):
        text.check_text(f"parent_of[{j}].parent", parent)
        text.check_text(f"parent_of[{j}].child", child)
    if len(concepts) + len(pairs) > limits.MAX_CONCEPTS_AND_PAIRS:
        raise MemoryArgumentError(
            f"concepts and parent_of: at most {limits.MAX_CONCEPTS_AND_PAIRS} combined "
            f"({len(concepts) + len(pairs)} given)",
            field="parent_of",
            rule="combined limit",
        )
    text.check_embedding_text_limit([c.content for c in concepts], list(pairs))
    return Derive(
        session,
        args.agent_id,
        tuple(concepts),
        pairs,
        _event_time(args.event_time),
        receipt="",
        now=clock(),
        repo_scope=repo_scope,
    )


def check_action(args: ActionArgs, session: GroupId, clock: Callable[[], datetime]) -> RecordAction:
    """lambo_record_action's rules (M-ACT, M-ARG); as check_derive."""
    check_caller(session, args.agent_id, args.scope)
    repo_scope = check_repo_scope(args.repo_scope)
    text.check_text("action", args.action)
    text.check_no_image_suffix("action", args.action)
    produces = _refs("produces", args.produces)
    modifies = _refs("modifies", args.modifies)
    depends_on = _refs("depends_on", args.depends_on)
    against = _refs("against", args.against)
    targets = len(produces) + len(modifies) + len(depends_on)
    if targets > limits.MAX_ACTION_TARGETS:
        raise MemoryArgumentError(
            f"produces, modifies and depends_on: at most {limits.MAX_ACTION_TARGETS} entries "
            f"combined ({targets} given)",
            field="depends_on",
            rule="combined limit",
        )
    return RecordAction(
        session,
        args.agent_id,
        args.action,
        produces,
        modifies,
        depends_on,
        against,
        _event_time(args.event_time),
        receipt="",
        now=clock(),
        repo_scope=repo_scope,
    )


def check_node_id(node_id: str) -> str:
    """lambo_reserve's node_id, as the node is stored (lower case, trimmed)."""
    text.check_text("node_id", node_id)
    return node_id.strip().lower()


def check_receipt_wait(receipt: str, wait_ms: int | None) -> int:
    """lambo_stats's receipt and how long to wait for it (clamped, M-STA-005)."""
    text.check_text("receipt", receipt)
    return 0 if wait_ms is None else text.clamp_wait_ms(wait_ms)
