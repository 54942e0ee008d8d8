"""`lcg import FILE... --format F` and `lcg export --format F -o PATH` (issue 32).

Formats: mcp-memory, basic-memory, neo4j, lcg-jsonl (docs/formats.md). An import checks
every line first (a bad one is named by file and line, and nothing is written unless
--skip-bad), then creates a mark and writes through the ordinary write tools, here or through
the service holding the workspace (ADR 0083); an export replays the group to one seq in a
temporary projection and writes that (ADR 0084). The format modules are imported inside the
commands: `lcg --version` never loads them (ADR 0065).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lcg.domain.errors import InvalidParams, NotFound
from lcg.interfaces.cli_common import (
    err,
    errors,
    load_settings,
    out,
    print_json,
    unknown_group,
    workspace_caller,
)
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt
from lcg.interfaces.cli_recovery import progress_bar
from lcg.interfaces.exit_codes import EXIT_INVALID

if TYPE_CHECKING:
    from lcg.interfaces.config import Settings
    from lcg.interfaces.port.records import Record
    from lcg.interfaces.port.snapshot import Progress, Snapshot

FormatOpt = Annotated[
    str,
    typer.Option(
        "--format", "-f", help="mcp-memory, basic-memory, neo4j or lcg-jsonl (docs/formats.md)."
    ),
]
PortGroupOpt = Annotated[
    str | None, typer.Option("--group", "-g", help="Group id (default: liminis).")
]
PortSessionOpt = Annotated[
    str | None, typer.Option("--session", help="A session (a session is a group).")
]
BAD_SHOWN = 50  # bad lines printed; --json lists them all


def _target(group: str | None, session: str | None) -> str:
    from lcg.domain import rules
    from lcg.interfaces.config import session_name

    if group is not None and session is not None:
        raise InvalidParams("--group", "give at most one of --group and --session")
    if session is not None:
        return session_name(session)
    return rules.group_id(group or "liminis", "--group")


def _format(value: str) -> str:
    from lcg.interfaces.port.records import FORMATS

    if value not in FORMATS:
        raise InvalidParams("--format", f"must be one of {', '.join(FORMATS)}", f"got {value!r}")
    return value


def _reader(fmt: str, files: list[Path]) -> Callable[[], Iterator[Record]]:
    from lcg.interfaces.port import basic_memory, lcg_jsonl, mcp_memory, neo4j

    if fmt == "basic-memory":
        notes = basic_memory.notes(files)  # paths checked once, before any pass
        return lambda: basic_memory.read(notes)
    readers = {"mcp-memory": mcp_memory.read, "neo4j": neo4j.read, "lcg-jsonl": lcg_jsonl.read}
    read = readers[fmt]
    for path in files:
        if not path.is_file():
            raise InvalidParams("FILE", "must be a readable file", f"{path} is not")
    return lambda: read(files)


def import_(
    files: Annotated[list[Path], typer.Argument(help="The files (basic-memory: folders).")],
    fmt: FormatOpt,
    group: PortGroupOpt = None,
    session: PortSessionOpt = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would change; write nothing.")
    ] = False,
    skip_bad: Annotated[
        bool,
        typer.Option("--skip-bad", help="Import the good lines and list the bad ones skipped."),
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Import files of another memory tool's format into a group: ordinary events, after a
    mark the summary names (a bounded replay to it undoes the import). Every line is checked
    first; a bad one stops the import (nothing written) unless --skip-bad. What the group
    already holds is not written again: importing a file twice appends nothing."""
    from lcg.interfaces.port import importing
    from lcg.interfaces.port.concepts import check_images
    from lcg.interfaces.port.records import PortError

    flags = {"group_id": "--group"}
    with errors(flags):
        group_id = _target(group, session)
        fmt = _format(fmt)
        try:
            records = _reader(fmt, files)
        except PortError as error:
            raise InvalidParams(
                "FILE", "must be readable, inside the given folder", str(error)
            ) from None
        settings = load_settings(workspace)
        with (
            progress_bar("reading the group", enabled=not as_json) as progress,
            _snapshot(settings, group_id, None, progress=progress) as snapshot,
        ):
            existing = importing.Existing.of(snapshot)
        plan, skip = importing.check(records, existing)
    report: dict[str, Any] = {
        "format": fmt,
        "group_id": group_id,
        "files": [str(f) for f in files],
        "dry_run": dry_run,
        **plan.counts,
        "bad": [{"where": b.where, "message": b.message} for b in plan.bad],
        "mark": None,
    }
    if plan.bad and not skip_bad:
        _print_bad(plan.bad)
        if as_json:
            print_json({**report, "imported": False})
        err.print(
            f"nothing imported: {len(plan.bad)} bad line(s); fix them, or pass --skip-bad "
            "to import the rest",
            highlight=False,
            markup=False,
        )
        raise typer.Exit(EXIT_INVALID)
    if not dry_run and plan.writes:
        memory = plan.counts["concepts"]["created"] + plan.counts["concept_edges"]["created"]
        with (
            workspace_caller(
                workspace, "lcg import", flags=flags, session=group_id if memory else None
            ) as caller,
            _Bar("importing", plan.writes, enabled=not as_json) as advance,
        ):
            if memory:  # before the mark: image concepts need client vectors (ADR 0095)
                check_images(plan.concepts, caller, skip)
            now = dt.datetime.now(dt.UTC)
            mark = caller.call(
                "knowledge_wal_mark_create",
                {"name": importing.mark_name(now, map(str, files)), "group_id": group_id},
            )
            report["mark"] = {"name": mark["name"], "seq": mark["seq"]}
            concepts = plan.concepts if memory else None
            importing.write(records, skip, existing, caller, group_id, advance, concepts)
    if as_json:
        print_json({**report, "imported": not dry_run})
        return
    if plan.bad:
        _print_bad(plan.bad, "skipped")
    _summary(report, plan.writes)


def _summary(report: dict[str, Any], writes: int) -> None:
    verb = "would write" if report["dry_run"] else "wrote"
    memory = ("concepts", "concept_edges")
    parts = [
        f"{kind.replace('_', ' ')}: {c['created']} new, {c['updated']} changed, "
        f"{c['unchanged']} already there"
        for kind, c in ((k, report[k]) for k in importing_kinds())
        if kind not in memory or any(c.values())
    ]
    lines = [f"{report['format']} into group {report['group_id']!r}: {'; '.join(parts)}"]
    # a graph write is one event; a memory write (a concept, an edge) its intent and outcome
    unit = "change(s)" if any(report[k]["created"] for k in memory) else "event(s)"
    if report["bad"]:
        lines.append(f"skipped {len(report['bad'])} bad line(s) (listed above)")
    mark = report["mark"]
    if mark is not None:
        lines.append(
            f"{verb} {writes} {unit} after mark {mark['name']} (seq {mark['seq']}); undo with "
            f"`lcg replay --group {report['group_id']} --to-seq {mark['seq']} --force-clear`"
        )
    elif not writes:
        lines.append("nothing to write: the group already holds all of it")
    else:
        lines.append(f"{verb} {writes} {unit} (dry run: nothing written)")
    for line in lines:
        out.print(line, highlight=False, markup=False)


def importing_kinds() -> tuple[str, ...]:
    from lcg.interfaces.port.importing import KINDS

    return KINDS


def _print_bad(bad: list[Any], verb: str = "bad") -> None:
    for item in bad[:BAD_SHOWN]:
        err.print(f"{verb}: {item.where}: {item.message}", highlight=False, markup=False)
    if len(bad) > BAD_SHOWN:
        err.print(f"... and {len(bad) - BAD_SHOWN} more (--json lists all)", markup=False)


def export(
    fmt: FormatOpt,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="The file to write (neo4j CSV, basic-memory: a folder)."
        ),
    ],
    group: PortGroupOpt = None,
    session: PortSessionOpt = None,
    as_of_seq: Annotated[
        int | None, typer.Option("--as-of-seq", min=0, help="The group as it was at this seq.")
    ] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Export a group (or session) in a format other tools read: one consistent snapshot, the
    group's events replayed to its last seq (or --as-of-seq) in a temporary projection. Reads
    the WAL only: works beside a running service. The summary says what the format drops."""
    from lcg.interfaces.port import exporting

    with errors({"group_id": "--group"}):
        group_id = _target(group, session)
        fmt = _format(fmt)
        exporting.check_output(fmt, output)
        settings = load_settings(workspace)
        with (
            progress_bar("reading the group", enabled=not as_json) as progress,
            _snapshot(settings, group_id, as_of_seq, known=True, progress=progress) as snapshot,
        ):
            result = exporting.export(fmt, snapshot, output, dt.datetime.now(dt.UTC))
    if as_json:
        print_json(result)
        return
    counts = ", ".join(f"{n} {kind}" for kind, n in result["written"].items())
    out.print(
        f"exported group {group_id!r} as of seq {result['as_of_seq']} to {result['output']} "
        f"({fmt}): {counts}",
        highlight=False,
        markup=False,
    )
    if result["dropped"]:
        out.print(f"not carried by {fmt}: {result['dropped']}", highlight=False, markup=False)


def _snapshot(
    settings: Settings,
    group_id: str,
    as_of_seq: int | None,
    *,
    known: bool = False,
    progress: Progress | None = None,
) -> Snapshot:
    from lcg.interfaces.port.snapshot import AsOfSeqTooHigh, Snapshot
    from lcg.projections.wal.opening import open_log

    files = settings.files
    if not files.store_url and not settings.wal_path.exists():
        if known:
            raise NotFound(
                f"workspace: there is no WAL at {settings.wal_path}",
                field="workspace",
                rule="must name an existing workspace",
            )
        return Snapshot(None, group_id)
    log = open_log(files)  # the file or [store] url's database: one read of it for both
    try:
        if known:
            groups = log.groups()
            if group_id not in groups:
                raise unknown_group(group_id, groups)
        return Snapshot(log, group_id, as_of_seq, progress)
    except AsOfSeqTooHigh as error:
        raise InvalidParams(
            "--as-of-seq", f"must be at most the group's last seq {error.head}", f"got {error.seq}"
        ) from None
    finally:
        log.close()


class _Bar:
    """A bar on a terminal's stderr advanced once per write; a no-op elsewhere."""

    def __init__(self, label: str, total: int, *, enabled: bool) -> None:
        self.label, self.total = label, total
        self.enabled = enabled and err.is_terminal
        self.progress: Any = None

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.progress = Progress(
            TextColumn(self.label), BarColumn(), MofNCompleteColumn(), console=err, transient=True
        )
        self.progress.__enter__()
        task = self.progress.add_task(self.label, total=self.total)
        return lambda: self.progress.advance(task)

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.__exit__(None, None, None)


def register(cli: typer.Typer) -> None:
    cli.command("import")(import_)
    cli.command("export")(export)
