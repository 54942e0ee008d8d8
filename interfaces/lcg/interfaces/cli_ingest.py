"""`lcg ingest FILE...`: load a folder of notes through knowledge_process_chunk (issue 14).

Each file is split into chunks of whole paragraphs (at most `--chunk-chars` characters each,
a longer paragraph alone), chunk ids `<file name>-0001`, ..., and each chunk is one
knowledge_process_chunk call, here or through the service holding the workspace. A progress
bar runs on stderr; the summary (or `--json`, one object per file) goes to stdout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lcg.domain.errors import InvalidParams
from lcg.interfaces.cli_common import err, errors, print_json, workspace_caller
from lcg.interfaces.cli_common import out as console
from lcg.interfaces.cli_options import GroupOpt, JsonOpt, WorkspaceOpt

DEFAULT_CHUNK_CHARS = 2_000


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
    """Extract entities and facts from files into a group (knowledge_process_chunk per chunk
    of paragraphs); dropped edges are counted in the summary. Ingesting a file again adds its
    chunks again: --replace deletes its earlier episodes first."""
    from lcg.domain.extraction import chunks

    with errors():
        texts = {path: _read(path) for path in files}
    plan = {
        path: [text] if path.suffix.lower() == ".json" else chunks(text, chunk_chars)
        for path, text in texts.items()
    }
    total = sum(len(parts) for parts in plan.values())
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
        ) as progress,
    ):
        task = progress.add_task("ingesting", total=total)
        for path, parts in plan.items():
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
            }
            for index, part in enumerate(parts, start=1):
                result = caller.call(
                    "knowledge_process_chunk",
                    {
                        "chunk_text": part,
                        "chunk_id": f"{path.name}-{index:04d}",
                        "source_file": str(path),
                        "group_id": group,
                    },
                )
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


def register(cli: typer.Typer) -> None:
    cli.command("ingest")(ingest)
