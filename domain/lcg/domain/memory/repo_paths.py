"""Repository-scoped paths (seed 001 "Repository-scoped paths", checklist section 6, ADR 0082).

A file path is unique only inside one repository. Under `repo_scope` a path-like resource
concept (and an action's path-like entries and text) takes a key of its own: `path_key(scope,
path)`, the scope and the path after trimming and NFC, a line reference (`:12`, `:12:5`,
`#L12`) and a trailing `/` dropped, and nothing else (case and spelling count). The key holds
tab characters, which no canonical key (`lcg.domain.memory.identity.canonical_key`) ever does
and no repo_scope may, so a scoped path never shares a key with unscoped text and the repository
is read back from the key alone (`repo_of_key`): the identity lives in the events that wrote it.

`is_path` is the seed's "What is a path" (where the type is named); `reads_as_file` is the
stricter test of an inferred position (a file or directory name, not slash prose nor a bare
directory name). Both are text tests only: nothing here reads a filesystem or a remote.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Final

from lcg.domain.memory import limits
from lcg.domain.memory.text import MemoryArgumentError, check_text, utf8_size

KEY_PREFIX: Final = "repo\t"
FIELD: Final = "repo_scope"

_LINE_REFERENCE: Final = re.compile(r"(?::\d+(?::\d+)?|#L\d+(?:-L?\d+)?)$")
_ANCHOR: Final = re.compile(r"^(?:\.{1,2}[/\\]|/|~[/\\]|[A-Za-z]:[/\\])")
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCHEME: Final = re.compile(r"^(?:mailto|urn|data|javascript|file|https?):", re.IGNORECASE)
_REMOTE: Final = re.compile(r"^[\w.-]+@[\w.-]+:")
_EXTENSION: Final = re.compile(r"^[^.\s/\\][^/\\]*\.[A-Za-z0-9_+-]{1,12}$")
_DOTFILE: Final = re.compile(r"^\.[A-Za-z0-9_][\w.+-]*$")
_ACRONYM: Final = re.compile(r"^[A-Z0-9&]{1,6}$")
_DOMAIN: Final = re.compile(r"^(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}$")
_INVISIBLE_OR_SPACE: Final = re.compile(
    r"[\s\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]"
)

# Names with no extension that are files (the seed's "Makefile and the like").
KNOWN_FILES: Final = frozenset(
    (
        "makefile", "gnumakefile", "dockerfile", "containerfile", "vagrantfile", "jenkinsfile",
        "procfile", "gemfile", "rakefile", "brewfile", "justfile", "podfile", "cartfile",
        "license", "licence", "readme", "changelog", "authors", "contributors", "codeowners",
        "notice", "copying", "owners",
    )
)  # fmt: skip
# Top-level domains a domain-led name or a bare domain ends with (github.com/x, crates.io).
_TLDS: Final = frozenset(
    (
        "com", "org", "net", "io", "dev", "app", "ai", "co", "gov", "edu", "land", "sh",
        "cloud", "tech", "info", "biz", "me", "us", "uk", "de", "fr", "eu", "xyz", "page",
    )
)  # fmt: skip
# Library and product names written like files (the seed's "Node.js", "socket.io").
_NAMES: Final = re.compile(
    r"^(?:node|vue|next|nuxt|react|express|angular|d3|three|chart|ember|backbone|deno|bun|"
    r"socket|crates|knockout|p5|moment|day|anime|alpine|solid|svelte)\.(?:js|io)$",
    re.IGNORECASE,
)
# Slash prose: two or three words joined by `/` that are not a path (TCP/IP, and/or).
_PROSE_WORDS: Final = frozenset(
    (
        "and", "or", "either", "he", "she", "his", "her", "him", "them", "s", "w", "o",
        "yes", "no", "on", "off", "true", "false", "read", "write", "input", "output",
        "client", "server", "pass", "fail", "win", "lose", "male", "female", "day", "night",
        "per", "km", "h", "m", "sec", "min",
    )
)  # fmt: skip


# -- the argument -----------------------------------------------------------------------------


def check_repo_scope(sent: str | None) -> str | None:
    """The scope as keys use it (trimmed, NFC), or the refusal naming the rule it breaks."""
    if sent is None:
        return None
    check_text(FIELD, sent)
    scope = unicodedata.normalize("NFC", sent.strip())
    if not scope:
        raise MemoryArgumentError(
            "repo_scope must not be empty or whitespace: send one stable id per repository, "
            "such as github.com/acme/widgets, or omit repo_scope; nothing was written",
            field=FIELD,
            rule="required",
        )
    size = utf8_size(scope)
    if size > limits.MAX_REPO_SCOPE_BYTES:
        raise MemoryArgumentError(
            f"repo_scope is too long: the cap is {limits.MAX_REPO_SCOPE_BYTES} bytes and "
            f"{size:,} bytes were given; nothing was written",
            field=FIELD,
            rule="size cap",
        )
    inside = _INVISIBLE_OR_SPACE.search(scope)
    if inside is not None:
        what = "whitespace" if inside.group().isspace() else "an invisible character"
        raise MemoryArgumentError(
            f"repo_scope must not hold whitespace, a control or an invisible character inside "
            f"it; found {what} (U+{ord(inside.group()):04X}); nothing was written",
            field=FIELD,
            rule="no whitespace, control or invisible character",
        )
    return scope


# -- what is a path ---------------------------------------------------------------------------


def _bare(text: str) -> str:
    """The path without its line reference (`src/main.rs:12` -> `src/main.rs`)."""
    return _LINE_REFERENCE.sub("", text.strip())


def _segments(path: str) -> list[str]:
    return [s for s in re.split(r"[/\\]", path) if s]


def _is_file_name(name: str) -> bool:
    """A single segment that names a file: an extension, a dotfile or a known name."""
    if _NAMES.match(name) or (_DOMAIN.match(name) and name.rsplit(".", 1)[1].lower() in _TLDS):
        return False
    return bool(_EXTENSION.match(name) or _DOTFILE.match(name) or name.lower() in KNOWN_FILES)


def _is_slash_prose(path: str) -> bool:
    parts = path.split("/")
    if len(parts) < 2 or len(parts) > 3 or any(not p for p in parts):
        return False
    return all(_ACRONYM.match(p) for p in parts) or all(p.lower() in _PROSE_WORDS for p in parts)


def _not_a_path(text: str) -> bool:
    """URLs, remotes, domain-led names, library names and prose."""
    if _URL.match(text) or _SCHEME.match(text) or _REMOTE.match(text):
        return True
    first = _segments(text)[0] if _segments(text) else ""
    if not _ANCHOR.match(text) and _DOMAIN.match(first) and first.rsplit(".", 1)[1] in _TLDS:
        return True  # github.com/x/a.rs, crates.io
    return bool(_NAMES.match(text))


def is_path(text: str) -> bool:
    """Whether `text` is a relative or absolute local path where the type is named (a
    resource concept, an action's produces or modifies entry, the action text)."""
    path = _bare(text)
    if not path or _not_a_path(path):
        return False
    anchored = _ANCHOR.match(path)
    if re.search(r"\s", path):
        # A path with a space needs an anchor with no space right after it (`/ note` is prose).
        return anchored is not None and not path[anchored.end() :][:1].isspace()
    if anchored:
        return True
    if "/" in path or "\\" in path:
        return not _is_slash_prose(path.rstrip("/\\"))
    return _is_file_name(path)


def reads_as_file(text: str) -> bool:
    """Whether text in an inferred position (an action's depends_on, a parent_of end) with no
    concept to name becomes a new scoped path: a file name, a dotfile, a known name, a name
    ending in `/`, or an anchored path. A bare directory name (`docs/reference`) and slash
    prose (`TCP/IP`) stay plain text."""
    if not is_path(text):
        return False
    path = _bare(text)
    if _ANCHOR.match(path) or path.endswith(("/", "\\")):
        return True
    segments = _segments(path)
    return bool(segments) and _is_file_name(segments[-1])


# -- identity ---------------------------------------------------------------------------------


def normalised(path: str) -> str:
    """The path part of a key: trimmed, NFC, its line reference and trailing `/` dropped."""
    bare = unicodedata.normalize("NFC", _bare(path))
    stripped = bare.rstrip("/\\")
    return stripped or bare


def path_key(scope: str, path: str) -> str:
    """The key a scoped path concept is stored and matched under."""
    return f"{KEY_PREFIX}{unicodedata.normalize('NFC', scope.strip())}\t{normalised(path)}"


def repo_of_key(key: str | None) -> str | None:
    """The repository a stored key names, or None for an unscoped concept."""
    if key is None or not key.startswith(KEY_PREFIX):
        return None
    return key[len(KEY_PREFIX) :].split("\t", 1)[0]


def is_scoped_key(key: str | None) -> bool:
    return key is not None and key.startswith(KEY_PREFIX)


def directory_of(parent: str, child: str) -> bool:
    """Whether `parent` names a directory holding `child` (`src` over `src/main.rs`)."""
    up, down = normalised(parent), normalised(child)
    return bool(up) and (down.startswith((up + "/", up + "\\")))


# -- dependency questions ---------------------------------------------------------------------


def _names_repository(query: str, repo: str) -> bool:
    return re.search(r"(?<!\S)" + re.escape(repo) + r"(?![^\s?!.,;:)])", query) is not None


def repository_subject(
    query: str, subject: str, candidates: Sequence[tuple[str, str | None]]
) -> tuple[str | None, str | None]:
    """Which of a dependency question's same-named subjects `(node id, repository)` it asks
    about (M-REC-103/104): (the node, None) when one is meant, the first when no repository
    tells them apart; (None, the warning) when the subject is a path of several repositories
    and the question names none of them."""
    if len(candidates) < 2 or all(repo is None for _, repo in candidates):
        return candidates[0][0], None
    named = [
        node for node, repo in candidates if repo is not None and _names_repository(query, repo)
    ]
    if len(named) == 1:
        return named[0], None
    listing = "; ".join(
        f"{node[:8]} {subject}" + ("" if repo is None else f' (repo "{repo}")')
        for node, repo in candidates
    )
    return None, (
        f'recall: "{subject}" names {len(candidates)} concepts in different repositories: '
        f"{listing}; name the repository in the question to ask about one."
    )
