"""The tool pages (docs/tools/<family>.md) are what the generator writes from the table today.

A tool, parameter, default, bound, description or result that changes without the pages being
regenerated (`python -m lcg.interfaces.tool_docs`) fails here, so the pages stay true.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lcg.interfaces import tool_docs
from lcg.interfaces.operations import OPERATIONS
from tests.conftest import once_per_run

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "tools"
REGENERATE = "regenerate them: python -m lcg.interfaces.tool_docs"


# The pages are rendered once per run (the session fixture `tool_pages`) and once more by the
# check command (`checked_again`), whichever workers run these tests.


@pytest.fixture(scope="module")
def pages(tool_pages: dict[str, str]) -> dict[str, str]:
    return tool_pages


@pytest.fixture(scope="session")
def checked_again(
    tool_pages: dict[str, str], tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> int:
    """`python -m lcg.interfaces.tool_docs DIR --check` on a directory holding this run's
    pages: the command renders the pages again and compares, so its 0 says that a second
    render writes the same pages."""

    def check() -> int:
        directory = tmp_path_factory.mktemp("tool-pages")
        tool_docs.write_pages(tool_pages, directory)
        return tool_docs.main([str(directory), "--check"])

    return once_per_run(tmp_path_factory, worker_id, "tool-pages-checked", check)


def test_issue_10_the_committed_tool_pages_are_what_the_generator_writes(
    pages: dict[str, str],
) -> None:
    committed = {path.name: path.read_text(encoding="utf-8") for path in PAGES.glob("*.md")}
    assert sorted(committed) == sorted(pages), REGENERATE
    stale = [name for name, text in pages.items() if committed[name] != text]
    assert stale == [], f"{', '.join(stale)} differ from the table; {REGENERATE}"


def test_issue_10_every_tool_has_an_example_and_a_section_on_its_familys_page(
    pages: dict[str, str],
) -> None:
    assert set(tool_docs.EXAMPLES) == {op.name for op in OPERATIONS}
    for family, operations in tool_docs.families().items():
        for operation in operations:
            assert f"\n## {operation.name}\n" in pages[f"{family}.md"]
    assert set(tool_docs.families()) == {
        "graph",
        "episodes",
        "search",
        "admin",
        "curation",
        "cross_group",
        "typing",
        "memory",
    }


def test_issue_10_example_results_are_stable_and_name_no_machine_path(
    pages: dict[str, str], checked_again: int
) -> None:
    """Two runs give the same pages (counter ids, a stepping clock, the hashing embedder),
    and the temporary workspace's path never shows."""
    assert checked_again == 0  # the second run: the check command's own render
    for text in pages.values():
        assert tempfile.gettempdir() not in text
        assert str(Path.home()) not in text
    assert f'"{tool_docs.WORKSPACE}/.lcg/graph.sqlite"' in pages["admin.md"]


def test_issue_10_the_readme_links_every_tool_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for family in tool_docs.families():
        assert f"(docs/tools/{family}.md)" in readme, family


def test_issue_10_check_fails_on_a_stale_page_and_passes_once_written(
    pages: dict[str, str], checked_again: int, tmp_path: Path
) -> None:
    assert tool_docs.stale_pages(pages, tmp_path) == list(pages)
    tool_docs.write_pages(pages, tmp_path)
    assert tool_docs.stale_pages(pages, tmp_path) == []
    assert checked_again == 0  # the command renders its own, on pages written as here
    page = tmp_path / "graph.md"
    page.write_text(page.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
    assert tool_docs.stale_pages(pages, tmp_path) == ["graph.md"]
    page.unlink()
    assert tool_docs.stale_pages(pages, tmp_path) == ["graph.md"]


def test_the_generator_is_not_on_the_cli_import_path() -> None:
    probe = "import sys, lcg.interfaces.cli; print('lcg.interfaces.tool_docs' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"
