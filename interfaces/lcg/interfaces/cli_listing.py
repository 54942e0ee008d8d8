"""`lcg tools`: the advertised tools, one line each, from the tool catalogue (ADR 0053); and
how every CLI table is laid out so that it reads in an 80-column terminal (issue 26 item 6).

Imports rich and the catalogue only, so the launcher (`lcg.interfaces.cli`) can print it
without loading typer or the CLI's modules; `cli_inspect.tools` prints the same.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from lcg.interfaces import tool_catalogue

SEPARATOR = 2  # the spaces between two columns of a plain table
SHORTEST = 6  # a column squeezed to fit keeps this many characters ("Kestr…")


def plain_table(*columns: Column | str) -> Table:
    """A table as the CLI prints it: a header, a rule, one line per row. No box: its borders
    would take a tenth of an 80-column terminal."""
    return Table(
        *columns, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True
    )


def fitted(widths: list[int], room: int, last: int | None = None) -> list[int]:
    """Column widths that fit `room` characters (separators included): the widest columns
    give way first, column `last` only when the others are down to SHORTEST, and none below
    SHORTEST; their cells end in an ellipsis."""
    fitted_widths = list(widths)
    room -= SEPARATOR * (len(widths) - 1)
    while sum(fitted_widths) > room:
        giving = [i for i, width in enumerate(fitted_widths) if width > SHORTEST and i != last]
        if not giving and last is not None and fitted_widths[last] > SHORTEST:
            giving = [last]
        if not giving:
            break
        fitted_widths[max(giving, key=fitted_widths.__getitem__)] -= 1
    return fitted_widths


def print_tools(console: Console) -> None:
    """Every advertised tool: its name, scope and the first sentence of what it does."""
    # Names and scopes are never cut (a cut name cannot be copied); the description is cut
    # at the line's end, so each tool is one line (`lcg describe NAME` says the rest).
    rows = [
        (tool.name, tool.scope, tool.description.split(". ")[0].rstrip(".") + ".")
        for tool in tool_catalogue.tools()
        if tool.advertised
    ]
    name_width = max(len(name) for name, _, _ in rows)
    scope_width = max(len("scope"), *(len(scope) for _, scope, _ in rows))
    rest = console.width - name_width - scope_width - 2 * SEPARATOR
    table = plain_table(
        Column("tool", no_wrap=True, min_width=name_width),
        Column("scope", no_wrap=True, min_width=scope_width),
        Column("what it does", no_wrap=True, overflow="ellipsis", max_width=max(rest, SHORTEST)),
    )
    for name, scope, first in rows:
        table.add_row(Text(name), scope, Text(first))
    console.print(table)
