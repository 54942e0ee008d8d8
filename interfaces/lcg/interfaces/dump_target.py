"""Where knowledge_dump_wal may write: inside the workspace, or the operator's `[wal] dump_dir`.

Issue 24, item 4 (docs/adr/0048-own-files-and-dump-directories.md): a client of a serving
process (an agent over MCP, a socket client) with the admin scope must not make the server's
user write anywhere it can (`/etc/...`, `../../`). The operator's own command in this process
(`lcg dump PATH`, `lcg call` with the workspace opened here) writes with the operator's own
rights, so it may name any directory.
"""

from __future__ import annotations

from pathlib import Path

from lcg.domain.errors import InvalidParams
from lcg.interfaces.config import Settings

DEFAULT_DUMP_DIR = "wal-compacted"  # P-133: <workspace>/.lcg/wal-compacted/
RULE = (
    "must be a directory inside the workspace (a relative path is taken from the workspace "
    "directory) or inside the directory the setting [wal] dump_dir (LCG_WAL_DUMP_DIR) names"
)


def dump_target(settings: Settings, target_dir: str | None, *, anywhere: bool) -> Path:
    """The absolute directory a dump writes into; `anywhere` for the operator's own command.
    Links in the part of the path that exists are followed before the check, so a link in
    the workspace cannot lead a dump out of it."""
    if target_dir is None:
        return settings.state_dir / DEFAULT_DUMP_DIR
    if "\0" in target_dir:
        raise InvalidParams("target_dir", "must not contain a NUL character")
    target = (settings.workspace / target_dir).absolute()  # an absolute path stays itself
    if anywhere:
        return target
    resolved = target.resolve()
    roots = [settings.workspace, *([] if settings.dump_dir is None else [settings.dump_dir])]
    if any(resolved.is_relative_to(root.resolve()) for root in roots):
        return resolved
    raise InvalidParams("target_dir", RULE, f"got {target_dir!r}")
