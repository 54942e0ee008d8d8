"""Reading the ontology files (P-018): `.lcg/ontology.yaml` for the workspace, overridden for
one group by `.lcg/ontology/<group_id>.yaml` (the group id percent-encoded). The rules an
entry must follow are lcg.domain.ontology's; this module only finds and reads the file."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import yaml

from lcg.domain import ontology
from lcg.domain.ontology import Ontology, OntologyInvalid, Problem

WORKSPACE_FILE: Final = "ontology.yaml"
GROUP_DIR: Final = "ontology"
MAX_FILE_BYTES: Final = 1024 * 1024
Mode = Literal["group", "workspace", "none"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The ontology a group uses, the file it came from, and which file that is."""

    ontology: Ontology
    path: Path | None
    mode: Mode


def group_file(state_dir: Path, group_id: str) -> Path:
    return state_dir / GROUP_DIR / f"{urllib.parse.quote(group_id, safe='')}.yaml"


def read(path: Path, shown: str) -> Ontology:
    """The ontology of one file; `shown` is the name problems give it (a path relative to
    the workspace, never a machine path). Raises OntologyInvalid."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            rule = f"must be at most {MAX_FILE_BYTES} bytes"
            raise OntologyInvalid((Problem(shown, "(file)", rule),))
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise OntologyInvalid((Problem(shown, "(file)", f"cannot be read: {reason}"),)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        detail = " ".join(str(error).split())
        raise OntologyInvalid((Problem(shown, "(file)", f"must be YAML: {detail}"),)) from None
    return ontology.parse(data, shown)


def resolve(state_dir: Path, group_id: str | None) -> Resolved:
    """The group's file if it has one, else the workspace's, else no ontology."""
    candidates: list[tuple[Path, Mode]] = []
    if group_id is not None:
        candidates.append((group_file(state_dir, group_id), "group"))
    candidates.append((state_dir / WORKSPACE_FILE, "workspace"))
    for path, mode in candidates:
        if path.is_file():
            shown = f"{state_dir.name}/{path.relative_to(state_dir).as_posix()}"
            return Resolved(read(path, shown), path, mode)
    return Resolved(ontology.EMPTY, None, "none")
