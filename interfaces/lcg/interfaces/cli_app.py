"""The `lcg` command line (typer): assert, add, list, `call` for any tool, the demo, and the
commands of cli_recovery (status, replay), cli_dump (dump, restore), cli_inspect (tools,
describe, log) and serve (the socket service or MCP over stdio); cli_common holds what they
share.

Exit codes scripts can rely on (lcg.interfaces.exit_codes): 0 ok; 1 unexpected failure;
2 invalid parameters; 3 refused (not found, conflict, pinned group); 4 workspace held by
another writer; 5 projection error; 6 no socket service at `serve --connect PATH`; 7 a file of
the workspace cannot be used (the message names it and what to do).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from lcg.domain.errors import InvalidParams
from lcg.interfaces import (
    cli_dump,
    cli_ingest,
    cli_inspect,
    cli_jobs,
    cli_memory,
    cli_ontology,
    cli_port,
    cli_recover,
    cli_recovery,
    cli_store,
    cli_verbs,
    log_setup,
    serve,
)
from lcg.interfaces.attribute_rows import with_attribute_objects
from lcg.interfaces.cli import print_version
from lcg.interfaces.cli_call import checked_request
from lcg.interfaces.cli_common import (
    errors,
    json_object_flag,
    load_settings,
    out,
    print_json,
    read_file,
    show,
    unknown_group,
    workspace_caller,
)
from lcg.interfaces.cli_options import (
    GroupOpt,
    JsonOpt,
    LogFileOpt,
    LogLevelOpt,
    PlainFlagsGroup,
    WorkspaceOpt,
)
from lcg.interfaces.portal import serve as portal_serve
from lcg.projections.private_files import PRIVATE_UMASK

cli = typer.Typer(
    cls=PlainFlagsGroup,
    no_args_is_help=True,
    add_completion=False,
    help="lcg, the liminis context graph: event-sourced memory for AI agents.",
)


def _version(value: bool) -> None:
    if value:
        print_version()
        raise typer.Exit


@cli.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
    log_level: LogLevelOpt = None,
    log_file: LogFileOpt = None,
) -> None:
    """lcg, the liminis context graph: event-sourced memory for AI agents."""
    serving = ctx.invoked_subcommand == "serve"
    log_setup.set_up(log_level, log_file, serving=serving, environ=os.environ)


cli.command()(cli_recovery.status)
cli.command()(cli_recovery.replay)
cli.command()(cli_recover.recover)
cli_dump.register(cli)
cli.add_typer(cli_store.store, name="store")


@cli.command("assert-entity")
def assert_entity(
    name: str,
    summary: Annotated[str | None, typer.Option(help="Replaces the stored summary.")] = None,
    label: Annotated[list[str] | None, typer.Option(help="Repeat for several labels.")] = None,
    attributes: Annotated[
        str | None, typer.Option(help='A JSON object, e.g. \'{"role": "lead"}\'.')
    ] = None,
    entity_uuid: Annotated[str | None, typer.Option("--uuid", help="Update this entity.")] = None,
    group: GroupOpt = "liminis",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create or replace an entity (knowledge_assert_entity).

    The seed's contract is clear-on-omit: on an existing entity, a summary, labels or
    attributes you leave out are cleared, not kept. The output says what was cleared.
    """
    flags = {
        "name": "NAME",
        "summary": "--summary",
        "labels": "--label",
        "attributes": "--attributes",
        "entity_uuid": "--uuid",
        "group_id": "--group",
    }
    with errors():
        attribute_object = json_object_flag("--attributes", attributes)
    with workspace_caller(workspace, "lcg assert-entity", flags=flags) as app:
        params = {
            "name": name,
            "summary": summary,
            "labels": label,
            "entity_uuid": entity_uuid,
            "attributes": attribute_object,
            "group_id": group,
        }
        result = app.call("knowledge_assert_entity", params)
    verb = "created" if result["created"] else "updated"
    cleared = [
        flag
        for flag, value in (("summary", summary), ("labels", label), ("attributes", attributes))
        if value is None
    ]
    show(
        result,
        as_json,
        f"{verb} entity {result['entity_uuid']}"
        + (
            f"; cleared (not given): {', '.join(cleared)}"
            if cleared and not result["created"]
            else ""
        )
        + _stale_note(result),
    )


@cli.command("assert-relationship")
def assert_relationship(
    source: str,
    predicate: str,
    target: str,
    fact: Annotated[str | None, typer.Option(help="Default: 'SOURCE PREDICATE TARGET'.")] = None,
    relation_type: Annotated[str | None, typer.Option()] = None,
    valid_at: Annotated[
        str | None, typer.Option(help="RFC 3339 time or date (2025-03-03: midnight UTC).")
    ] = None,
    attributes: Annotated[
        str | None, typer.Option(help='A JSON object, e.g. \'{"role": "lead"}\'.')
    ] = None,
    group: GroupOpt = "liminis",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create or replace an edge between two entities of a group.

    Clear-on-omit, as the seed says: on an existing edge, a fact, relation type, valid-at or
    attributes you leave out are reset (the fact to 'SOURCE PREDICATE TARGET').
    """
    flags = {
        "source_name": "SOURCE",
        "predicate": "PREDICATE",
        "target_name": "TARGET",
        "fact": "--fact",
        "relation_type": "--relation-type",
        "valid_at": "--valid-at",
        "attributes": "--attributes",
        "group_id": "--group",
    }
    with errors():
        attribute_object = json_object_flag("--attributes", attributes)
    with workspace_caller(workspace, "lcg assert-relationship", flags=flags) as app:
        params = {
            "source_name": source,
            "predicate": predicate,
            "target_name": target,
            "fact": fact,
            "relation_type": relation_type,
            "valid_at": valid_at,
            "attributes": attribute_object,
            "group_id": group,
        }
        result = app.call("knowledge_assert_relationship", params)
    verb = "created" if result["created"] else "updated"
    cleared = [
        flag
        for flag, value in (
            ("fact", fact),
            ("relation type", relation_type),
            ("valid-at", valid_at),
            ("attributes", attributes),
        )
        if value is None
    ]
    show(
        result,
        as_json,
        f"{verb} relationship {result['edge_uuid']}"
        + (
            f"; reset (not given): {', '.join(cleared)}"
            if cleared and not result["created"]
            else ""
        )
        + _stale_note(result),
    )


def _stale_note(result: dict[str, Any]) -> str:
    """embedding_stale and its advice, which only --json showed before."""
    stale = result.get("embedding_stale") or []
    if not stale:
        return ""
    return f"\nembedding_stale: {', '.join(stale)}: {result.get('embedding_warning')}"


@cli.command("add-episode")
def add_episode(
    name: str,
    body: Annotated[str | None, typer.Argument(help="Content; or use --file.")] = None,
    file: Annotated[
        Path | None, typer.Option(help="Read the content from a file; - reads standard input.")
    ] = None,
    source: Annotated[str, typer.Option(help="text, message or json.")] = "text",
    source_description: Annotated[str, typer.Option()] = "",
    reference_time: Annotated[str | None, typer.Option(help="RFC 3339; default now.")] = None,
    group: GroupOpt = "liminis",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store content as an episode (knowledge_add_episode)."""
    with errors():
        if (body is None) == (file is None):
            raise InvalidParams("episode_body", "give exactly one of BODY or --file")
        content = body if body is not None else read_file(Path(str(file)))
    params = {
        "name": name,
        "episode_body": content,
        "source": source,
        "source_description": source_description,
        "reference_time": reference_time,
        "group_id": group,
    }
    flags = {
        "name": "NAME",
        "episode_body": "BODY (or --file)",
        "source": "--source",
        "source_description": "--source-description",
        "reference_time": "--reference-time",
        "group_id": "--group",
    }
    with workspace_caller(workspace, "lcg add-episode", flags=flags) as app:
        result = app.call("knowledge_add_episode", params)
    show(result, as_json, f"added episode {result['episode_uuid']}")


@cli.command("list-entities")
def list_entities(
    group: Annotated[
        list[str] | None, typer.Option("--group", "-g", help="Repeat; default all groups.")
    ] = None,
    limit: Annotated[int, typer.Option(help="num_results")] = 500,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List entities (knowledge_list_entities)."""
    flags = {"num_results": "--limit", "group_ids": "--group"}
    with workspace_caller(workspace, "lcg list-entities", reads=True, flags=flags) as app:
        if group:  # refused as `lcg status -g` refuses it, not answered with an empty table
            known = app.call("knowledge_status", {})["wal_groups"]
            for name in group:
                if name not in known:
                    raise unknown_group(name, known)
        result = app.call("knowledge_list_entities", {"group_ids": group, "num_results": limit})
    if as_json:  # attributes as the object they went in as (ADR 0092)
        print_json(with_attribute_objects(result))
        return
    _print_entities(result["nodes"])


UUID_LENGTH = 36
SUMMARY_WIDTH = 40  # at most
SUMMARY_SHORTEST = 16  # a summary narrower than this is left out


def _print_entities(nodes: list[dict[str, Any]]) -> None:
    """One line per entity in the terminal's width: the uuid is never cut (it is what you
    copy) and the name gives way last; the summary is left out when too little of it would
    show (`--json` or `lcg call` has it whole)."""
    from rich.table import Column

    from lcg.interfaces.cli_listing import SEPARATOR, fitted, plain_table

    headers = ("group", "name", "labels", "summary")
    rows = [
        (
            node["group_id"],
            node["name"],
            ",".join(node["labels"]),
            " ".join(node["summary"].split()),
        )
        for node in nodes
    ]
    natural = [
        max([len(header), *(len(row[i]) for row in rows)]) for i, header in enumerate(headers)
    ]
    natural[3] = min(natural[3], SUMMARY_WIDTH)
    room = out.width - UUID_LENGTH - SEPARATOR
    widths = fitted(natural, room, last=1)  # the name gives way last
    shown = len(headers)
    if widths[3] < SUMMARY_SHORTEST:
        shown, widths = 3, fitted(natural[:3], room, last=1)
    table = plain_table(
        *(
            Column(header, width=width, no_wrap=True, overflow="ellipsis")
            for header, width in zip(headers[:shown], widths, strict=True)
        ),
        Column("uuid", no_wrap=True, min_width=UUID_LENGTH),
    )
    for node, row in zip(nodes, rows, strict=True):
        table.add_row(*(Text(cell) for cell in row[:shown]), Text(node["uuid"]))
    out.print(table)


@cli.command()
def call(
    method: Annotated[str, typer.Argument(help="An operation name, e.g. knowledge_status.")],
    params: Annotated[str, typer.Argument(help="JSON object of parameters.")] = "{}",
    workspace: WorkspaceOpt = None,
) -> None:
    """Call any operation of the table with JSON parameters; prints the JSON result."""
    with errors():
        operation, raw = checked_request(method, params)
    with workspace_caller(workspace, f"lcg call {method}", reads=operation.read_only) as app:
        print_json(app.call(method, raw))


@cli.command()
def demo(
    workspace: Annotated[
        Path, typer.Option("--workspace", "-w", help="Where to write the demo workspace.")
    ] = Path("lcg-demo"),
) -> None:
    """Run the main job on the embedded default: assert, add, list, replay to a seq, status."""
    from lcg.interfaces.demo import run_demo

    with errors():
        run_demo(load_settings(workspace), out)


cli.command("log")(cli_inspect.log_)
cli.command()(cli_inspect.tools)
cli.command()(cli_inspect.describe)
cli.command()(serve.serve)
cli.command()(portal_serve.portal)
cli_memory.register(cli)
cli_jobs.register(cli)
cli_ingest.register(cli)
cli_ontology.register(cli)
cli_port.register(cli)
cli.command()(cli_verbs.search)
cli.command()(cli_verbs.recall)
cli.command()(cli_verbs.inspect)
cli.add_typer(cli_verbs.marks, name="mark")
cli.command()(cli_verbs.forget)


def run(args: list[str], *, default: tuple[str, ...] = ()) -> None:
    """`lcg ARGS` through typer (the launcher, `lcg.interfaces.cli`, calls this for every
    command it does not answer itself); `default`: the command line when ARGS hold no command
    (`liminis-context-graph`, the seed's binary, serves the socket)."""
    os.umask(PRIVATE_UMASK)  # F7: what lcg creates is its owner's alone
    log_setup.notes_on_one_line()
    log_options, rest = log_setup.split_log_options(args)
    cli(args=[*log_options, *(serve.with_serve_default(rest) or default)])


@cli.command("rebind")
def rebind(
    source_group: Annotated[
        str, typer.Option("--source-group", help="Re-resolve the pointers naming this group.")
    ],
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-resolve the cross-group pointers naming a group (knowledge_rebind_pointers)."""
    flags = {"source_group_id": "--source-group"}
    with workspace_caller(workspace, "lcg rebind", flags=flags) as app:
        result = app.call("knowledge_rebind_pointers", {"source_group_id": source_group})
    summary = ", ".join(f"{key} {value}" for key, value in result.items())
    show(result, as_json, f"rebound pointers of {source_group}: {summary}")
