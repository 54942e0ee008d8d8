"""`lcg status`, `lcg replay`: a workspace's positions, and recovery by replaying a group's WAL."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from lcg.interfaces.cli_common import (
    complain,
    err,
    errors,
    load_settings,
    out,
    print_json,
    show,
    unknown_group,
    workspace_caller,
)
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt
from lcg.interfaces.exit_codes import EXIT_REFUSED

if TYPE_CHECKING:
    from lcg.interfaces.cli_caller import Caller


def status(
    workspace: WorkspaceOpt = None,
    group: Annotated[
        str | None, typer.Option("--group", "-g", help="Show only this group.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Counts, and per group the WAL head, applied seq, hydration and pin."""
    with errors():  # a bad setting is one line naming it, as in every other command
        settings = load_settings(workspace)
    read_only = settings.graph_path.exists()
    with workspace_caller(workspace, "lcg status", read_only=read_only, reads=True) as app:
        result = app.call("knowledge_status", {})
    groups = result["wal_groups"]
    if group is not None:
        with errors():
            if group not in groups:
                raise unknown_group(group, groups)
        groups = {group: groups[group]}
        result["wal_groups"] = groups
    if as_json:
        print_json(result)
        return
    out.print(Text(f"workspace  {settings.workspace}"))
    out.print(
        f"entities {result['entity_count']}  relationships "
        f"{result['relationship_count']}  episodes {result['episode_count']}"
    )
    from lcg.interfaces.cli_listing import plain_table

    table = plain_table("group", "max_seq", "applied_seq", "hydration", "pinned_to")
    for name, wal in groups.items():
        table.add_row(
            Text(name),
            str(wal["max_seq"] or 0),
            str(wal["applied_seq"] or 0),
            wal["hydration_status"],
            "" if wal["pinned_to"] is None else str(wal["pinned_to"]),
        )
    out.print(table)


def replay(
    group: Annotated[str, typer.Option("--group", "-g", help="Group to rebuild.")],
    to_seq: Annotated[
        int | None, typer.Option(help="Inclusive upper bound; pins the group.")
    ] = None,
    from_seq: Annotated[int, typer.Option(help="0 = full rebuild; >0 resumes.")] = 0,
    dry_run: Annotated[bool, typer.Option(help="Count what would be replayed.")] = False,
    force_clear: Annotated[bool, typer.Option(help="Purge a non-empty group first.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Same as --force-clear.")] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Rebuild a group's projections from its WAL, to --to-seq (recovery) or to the end.

    `lcg replay --group liminis --to-seq N` shows the state at seq N and holds the group there
    (writes refused) until `lcg replay --group liminis` replays the rest: on a pinned group,
    a replay without --from-seq or --force-clear resumes at the pin.
    """
    params: dict[str, Any] = {
        "group_id": group,
        "from_seq": from_seq,
        "to_seq": to_seq,
        "dry_run": dry_run,
        "force_clear": force_clear or yes,
    }
    flags = {"group_id": "--group", "from_seq": "--from-seq", "to_seq": "--to-seq"}
    with workspace_caller(workspace, f"lcg replay --group {group}", flags=flags) as app:
        pin = _pinned_at(app, group)
        resumable = pin is not None and (to_seq is None or to_seq >= pin)
        if from_seq == 0 and not params["force_clear"] and pin is not None and resumable:
            params["from_seq"] = pin + 1  # "the rest": resume where the pin holds the group
            complain("note", f"group {group!r} is pinned at seq {pin}; resuming there")
        if (
            params["from_seq"] == 0
            and not params["force_clear"]
            and not dry_run
            and sys.stdin.isatty()
            and _group_has_rows(app, group)
        ):
            params["force_clear"] = typer.confirm(
                f"Group {group!r} holds data. Rebuild it from the WAL (its rows are replaced; "
                "the WAL is untouched)?",
                default=False,
                err=True,
            )
            if not params["force_clear"]:
                complain("refused", f"group {group!r} left as it was; nothing replayed")
                raise typer.Exit(EXIT_REFUSED)
        with progress_bar("replaying", enabled=not as_json) as progress:
            result = app.call("knowledge_rebuild_from_wal", params, progress)
    pin = result["pinned_to"]
    for warning in result.get("warnings", []):  # a clamped to_seq, a resume that did nothing
        complain("warning", warning)
    show(
        result,
        as_json,
        f"{'would replay' if dry_run else 'replayed'} {result['mutations_replayed']} events "
        f"of group {group!r} up to seq {result['last_committed_seq']}"
        + (
            f"; pinned at seq {pin} (writes refused until `lcg replay --group {group}`)"
            if pin is not None
            else ""
        ),
    )


def _pinned_at(app: Caller, group: str) -> int | None:
    groups = app.call("knowledge_status", {})["wal_groups"]
    pinned = groups.get(group, {}).get("pinned_to")
    return None if pinned is None else int(pinned)


def _group_has_rows(app: Caller, group: str) -> bool:
    nodes = app.call("knowledge_get_nodes_by_group", {"group_ids": [group]})
    if nodes["count"]:
        return True
    episodes = app.call("knowledge_get_episodes", {"group_id": group, "last_n": 1})
    return bool(episodes["count"])


@contextmanager
def progress_bar(label: str, *, enabled: bool) -> Iterator[Any]:
    """A (done, total) callback drawing a bar on a terminal's stderr; None elsewhere."""
    if not enabled or not err.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield report
