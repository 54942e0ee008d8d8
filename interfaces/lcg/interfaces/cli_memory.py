"""The memory tools on the command line: `lcg derive`, `lcg record-action`, `lcg stats`.

Each is one call of its lambo_* tool, here or through the service that holds the workspace
(cli_caller), printing the tool's text (`--json`: its structured content). A write waits for
its receipt by default (`--wait-ms`, as lambo_stats's wait_ms), since a command that exits
with its write still pending would leave it to the next process; `--wait-ms 0` only acks.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from lcg.interfaces.cli_common import out as console
from lcg.interfaces.cli_common import print_json, workspace_caller
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt

if TYPE_CHECKING:
    from lcg.interfaces.cli_caller import Caller

DEFAULT_AGENT = "lcg-cli"
AgentOpt = Annotated[
    str | None,
    typer.Option(
        "--agent",
        "--agent-id",
        help=f"Your stable agent id (default: LCG_AGENT_ID or {DEFAULT_AGENT!r}).",
    ),
]
SessionOpt = Annotated[
    str | None,
    typer.Option("--session", help="The session (default: LCG_SESSION or liminis)."),
]
WaitOpt = Annotated[
    int,
    typer.Option("--wait-ms", help="Wait this long for the write to be applied (0: ack only)."),
]
Refs = Annotated[list[str] | None, typer.Option(help="Repeat for several.")]
EventTimeOpt = Annotated[
    str | None, typer.Option("--event-time", help="RFC3339 historical about-time.")
]
RepoScopeOpt = Annotated[
    str | None,
    typer.Option(
        "--repo-scope",
        help="The repository the write's paths belong to (repo_scope), such as "
        "github.com/acme/widgets: README.md in two repositories is then two concepts.",
    ),
]

FLAGS = {
    "agent_id": "--agent",
    "event_time": "--event-time",
    "depends_on": "--depends-on",
    "against": "--against",
    "produces": "--produces",
    "modifies": "--modifies",
    "concept_type": "--type",
    "wait_ms": "--wait-ms",
    "scope": "--session",
    "repo_scope": "--repo-scope",
}


def agent_id(agent: str | None) -> str:
    """--agent, else LCG_AGENT_ID, else the CLI's documented default agent id."""
    return agent or os.environ.get("LCG_AGENT_ID", "").strip() or DEFAULT_AGENT


def scope_of(session: str | None) -> dict[str, Any]:
    """--session as the tool's `scope` (omitted: the session the workspace serves)."""
    return {} if session is None else {"scope": session}


def repo_scope_of(repo_scope: str | None) -> dict[str, Any]:
    """--repo-scope as the tool's `repo_scope` (omitted: the call writes as without one)."""
    return {} if repo_scope is None else {"repo_scope": repo_scope}


def _print(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(result["structuredContent"])
    else:
        console.print(result["text"], highlight=False, markup=False)


def _write(caller: Caller, tool: str, params: dict[str, Any], wait_ms: int, as_json: bool) -> None:
    ack = caller.call(tool, params)
    if wait_ms <= 0:
        _print(ack, as_json)
        return
    receipt = ack["structuredContent"]["receipt"]
    if ack["structuredContent"]["receipt_state"] == "dropped":
        _print(ack, as_json)
        return
    settled = caller.call(
        "lambo_stats",
        {"agent_id": params["agent_id"], "receipt": receipt, "wait_ms": wait_ms},
    )
    if as_json:
        print_json({**ack["structuredContent"], "outcome": settled["structuredContent"]["receipt"]})
    else:
        console.print(ack["text"].split("\n")[0], highlight=False, markup=False)
        console.print(settled["text"].split("\n")[0], highlight=False, markup=False)


def derive(
    content: Annotated[list[str], typer.Argument(help="One fact per argument.")],
    concept_type: Annotated[
        str, typer.Option("--type", help="entity, logic, constraint, resource or observation.")
    ] = "logic",
    depends_on: Refs = None,
    against: Refs = None,
    agent: AgentOpt = None,
    event_time: EventTimeOpt = None,
    session: SessionOpt = None,
    repo_scope: RepoScopeOpt = None,
    wait_ms: WaitOpt = 20_000,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store concepts (lambo_derive): each CONTENT is one concept of --type; --depends-on and
    --against (the 8-hex short id, the node id or the exact content) apply to each;
    --repo-scope names the repository a path-like resource belongs to."""
    concept = {"concept_type": concept_type, "depends_on": depends_on, "against": against}
    params: dict[str, Any] = {
        "agent_id": agent_id(agent),
        "concepts": [{"content": text, **concept} for text in content],
        "event_time": event_time,
        **scope_of(session),
        **repo_scope_of(repo_scope),
    }
    with workspace_caller(workspace, "lcg derive", flags=FLAGS, session=session) as caller:
        _write(caller, "lambo_derive", params, wait_ms, as_json)


def record_action(
    action: Annotated[str, typer.Argument(help="What you did, in a short line.")],
    produces: Refs = None,
    modifies: Refs = None,
    depends_on: Refs = None,
    against: Refs = None,
    agent: AgentOpt = None,
    event_time: EventTimeOpt = None,
    session: SessionOpt = None,
    repo_scope: RepoScopeOpt = None,
    wait_ms: WaitOpt = 20_000,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record an action (lambo_record_action) with what it produces, modifies, depends on;
    --repo-scope names the repository its file paths belong to."""
    params: dict[str, Any] = {
        "agent_id": agent_id(agent),
        "action": action,
        "produces": produces,
        "modifies": modifies,
        "depends_on": depends_on,
        "against": against,
        "event_time": event_time,
        **scope_of(session),
        **repo_scope_of(repo_scope),
    }
    with workspace_caller(workspace, "lcg record-action", flags=FLAGS, session=session) as caller:
        _write(caller, "lambo_record_action", params, wait_ms, as_json)


def stats(
    receipt: Annotated[
        str | None, typer.Option("--receipt", help="What happened to this write.")
    ] = None,
    wait_ms: Annotated[
        int | None, typer.Option("--wait-ms", help="With --receipt: wait for it (0..34000).")
    ] = None,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Session health and write receipts (lambo_stats)."""
    params: dict[str, Any] = {"agent_id": agent_id(agent), "receipt": receipt, "wait_ms": wait_ms}
    with workspace_caller(
        workspace, "lcg stats", flags=FLAGS, session=session, reads=True
    ) as caller:
        _print(caller.call("lambo_stats", params), as_json)


def register(cli: typer.Typer) -> None:
    """Add the three commands to the `lcg` app."""
    cli.command("derive")(derive)
    cli.command("record-action")(record_action)
    cli.command("stats")(stats)
