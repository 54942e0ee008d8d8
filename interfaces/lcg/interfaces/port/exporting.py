"""Write a snapshot in a format; say what the format does not carry (ADR 0084).

A file is written beside its final name and renamed into place, a folder (neo4j CSV,
basic-memory) is filled while it has a temporary name and renamed last: a failed export
leaves nothing that looks finished. The output must not exist yet (or be an empty folder).
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from lcg.domain.errors import InvalidParams
from lcg.interfaces.port import basic_memory, lcg_jsonl, mcp_memory, neo4j
from lcg.interfaces.port.snapshot import Snapshot

DROPPED = {
    "mcp-memory": "labels after the first, attributes other than observations, edge facts, "
    "relation types, validity times and attributes, episodes, concepts",
    "basic-memory": "labels after the first, edge facts, relation types, validity times and "
    "attributes, episodes, concepts",
    "neo4j": "episodes, concepts",
    "lcg-jsonl": "",
}


def is_folder_output(fmt: str, output: Path) -> bool:
    return fmt == "basic-memory" or (
        fmt == "neo4j" and output.suffix.lower() not in neo4j.JSON_SUFFIXES
    )


def check_output(fmt: str, output: Path) -> None:
    if output.is_symlink():
        raise InvalidParams("--output", "must not be a symbolic link", str(output))
    if is_folder_output(fmt, output):
        if output.exists() and (not output.is_dir() or any(output.iterdir())):
            raise InvalidParams("--output", "must be a new or empty folder", str(output))
    elif output.exists():
        raise InvalidParams("--output", "must not exist (an export never overwrites)", str(output))
    if not output.absolute().parent.is_dir():
        raise InvalidParams("--output", "must be in an existing folder", str(output))


def export(fmt: str, snapshot: Snapshot, output: Path, now: dt.datetime) -> dict[str, Any]:
    parent = output.absolute().parent
    if is_folder_output(fmt, output):
        scratch = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=parent))
        try:
            written = (
                basic_memory.write(snapshot, scratch)
                if fmt == "basic-memory"
                else neo4j.write_csv(snapshot, scratch)
            )
            if output.exists():
                output.rmdir()  # checked empty
            scratch.rename(output)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    else:
        handle, name = tempfile.mkstemp(prefix=f".{output.name}.", dir=parent)
        try:
            with os.fdopen(handle, "wb") as out:
                if fmt == "mcp-memory":
                    written = {"lines": mcp_memory.write(snapshot, out)}
                elif fmt == "neo4j":
                    written = neo4j.write_apoc(snapshot, out)
                else:
                    written = {"lines": lcg_jsonl.write(snapshot, out, now)}
            os.replace(name, output)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
    return {
        "format": fmt,
        "group_id": snapshot.group_id,
        "as_of_seq": snapshot.seq,
        "output": str(output),
        "counts": snapshot.counts(),
        "written": written,
        "dropped": DROPPED[fmt],
    }
