"""`lcg tools`: the advertised tools, one line each, from the tool catalogue (ADR 0053).

Imports rich and the catalogue only, so the launcher (`lcg.interfaces.cli`) can print it
without loading typer or the CLI's modules; `cli_inspect.tools` prints the same.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from lcg.interfaces import tool_catalogue


def print_tools(console: Console) -> None:
    """Every advertised tool: its name, scope and the first sentence of what it does."""
    # Names and scopes never wrap (a wrapped name cannot be copied); the description does.
    table = Table(
        Column("tool", no_wrap=True), Column("scope", no_wrap=True), Column("what it does")
    )
    for operation in tool_catalogue.tools():
        if not operation.advertised:
            continue
        first = operation.description.split(". ")[0].rstrip(".") + "."
        table.add_row(Text(operation.name), operation.scope, Text(first))
    console.print(table)
