"""`lcg ontology show|check`: the ontology a group resolves to, and whether the files are valid.

Both read the files only (`.lcg/ontology.yaml`, `.lcg/ontology/<group>.yaml`: P-018); neither
opens the workspace, so they work beside a running server. `check` exits 2 (EXIT_INVALID) and
prints every problem, each naming the file, the entry and the rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lcg.domain import ontology
from lcg.domain.ids import DEFAULT_GROUP
from lcg.domain.ontology import OntologyInvalid, Problem
from lcg.interfaces.cli_common import complain, load_settings, print_json
from lcg.interfaces.cli_common import out as console
from lcg.interfaces.cli_options import JsonOpt, WorkspaceOpt
from lcg.interfaces.exit_codes import EXIT_INVALID

app = typer.Typer(
    help="The ontology (.lcg/ontology.yaml, .lcg/ontology/<group>.yaml): show, check.",
    no_args_is_help=True,
)
GroupArg = Annotated[
    str | None,
    typer.Option("--group", "-g", help=f"The group whose ontology to resolve ({DEFAULT_GROUP!r})."),
]


def _say(line: str) -> None:
    console.print(line, highlight=False, markup=False)


def _invalid(problems: tuple[Problem, ...]) -> typer.Exit:
    for problem in problems:
        complain("invalid", str(problem))
    return typer.Exit(EXIT_INVALID)


@app.command("show")
def show(group: GroupArg = None, workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """Print the ontology the group resolves to (its own file, else the workspace's)."""
    from lcg.interfaces import ontology_file

    settings = load_settings(workspace)
    chosen = group or DEFAULT_GROUP
    try:
        resolved = ontology_file.resolve(settings.state_dir, chosen)
    except OntologyInvalid as invalid:
        raise _invalid(invalid.problems) from None
    data = {"group_id": chosen, "mode": resolved.mode, **ontology.as_data(resolved.ontology)}
    if as_json:
        print_json(data)
        return
    if resolved.path is None:
        _say(f"group {chosen}: no ontology (no .lcg/ontology.yaml nor a file of the group)")
        return
    import yaml

    _say(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())


def _files(state_dir: Path, group: str | None) -> list[Path]:
    from lcg.interfaces import ontology_file

    if group is not None:
        own = ontology_file.group_file(state_dir, group)
        return [own] if own.is_file() else [state_dir / ontology_file.WORKSPACE_FILE]
    group_dir = state_dir / ontology_file.GROUP_DIR
    found = [state_dir / ontology_file.WORKSPACE_FILE]
    found += sorted(group_dir.glob("*.yaml")) if group_dir.is_dir() else []
    return found


@app.command("check")
def check(group: GroupArg = None, workspace: WorkspaceOpt = None) -> None:
    """Validate the workspace's ontology files (or the one --group resolves to); exit 2 with
    every problem when one is invalid."""
    from lcg.interfaces import ontology_file

    settings = load_settings(workspace)
    state = settings.state_dir
    problems: list[Problem] = []
    checked = 0
    for path in _files(state, group):
        if not path.is_file():
            continue
        checked += 1
        shown = f"{state.name}/{path.relative_to(state).as_posix()}"
        try:
            found = ontology_file.read(path, shown)
        except OntologyInvalid as invalid:
            problems.extend(invalid.problems)
            continue
        _say(
            f"ok: {shown}: {len(found.entity_types)} entity type(s),"
            f" {len(found.relation_types)} relation type(s)"
        )
    if problems:
        raise _invalid(tuple(problems))
    if not checked:
        _say("no ontology files: nothing to check (tools that need one refuse)")


def register(cli: typer.Typer) -> None:
    cli.add_typer(app, name="ontology")
