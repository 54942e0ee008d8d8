"""A served tool is in every registry "Adding a tool" names (docs/architecture.md), both families.

The registries: the operation table (`lcg.interfaces.operations`), the scopes table
(`lcg.interfaces.scopes`: `--scope` shows it under its scope and under `all`), the seed scopes
helper (`tests/helpers/seed_scopes.py`, which the MCP tests compare `tools/list` against), the
tool docs (an example in `lcg.interfaces.tool_docs.EXAMPLES` and a section on its family's
page in docs/tools/) and the README (its row, and the "Served:" counts). A tool missing from
one fails here, naming the registry, instead of in an e2e test far away.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lcg.interfaces import tool_docs
from lcg.interfaces.operations import BY_NAME, OPERATIONS, AnyOperation
from lcg.interfaces.scopes import Visibility, parse_scopes
from tests.helpers.seed_scopes import SEED_001_TOOLS, SEED_SCOPE_OF

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
REGISTRIES = {  # the registry: where "Adding a tool" says to add the tool
    "operation table": "interfaces/lcg/interfaces/operations.py",
    "scopes table": "lcg.interfaces.scopes",
    "seed scopes helper": "tests/helpers/seed_scopes.py",
    "tool docs": "lcg.interfaces.tool_docs.EXAMPLES",
    "README": "README table",
}
SERVED = [operation.name for operation in OPERATIONS]


def _family_of(operation: AnyOperation) -> str:
    return next(family for family, ops in tool_docs.families().items() if operation in ops)


def test_issue_25_adding_a_tool_names_every_registry_for_both_families() -> None:
    section = ARCHITECTURE.split("## Adding a tool", 1)[1].split("\n## ", 1)[0]
    missing = [name for name, place in REGISTRIES.items() if place not in section]
    assert missing == [], f"docs/architecture.md's 'Adding a tool' does not name {missing}"
    assert "test_tool_registries.py" in section
    assert "`knowledge_*`" in section
    assert "`lambo_*`" in section


@pytest.mark.parametrize("operation", OPERATIONS, ids=SERVED)
def test_issue_25_a_served_tool_is_in_every_registry(operation: AnyOperation) -> None:
    name = operation.name
    assert BY_NAME[name] is operation, "operation table"
    vectors = name == "lambo_derive_image"  # listed only with client vectors (M-IMG-001)
    shown = Visibility(parse_scopes(operation.scope.value), client_vectors=vectors)
    assert shown.shows(operation), "scopes table"
    assert Visibility(parse_scopes("all"), client_vectors=vectors).shows(operation), "all"
    assert SEED_SCOPE_OF.get(name) == operation.scope.value, (
        f"seed scopes helper: add {name} under {operation.scope.value!r} in "
        "tests/helpers/seed_scopes.py"
    )
    assert name in tool_docs.EXAMPLES, "tool docs: an example call in tool_docs.EXAMPLES"
    page = (ROOT / "docs" / "tools" / f"{_family_of(operation)}.md").read_text(encoding="utf-8")
    assert f"\n## {name}\n" in page, "tool docs: regenerate: python -m lcg.interfaces.tool_docs"
    assert f"`{name}`" in README, "README: the tool's row in the table"


def test_issue_25_the_readmes_served_counts_are_the_tables() -> None:
    knowledge = [name for name in SERVED if name.startswith("knowledge_")]
    lambo = [name for name in SERVED if name.startswith("lambo_")]
    assert len(knowledge) + len(lambo) == len(SERVED)
    served = re.search(
        r"Served: all (\d+) of seed 000's `knowledge_\*` tools and (\d+) of seed 001's (\d+)",
        " ".join(README.split()),
    )
    assert served, "README: the 'Served:' sentence under the tool table"
    assert [int(n) for n in served.groups()] == [len(knowledge), len(lambo), SEED_001_TOOLS]


def test_issue_25_tools_reach_the_workspace_only_through_narrow_handles() -> None:
    """ADR 0063: a tool function gets `app.reads`, `app.writes`, `app.upkeep` and the memory
    family's services, never the bootstrap: no tool module names `app.workspace` (the
    import-linter contract keeps them from importing it)."""
    tools = sorted((ROOT / "interfaces" / "lcg" / "interfaces" / "tools").glob("*.py"))
    assert len(tools) > 10  # the glob found the tool modules
    reaching = [
        f"{path.name}:{number}"
        for path in tools
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bapp\.workspace\b", line)
    ]
    assert reaching == []
