"""The everyday verbs: `lcg search`, `lcg recall`, `lcg inspect`, `lcg mark create|list|delete`
and `lcg forget` (issue 26 item 2).

Each is a thin face over the one tool it names, reached like every command (cli_common's
workspace_caller: in this process, or through the socket service holding the workspace), with
readable text by default and `--json` for scripts (the tool's result object; for the lambo_*
tools, their structured content, as `lcg derive --json` prints).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from lcg.domain.errors import InvalidParams
from lcg.interfaces.attribute_rows import with_attribute_objects
from lcg.interfaces.cli_common import errors, out, print_json, workspace_caller
from lcg.interfaces.cli_memory import FLAGS as MEMORY_FLAGS
from lcg.interfaces.cli_memory import AgentOpt, SessionOpt, agent_id, scope_of
from lcg.interfaces.cli_options import GroupOpt, JsonOpt, PlainFlagsGroup, WorkspaceOpt

SNIPPET = 160  # characters of a passage, summary or fact shown on a text line


class What(StrEnum):
    """What `lcg search` searches, and the tool it calls for it."""

    PASSAGES = "passages"
    ENTITIES = "entities"
    FACTS = "facts"


SEARCH_TOOLS = {
    What.PASSAGES: "knowledge_search_passages",
    What.ENTITIES: "knowledge_find_entities",
    What.FACTS: "knowledge_find_relationships",
}

GroupsOpt = Annotated[
    list[str] | None,
    typer.Option("--group", "-g", help="A group to search; repeat for several (default: all)."),
]
LimitOpt = Annotated[int, typer.Option("--limit", "-n", help="How many results at most.")]


def search(
    query: Annotated[str, typer.Argument(help="What to look for, in words.")],
    what: Annotated[
        What,
        typer.Option(
            "--what",
            help="passages (episode content, knowledge_search_passages), entities "
            "(knowledge_find_entities) or facts (relationships, knowledge_find_relationships).",
        ),
    ] = What.PASSAGES,
    group: GroupsOpt = None,
    limit: LimitOpt = 10,
    min_score: Annotated[
        float | None,
        typer.Option(help="Passages only: a floor on the best score, 0.0-1.0 (tool default 0.5)."),
    ] = None,
    weak: Annotated[
        bool,
        typer.Option(
            "--weak", help="Entities and facts: the nearest hits too, however weak (no floor)."
        ),
    ] = False,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search passages (the default), entities or facts by meaning and by words.

    Example: lcg search "where does the scheduler keep its queue" --what facts -g kestrel
    """
    flags = {"query": "QUERY", "group_ids": "--group", "num_results": "--limit"}
    flags["min_score"] = "--min-score"
    with errors(flags):
        if min_score is not None and what is not What.PASSAGES:
            raise InvalidParams("--min-score", "applies to --what passages only")
        if weak and what is What.PASSAGES:
            raise InvalidParams("--weak", "applies to --what entities or facts only")
    params: dict[str, Any] = {"query": query, "group_ids": group, "num_results": limit}
    if what is What.PASSAGES:
        if min_score is not None:
            params["min_score"] = min_score
    elif weak:
        params["relevance_floor"] = False
    with workspace_caller(workspace, "lcg search", reads=True, flags=flags) as caller:
        result = caller.call(SEARCH_TOOLS[what], params)
    if as_json:  # an entity's or a fact's attributes as an object (ADR 0092)
        print_json(with_attribute_objects(result))
        return
    lines = _search_lines(what, result)
    for line in lines:
        out.print(Text(line))
    warning = result.get("warning")
    if warning:
        out.print(Text(f"warning: {warning}"))
    if not lines:
        out.print(Text(f"no {what.value} match {query!r}"))


def _search_lines(what: What, result: dict[str, Any]) -> list[str]:
    """One line per hit: its score, what it is, its group and the id to copy."""
    if what is What.PASSAGES:
        return [
            f"{hit['score']:.2f}  {hit['name']} [{hit['group_id']}] "
            f"{_snippet(hit['content'])}  (episode {hit['episode_uuid']})"
            for hit in result["passages"]
        ]
    if what is What.ENTITIES:
        return [
            f"{hit['score']:.2f}  {hit['name']} [{hit['group_id']}] "
            f"{_snippet(hit['summary'])}  (entity {hit['uuid']})"
            for hit in result["nodes"]
        ]
    return [
        f"{hit['score']:.2f}  {_snippet(hit['fact'])} [{hit['group_id']}]  (edge {hit['uuid']})"
        for hit in result["edges"]
    ]


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 3] + "..."


def recall(
    query: Annotated[str, typer.Argument(help="What the task is about, in words.")],
    top_k: Annotated[int, typer.Option("--top-k", "-n", help="How many hits (1..100).")] = 5,
    max_tokens: Annotated[
        int, typer.Option(help="The context block's budget, in tokens (1..100000).")
    ] = 500,
    depth: Annotated[
        int, typer.Option("--depth", help="Graph expansion hops from the strongest hits (0..5).")
    ] = 2,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recall memory for a query (lambo_recall): prints the context block an agent reads.

    Example: lcg recall "why is the lease 45s?"
    """
    params: dict[str, Any] = {
        "agent_id": agent_id(agent),
        "query": query,
        "top_k": top_k,
        "max_tokens": max_tokens,
        "traversal_depth": depth,
        **scope_of(session),
    }
    flags = {"query": "QUERY", "top_k": "--top-k", "max_tokens": "--max-tokens"}
    flags["traversal_depth"] = "--depth"
    result = _memory_read("lambo_recall", params, flags, workspace, session)
    _print_memory(result, as_json, empty=f"nothing in memory matches {query!r}")


def inspect(
    focus: Annotated[
        str, typer.Argument(help="A concept's text, its 8-hex short id or its node id.")
    ],
    depth: Annotated[
        int, typer.Option("--depth", help="Hops of neighbourhood to show (0..5).")
    ] = 2,
    agent: AgentOpt = None,
    session: SessionOpt = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The neighbourhood of a concept (lambo_inspect): its type, status, blast radius,
    dependents, contradictions and edges.

    Example: lcg inspect b5f02087
    """
    params: dict[str, Any] = {
        "agent_id": agent_id(agent),
        "focus": focus,
        "depth": depth,
        **scope_of(session),
    }
    flags = {"focus": "FOCUS", "depth": "--depth"}
    result = _memory_read("lambo_inspect", params, flags, workspace, session)
    _print_memory(result, as_json, empty="")


def _memory_read(
    tool: str,
    params: dict[str, Any],
    flags: dict[str, str],
    workspace: Path | None,
    session: str | None,
) -> dict[str, Any]:
    """One call of a lambo_* read, here (serving `session`) or through the service."""
    command = f"lcg {tool.removeprefix('lambo_')}"
    typed = {**MEMORY_FLAGS, **flags}
    with workspace_caller(workspace, command, flags=typed, session=session, reads=True) as caller:
        return caller.call(tool, params)


def _print_memory(result: dict[str, Any], as_json: bool, *, empty: str) -> None:
    """A lambo tool's text as text (not a JSON string), or its structured content."""
    if as_json:
        print_json(result["structuredContent"])
        return
    text = result["text"] or empty
    out.print(Text(text))


marks = typer.Typer(
    cls=PlainFlagsGroup,
    no_args_is_help=True,
    help="Restore points in a group's WAL (knowledge_wal_mark_*): create, list, delete. "
    "`lcg replay --group G --to-seq SEQ --force-clear` returns the group to a mark's seq.",
)


@marks.command("create")
def mark_create(
    name: Annotated[
        str, typer.Argument(help="1-200 letters, digits, _ or -; unique in its group.")
    ],
    group: GroupOpt = "liminis",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Name the group's current seq (knowledge_wal_mark_create).

    Example: lcg mark create before-cleanup -g liminis
    """
    flags = {"name": "NAME", "group_id": "--group"}
    with workspace_caller(workspace, "lcg mark create", flags=flags) as caller:
        result = caller.call("knowledge_wal_mark_create", {"name": name, "group_id": group})
    if as_json:
        print_json(result)
        return
    out.print(Text(f"mark {result['name']!r} at seq {result['seq']} of group {group!r}"))


@marks.command("list")
def mark_list(
    group: GroupOpt = "liminis",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A group's marks, oldest first, with their seq and whether a replay can reach them
    (knowledge_wal_mark_list)."""
    flags = {"group_id": "--group"}
    with workspace_caller(workspace, "lcg mark list", reads=True, flags=flags) as caller:
        result = caller.call("knowledge_wal_mark_list", {"group_id": group})
    if as_json:
        print_json(result)
        return
    shown = result["checkpoints"]
    if not shown:
        out.print(Text(f"group {group!r} has no marks"))
        return
    for mark in shown:
        reach = "" if mark["reachable"] else "  (unreachable: not in this WAL generation)"
        out.print(Text(f"{mark['name']}  seq {mark['seq']}  {mark['created_at']}{reach}"))


@marks.command("delete")
def mark_delete(
    name: Annotated[str, typer.Argument(help="The mark to delete.")],
    group: GroupOpt = "liminis",
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete a group's mark (knowledge_wal_mark_delete); the name can be used again."""
    flags = {"name": "NAME", "group_id": "--group"}
    with workspace_caller(workspace, "lcg mark delete", flags=flags) as caller:
        result = caller.call("knowledge_wal_mark_delete", {"name": name, "group_id": group})
    if as_json:
        print_json(result)
        return
    out.print(Text(f"deleted mark {name!r} of group {group!r}"))


def forget(
    episode: Annotated[
        list[str] | None,
        typer.Argument(
            help="Episode uuids to delete (knowledge_delete_episode).", show_default=False
        ),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            help="Instead: delete every episode ingested from this source file "
            "(knowledge_delete_by_source), in the --group groups.",
        ),
    ] = None,
    group: Annotated[
        list[str] | None,
        typer.Option("--group", "-g", help="With --source: repeat for several (default liminis)."),
    ] = None,
    workspace: WorkspaceOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete episodes: by uuid, or every episode of a source file (--source). The entities
    and facts they mentioned stay; an unknown uuid changes nothing.

    Concepts of the agent memory (lambo_*) are not forgotten on request: the Lambo
    specification gives no tool that deletes one; garbage collection removes what nothing
    holds (`lcg gc run`).

    Each uuid is one deletion, in order: a refused one stops the rest.

    Example: lcg forget 6f1c0d2e-...   or   lcg forget --source notes.md -g liminis
    """
    with errors():
        if (not episode) == (source is None):
            raise InvalidParams("EPISODE", "give episode uuids or --source FILE (one of the two)")
        if group and source is None:
            raise InvalidParams("--group", "applies to --source only (an episode knows its group)")
    if source is not None:
        _forget_source(source, group or ["liminis"], workspace, as_json)
    else:
        _forget_episodes(episode or [], workspace, as_json)


def _forget_source(source: str, groups: list[str], workspace: Path | None, as_json: bool) -> None:
    flags = {"source_file": "--source", "group_ids": "--group"}
    with workspace_caller(workspace, "lcg forget", flags=flags) as caller:
        result = caller.call(
            "knowledge_delete_by_source", {"source_file": source, "group_ids": groups}
        )
    if as_json:
        print_json(result)
        return
    out.print(Text(f"deleted {result['deleted_count']} episode(s) of source {source!r}"))
    for uuid in result["deleted_uuids"]:
        out.print(Text(f"  {uuid}"))


def _forget_episodes(uuids: list[str], workspace: Path | None, as_json: bool) -> None:
    """One deletion per uuid, in order; each is printed as it is done, so a refusal that stops
    the rest leaves on the screen what was already deleted."""
    deleted = []
    with workspace_caller(workspace, "lcg forget", flags={"episode_uuid": "EPISODE"}) as caller:
        for uuid in uuids:
            result = caller.call("knowledge_delete_episode", {"episode_uuid": uuid})
            deleted.append({"episode_uuid": uuid, **result})
            if not as_json:
                out.print(Text(f"episode {uuid}: {result['status']}"))
    if as_json:
        print_json({"episodes": deleted})
