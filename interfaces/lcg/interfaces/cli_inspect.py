"""`lcg tools`, `lcg describe NAME` and `lcg log`: what the table and a group's log hold."""

from __future__ import annotations

import dataclasses
import json
import shlex
import textwrap
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from lcg.domain.errors import NotFound
from lcg.domain.ids import GroupId
from lcg.interfaces import schema_text, tool_catalogue
from lcg.interfaces.cli_common import errors, load_settings, out, print_json, unknown_group
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from lcg.domain.events import DomainEvent
    from lcg.projections.wal.store import RecordedEvent

UUID_FIELD_WIDTH = len("entity_uuid=") + 36


def log_(
    group: Annotated[str, typer.Option("--group", "-g", help="The group whose events to show.")],
    from_seq: Annotated[int, typer.Option(min=1, help="First seq to show.")] = 1,
    limit: Annotated[int, typer.Option(min=1, help="How many events at most.")] = 50,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A group's events with their seq, type, time and a one-line summary: what to pick
    `lcg replay --to-seq` from. Reads the WAL only (works beside a running service)."""
    from lcg.projections.wal.opening import open_log

    settings = load_settings(workspace)
    with errors():
        if not settings.store_url and not settings.wal_path.exists():
            raise NotFound(
                f"workspace: there is no WAL at {settings.wal_path}",
                field="workspace",
                rule="must name an existing workspace",
            )
        events = open_log(settings.files)
        try:
            if GroupId(group) not in events.groups():
                raise unknown_group(group, events.groups())
            rows = []
            for page in events.read(GroupId(group), after=from_seq - 1, upto=from_seq + limit - 1):
                rows.extend(page)
            head = events.head(group)
        finally:
            events.close()
    if as_json:
        print_json(
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
    _print_events(rows)
    shown = f"{rows[0].seq}-{rows[-1].seq}" if rows else "none"
    out.print(Text(f"group {group!r}: seqs {shown} of {head}"))


TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
WIDE = 100  # narrower, the time is left out (--json has it) for the summary's sake


def _print_events(rows: list[RecordedEvent]) -> None:
    """One line per event in the terminal's width: the summary keeps the fields that fit
    whole, at least `entity_uuid=<36 characters>` (issue 10: an id is never cut)."""
    from rich.table import Column

    from lcg.interfaces.cli_listing import SEPARATOR, plain_table

    with_time = out.width >= WIDE
    seq_width = max([len("seq"), *(len(str(r.seq)) for r in rows)])
    type_width = max([len("type"), *(len(r.event.wire_name) for r in rows)])
    used = seq_width + type_width + (len("2026-12-05 01:02:03") if with_time else 0)
    summary_width = max(
        out.width - used - SEPARATOR * (3 if with_time else 2), UUID_FIELD_WIDTH + len(" ...")
    )
    table = plain_table(
        Column("seq", no_wrap=True),
        Column("type", no_wrap=True),
        *([Column("time", no_wrap=True)] if with_time else []),
        Column("summary", no_wrap=True, min_width=UUID_FIELD_WIDTH),
    )
    for recorded in rows:
        time = [recorded.event.occurred_at.strftime(TIME_FORMAT)] if with_time else []
        table.add_row(
            str(recorded.seq),
            recorded.event.wire_name,
            *time,
            Text(_event_summary(recorded.event, summary_width)),
        )
    out.print(table)


def _event_summary(event: DomainEvent, width: int = 200) -> str:
    """The event's fields on one line: long texts shortened, and past `width` the remaining
    fields left out whole (" ..."), so an id is never cut inside."""
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
    line = ""
    for part in parts:
        longer = f"{line} {part}" if line else part
        if len(longer) > width - len(" ..."):
            return f"{line} ..."
        line = longer
    return line


def tools() -> None:
    """List every tool: its name, scope and what it does (from the operation table)."""
    from lcg.interfaces.cli_listing import print_tools

    print_tools(out)


def describe(
    name: Annotated[str, typer.Argument(help="A tool name, e.g. knowledge_add_episode.")],
    as_json: JsonOpt = False,
) -> None:
    """A tool's description and parameters (type, default, bounds), from its schema."""
    with errors():
        operation = tool_catalogue.by_name().get(name)
        if operation is None:
            raise _unknown_method(name)
    schema = operation.input_schema
    if as_json:
        print_json({"name": name, "description": operation.description, "inputSchema": schema})
        return
    width = max(out.width, 40)
    lines = [f"{name}  (scope: {operation.scope})", *textwrap.wrap(operation.description, width)]
    fields = schema_text.fields(schema, operation.example)
    lines += ["", "parameters:" if fields else "no parameters"]
    for index, field in enumerate(fields):
        has_fields = index + 1 < len(fields) and fields[index + 1].depth > field.depth
        lines += _field_lines(field, width, with_example=not has_fields)
    lines += ["", "example:" if operation.example is not None else "call:"]
    params = "{...}" if operation.example is None else json.dumps(operation.example)
    lines.append(f"  lcg call {name} {shlex.quote(params)}")
    out.print(Text("\n".join(lines)))


def _field_lines(field: schema_text.Field, width: int, *, with_example: bool) -> list[str]:
    """A parameter (or a field of the object it takes) as a definition: its name, type and
    rules on one line, then its description and an example, indented under it."""
    indent = "  " * (field.depth + 1)
    facts = [field.type, "required" if field.required else "optional"]
    facts += [f"default {field.default}"] if field.default else []
    facts += [field.bounds] if field.bounds else []
    head = textwrap.wrap(
        f"{field.name}: {', '.join(facts)}",
        width,
        initial_indent=indent,
        subsequent_indent=indent + "    ",
        break_on_hyphens=False,
    )
    body = [field.description] if field.description else []
    body += [f"e.g. {field.example}"] if with_example and field.example else []
    more = indent + "    "
    return head + [
        line
        for text in body
        for line in textwrap.wrap(text, width, initial_indent=more, subsequent_indent=more)
    ]


def _unknown_method(name: str) -> Exception:
    """The table's refusal of a name it lacks (with its suggestions): only this error path
    imports the table."""
    from lcg.interfaces.operations import UnknownMethod

    return UnknownMethod(name)
