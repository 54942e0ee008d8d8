"""The `lcg` command line (typer): status, replay, assert, add, list, `call` for any tool, and
`serve` (the socket service or MCP over stdio, lcg.interfaces.serve).

Exit codes scripts can rely on (lcg.interfaces.exit_codes): 0 ok; 1 unexpected failure;
2 invalid parameters; 3 refused (not found, conflict, pinned group); 4 workspace held by
another writer; 5 projection error; 6 no socket service at `serve --connect PATH`; 7 a file of
the workspace cannot be used (the message names it and what to do).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from lcg.domain.errors import DomainError, InvalidParams, NotFound
from lcg.domain.events import DomainEvent, EventCodec
from lcg.domain.ids import GroupId
from lcg.interfaces import operations, serve
from lcg.interfaces.cli_caller import Caller, ServiceError, open_caller
from lcg.interfaces.config import Settings
from lcg.interfaces.demo import run_demo
from lcg.interfaces.exit_codes import (
    EXIT_BUSY,
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_PROJECTION,
    EXIT_REFUSED,
    EXIT_STORAGE,
)
from lcg.interfaces.graph_file import ForeignProjections
from lcg.interfaces.jsonrpc import STORAGE_ERROR, UNAVAILABLE
from lcg.interfaces.private_files import PRIVATE_UMASK
from lcg.projections.faults import FAULTS
from lcg.projections.runner import ProjectionError
from lcg.projections.wal.lease import WorkspaceBusy
from lcg.projections.wal.store import EventLog

cli = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="lcg, the liminis context graph: event-sourced memory for AI agents.",
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"lcg {metadata.version('liminis-context-graph')}\n")
        raise typer.Exit


@cli.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """lcg, the liminis context graph: event-sourced memory for AI agents."""


# Messages and stored names are printed as plain text, never as Rich markup, and unwrapped.
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Directory holding .lcg/ (default: LCG_WORKSPACE or the current directory).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]
GroupOpt = Annotated[str, typer.Option("--group", "-g", help="Group id.")]


def _settings(workspace: Path | None) -> Settings:
    return Settings.load(os.environ, Path.cwd(), workspace)


@contextmanager
def _app(
    workspace: Path | None,
    command: str,
    *,
    read_only: bool = False,
    reads: bool = False,
    flags: dict[str, str] | None = None,
) -> Iterator[Caller]:
    """The workspace, here or through the socket service that holds it (cli_caller).

    A command that only `reads` never creates a workspace: where there is none it says so.
    """
    settings = _settings(workspace)
    say = partial(_complain, "note")
    with _errors(flags):
        if reads and not settings.state_dir.exists():
            raise NotFound(
                f"workspace: there is no workspace at {settings.workspace} (no .lcg/); pass "
                "--workspace DIR (or set LCG_WORKSPACE), or write to create one here",
                field="workspace",
                rule="must name an existing workspace for a read",
            )
        with open_caller(settings, command, read_only=read_only, say=say) as caller:
            yield caller


@contextmanager
def _errors(flags: dict[str, str] | None = None) -> Iterator[None]:
    """Failures as one line on stderr and an exit code; `flags` maps the tool's parameter
    names to what the user typed (num_results -> --limit), so messages name the flag."""
    try:
        yield
    except WorkspaceBusy as error:
        _complain("error", str(error))
        raise typer.Exit(EXIT_BUSY) from None
    except InvalidParams as error:
        _complain("error", _as_typed(error.message, error.field, flags))
        raise typer.Exit(EXIT_INVALID) from None
    except DomainError as error:
        _complain("refused", error.message)
        raise typer.Exit(EXIT_REFUSED) from None
    except ProjectionError as error:
        _complain("projection error", str(error))
        raise typer.Exit(EXIT_PROJECTION) from None
    except (*FAULTS, ForeignProjections) as error:
        _complain("storage error", str(error))
        raise typer.Exit(EXIT_STORAGE) from None
    except ServiceError as error:
        kind, code = _SERVICE_ERRORS.get(error.kind, ("error", EXIT_FAILURE))
        if error.error.code == STORAGE_ERROR:
            kind, code = "storage error", EXIT_STORAGE
        elif error.error.code == UNAVAILABLE:
            kind, code = "error", EXIT_BUSY
        data = error.error.data
        field = data.get("field") if isinstance(data, dict) else None
        _complain(kind, _as_typed(error.error.message, field, flags))
        raise typer.Exit(code) from None


def _as_typed(message: str, field: str | None, flags: dict[str, str] | None) -> str:
    """`num_results: must be ...` -> `--limit: num_results: must be ...`."""
    if not flags or field is None:
        return message
    top = field.split(".", 1)[0]
    typed = flags.get(top)
    if typed is None or not message.startswith(f"{field}:"):
        return message
    return f"{typed}: {message}"


# What the socket service's error kinds mean as exit codes (the same as in this process).
_SERVICE_ERRORS = {
    "invalid_params": ("error", EXIT_INVALID),
    "method_not_found": ("error", EXIT_INVALID),
    "not_found": ("refused", EXIT_REFUSED),
    "conflict": ("refused", EXIT_REFUSED),
    "refused": ("refused", EXIT_REFUSED),
    "projection_error": ("projection error", EXIT_PROJECTION),
}


def _complain(kind: str, message: str) -> None:
    err.print(Text.assemble((f"{kind}: ", "red"), message))


def _print_json(result: Any) -> None:
    sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode() + "\n")


def _call(app: Caller, name: str, params: dict[str, Any]) -> dict[str, Any]:
    return app.call(name, params)


def _show(result: dict[str, Any], as_json: bool, summary: str) -> None:
    if as_json:
        _print_json(result)
    else:
        out.print(Text(summary))


@cli.command()
def status(
    workspace: WorkspaceOpt = None,
    group: Annotated[
        str | None, typer.Option("--group", "-g", help="Show only this group.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Counts, and per group the WAL head, applied seq, hydration and pin."""
    settings = _settings(workspace)
    read_only = settings.graph_path.exists()
    with _app(workspace, "lcg status", read_only=read_only, reads=True) as app:
        result = app.call("knowledge_status", {})
    groups = result["wal_groups"]
    if group is not None:
        if group not in groups:
            known = ", ".join(sorted(groups)) or "none"
            _complain("refused", f"group: no group {group!r} in this workspace (groups: {known})")
            raise typer.Exit(EXIT_REFUSED)
        groups = {group: groups[group]}
        result["wal_groups"] = groups
    if as_json:
        _print_json(result)
        return
    out.print(Text(f"workspace  {settings.workspace}"))
    out.print(
        f"entities {result['entity_count']}  relationships "
        f"{result['relationship_count']}  episodes {result['episode_count']}"
    )
    table = Table("group", "max_seq", "applied_seq", "hydration", "pinned_to")
    for name, wal in groups.items():
        table.add_row(
            Text(name),
            str(wal["max_seq"] or 0),
            str(wal["applied_seq"] or 0),
            wal["hydration_status"],
            "" if wal["pinned_to"] is None else str(wal["pinned_to"]),
        )
    out.print(table)


@cli.command()
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
    with _app(workspace, f"lcg replay --group {group}", flags=flags) as app:
        pin = _pinned_at(app, group)
        resumable = pin is not None and (to_seq is None or to_seq >= pin)
        if from_seq == 0 and not params["force_clear"] and pin is not None and resumable:
            params["from_seq"] = pin + 1  # "the rest": resume where the pin holds the group
            _complain("note", f"group {group!r} is pinned at seq {pin}; resuming there")
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
                _complain("refused", f"group {group!r} left as it was; nothing replayed")
                raise typer.Exit(EXIT_REFUSED)
        with _progress(enabled=not as_json) as progress:
            result = app.call("knowledge_rebuild_from_wal", params, progress)
    pin = result["pinned_to"]
    _show(
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
def _progress(*, enabled: bool) -> Iterator[Any]:
    if not enabled or not err.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    ) as bar:
        task = bar.add_task("replay", total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield report


@cli.command("assert-entity")
def assert_entity(
    name: str,
    summary: Annotated[str | None, typer.Option(help="Replaces the stored summary.")] = None,
    label: Annotated[list[str] | None, typer.Option(help="Repeat for several labels.")] = None,
    attributes: Annotated[str | None, typer.Option(help="JSON object.")] = None,
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
    with _app(workspace, "lcg assert-entity", flags=flags) as app:
        params = {
            "name": name,
            "summary": summary,
            "labels": label,
            "entity_uuid": entity_uuid,
            "attributes": _json_arg("attributes", attributes),
            "group_id": group,
        }
        result = _call(app, "knowledge_assert_entity", params)
    verb = "created" if result["created"] else "updated"
    cleared = [
        flag
        for flag, value in (("summary", summary), ("labels", label), ("attributes", attributes))
        if value is None
    ]
    _show(
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
    attributes: Annotated[str | None, typer.Option(help="JSON object.")] = None,
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
    with _app(workspace, "lcg assert-relationship", flags=flags) as app:
        params = {
            "source_name": source,
            "predicate": predicate,
            "target_name": target,
            "fact": fact,
            "relation_type": relation_type,
            "valid_at": valid_at,
            "attributes": _json_arg("attributes", attributes),
            "group_id": group,
        }
        result = _call(app, "knowledge_assert_relationship", params)
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
    _show(
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
    with _errors():
        if (body is None) == (file is None):
            raise InvalidParams("episode_body", "give exactly one of BODY or --file")
        content = body if body is not None else _read_file(Path(str(file)))
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
    with _app(workspace, "lcg add-episode", flags=flags) as app:
        result = _call(app, "knowledge_add_episode", params)
    _show(result, as_json, f"added episode {result['episode_uuid']}")


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
    with _app(workspace, "lcg list-entities", reads=True, flags=flags) as app:
        result = _call(app, "knowledge_list_entities", {"group_ids": group, "num_results": limit})
    if as_json:
        _print_json(result)
        return
    table = Table("group")
    table.add_column("name", no_wrap=True)
    table.add_column("labels")
    table.add_column("summary", overflow="ellipsis", no_wrap=True, max_width=40)
    table.add_column("uuid", no_wrap=True, min_width=36)  # never cut: it is what you copy
    for node in result["nodes"]:
        table.add_row(
            *(
                Text(cell)
                for cell in (
                    node["group_id"],
                    node["name"],
                    ",".join(node["labels"]),
                    node["summary"][:60],
                    node["uuid"],
                )
            )
        )
    out.print(table)


@cli.command()
def call(
    method: Annotated[str, typer.Argument(help="An operation name, e.g. knowledge_status.")],
    params: Annotated[str, typer.Argument(help="JSON object of parameters.")] = "{}",
    workspace: WorkspaceOpt = None,
) -> None:
    """Call any operation of the table with JSON parameters; prints the JSON result."""
    with _errors():
        raw = _json_arg("params", params)
        if not isinstance(raw, dict):
            raise InvalidParams("params", "must be a JSON object")
    operation = operations.BY_NAME.get(method)
    reads = operation is not None and operation.read_only
    with _app(workspace, f"lcg call {method}", reads=reads) as app:
        _print_json(app.call(method, raw))


@cli.command("log")
def log_(
    group: Annotated[str, typer.Option("--group", "-g", help="The group whose events to show.")],
    from_seq: Annotated[int, typer.Option(min=1, help="First seq to show.")] = 1,
    limit: Annotated[int, typer.Option(min=1, help="How many events at most.")] = 50,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A group's events with their seq, type, time and a one-line summary: what to pick
    `lcg replay --to-seq` from. Reads the WAL only (works beside a running service)."""
    settings = _settings(workspace)
    with _errors():
        if not settings.wal_path.exists():
            raise NotFound(
                f"workspace: there is no WAL at {settings.wal_path}",
                field="workspace",
                rule="must name an existing workspace",
            )
        events = EventLog(settings.wal_path, EventCodec(), settings.durability)
        try:
            if GroupId(group) not in events.groups():
                known = ", ".join(events.groups()) or "none"
                raise NotFound(
                    f"group: no group {group!r} in this workspace (groups: {known})",
                    field="group",
                    rule="must name a group with events",
                )
            rows = []
            for page in events.read(GroupId(group), after=from_seq - 1, upto=from_seq + limit - 1):
                rows.extend(page)
            head = events.head(group)
        finally:
            events.close()
    if as_json:
        _print_json(
            {
                "group_id": group,
                "max_seq": head,
                "events": [
                    {
                        "seq": r.seq,
                        "type": r.event.wire_name,
                        "occurred_at": r.event.occurred_at.isoformat(),
                        "summary": _event_summary(r.event),
                    }
                    for r in rows
                ],
            }
        )
        return
    table = Table("seq", "type", "time", "summary")
    for recorded in rows:
        table.add_row(
            str(recorded.seq),
            recorded.event.wire_name,
            recorded.event.occurred_at.strftime("%Y-%m-%d %H:%M:%S"),
            Text(_event_summary(recorded.event)),
        )
    out.print(table)
    shown = f"{rows[0].seq}-{rows[-1].seq}" if rows else "none"
    out.print(Text(f"group {group!r}: seqs {shown} of {head}"))


def _event_summary(event: DomainEvent, width: int = 100) -> str:
    """The event's fields on one line (times and long texts shortened)."""
    parts = []
    for item in dataclasses.fields(event):
        if item.name == "occurred_at":
            continue
        value = getattr(event, item.name)
        if value is None or value in ("", "{}", ()):
            continue
        if isinstance(value, datetime):
            text = value.isoformat()
        elif isinstance(value, tuple):
            text = ",".join(str(part) for part in value)
        else:
            text = str(value)
        text = " ".join(text.split())
        parts.append(f"{item.name}={text[:60] + '...' if len(text) > 60 else text}")
    line = " ".join(parts)
    return line if len(line) <= width else line[: width - 3] + "..."


@cli.command()
def tools() -> None:
    """List every tool: its name, scope and what it does (from the operation table)."""
    table = Table("tool", "scope", "what it does")
    for operation in operations.OPERATIONS:
        first = operation.description.split(". ")[0].rstrip(".") + "."
        table.add_row(Text(operation.name), operation.scope.value, Text(first))
    out.print(table)


@cli.command()
def describe(
    name: Annotated[str, typer.Argument(help="A tool name, e.g. knowledge_add_episode.")],
    as_json: JsonOpt = False,
) -> None:
    """A tool's description and parameters (type, default, bounds), from its schema."""
    with _errors():
        operation = operations.BY_NAME.get(name)
        if operation is None:
            raise operations.UnknownMethod(name)
    schema = operation.input_schema()
    if as_json:
        _print_json({"name": name, "description": operation.description, "inputSchema": schema})
        return
    out.print(Text(f"{name}  (scope: {operation.scope.value})"))
    out.print(Text(operation.description))
    table = Table("parameter", "type", "required", "default", "rules")
    required = set(schema.get("required", []))
    for field, spec in schema.get("properties", {}).items():
        table.add_row(
            Text(field),
            Text(_type_of(spec)),
            "yes" if field in required else "",
            Text("" if "default" not in spec else json.dumps(spec["default"])),
            Text(_rules_of(spec)),
        )
    out.print(table)
    out.print(Text(f"lcg call {name} '{{...}}'  (JSON object of these parameters)"))


def _type_of(spec: dict[str, Any]) -> str:
    if "anyOf" in spec:
        return " or ".join(_type_of(option) for option in spec["anyOf"])
    if "enum" in spec:
        return " | ".join(json.dumps(value) for value in spec["enum"])
    kind = str(spec.get("type", "any"))
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array of {_type_of(spec['items'])}"
    return kind


def _rules_of(spec: dict[str, Any]) -> str:
    parts = []
    for key, word in (
        ("minLength", "min length"),
        ("maxLength", "max length"),
        ("minimum", ">="),
        ("maximum", "<="),
        ("maxItems", "max items"),
        ("minItems", "min items"),
    ):
        if key in spec:
            parts.append(f"{word} {spec[key]}")
    for option in spec.get("anyOf", []):
        rules = _rules_of(option)
        if rules:
            parts.append(rules)
    if "pattern" in spec:
        parts.append(f"pattern {spec['pattern']}")
    if "description" in spec:
        parts.append(str(spec["description"]))
    return "; ".join(parts)


@cli.command()
def demo(
    workspace: Annotated[
        Path, typer.Option("--workspace", "-w", help="Where to write the demo workspace.")
    ] = Path("lcg-demo"),
) -> None:
    """Run the main job on the embedded default: assert, add, list, replay to a seq, status."""
    with _errors():
        run_demo(_settings(workspace), out)


def _read_file(path: Path) -> str:
    """--file: a UTF-8 text file, or `-` for standard input."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise InvalidParams("--file", "must name a readable file", str(error)) from None
    except UnicodeDecodeError as error:
        raise InvalidParams("--file", "must be UTF-8 text", str(error)) from None


def _json_arg(field: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidParams(field, "must be valid JSON", str(error)) from None


cli.command()(serve.serve)


def main() -> None:
    """`lcg`: with no command, the help."""
    os.umask(PRIVATE_UMASK)  # F7: what lcg creates is its owner's alone
    cli(args=serve.with_serve_default(sys.argv[1:]))


def service_main() -> None:
    """`liminis-context-graph`, the seed's binary: with no command it serves the socket."""
    os.umask(PRIVATE_UMASK)
    cli(args=serve.with_serve_default(sys.argv[1:]) or ["serve"])
