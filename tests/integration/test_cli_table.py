"""The CLI and the operation table agree: every operation is reachable by `lcg call`, every
named command runs an operation that exists, and `serve` flags select `lcg serve`.

Checklist: K-MCP-006 (one registry), K-MCP-013/014 (flag spellings), K-EXC-001/004 (the
seed's configs call the binary with serve flags directly).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.cli_app import cli
from lcg.interfaces.operations import BY_NAME, OPERATIONS
from lcg.interfaces.serve import with_serve_default
from lcg.projections.runner import Progress

NAMED_COMMANDS: dict[str, tuple[str, list[str]]] = {
    "status": ("knowledge_status", []),
    "replay": ("knowledge_rebuild_from_wal", ["--group", "g", "--force-clear"]),
    "assert-entity": ("knowledge_assert_entity", ["Ada", "--group", "g"]),
    "assert-relationship": ("knowledge_assert_relationship", ["Ada", "knows", "Bob", "-g", "g"]),
    "add-episode": ("knowledge_add_episode", ["note", "body", "--group", "g"]),
    "list-entities": ("knowledge_list_entities", []),
    "derive": ("lambo_derive", ["a fact", "--wait-ms", "0"]),
    "record-action": ("lambo_record_action", ["did a thing", "--wait-ms", "0"]),
    "stats": ("lambo_stats", []),
    "ingest": ("knowledge_process_chunk", ["{tmp}/note.md", "--group", "g"]),
    "dump": ("knowledge_dump_wal", ["{tmp}/dump"]),
    "rebind": ("knowledge_rebind_pointers", ["--source-group", "g"]),
    "search": ("knowledge_search_passages", ["lighthouse"]),
    "recall": ("lambo_recall", ["a fact"]),
    "inspect": ("lambo_inspect", ["a fact"]),
    "forget": ("knowledge_delete_episode", ["no-such-episode"]),
}
# restore installs a dump's WAL before the workspace is opened: no operation does that;
# recover goes through a serving process's Service.call, which closes the workspace first
GENERIC_COMMANDS = {
    "call", "demo", "serve", "tools", "describe", "log", "restore", "recover",
    "import", "export", "portal",  # several operations, reads of the log, a server
}  # fmt: skip


def command_names() -> set[str]:
    names = set()
    for info in cli.registered_commands:
        callback = info.callback
        assert callback is not None
        names.add(info.name or callback.__name__.replace("_", "-"))
    return names


def test_every_command_is_a_named_operation_or_generic() -> None:
    """A new command must name its operation here (and that operation must exist)."""
    assert command_names() == set(NAMED_COMMANDS) | GENERIC_COMMANDS
    for operation, _ in NAMED_COMMANDS.values():
        assert operation in BY_NAME


@pytest.mark.slow
def test_named_commands_dispatch_their_operation_and_call_reaches_every_operation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each named command goes through operations.dispatch with its table operation; `lcg
    call NAME '{}'` reaches every operation of the table (never 'Method not found')."""
    dispatched: list[str] = []
    real_dispatch = operations.dispatch

    def spy(
        app: App, name: str, raw: dict[str, Any] | None, progress: Progress | None = None
    ) -> dict[str, Any]:
        dispatched.append(name)
        return real_dispatch(app, name, raw, progress)

    monkeypatch.setattr(operations, "dispatch", spy)
    runner = CliRunner()
    workspace = ["--workspace", str(tmp_path)]
    runner.invoke(cli, ["assert-entity", "Bob", "-g", "g", *workspace])  # an edge's target
    (tmp_path / "note.md").write_text("Ada keeps the lighthouse.\n", encoding="utf-8")
    for command, (name, template) in NAMED_COMMANDS.items():
        dispatched.clear()
        args = [arg.replace("{tmp}", str(tmp_path)) for arg in template]
        result = runner.invoke(cli, [command, *args, *workspace])
        assert result.exit_code == 0, (command, result.output)
        assert name in dispatched, (command, dispatched)
    for operation in OPERATIONS:
        dispatched.clear()
        result = runner.invoke(cli, ["call", operation.name, "{}", *workspace])
        assert dispatched == [operation.name]
        assert result.exit_code in (0, 2, 3), (operation.name, result.output)
        assert "Method not found" not in result.output
    unknown = runner.invoke(cli, ["call", "knowledge_fly", "{}", *workspace])
    assert unknown.exit_code == 2


def test_serve_flags_select_the_serve_command() -> None:
    """K-EXC-001/004, K-MCP-013/014: the seed's configs run `liminis-context-graph
    --mcp-stdio --scope=read,write` and `... --mcp-stdio --connect PATH --scope=read`."""
    assert with_serve_default(["--mcp-stdio", "--scope=read,write"]) == [
        "serve",
        "--mcp-stdio",
        "--scope=read,write",
    ]
    connect = ["--mcp-stdio", "--connect", "/w/.lcg/service.sock", "--scope=read"]
    assert with_serve_default(connect) == ["serve", *connect]
    assert with_serve_default(["status", "--json"]) == ["status", "--json"]
    assert with_serve_default([]) == []


def test_issue_10_tools_lists_every_tool_and_describe_shows_its_parameters() -> None:
    runner = CliRunner()
    for columns in ("200", "80"):  # in a narrow terminal names are kept whole too
        listed = runner.invoke(cli, ["tools"], env={"COLUMNS": columns})
        assert listed.exit_code == 0, listed.output
        for operation in OPERATIONS:
            assert operation.name in listed.output, (columns, operation.name)
    described = runner.invoke(cli, ["describe", "knowledge_add_episode"], env={"COLUMNS": "200"})
    assert described.exit_code == 0, described.output
    for parameter in ("name", "episode_body", "source", "reference_time", "group_id"):
        assert parameter in described.output
    assert "max length 512" in described.output
    assert '"liminis"' in described.output
    as_json = runner.invoke(cli, ["describe", "knowledge_add_episode", "--json"])
    assert '"required"' in as_json.output


def test_issue_10_an_unknown_tool_suggests_the_closest_and_version_prints() -> None:
    runner = CliRunner()
    typo = runner.invoke(cli, ["describe", "knowledge_add_epsiode"], env={"COLUMNS": "200"})
    assert typo.exit_code == 2
    assert "did you mean knowledge_add_episode" in " ".join(typo.output.split())
    version = runner.invoke(cli, ["--version"])
    assert version.exit_code == 0
    assert version.output.startswith("lcg 0.")


def test_issue_10_allow_remote_close_without_mcp_stdio_names_its_own_flag(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["serve", "--allow-remote-close", "--workspace", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "--allow-remote-close: needs --mcp-stdio" in " ".join(result.output.split())


def test_issue_10_reads_never_create_a_workspace_and_unknown_groups_are_named(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    nowhere = tmp_path / "no" / "such" / "dir"
    for args in (
        ["status"],
        ["list-entities"],
        ["call", "knowledge_get_episodes", '{"group_id": "g"}'],
    ):
        result = runner.invoke(cli, [*args, "--workspace", str(nowhere)], env={"COLUMNS": "200"})
        assert result.exit_code == 3, result.output
        assert "there is no workspace at" in " ".join(result.output.split())
    assert not (tmp_path / "no").exists()
    written = runner.invoke(
        cli, ["add-episode", "e", "body", "-g", "g", "--workspace", str(tmp_path)]
    )
    assert written.exit_code == 0, written.output
    unknown = runner.invoke(
        cli, ["status", "--group", "nope", "--workspace", str(tmp_path)], env={"COLUMNS": "200"}
    )
    assert unknown.exit_code == 3
    assert "no group 'nope' in this workspace (groups: g)" in " ".join(unknown.output.split())


def test_issue_10_errors_name_the_flag_typed_and_plain_output_says_what_was_cleared(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    workspace = ["--workspace", str(tmp_path)]
    created = runner.invoke(
        cli, ["assert-entity", "Ada", "--summary", "wrote programs", *workspace], env=env
    )
    assert created.exit_code == 0, created.output
    assert "cleared" not in created.output
    changed = runner.invoke(
        cli, ["assert-entity", "Ada", "--summary", "sailed", "--label", "P", *workspace], env=env
    )
    assert changed.exit_code == 0, changed.output
    assert "embedding_stale: summary_embedding" in changed.output
    assert "cleared (not given): attributes" in changed.output
    revised = runner.invoke(cli, ["assert-entity", "Ada", *workspace], env=env)
    assert revised.exit_code == 0, revised.output
    assert "cleared (not given): summary, labels, attributes" in revised.output
    assert "embedding_stale" not in revised.output  # a blank summary has no vector to go stale
    bad = runner.invoke(cli, ["list-entities", "--limit", "0", *workspace], env=env)
    assert bad.exit_code == 2
    assert "--limit: num_results: " in bad.output
    listed = runner.invoke(cli, ["list-entities", *workspace], env={"COLUMNS": "60"})
    uuid = runner.invoke(cli, ["assert-entity", "Ada", "--json", *workspace]).output
    assert json.loads(uuid)["entity_uuid"] in listed.output  # never cut, even when narrow


def test_issue_10_log_lists_a_groups_events_to_pick_a_replay_seq_from(tmp_path: Path) -> None:
    runner = CliRunner()
    workspace = ["--workspace", str(tmp_path)]
    for name in ("Ada", "Bob", "Cy"):
        assert runner.invoke(cli, ["assert-entity", name, "-g", "g", *workspace]).exit_code == 0
    shown = runner.invoke(cli, ["log", "--group", "g", "--from-seq", "2", "--json", *workspace])
    assert shown.exit_code == 0, shown.output
    log = json.loads(shown.output)
    assert log["max_seq"] == 3
    assert [(e["seq"], e["type"]) for e in log["events"]] == [
        (2, "entity_created"),
        (3, "entity_created"),
    ]
    assert "name=Bob" in log["events"][0]["summary"]
    assert "labels=Entity" in log["events"][0]["summary"]
    unknown = runner.invoke(cli, ["log", "--group", "nope", *workspace], env={"COLUMNS": "200"})
    assert unknown.exit_code == 3
    assert "no group 'nope' in this workspace (groups: g)" in " ".join(unknown.output.split())


def test_issue_10_assert_help_says_clear_on_omit() -> None:
    """The seed's clear-on-omit contract (K-AST-009/010) is said where people look first."""
    runner = CliRunner()
    for command, cleared in (
        ("assert-entity", "summary, labels or attributes you leave out are cleared"),
        ("assert-relationship", "attributes you leave out are reset"),
    ):
        helped = runner.invoke(cli, [command, "--help"], env={"COLUMNS": "200"})
        assert helped.exit_code == 0, helped.output
        text = " ".join(helped.output.replace("│", " ").split())
        assert "clear-on-omit" in text.lower(), text
        assert cleared in text, text


def test_issue_10_call_of_an_unknown_tool_suggests_the_closest_and_creates_no_workspace(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        cli,
        ["call", "knowledge_add_epsiode", "{}", "--workspace", str(tmp_path)],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 2
    assert "did you mean knowledge_add_episode" in " ".join(result.output.split())
    assert not (tmp_path / ".lcg").exists()


def test_issue_10_log_never_cuts_a_uuid_even_in_a_narrow_terminal(tmp_path: Path) -> None:
    """The log's summary is where a replay's seq is chosen from: the ids in it stay whole
    (a field is dropped whole, never cut inside) in the table and in --json."""
    runner = CliRunner()
    workspace = ["--workspace", str(tmp_path)]
    ada = json.loads(
        runner.invoke(
            cli, ["assert-entity", "Ada", "--summary", "x" * 90, "--json", *workspace]
        ).stdout  # stderr says the workspace was created
    )["entity_uuid"]
    edge = json.loads(
        runner.invoke(
            cli, ["assert-relationship", "Ada", "KNOWS", "Ada", "--json", *workspace]
        ).output
    )["edge_uuid"]
    shown = runner.invoke(cli, ["log", "--group", "liminis", *workspace], env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    assert f"entity_uuid={ada}" in shown.output
    assert f"edge_uuid={edge}" in shown.output
    logged = json.loads(
        runner.invoke(cli, ["log", "--group", "liminis", "--json", *workspace]).output
    )
    for event in logged["events"]:
        fields = event["summary"].removesuffix(" ...").split(" ")
        for field in fields:
            if field.split("=", 1)[0].endswith("uuid"):
                assert len(field.split("=", 1)[1]) == 36, event["summary"]
    assert f"source_uuid={ada}" in logged["events"][1]["summary"]
