"""Reading the ontology files (P-018): `.lcg/ontology.yaml` for the workspace, overridden for
one group by `.lcg/ontology/<group_id>.yaml` (the group id percent-encoded). The rules an
entry must follow are lcg.domain.ontology's; this module only finds and reads the file."""

from __future__ import annotations

import sqlite3
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import yaml

from lcg.domain import ontology
from lcg.domain.ids import DEFAULT_GROUP
from lcg.domain.ontology import Ontology, OntologyInvalid, Problem
from lcg.queries import status as status_query

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


def _declared(resolved: Ontology) -> status_query.Declared:
    return status_query.Declared(
        relation_types=resolved.relation_names if resolved.relation_types else None,
        entity_types=resolved.entity_names if resolved.entity_types else None,
    )


def status_block(state_dir: Path, conn: sqlite3.Connection) -> status_query.Ontology:
    """knowledge_status's `ontology` (P-102): whether files exist (`present`), whether all of
    them are valid (`loaded`), `mode` (workspace, per_group or workspace+per_group), the
    default group's resolved type counts, and drift of the graph from each group's ontology."""
    workspace_file = state_dir / WORKSPACE_FILE
    group_dir = state_dir / GROUP_DIR
    group_files = sorted(group_dir.glob("*.yaml")) if group_dir.is_dir() else []
    modes = [
        m for m, on in (("workspace", workspace_file.is_file()), ("per_group", group_files)) if on
    ]
    block = status_query.Ontology(
        present=bool(modes),
        loaded=False,
        mode="+".join(modes) or None,
        entity_type_count=0,
        relation_type_count=0,
        drifted=False,
        drift_summary=None,
    )
    if not modes:
        return block
    try:
        for path in ([workspace_file] if workspace_file.is_file() else []) + group_files:
            read(path, path.name)
        default = resolve(state_dir, DEFAULT_GROUP).ontology
        cache: dict[str, status_query.Declared | None] = {}

        def declared(group: str) -> status_query.Declared | None:
            if group not in cache:
                found = resolve(state_dir, group)
                cache[group] = None if found.path is None else _declared(found.ontology)
            return cache[group]

        drifted, summary = status_query.ontology_drift(conn, declared)
    except OntologyInvalid:
        return block  # loaded: false; `lcg ontology check` names the problems
    return status_query.Ontology(
        present=True,
        loaded=True,
        mode=block["mode"],
        entity_type_count=len(default.entity_types),
        relation_type_count=len(default.relation_types),
        drifted=drifted,
        drift_summary=summary,
    )
