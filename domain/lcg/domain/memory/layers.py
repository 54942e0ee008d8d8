"""Layered sessions (seed 001 "Layered sessions", "Writing to a layer"; ADR 0080): the pure
rules.

A session may be layered over shared ones (`[serve] layers = ["general"]`): it reads itself
and its layers together, and `scope` names the one session a call reads or writes. Here:
which session a `scope` names (and the refusal listing the session's scopes), the bare
relative path a write into a layer refuses, the references that name a concept only in
another session the call reads (refused: no edge joins two sessions), and the merge of a
layered recall's hits under one budget.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import Final, Literal

from lcg.domain.errors import Conflict
from lcg.domain.memory.context import AlsoItem, HitView, layer_line
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.references import Lookup, ReferenceRefused, by_text, resolve
from lcg.domain.memory.text import MemoryArgumentError

CROSS_SESSION_CITATION: Final = 'is in scope "{session}"; cross-session citations are not recorded'
CROSS_SESSION_CONTRADICTION: Final = (
    'is in scope "{session}"; cross-session contradictions are not recorded'
)
RELATIVE_PATH: Final = 'is a relative path, refused in scope "{session}"'
SCOPED_READ_WARNING: Final = (
    'recall: these hits are from layer {layer}, and their ids belong to it; pass scope = "{layer}"'
    " to lambo_inspect to inspect one"
)
UNAVAILABLE_WARNING: Final = "recall: layer {layer} is unavailable; results are from {session} only"
NOT_SEARCHED_WARNING: Final = (
    "recall: a recall by {by} reads one session: session {session} only; its layers ({layers})"
    " were not searched"
)


# --- scope ------------------------------------------------------------------------------------


def scopes(session: str, layers: Sequence[str]) -> tuple[str, ...]:
    """The session's own scopes: itself, then its layers, in the configured order."""
    return (session, *(layer for layer in layers if layer != session))


def resolve_scope(session: str, layers: Sequence[str], scope: str | None) -> str:
    """The session a call acts on: omitted, the session itself; else the session or one of
    its layers by exact name. Anything else (an empty string, another served project) is
    refused listing the session's scopes (M-LAY-003, M-REC-256)."""
    if scope is None:
        return session
    if scope in scopes(session, layers):
        return scope
    raise MemoryArgumentError(
        "scope must name this session or one of its layers: " + ", ".join(scopes(session, layers)),
        field="scope",
        rule="this session or one of its layers",
    )


def layer_not_serving(layer: str, session: str, reason: str) -> Conflict:
    """A scope naming a layer the process cannot serve now is refused as retryable
    (M-REC-253, M-LAY-024): nothing was read or written."""
    return Conflict(
        f"scope: layer {layer} is not serving right now ({reason}), so nothing was read or"
        f" written in it; retry shortly, or call without scope to act on {session}",
        field="scope",
        rule="the layer must be serving",
    )


def check_layers(session: str, layers: Iterable[str]) -> tuple[str, ...]:
    """A serve's configured layers, each once, none the session itself (a session is not its
    own layer); the names are checked by the session-name rule where they are read."""
    out: list[str] = []
    for layer in layers:
        if layer == session:
            raise MemoryArgumentError(
                f"layers: {layer!r} is the session itself; a session cannot be its own layer",
                field="layers",
                rule="a layer is another session",
            )
        if layer not in out:
            out.append(layer)
    return tuple(out)


# --- bare relative paths ----------------------------------------------------------------------

# File extensions that make a one-word entry a file name (README.md, Cargo.toml, src/main.rs).
# `js` is one only for a lower-case stem outside a two-part owner/repo slug (Node.js and
# vercel/next.js are library and repository names); `io` is not one (crates.io, socket.io).
FILE_EXTENSIONS: Final = frozenset(
    [
        "md",
        "markdown",
        "rst",
        "txt",
        "toml",
        "yaml",
        "yml",
        "json",
        "jsonc",
        "lock",
        "cfg",
        "ini",
        "conf",
        "env",
        "rs",
        "py",
        "pyi",
        "sh",
        "bash",
        "zsh",
        "ps1",
        "bat",
        "ts",
        "tsx",
        "jsx",
        "mjs",
        "cjs",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "go",
        "java",
        "kt",
        "kts",
        "swift",
        "rb",
        "php",
        "pl",
        "lua",
        "sql",
        "html",
        "htm",
        "css",
        "scss",
        "xml",
        "gradle",
        "mod",
        "sum",
        "csv",
        "tsv",
        "ipynb",
        "proto",
        "tf",
        "hcl",
        "nix",
        "mk",
        "cmake",
        "dockerfile",
        "vue",
        "svelte",
        "ex",
        "exs",
        "erl",
        "hs",
        "ml",
        "scala",
        "dart",
        "r",
        "jl",
        "zig",
    ]
)
# Extensionless file names that are files wherever they are written (not words such as
# License or Readme, which are prose as often as files).
FILE_NAMES: Final = frozenset(
    [
        "makefile",
        "dockerfile",
        "containerfile",
        "gemfile",
        "rakefile",
        "procfile",
        "justfile",
        "vagrantfile",
        "codeowners",
        "brewfile",
        "podfile",
    ]
)
_LINE_REFERENCE: Final = re.compile(r"(?::\d+(?::\d+)?|#L\d+(?:-L?\d+)?)$")
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_REMOTE: Final = re.compile(r"^[\w.-]+@[\w.-]+:")
_WINDOWS_ABSOLUTE: Final = re.compile(r"^[A-Za-z]:[\\/]")
_SEGMENT: Final = re.compile(r"^[\w.+@-]+$")
_DOMAIN: Final = re.compile(r"^[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}$")


def is_bare_relative_path(entry: str) -> bool:
    """Whether `entry` is a bare relative file path, which names a different file in each
    project (M-LAY-015/016): README.md, Cargo.toml, .env, Makefile, src/main.rs,
    docs/reference/, ./run.sh, ..\\lambo\\AGENTS.md, also with a :12, :12:5 or #L12 line
    reference. Absolute paths, URLs, git@host:path remotes, domain-led names
    (github.com/x/README.md), domain and library names (crates.io, Node.js, vercel/next.js),
    branch names, repo slugs, prose (and/or, I/O, TCP/IP) and a directory named without a
    trailing / are not."""
    text = entry.strip()
    if _not_a_path(text):
        return False
    text = _LINE_REFERENCE.sub("", text)
    if text.startswith(("./", "../", ".\\", "..\\")):
        return True
    return _relative_parts(re.split(r"[\\/]", text))


def _not_a_path(text: str) -> bool:
    """Prose (more than one word), an absolute path, a URL or a git@host:path remote."""
    return (
        not text
        or any(ch.isspace() for ch in text)
        or text.startswith(("/", "~", "\\\\"))
        or _WINDOWS_ABSOLUTE.match(text) is not None
        or _URL.match(text) is not None
        or _SCP_REMOTE.match(text) is not None
    )


def _relative_parts(parts: list[str]) -> bool:
    if not all(_SEGMENT.match(part) for part in parts if part):
        return False  # punctuation a path does not hold
    if len(parts) > 1 and _DOMAIN.match(parts[0]) and parts[0].lower() == parts[0]:
        return False  # github.com/x/README.md: led by a domain
    if len(parts) > 1 and parts[-1] == "":
        return all(parts[:-1]) and not _DOMAIN.match(parts[0])  # docs/reference/
    if any(not part for part in parts):
        return False
    return _is_file_name(parts[-1], slug=len(parts) == 2)


def _is_file_name(name: str, *, slug: bool) -> bool:
    if name.lower() in FILE_NAMES:
        return True
    if name.startswith(".") and len(name) > 1 and "." not in name[1:] and name == name.lower():
        return True  # .env, .gitignore
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        return False
    extension = extension.lower()
    if extension == "js":
        return not slug and stem == stem.lower()
    return extension in FILE_EXTENSIONS


def refuse_relative_paths(entries: Iterable[tuple[str, str]], layer: str) -> None:
    """A write into a layer refuses any entry (field, text) that is a bare relative path
    (M-LAY-013/014), naming the field and the entry; nothing is written."""
    for field, entry in entries:
        if is_bare_relative_path(entry):
            raise MemoryArgumentError(
                f"{field}: {entry!r} {RELATIVE_PATH.format(session=layer)}; record file actions"
                " in the project's own session, use an absolute path, or send repo_scope;"
                " nothing was written",
                field=field,
                rule="no relative path in a layer",
            )


# --- references across sessions ----------------------------------------------------------------


def _names(ref: str, lookup: Lookup) -> bool:
    """Whether `ref` names at least one concept of the session `lookup` reads."""
    try:
        return resolve("ref", ref, lookup, create=False).node is not None
    except ReferenceRefused as refused:
        return refused.rule != "matches nothing in this session"


def refuse_cross_session(
    field: str,
    ref: str,
    target: Lookup,
    others: Sequence[tuple[str, Lookup]],
    *,
    against: bool = False,
) -> None:
    """A citation (or, `against`, a contradiction) naming no concept of the session written
    to but one of another session the call reads is refused (M-LAY-008..010): no edge joins
    two sessions."""
    if _names(ref, target):
        return
    for session, lookup in others:
        if _names(ref, lookup):
            why = CROSS_SESSION_CONTRADICTION if against else CROSS_SESSION_CITATION
            raise ReferenceRefused(field, ref, why.format(session=session))


def refuse_caller_text(
    field: str, ref: str, target: Lookup, caller: tuple[str, Lookup] | None
) -> None:
    """An action scoped to a layer whose depends_on text names a concept of the caller's own
    session (and none of the layer's) is refused rather than copied (M-LAY-011, M-ACT-029)."""
    if caller is None or by_text(ref.strip(), target):
        return
    session, lookup = caller
    if by_text(ref.strip(), lookup):
        raise ReferenceRefused(field, ref, CROSS_SESSION_CITATION.format(session=session))


# --- the merged recall --------------------------------------------------------------------------


def same_anchor(caller: str | None, layer: str | None) -> bool:
    """Whether a layer's dependency answer may join a merged recall (M-REC-100/101): a
    layer that answered no traversal always may; one that did, only when its anchor is the
    caller's (ignoring case, after NFC), or when the caller resolved none."""
    if layer is None or caller is None:
        return True
    return _fold(caller) == _fold(layer)


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


@dataclass(frozen=True, slots=True)
class SessionHits:
    """One session's plain recall, for the merge: its hits in its own rank order (a hit kept
    beside a contradicted one carries `companion`), and its warnings."""

    session: str
    hits: tuple[HitView, ...]
    companions: frozenset[str] = frozenset()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Merged:
    """The merged hits in merged order, each with its session, and the warnings. `absorbed`:
    for a session hit a layer's copy merged into, each (layer, node id) of those copies, so
    what each skipped can be carried on it (`also_skipped_redundant`, M-REC-204)."""

    hits: tuple[tuple[str, HitView], ...]
    warnings: tuple[str, ...]
    absorbed: dict[str, tuple[tuple[str, str], ...]] = dataclass_field(default_factory=dict)


LayerMerge = Literal["rank", "relevance"]  # [serve] layer_merge (ADR 0107)


def merge(
    own: SessionHits, layers: Sequence[SessionHits], top_k: int, by: LayerMerge = "rank"
) -> Merged:
    """The hits of a session and its layers in one order (M-REC-240..245). By "rank" (ADR
    0080): rank by rank, the session's hit first, then each layer's at that rank, each
    session's score its own (so the order need not be monotone in score). By "relevance" (ADR
    0107; only where the sessions' scores are comparable, which the caller decides): of each
    session's next hit in its own order, the highest score first, the session before its
    layers and a layer before the later ones on a tie; each session's own order is kept. A
    layer hit whose memory the session also holds
    (equal canonical text and type) is not shown: the session's copy names it (`also <id> in
    <layer>`), then the repeats the layer skipped for it, each `<id> in <layer>` (M-REC-203),
    and its warning lines stay in `warnings`, prefixed with the layer's name. A
    concept kept beside a contradicted hit follows that hit and takes no slot of top_k. A
    layer's own lines and warnings start with its name."""
    keys = {_key(view): view.node_id for view in own.hits}
    also: dict[str, list[AlsoItem]] = {}
    absorbed: dict[str, list[tuple[str, str]]] = {}
    warnings = list(own.warnings)
    columns: list[list[tuple[str, HitView, bool]]] = [
        [(own.session, view, view.node_id in own.companions) for view in own.hits]
    ]
    for layer in layers:
        warnings.extend(layer_line(layer.session, line) for line in layer.warnings)
        column: list[tuple[str, HitView, bool]] = []
        for view in layer.hits:
            mine = keys.get(_key(view))
            if mine is not None:  # the layer's copy, then what the layer skipped for it
                named = also.setdefault(mine, [])
                named.append(AlsoItem(view.node_id, layer.session))
                named += [
                    AlsoItem(item.node_id, item.session or layer.session) for item in view.also
                ]
                absorbed.setdefault(mine, []).append((layer.session, view.node_id))
                continue
            shown = replace(
                view,
                from_session=layer.session,
                warning_lines=tuple(layer_line(layer.session, x) for x in view.warning_lines),
                also=tuple(
                    item if item.session is not None else AlsoItem(item.node_id, layer.session)
                    for item in view.also
                ),
            )
            column.append((layer.session, shown, view.node_id in layer.companions))
        columns.append(column)
    chosen = _by_relevance(columns, top_k) if by == "relevance" else _by_rank(columns, top_k)
    merged = _with_companions(chosen, columns)
    out = [
        (session, replace(view, also=(*view.also, *also[view.node_id])))
        if session == own.session and view.node_id in also
        else (session, view)
        for session, view in merged
    ]
    kept = {view.node_id for session, view in out if session == own.session}
    return Merged(
        tuple(out),
        tuple(warnings),
        {mine: tuple(copies) for mine, copies in absorbed.items() if mine in kept},
    )


Column = Sequence[tuple[str, HitView, bool]]  # a session's hits: (session, hit, companion)


def _by_rank(columns: Sequence[Column], top_k: int) -> list[tuple[str, HitView]]:
    """Rank by rank, the columns in order at each rank, until top_k hits (companions take no
    slot)."""
    merged: list[tuple[str, HitView]] = []
    taken = 0
    rank = 0
    while taken < top_k and any(rank < len(column) for column in columns):
        for column in columns:
            if rank < len(column) and taken < top_k:
                session, view, companion = column[rank]
                if not companion:
                    taken += 1
                merged.append((session, view))
        rank += 1
    return merged


def _by_relevance(columns: Sequence[Column], top_k: int) -> list[tuple[str, HitView]]:
    """Until top_k hits: the column whose next hit scores highest gives it (the earlier
    column on a tie), with the companions right after it in its column, which take no
    slot."""
    merged: list[tuple[str, HitView]] = []
    at = [0] * len(columns)
    for _ in range(top_k):
        for index, column in enumerate(columns):  # companions at a column's head go with it
            while at[index] < len(column) and column[at[index]][2]:
                merged.append(column[at[index]][:2])
                at[index] += 1
        best: int | None = None
        for index, column in enumerate(columns):
            if at[index] < len(column) and (
                best is None or column[at[index]][1].score > columns[best][at[best]][1].score
            ):
                best = index
        if best is None:
            break
        merged.append(columns[best][at[best]][:2])
        at[best] += 1
        while at[best] < len(columns[best]) and columns[best][at[best]][2]:
            merged.append(columns[best][at[best]][:2])
            at[best] += 1
    return merged


def _with_companions(
    merged: list[tuple[str, HitView]], columns: Sequence[Sequence[tuple[str, HitView, bool]]]
) -> list[tuple[str, HitView]]:
    """Each kept hit's companions right after it, even those past the cut (M-REC-147/148);
    a companion whose contradicted hit was cut goes too."""
    chosen = {(session, view.node_id) for session, view in merged}
    out: list[tuple[str, HitView]] = []
    placed: set[tuple[str, str]] = set()
    for session, view in merged:
        key = (session, view.node_id)
        if key in placed:
            continue
        column = next(c for c in columns if c and c[0][0] == session)
        index = next(i for i, (_, v, _) in enumerate(column) if v.node_id == view.node_id)
        if column[index][2] and not _follows_chosen(column, index, chosen):
            continue
        out.append((session, view))
        placed.add(key)
        for _, after, companion in column[index + 1 :]:
            if not companion:
                break
            if (session, after.node_id) not in placed:
                out.append((session, after))
                placed.add((session, after.node_id))
    return out


def _follows_chosen(
    column: Sequence[tuple[str, HitView, bool]], index: int, chosen: set[tuple[str, str]]
) -> bool:
    for session, view, companion in reversed(column[:index]):
        if not companion:
            return (session, view.node_id) in chosen
    return False


def _key(view: HitView) -> tuple[str, str | None, str]:
    """What makes two sessions' hits one memory: type, repository and text key. A scoped
    path's repository is part of its stored key, so README.md of two repositories stays two
    hits although their texts (and vectors) are equal (M-REC-259)."""
    return (view.concept_type, view.repo_scope, _text_key(view.content))


@functools.lru_cache(maxsize=4_096)
def _text_key(content: str) -> str:
    """A hit's text as the merge compares it, remembered: its canonical key (~30 us a text)
    is asked for every hit of every session on every merged recall, and recalls keep
    returning the same concepts."""
    return canonical_key(content) or content.strip()
