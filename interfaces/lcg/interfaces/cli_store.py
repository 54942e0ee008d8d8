"""`lcg store copy` and `lcg store verify`: moving the event log between its homes, the
workspace's SQLite file and a PostgreSQL database, and checking that two logs hold the same
history (issue 28 item 4; docs/adr/0073-the-workspace-on-a-log-store.md).

A store is named by a postgresql:// URL or by the path of an SQLite WAL file; the default
source is the workspace's configured store (`[store] url`, else `.lcg/wal.sqlite`). Nothing
heavy is imported until a command runs (ADR 0065, 0072).
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from lcg.domain.errors import Conflict, InvalidParams, NotFound
from lcg.interfaces.cli_common import complain, err, errors, load_settings, out, print_json
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt
from lcg.interfaces.exit_codes import EXIT_FAILURE

if TYPE_CHECKING:
    from lcg.interfaces.config import Settings
    from lcg.projections.wal.port import LogStore

store = typer.Typer(
    no_args_is_help=True,
    help="Move the event log between the workspace's SQLite file and PostgreSQL, and compare.",
)
SCHEMES = ("postgresql://", "postgres://")

ToOpt = Annotated[
    str,
    typer.Option(
        "--to", help="The target: a postgresql:// URL, or the path of an SQLite WAL file."
    ),
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="The source: a postgresql:// URL or an SQLite WAL file; default the workspace's"
        " configured store ([store] url, else .lcg/wal.sqlite).",
    ),
]


def _name(spec: str) -> str:
    """A store as messages name it (a URL without its password)."""
    if spec.startswith(SCHEMES):
        from lcg.projections.wal.postgres import describe

        return describe(spec)
    return str(Path(spec).absolute())


def _checked(spec: str, flag: str) -> str:
    """A postgresql:// URL or a file path; any other URL is refused naming its scheme only."""
    if "://" in spec and not spec.startswith(SCHEMES):
        scheme = spec.split("://", 1)[0][:20]  # never the rest: it may carry a password
        raise InvalidParams(flag, "must be a postgresql:// URL or a file path", f"got {scheme!r}")
    return spec


def _open(spec: str, flag: str, *, create: bool) -> LogStore:
    """The store `spec` names: a PostgreSQL log (its tables made on first use), or an SQLite
    WAL file (a source must exist; a target is created)."""
    from lcg.projections.wal.opening import open_url
    from lcg.projections.wal.store import EventLog

    if _checked(spec, flag).startswith(SCHEMES):
        return open_url(spec)
    path = Path(spec)
    if not create and not path.is_file():
        raise NotFound(
            f"{flag}: there is no WAL file at {path.absolute()}",
            field=flag,
            rule="must name an existing SQLite WAL file or a postgresql:// URL",
        )
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    from lcg.domain.events import EventCodec

    return EventLog(path, EventCodec(), durability="full")


def _source(settings: Settings, given: str | None) -> str:
    if given:
        return given
    if settings.store_url:
        return settings.store_url
    if not settings.wal_path.is_file():
        raise NotFound(
            f"--from: the workspace {settings.workspace} has no log to copy (no"
            f" {settings.wal_path}); pass --from or --workspace",
            field="--from",
            rule="must name a log that exists",
        )
    return str(settings.wal_path)


def _lease(stack: ExitStack, settings: Settings, source: str) -> None:
    """Copying the workspace's own store: its writer lease is held, so no process of this
    workspace writes meanwhile (other nodes on a shared log are the operator's to stop)."""
    if (
        source not in (settings.store_url, str(settings.wal_path))
        or not settings.state_dir.is_dir()
    ):
        return
    from lcg.interfaces.workspace import utc_now
    from lcg.projections.wal.lease import WriterLease

    lease = WriterLease(settings.lease_path, "lcg store copy", utc_now())
    lease.acquire()
    stack.callback(lease.release)


def _progress(group: str, done: int, total: int) -> None:
    err.print(Text(f"  {group}: {done} of {total} events"), highlight=False)


@store.command("copy")
def copy(
    to: ToOpt,
    from_: FromOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Erase a target that holds events first.")
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Copy every group's stream (seqs, checksums), the pins, the marks and the log's identity
    from one store to another: the projections built from the source serve the copy as they
    are. A target that holds events is refused unless --force."""
    from lcg.projections.wal.copy import TargetNotEmpty, copy_log

    settings = load_settings(workspace)
    with errors({"to": "--to", "from": "--from"}), ExitStack() as stack:
        _checked(to, "--to")
        source_spec = _checked(_source(settings, from_), "--from")
        if _name(source_spec) == _name(to):
            raise InvalidParams("--to", "must name another store than the source", _name(to))
        _lease(stack, settings, source_spec)
        source = _open(source_spec, "--from", create=False)
        stack.callback(source.close)
        target = _open(to, "--to", create=True)
        stack.callback(target.close)
        if force:
            target.truncate_all()
        err.print(Text(f"copying {source.where} -> {target.where}"), highlight=False)
        try:
            copied = copy_log(source, target, _progress)
        except TargetNotEmpty:
            raise Conflict(
                f"--force: {target.where} already holds events; pass --force to erase them"
                " first (marks stay, in an older generation), or choose another --to",
                field="force",
                rule="must be given to copy into a store that holds events",
            ) from None
    result: dict[str, Any] = {
        "from": source.where,
        "to": target.where,
        "groups": copied.groups,
        "events": copied.events,
        "marks": copied.marks,
        "pins": copied.pins,
        "identity": copied.identity,
    }
    if as_json:
        print_json(result)
        return
    out.print(
        Text(
            f"copied {copied.events} events of {copied.groups} group(s), {copied.marks} mark(s)"
            f" and {copied.pins} pin(s) from {source.where} to {target.where}"
            f" (identity {copied.identity}, kept)"
        ),
        highlight=False,
    )


@store.command("verify")
def verify(
    against: Annotated[
        str,
        typer.Option(
            "--against", help="The other store: a postgresql:// URL or an SQLite WAL file."
        ),
    ],
    from_: FromOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare two logs group by group: heads, counts and a digest of every event. Exit 0 when
    they hold the same history, 1 naming the first group and seq that differ."""
    from lcg.projections.wal.copy import compare

    settings = load_settings(workspace)
    with errors({"against": "--against", "from": "--from"}), ExitStack() as stack:
        _checked(against, "--against")
        one = _open(_source(settings, from_), "--from", create=False)
        stack.callback(one.close)
        other = _open(against, "--against", create=False)
        stack.callback(other.close)
        compared = compare(one, other)
        identities = (one.identity, other.identity)
    difference = compared.difference
    result: dict[str, Any] = {
        "same": difference is None,
        "from": one.where,
        "against": other.where,
        "events": compared.events,
        "groups": {g: {"events": n, "head": h} for g, (n, h) in compared.groups.items()},
        "same_identity": identities[0] == identities[1],
        "difference": None
        if difference is None
        else {"group_id": difference.group_id, "seq": difference.seq, "what": difference.what},
    }
    if as_json:
        print_json(result)
    elif difference is None:
        out.print(
            Text(
                f"the same: {compared.events} events in {len(compared.groups)} group(s)"
                f" ({one.where} and {other.where})"
                + ("" if result["same_identity"] else "; the identities differ")
            ),
            highlight=False,
        )
    if difference is not None:
        complain(
            "differs",
            f"group {difference.group_id!r} at seq {difference.seq}: {difference.what}"
            f" ({one.where} against {other.where})",
        )
        raise typer.Exit(EXIT_FAILURE)
