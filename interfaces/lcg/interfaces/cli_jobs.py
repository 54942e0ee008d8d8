"""`lcg canon status|run|history` and `lcg gc run`: the memory jobs by hand (issue 13).

Each is one call of an operator operation (tools/memory_jobs.py), here or through the service
that holds the workspace, so a running server's jobs and counters are the ones shown.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lcg.interfaces.cli_common import out as console
from lcg.interfaces.cli_common import print_json, workspace_caller
from lcg.interfaces.cli_memory import SessionOpt
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt

canon = typer.Typer(help="Canonization: status, one cycle now, history.", no_args_is_help=True)
gc = typer.Typer(help="Garbage collection of the session's memory.", no_args_is_help=True)


def _call(
    workspace: Any, command: str, method: str, params: dict[str, Any], session: str | None
) -> dict[str, Any]:
    with workspace_caller(workspace, command, session=session, flags={"session": "--session"}) as c:
        result: dict[str, Any] = c.call(method, {**params, "session": session})
        return result


def _say(line: str) -> None:
    console.print(line, highlight=False, markup=False)


@canon.command("status")
def status(
    session: SessionOpt = None, workspace: WorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """The policy, concepts per status, cycles run by this process and the GC clock."""
    found = _call(workspace, "lcg canon status", "lcg_canon_status", {}, session)
    if as_json:
        print_json(found)
        return
    counts = ", ".join(f"{k} {v}" for k, v in found["statuses"].items())
    gc_clock = found["gc"]
    _say(
        f"session {found['session']} ({found['promotion_policy']}): "
        f"{found['concept_count']} concepts; {counts}"
    )
    _say(
        f"cycles {found['canonization_cycles']} ({found['canonization_failures']} failed) in "
        f"this process; gc: epoch {gc_clock['epoch']}, last_gc_epoch {gc_clock['last_gc_epoch']},"
        f" last_gc_at {gc_clock['last_gc_at'] or 'never'}, {gc_clock['sweeps']} sweeps, "
        f"{gc_clock['collected']} collected"
    )


@canon.command("run")
def run(
    session: SessionOpt = None, workspace: WorkspaceOpt = None, as_json: JsonOpt = False
) -> None:
    """Run one canonization cycle now and print what moved."""
    found = _call(workspace, "lcg canon run", "lcg_canon_run", {}, session)
    if as_json:
        print_json(found)
        return
    hops = found["transitions"]
    _say(f"{len(hops)} transition(s)")
    for hop in hops:
        radius = hop["blast_radius"]
        _say(
            f"  {hop['node_id']}  {hop['from_status']} -> {hop['to_status']}  "
            f"({hop['cause']}, blast radius {'null' if radius is None else radius})"
        )


@canon.command("history")
def history(
    node: Annotated[str | None, typer.Option("--node", help="One concept's node id.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="Newest transitions shown.")] = 1000,
    session: SessionOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The session's canonization history, oldest first (node_id, from, to, blast radius)."""
    params = {"node_id": node, "limit": limit}
    found = _call(workspace, "lcg canon history", "lcg_canon_history", params, session)
    if as_json:
        print_json(found)
        return
    _say("node_id\tfrom_status\tto_status\tblast_radius\tcause\toccurred_at")
    for row in found["rows"]:
        radius = "null" if row["blast_radius"] is None else row["blast_radius"]
        _say(
            f"{row['node_id']}\t{row['from_status']}\t{row['to_status']}\t{radius}\t"
            f"{row['cause']}\t{row['occurred_at']}"
        )


@gc.command("run")
def gc_run(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Decide, append nothing.")] = False,
    session: SessionOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Sweep the session now, whatever the triggers say."""
    found = _call(workspace, "lcg gc run", "lcg_gc_run", {"dry_run": dry_run}, session)
    if as_json:
        print_json(found)
        return
    verb = "would collect" if dry_run else "collected"
    _say(
        f"{verb} {found['collected']} concept(s), deferred {found['deferred']} (cap "
        f"{found['collection_cap']}), {found['resources_spared_by_dependents']} resource(s) "
        f"spared, {found['protected']} protected"
    )
    for item in found["collected_ids"]:
        content = f'  "{item["content"]}"' if "content" in item else ""
        _say(f"  {item['node_id']}  {item['reason']}{content}")
    for warning in found["warnings"]:
        _say(f"warning: {warning}")


def register(cli: typer.Typer) -> None:
    cli.add_typer(canon, name="canon")
    cli.add_typer(gc, name="gc")
