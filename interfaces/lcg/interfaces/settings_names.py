"""Where the settings file is and what its names may be (ADR 0030, ADR 0082): `lcg.toml` or
the reference's `lambo.toml`, the reference's names for two of its keys, and the closest known
name a refusal of an unknown one suggests."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from lcg.domain.errors import InvalidParams

SETTINGS_FILE: Final = "lcg.toml"
LAMBO_FILE: Final = "lambo.toml"  # the reference's name for the same file (seed 001)

# The reference's names for keys of the table, accepted at the top level of the file (seed 001
# names them without a section): the name -> the key it sets.
SEED_NAMES: Final[Mapping[str, tuple[str, str]]] = {
    "canonization_edge_min_age": ("canonization", "edge_min_age_secs"),
    "canonization_supersede": ("canonization", "supersede"),
}

# The reference's knobs this server has no counterpart for, in any section: the name -> why,
# naming what takes its place here (ADR 0088). The file is refused rather than the knob ignored.
SEED_REFUSED: Final[Mapping[str, str]] = {
    "backend_flush_interval": (
        "not a setting of this server: there is no write-behind flush to time, since a"
        " write's intent is in the log before its ack (what a flush interval of 0 would be);"
        " how durable each commit is, is LCG_DURABILITY (normal: a committed write survives a"
        " killed process; full: fsync every commit); remove the key"
    ),
}


def settings_path(workspace: Path) -> Path | None:
    """The workspace's settings file: `lcg.toml`, or the reference's `lambo.toml`; both at
    once is refused (which one wins would be a guess)."""
    found = [workspace / name for name in (SETTINGS_FILE, LAMBO_FILE)]
    present = [path for path in found if path.exists()]
    if len(present) > 1:
        raise InvalidParams(
            f"{SETTINGS_FILE} and {LAMBO_FILE}",
            "only one settings file may be in the workspace; merge them into one",
        )
    return present[0] if present else None


def closest(name: str, known: list[str], form: str = "{}") -> str:
    """`; did you mean X?` for the known name closest to a misspelt one, or nothing."""
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {form.format(found[0])}?" if found else ""
