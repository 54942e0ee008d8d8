"""What the operation table says about each tool, read without importing the table.

`lcg tools`, `lcg describe` and `lcg call`'s check of a name read tool_catalogue.json beside
this module: each operation's name, scope, description, read-only flag, input schema and the
parameters of the tool pages' example call. The
table itself imports every tool module and through them every layer, numpy, faiss and the
model runtime: a second of start-up these commands do not need (ADR 0053). The file is
generated from the table: `python -m lcg.interfaces.tool_catalogue` rewrites it, `--check`
writes nothing and exits 1 if it differs (a test runs the check).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CATALOGUE_FILE = Path(__file__).with_name("tool_catalogue.json")


@dataclass(frozen=True, slots=True)
class Tool:
    """One operation as `tools` and `describe` show it."""

    name: str
    scope: str
    description: str
    read_only: bool
    input_schema: dict[str, Any]
    advertised: bool  # a tool of the table; False: an operator's operation (`lcg canon ...`)
    example: dict[str, Any] | None  # the tool pages' example call's parameters, if it has one


@cache
def tools() -> tuple[Tool, ...]:
    """Every operation, the table's tools first and in its order, then the operator's."""
    rows = json.loads(CATALOGUE_FILE.read_text(encoding="utf-8"))
    return tuple(Tool(**row) for row in rows)


def by_name() -> dict[str, Tool]:
    return {tool.name: tool for tool in tools()}


def render() -> str:
    """The catalogue the operation table describes, as the file's text."""
    from lcg.interfaces import operations
    from lcg.interfaces.tool_docs import EXAMPLES

    advertised = {op.name for op in operations.OPERATIONS}
    rows = [
        {
            "name": op.name,
            "scope": op.scope.value,
            "description": op.description,
            "read_only": op.read_only,
            "input_schema": op.input_schema(),
            "advertised": op.name in advertised,
            "example": EXAMPLES.get(op.name),
        }
        for op in operations.BY_NAME.values()
    ]
    return json.dumps(rows, indent=1, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lcg.interfaces.tool_catalogue",
        description="Write (or --check) the tool catalogue generated from the operation table.",
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = CATALOGUE_FILE.read_text(encoding="utf-8") if CATALOGUE_FILE.exists() else None
        if current != text:
            sys.stderr.write(f"{CATALOGUE_FILE.name} differs from the table; regenerate it\n")
            return 1
        return 0
    CATALOGUE_FILE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
