"""`lcg ingest FILE...`: load a folder of notes through knowledge_process_chunk (issue 14).

Plain text is split into chunks of whole paragraphs (at most `--chunk-chars` characters each;
a longer paragraph is split at sentence ends), chunk ids `<file name>-0001`, .... A Markdown
note (.md, .markdown) is chunked by section (`markdown_chunks`, issue 26): its heading path
goes into the chunk id, the episode's name (`notes.md-0002 People > Team`), not into the text;
lists, tables and code blocks stay whole; its front matter is read as the note's attributes
(a `date` becomes the chunks' reference_time; all of them are in the `--json` report). A .json
file is one chunk. Each chunk is one knowledge_process_chunk call, here or through the service
holding the workspace. A progress bar runs on stderr when it is a terminal (not with
`--json`); the summary (or `--json`, one object per file) goes to stdout.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from lcg.domain import rules
from lcg.domain.errors import InvalidParams
from lcg.interfaces.cli_common import err, errors, print_json, workspace_caller
from lcg.interfaces.cli_common import out as console
from lcg.interfaces.cli_options import GroupOpt, JsonOpt, WorkspaceOpt

DEFAULT_CHUNK_CHARS = 2_000
MARKDOWN = frozenset({".md", ".markdown"})


@dataclass
class FilePlan:
    """What one file becomes: (chunk id, text) pairs, its front matter, its reference time."""

    chunks: list[tuple[str, str]]
    attributes: dict[str, Any] = field(default_factory=dict)
    reference_time: str | None = None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidParams("FILE", "must be UTF-8 text", f"{path} is not") from None
    except OSError as error:
        raise InvalidParams("FILE", "must be a readable file", f"{path}: {error}") from None


def ingest(
    files: Annotated[list[Path], typer.Argument(help="Text, Markdown or JSON files.")],
    group: GroupOpt = "liminis",
    chunk_chars: Annotated[
        int, typer.Option("--chunk-chars", min=200, max=100_000, help="Largest chunk.")
    ] = DEFAULT_CHUNK_CHARS,
    replace: Annotated[
        bool,
        typer.Option("--replace", help="Delete each file's earlier episodes in the group first."),
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Extract entities and facts from files into a group (knowledge_process_chunk per chunk:
    Markdown by section, its heading path naming the chunk and its front matter read as the
    note's attributes; plain text by paragraphs); dropped edges are counted in the summary.
    Ingesting a file again adds its chunks again: --replace deletes its earlier episodes
    first."""
    with errors():
        plan = {path: plan_file(path, _read(path), chunk_chars) for path in files}
    total = sum(len(p.chunks) for p in plan.values())
    reports: list[dict[str, Any]] = []
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with (
        workspace_caller(workspace, "lcg ingest", flags={"group_id": "--group"}) as caller,
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=as_json or not err.is_terminal,
        ) as progress,
    ):
        task = progress.add_task("ingesting", total=total)
        for path, file_plan in plan.items():
            replaced = 0
            if replace:
                replaced = caller.call(
                    "knowledge_delete_by_source",
                    {"source_file": str(path), "group_ids": [group]},
                )["deleted_count"]
            report: dict[str, Any] = {
                "file": str(path),
                "chunks": 0,
                "entities": 0,
                "edges": 0,
                "dropped": 0,
                "replaced_episodes": replaced,
                "chunk_ids": [chunk_id for chunk_id, _ in file_plan.chunks],
                "attributes": file_plan.attributes,
            }
            for chunk_id, part in file_plan.chunks:
                params = {
                    "chunk_text": part,
                    "chunk_id": chunk_id,
                    "source_file": str(path),
                    "group_id": group,
                }
                if file_plan.reference_time is not None:
                    params["reference_time"] = file_plan.reference_time
                result = caller.call("knowledge_process_chunk", params)
                report["chunks"] += 1
                report["entities"] += result["nodes_extracted"]
                report["edges"] += result["edges_extracted"] - result["edges_dropped_unresolvable"]
                report["dropped"] += result["edges_dropped_unresolvable"]
                progress.advance(task)
            reports.append(report)
    if as_json:
        print_json({"group_id": group, "files": reports})
        return
    for r in reports:
        console.print(
            f"{r['file']}: {r['chunks']} chunk(s), {r['entities']} entities extracted, "
            f"{r['edges']} edges written, {r['dropped']} dropped (no entity at an end)",
            highlight=False,
            markup=False,
        )


def plan_file(path: Path, text: str, chunk_chars: int) -> FilePlan:
    """A file's chunks by its kind: JSON whole, Markdown by section, plain text by paragraph."""
    from lcg.domain.extraction import chunks

    suffix = path.suffix.lower()
    if suffix == ".json":
        return FilePlan([(f"{path.name}-0001", text)])
    if suffix not in MARKDOWN:
        return FilePlan(
            [(f"{path.name}-{i:04d}", part) for i, part in enumerate(chunks(text, chunk_chars), 1)]
        )
    from lcg.interfaces.markdown_chunks import read_note

    note = read_note(text, chunk_chars, str(path))
    named = []
    for index, section in enumerate(note.sections, start=1):
        chunk_id = f"{path.name}-{index:04d}"
        if section.headings:
            chunk_id = f"{chunk_id} {' > '.join(section.headings)}"
        named.append((chunk_id[: rules.MAX_EPISODE_NAME].strip(), section.text))
    return FilePlan(named, note.attributes, _reference_time(note.attributes.get("date")))


def _reference_time(value: object) -> str | None:
    """A front matter `date` (YAML reads `2026-11-30` as a date) as RFC 3339, in UTC when it
    names no zone; None for anything that is not a date."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return moment.isoformat()
    if isinstance(value, dt.date):
        return f"{value.isoformat()}T00:00:00+00:00"
    return None


def register(cli: typer.Typer) -> None:
    cli.command("ingest")(ingest)
