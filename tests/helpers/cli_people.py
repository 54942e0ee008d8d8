"""A workspace holding three entities of one group (long names, several labels, an empty
summary), written through the CLI in this process, for the tests of what the CLI shows."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from lcg.interfaces.cli_app import cli

GROUP = "kestrel-issue-412"
PEOPLE = (
    ("Ada Lovelace", "Person", "Mathematician; wrote the first published program " * 2),
    ("Analytical Engine of Charles Babbage", "Machine,Design", "A general-purpose computer"),
    ("Kestrel", "Project", ""),
)


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`lcg ARGS` in this process: its exit code, stdout and stderr."""
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def workspace_with_people(directory: Path) -> list[str]:
    """Write PEOPLE into the workspace at `directory`; the `--workspace` arguments naming it."""
    workspace = ["--workspace", str(directory)]
    for name, labels, summary in PEOPLE:
        flags = [flag for label in labels.split(",") for flag in ("--label", label)]
        code, _, said = invoke(
            "assert-entity", name, "--summary", summary, *flags, "-g", GROUP, *workspace
        )
        assert code == 0, said
    return workspace
