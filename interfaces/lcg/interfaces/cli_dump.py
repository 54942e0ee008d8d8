"""`lcg dump PATH` and `lcg restore PATH`: a snapshot of the graph as a fresh compacted WAL
(knowledge_dump_wal), and a workspace made from one (ADR 0032)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from lcg.domain.errors import NotFound
from lcg.interfaces.cli_common import errors, load_settings, out, print_json, show, workspace_caller
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt
from lcg.interfaces.cli_recovery import progress_bar

if TYPE_CHECKING:
    from lcg.interfaces.workspace import Workspace


def dump(
    path: Annotated[
        Path, typer.Argument(help="Directory to write into; it must not exist or be empty.")
    ],
    group: Annotated[
        list[str] | None,
        typer.Option("--group", "-g", help="Repeat for several groups; default every group."),
    ] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Snapshot the graph into PATH as a fresh compacted WAL (knowledge_dump_wal).

    Seqs are renumbered from 1 and marks are not carried; `lcg restore PATH --workspace DIR`
    makes a workspace of it that answers every read the same. PATH may be any directory you
    can write; while a socket service holds the workspace the dump goes through it, as one
    of its clients, and PATH must then be inside the workspace or [wal] dump_dir (ADR 0048).
    """
    settings = load_settings(workspace)
    flags = {"target_dir": "PATH", "group_ids": "--group"}
    with errors(flags):
        if not settings.state_dir.exists():
            raise NotFound(
                f"workspace: there is no workspace at {settings.workspace} (no .lcg/) to dump; "
                "pass --workspace DIR (or set LCG_WORKSPACE)",
                field="workspace",
                rule="must name an existing workspace",
            )
    # the service holding the workspace may run elsewhere: send it an absolute path
    params: dict[str, Any] = {"target_dir": str(path.absolute()), "group_ids": group}
    with (
        workspace_caller(workspace, "lcg dump", flags=flags) as app,
        progress_bar("dumping", enabled=not as_json) as progress,
    ):
        result = app.call("knowledge_dump_wal", params, progress)
    show(
        result,
        as_json,
        f"dumped {result['events_dumped']} events of {len(result['groups'])} group(s) into "
        f"{result['target_dir']}: {result['nodes_dumped']} entities, "
        f"{result['edges_dumped']} relationships, {result['episodes_dumped']} episodes",
    )


def restore(
    path: Annotated[Path, typer.Argument(help="A directory written by `lcg dump`.")],
    workspace: WorkspaceOpt = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Restore over a non-empty workspace: its .lcg/ is set aside as "
            ".lcg.replaced-<UTC time>, not deleted.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Make the workspace (--workspace, default here) from a dump written by `lcg dump`.

    The dump's WAL becomes the workspace's and every projection is rebuilt from it. A
    workspace that already holds anything is refused unless --force.
    """
    from lcg.commands import restore as restoring
    from lcg.interfaces.workspace import Workspace, utc_now

    settings = load_settings(workspace)
    with errors():
        restored = restoring.restore(path.absolute(), settings.files, force=force, now=utc_now())
        with Workspace(settings, command="lcg restore") as ws:
            ws.settle()  # the vector indexes hold every restored text before we say done
            counts = _counts(ws)
    manifest = restored.manifest
    result = {
        "success": True,
        "workspace": str(settings.workspace),
        "dump": str(path.absolute()),
        "events": manifest["events"],
        "groups": manifest["groups"],
        **counts,
        "set_aside": None if restored.set_aside is None else str(restored.set_aside),
    }
    if as_json:
        print_json(result)
        return
    out.print(
        Text(
            f"restored {manifest['events']} events of {len(manifest['groups'])} group(s) into "
            f"{settings.workspace}: {counts['entity_count']} entities, "
            f"{counts['relationship_count']} relationships, {counts['episode_count']} episodes"
        )
    )
    if restored.set_aside is not None:
        out.print(Text(f"the workspace that was there is kept at {restored.set_aside}"))


def _counts(ws: Workspace) -> dict[str, int]:
    from lcg.interfaces import operations
    from lcg.interfaces.app import App

    status = operations.dispatch(App(ws), "knowledge_status", {})
    return {key: status[key] for key in ("entity_count", "relationship_count", "episode_count")}


def register(cli: typer.Typer) -> None:
    cli.command()(dump)
    cli.command()(restore)
