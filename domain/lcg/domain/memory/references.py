"""Resolving what a write names: depends_on, against, parent_of ends, action targets.

Seed 001 ("Citing what a concept rests on", "Saying an existing concept is wrong",
lambo_record_action): a reference is a full node id (hyphenated), the 8-hex short id recall
shows, or a concept's exact content; it must match exactly one concept of the session, never
by substring, and a citation never creates anything. What a reference named is fixed when the
call is accepted (the intent records the node id and how it was named), and checked again when
the write is applied (`still_names`). Text is matched first, so an 8-hex entry that is a
concept's content names that concept (M-ACT-024); content matches exactly, then by canonical
key (the identity every write uses).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from lcg.domain.errors import DomainError
from lcg.domain.memory.context import quote
from lcg.domain.memory.identity import canonical_key, is_node_uuid, is_short_id, short_id
from lcg.domain.memory.repo_paths import is_scoped_key


class NodeView(Protocol):
    """What resolution needs to know about a stored node."""

    @property
    def uuid(self) -> str: ...
    @property
    def node_kind(self) -> str: ...
    @property
    def content(self) -> str: ...


class Lookup(Protocol):
    """The session's nodes, as the projection holds them now."""

    def node(self, uuid: str) -> NodeView | None: ...
    def with_prefix(self, prefix: str) -> Sequence[NodeView]: ...
    def with_content(self, content: str) -> Sequence[NodeView]: ...
    def with_key(self, key: str) -> Sequence[NodeView]: ...


class ReferenceRefused(DomainError):
    """A reference that does not name exactly one concept: the whole call is refused."""

    def __init__(self, field: str, reference: str, why: str) -> None:
        super().__init__(
            f"reference refused: {field} {_quote(reference)} {why}; nothing was written",
            field=field,
            rule=why,
        )


class CycleRefused(DomainError):
    """A hierarchy, causal or dependency edge that would close a cycle."""


HIERARCHY_CYCLE = (
    "store error: parent_of would close a Hierarchical cycle (the hierarchy must stay "
    "acyclic); nothing was written"
)
ACTION_CYCLE = (
    "store error: record_action would close a Causal or Dependency cycle (produces, modifies "
    "and depends_on must stay acyclic); nothing was written"
)

# `path`: a repository-scoped path (ADR 0082): its node when it exists, else matched or
# created under the intent's repo_scope when the write is applied.
By = Literal["id", "short_id", "content", "text", "path"]
_BY: dict[str, By] = {
    "id": "id",
    "short_id": "short_id",
    "content": "content",
    "text": "text",
    "path": "path",
}


@dataclass(frozen=True, slots=True)
class Resolved:
    """A reference fixed at acceptance: the node it named (None: text to match or create when
    the write is applied) and how it was named."""

    ref: str
    node: str | None
    by: By

    def to_json(self) -> dict[str, str | None]:
        return {"ref": self.ref, "node": self.node, "by": self.by}

    @staticmethod
    def from_json(data: dict[str, str | None]) -> Resolved:
        by = _BY[str(data["by"])]
        return Resolved(str(data["ref"]), data["node"], by)


def _quote(text: str) -> str:
    return '"' + quote(text).replace('"', '\\"') + '"'


quoted = _quote


def _listing(nodes: Sequence[NodeView]) -> str:
    shown = ", ".join(f"{short_id(n.uuid)} {_quote(n.content)}" for n in nodes[:10])
    more = f" and {len(nodes) - 10} more" if len(nodes) > 10 else ""
    return f"matches several concepts ({shown}{more}); name one by its id"


def _concepts(nodes: Sequence[NodeView]) -> list[NodeView]:
    return [n for n in nodes if n.node_kind == "concept"]


def _unscoped(nodes: Sequence[NodeView]) -> list[NodeView]:
    """Concepts but repository-scoped paths, which text never names without their scope
    (ADR 0082, M-RSC-046)."""
    return [n for n in _concepts(nodes) if not is_scoped_key(getattr(n, "canonical_key", None))]


def by_text(text: str, lookup: Lookup) -> list[NodeView]:
    """Concepts whose content is `text` exactly, else whose canonical key is the text's
    (never a repository-scoped path)."""
    exact = _unscoped(lookup.with_content(text))
    if exact:
        return exact
    key = canonical_key(text)
    return _concepts(lookup.with_key(key)) if key else []


def resolve(field: str, ref: str, lookup: Lookup, *, create: bool) -> Resolved:
    """The one concept `ref` names, or (with `create`, an action's depends_on / produces /
    modifies entry) text to be matched or created on apply. Refuses with the seed's reasons."""
    text = ref.strip()
    if is_node_uuid(text):
        found = lookup.node(text.lower())
        if found is not None:
            if found.node_kind != "concept":
                raise ReferenceRefused(field, ref, "is an interaction's id, not a concept's")
            return Resolved(ref, found.uuid, "id")
    named = by_text(text, lookup)
    if len(named) == 1:
        return Resolved(ref, named[0].uuid, "content")
    if len(named) > 1:
        raise ReferenceRefused(field, ref, _listing(named))
    if is_short_id(text):
        prefixed = lookup.with_prefix(text.lower())
        concepts = _concepts(prefixed)
        if len(concepts) == 1:
            return Resolved(ref, concepts[0].uuid, "short_id")
        if len(concepts) > 1:
            raise ReferenceRefused(field, ref, _listing(concepts))
        if prefixed:
            raise ReferenceRefused(field, ref, "is an interaction's id, not a concept's")
    if create:
        return Resolved(ref, None, "text")
    raise ReferenceRefused(field, ref, "matches nothing in this session")


def still_names(resolved: Resolved, lookup: Lookup) -> str | None:
    """Why a reference fixed at acceptance no longer names its concept (None: it does)."""
    if resolved.node is None:
        return None
    if lookup.node(resolved.node) is None:
        return "named a concept that was removed before the write was applied"
    if resolved.by == "short_id":
        prefixed = _concepts(lookup.with_prefix(resolved.ref.strip().lower()))
        if len(prefixed) != 1:
            return (
                "named something else when the write was applied (its short id now matches "
                "several concepts)"
            )
    return None
