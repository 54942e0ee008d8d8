"""`lcg recover STRATEGY` and `lcg recover --full`: knowledge_recover / knowledge_recover_full
from the command line (ADR 0038), through the serving process that holds the workspace, or,
with none, through a serving process of its own that lives for the one call (so it works on a
workspace that does not open: that is when it is needed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from lcg.domain.errors import InvalidParams
from lcg.domain.rules import RecoveryStrategy
from lcg.interfaces.cli_common import complain, errors, load_settings, show
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from lcg.interfaces.config import Settings


def recover(
    strategy: Annotated[
        RecoveryStrategy | None,
        typer.Argument(
            help="drop_lbug_wal | rebuild_from_workspace_wal | restore_from_backup (or --full)."
        ),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="knowledge_recover_full: rebuild if needed.")
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recover a workspace that does not open, or rebuild its projections from the WAL.

    Nothing is deleted: what a strategy replaces is renamed `<name>.recovered-<UTC time>`
    (restore_from_backup: `.lcg.replaced-<UTC time>`). The WAL is never changed, except by
    restore_from_backup, which restores the dump in .lcg/wal-compacted.
    """
    with errors({"strategy": "STRATEGY"}):
        if full == (strategy is not None):
            raise InvalidParams(
                "STRATEGY",
                "give one strategy (drop_lbug_wal, rebuild_from_workspace_wal, "
                "restore_from_backup) or --full, not both or neither",
            )
        settings = load_settings(workspace)
        if full:
            result = _call(settings, "knowledge_recover_full", {})
            summary = (
                "nothing to recover: the workspace is healthy"
                if not result["recovery_needed"]
                else f"recovered: {result['mutations_replayed']} events replayed, "
                f"{result['episodes_after']} episodes"
            )
        else:
            result = _call(settings, "knowledge_recover", {"strategy": strategy})
            summary = f"{strategy}: {result['detail']}" + (
                f"; set aside: {', '.join(result['set_aside'])}" if result["set_aside"] else ""
            )
    show(result, as_json, summary if result["success"] else f"not recovered: {result}")
    if not result["success"]:
        raise typer.Exit(1)


def _call(settings: Settings, method: str, params: dict[str, Any]) -> dict[str, Any]:
    from lcg.interfaces.cli_caller import ServiceError, service_at
    from lcg.interfaces.jsonrpc import RpcError

    # healthy or degraded; a rebuild of a large workspace takes a while
    remote = service_at(settings.socket_path, healthy_only=False, timeout=600.0)
    if remote is not None:
        complain("note", f"the workspace is served at {settings.socket_path}; recovering there")
        try:
            return remote.call(method, params)
        finally:
            remote.close()
    from lcg.interfaces.service import Service

    service = Service(settings, command=f"lcg recover ({method})")
    service.start()  # healthy or degraded: recovery answers in both
    try:
        return service.call(method, params)
    except RpcError as error:
        raise ServiceError(error) from None
    finally:
        service.close()
