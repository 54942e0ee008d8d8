"""What a write's text names under `repo_scope` (seed 001 "Repository-scoped paths", ADR 0082).

Where the type is named (a resource concept, an action's produces and modifies entries and
its text) a path is the scoped path of the call's repository: its node when the session holds
it, else a new one when the write is applied, never an unscoped concept (a scoped produces
never joins a plain concept another repository may share). Where the type is inferred (a
derive's depends_on, either call's against, an action's depends_on, a parent_of end that is not
one of the call's concepts) text names the scoped path of the repository, or a concept of
another type under its plain key; both at once is refused as ambiguous, and with neither only
an action's depends_on entry or an end that reads as a file or a directory becomes a new
scoped path. An id (full or short) is exact and works with or without a scope.
"""

from __future__ import annotations

from collections.abc import Sequence

from lcg.domain.memory.identity import canonical_key, is_node_uuid, short_id
from lcg.domain.memory.references import (
    Lookup,
    NodeView,
    ReferenceRefused,
    Resolved,
    by_text,
    quoted,
    resolve,
)
from lcg.domain.memory.repo_paths import (
    directory_of,
    is_path,
    normalised,
    path_key,
    reads_as_file,
    repo_of_key,
)

RESOURCE = "resource"


def _concepts(nodes: Sequence[NodeView]) -> list[NodeView]:
    return [n for n in nodes if n.node_kind == "concept"]


def scoped_nodes(lookup: Lookup, scope: str, text: str) -> list[NodeView]:
    """The scoped path concepts of `scope` that `text` names (none if it names no path)."""
    if not normalised(text):
        return []
    return _concepts(lookup.with_key(path_key(scope, text)))


def _of_another_type(lookup: Lookup, text: str) -> list[NodeView]:
    """Concepts `text` names under its plain key that are not path resources."""
    return [n for n in by_text(text, lookup) if getattr(n, "concept_type", None) != RESOURCE]


def _ambiguous(scoped: Sequence[NodeView], plain: Sequence[NodeView]) -> str:
    shown = [
        f'{short_id(n.uuid)} {quoted(n.content)} (repo "{repo_of_key(_key(n))}")' for n in scoped
    ] + [f"{short_id(n.uuid)} {quoted(n.content)}" for n in plain[:9]]
    return (
        "is ambiguous: it names a scoped path and a concept of another type ("
        + ", ".join(shown)
        + "); name one by its id"
    )


def _key(node: NodeView) -> str | None:
    key = getattr(node, "canonical_key", None)
    return key if isinstance(key, str) else None


def _by_id(field: str, ref: str, lookup: Lookup) -> Resolved | None:
    text = ref.strip()
    if is_node_uuid(text) and lookup.node(text.lower()) is not None:
        return resolve(field, ref, lookup, create=False)
    return None


def resolve_named(field: str, ref: str, lookup: Lookup, scope: str) -> Resolved:
    """An action's produces or modifies entry under a scope (the type is named)."""
    by_id = _by_id(field, ref, lookup)
    if by_id is not None:
        return by_id
    if not is_path(ref):
        return resolve(field, ref, lookup, create=True)
    found = scoped_nodes(lookup, scope, ref)
    return Resolved(ref, found[0].uuid if found else None, "path")


def resolve_inferred(field: str, ref: str, lookup: Lookup, scope: str, *, create: bool) -> Resolved:
    """A depends_on, against or parent_of-end text under a scope; `create`: an action's
    depends_on entry (a citation never creates anything)."""
    by_id = _by_id(field, ref, lookup)
    if by_id is not None:
        return by_id
    scoped = scoped_nodes(lookup, scope, ref)
    plain = _of_another_type(lookup, ref.strip())
    if scoped and plain:
        raise ReferenceRefused(field, ref, _ambiguous(scoped, plain))
    if scoped:
        return Resolved(ref, scoped[0].uuid, "path")
    if not reads_as_file(ref):
        return resolve(field, ref, lookup, create=create)  # plain text, as without a scope
    if len(plain) == 1:
        return Resolved(ref, plain[0].uuid, "content")
    if plain:
        return resolve(field, ref, lookup, create=False)  # its listing refusal
    if create:
        return Resolved(ref, None, "path")
    raise ReferenceRefused(field, ref, "matches nothing in this session")


def end_is_path(
    lookup: Lookup, scope: str, end: str, other: str, call_paths: Sequence[str], *, parent: bool
) -> bool:
    """Whether a parent_of end names a scoped path: one of the call's scoped concepts, an
    existing scoped path, or (no concept of another type under its key) text that reads as a
    file or directory, or a parent that is a directory of its scoped child."""
    text = end.strip()
    if any(normalised(text) == normalised(p) for p in call_paths):
        return True
    if scoped_nodes(lookup, scope, text):
        return True
    child_is_path = reads_as_file(other) or any(
        normalised(other) == normalised(p) for p in call_paths
    )
    if parent and child_is_path and directory_of(text, other):
        return True  # that repository's directory, not one shared `src`
    if _of_another_type(lookup, text):
        return False
    return reads_as_file(text)


def check_end(field: str, lookup: Lookup, scope: str, end: str, call_paths: Sequence[str]) -> None:
    """Refuse an end naming both an existing scoped path and a concept of another type."""
    text = end.strip()
    if any(normalised(text) == normalised(p) for p in call_paths):
        return
    scoped = scoped_nodes(lookup, scope, text)
    plain = _of_another_type(lookup, text)
    if scoped and plain:
        raise ReferenceRefused(field, end, _ambiguous(scoped, plain))


def token(lookup: Lookup, scope: str | None, text: str, is_scoped: bool) -> str:
    """A parent_of end's identity for the cycle check: its node, else its key."""
    if scope is not None and is_scoped:
        found = scoped_nodes(lookup, scope, text)
        return found[0].uuid if found else "key:" + path_key(scope, text)
    found = by_text(text.strip(), lookup)
    return found[0].uuid if len(found) == 1 else "key:" + (canonical_key(text) or text.strip())
