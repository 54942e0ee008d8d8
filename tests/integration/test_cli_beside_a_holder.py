"""Issue 10: CLI commands beside a process that holds the workspace and serves no socket (an
agent's MCP server started with `--mcp-stdio`): reads are not locked out, and a refused write
says what works instead of naming an MCP command.

`lcg serve` serves a socket, and commands go through it (tests/e2e/test_cli_beside_a_server).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.cli_app import cli
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_workspace

ENV = {"COLUMNS": "200"}


@pytest.fixture
def held(tmp_path: Path, embedder: Embedder) -> Iterator[Workspace]:
    """The workspace open for writing in this process (its lease held), with one entity and
    one episode, and no socket service."""
    with make_workspace(Settings(tmp_path), embedder, command="lcg serve --mcp-stdio") as ws:
        app = App(ws)
        operations.dispatch(app, "knowledge_assert_entity", {"name": "Ada", "group_id": "g"})
        operations.dispatch(
            app, "knowledge_add_episode", {"name": "n", "episode_body": "b", "group_id": "g"}
        )
        yield ws


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env=ENV)
    return result.exit_code, " ".join(result.output.split())


def test_issue_10_reads_beside_a_holder_without_a_socket_read_the_workspace_directly(
    held: Workspace,
) -> None:
    workspace = ["--workspace", str(held.settings.workspace)]
    code, output = _run("list-entities", *workspace)
    assert code == 0, output
    assert "Ada" in output
    assert "read-only" in output
    code, output = _run("call", "knowledge_get_episodes", '{"group_id": "g"}', *workspace)
    assert code == 0, output
    assert '"name": "n"' in output


def test_issue_10_what_a_holder_without_a_socket_refuses_says_what_works(
    held: Workspace,
) -> None:
    workspace = ["--workspace", str(held.settings.workspace)]
    code, output = _run("assert-entity", "Bob", "-g", "g", *workspace)
    assert code == 4, output
    assert "no socket service" in output
    assert "`lcg serve`" in output
    assert "--connect" in output
    assert "if it is the socket service" not in output
    code, output = _run("call", "knowledge_find_entities", '{"query": "Ada"}', *workspace)
    assert code == 4, output
    assert "search needs the workspace open for writing" in output
    assert "Traceback" not in output
