"""The everyday verbs (issue 26 item 2): `lcg search`, `recall`, `inspect`, `mark`, `forget`.

Each command runs as the console script runs it, in this process (`lcg_in_process`), except the
last test: real `lcg` processes beside a running `lcg serve`, whose socket every verb goes
through.
"""

from __future__ import annotations

import functools
import json
import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lcg.interfaces.cli_app import cli
from lcg.interfaces.lambo_cli import lambo
from tests.helpers.console_script import lcg as lcg_process
from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.helpers.console_script import refused, said
from tests.helpers.service_process import ServiceProcess

lcg_json = functools.partial(run_json, run=lcg)

NOTE = "Maria Chen leads the Kestrel scheduler team; its job queue lives in Redis."


def _write_graph(workspace: Path) -> str:
    """An episode and an edge in group `kestrel`; the episode's uuid."""
    added = lcg_json(workspace, "add-episode", "team note", NOTE, "-g", "kestrel", "--json")
    for name, summary in (("Maria Chen", "leads Kestrel"), ("Kestrel", "the job scheduler")):
        entity = lcg(workspace, "assert-entity", name, "--summary", summary, "-g", "kestrel")
        assert entity.returncode == 0, entity.stderr
    edge = lcg(workspace, "assert-relationship", "Maria Chen", "LEADS", "Kestrel", "-g", "kestrel")
    assert edge.returncode == 0, edge.stderr
    uuid: str = added["episode_uuid"]
    return uuid


def test_search_finds_passages_by_default_and_entities_or_facts_on_request(
    tmp_path: Path,
) -> None:
    episode = _write_graph(tmp_path)
    passages = lcg(tmp_path, "search", "where does the job queue live", "--min-score", "0")
    assert passages.returncode == 0, passages.stderr
    first = passages.stdout.splitlines()[0]
    assert "team note [kestrel]" in first
    assert f"(episode {episode})" in first

    entities = lcg_json(tmp_path, "search", "Kestrel", "--what", "entities", "--json")
    assert entities["nodes"][0]["name"] == "Kestrel"  # the tool's result (attributes: objects)
    as_text = lcg(tmp_path, "search", "Kestrel", "--what", "entities", "-g", "kestrel")
    assert f"(entity {entities['nodes'][0]['uuid']})" in as_text.stdout.splitlines()[0]

    facts = lcg(tmp_path, "search", "who leads", "--what", "facts", "--limit", "1")
    assert facts.returncode == 0, facts.stderr
    assert len(facts.stdout.splitlines()) == 1
    assert "Maria Chen LEADS Kestrel [kestrel]" in facts.stdout

    nothing = lcg(tmp_path, "search", "zzyzx", "--what", "facts", "-g", "other")
    assert said(nothing.stdout) == "no facts match 'zzyzx'"
    elsewhere = lcg_json(tmp_path, "search", "Kestrel", "-g", "other", "--json")
    assert elsewhere == {"passages": [], "count": 0}


def test_search_refuses_a_flag_of_another_kind_and_bad_values_naming_the_flag(
    tmp_path: Path,
) -> None:
    _write_graph(tmp_path)
    assert "--min-score: applies to --what passages only" in refused(
        lcg(tmp_path, "search", "x", "--what", "facts", "--min-score", "0.2"), 2
    )
    assert "--weak: applies to --what entities or facts only" in refused(
        lcg(tmp_path, "search", "x", "--weak"), 2
    )
    assert "QUERY: query: is required and must not be blank" in refused(
        lcg(tmp_path, "search", " "), 2
    )
    assert "--what" in refused(lcg(tmp_path, "search", "x", "--what", "people"), 2)
    nowhere = tmp_path / "nowhere"
    assert "there is no workspace" in refused(lcg(nowhere, "search", "x"), 3)
    assert not nowhere.exists()  # a read never creates a workspace


def test_m_rec_040_recall_prints_the_context_block_as_text_and_inspect_the_neighbourhood(
    tmp_path: Path,
) -> None:
    derived = lcg(tmp_path, "derive", "The Kestrel queue lives in Redis", "--agent", "me")
    assert derived.returncode == 0, derived.stderr
    recalled = lcg(tmp_path, "recall", "where is the queue", "--agent-id", "me")
    assert recalled.returncode == 0, recalled.stderr
    line = recalled.stdout.splitlines()[0]
    assert line.startswith("The Kestrel queue lives in Redis [Logic] (score ")
    assert not recalled.stdout.startswith(("{", '"'))  # text, not an escaped JSON string
    short_id = re.search(r"id ([0-9a-f]{8})\)", line)
    assert short_id is not None

    hits = lcg_json(tmp_path, "recall", "where is the queue", "--top-k", "1", "--json")
    assert [hit["content"] for hit in hits["hits"]] == ["The Kestrel queue lives in Redis"]
    assert hits["context"] == line

    shown = lcg(tmp_path, "inspect", short_id.group(1), "--depth", "1")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("The Kestrel queue lives in Redis [Logic]")
    assert "edges to depth 1 (0):" in shown.stdout
    inspected = lcg_json(tmp_path, "inspect", "Redis", "--json")
    assert inspected["node_id"].startswith(short_id.group(1))
    assert "depth must be in 0..=5" in refused(lcg(tmp_path, "inspect", "Redis", "--depth", "9"), 2)
    assert "--session: must start with" in refused(
        lcg(tmp_path, "recall", "q", "--session", "no spaces"), 2
    )


def test_k_wal_007_k_wal_008_k_wal_009_mark_create_list_delete_default_to_liminis(
    tmp_path: Path,
) -> None:
    assert lcg(tmp_path, "assert-entity", "Ada").returncode == 0  # group liminis, seq 1
    created = lcg(tmp_path, "mark", "create", "before-cleanup")
    assert said(created.stdout) == "mark 'before-cleanup' at seq 1 of group 'liminis'"
    assert lcg(tmp_path, "assert-entity", "Grace").returncode == 0
    listed = lcg_json(tmp_path, "mark", "list", "--json")
    assert [(m["name"], m["seq"]) for m in listed["checkpoints"]] == [("before-cleanup", 1)]
    assert said(lcg(tmp_path, "mark", "list").stdout).startswith("before-cleanup seq 1 ")
    assert lcg_json(tmp_path, "mark", "list", "-g", "other", "--json")["checkpoints"] == []

    taken = refused(lcg(tmp_path, "mark", "create", "before-cleanup"), 3)
    assert "before-cleanup" in taken
    assert "NAME: name: must contain only letters" in refused(
        lcg(tmp_path, "mark", "create", "no spaces"), 2
    )
    deleted = lcg(tmp_path, "mark", "delete", "before-cleanup")
    assert said(deleted.stdout) == "deleted mark 'before-cleanup' of group 'liminis'"
    assert said(lcg(tmp_path, "mark", "list").stdout) == "group 'liminis' has no marks"
    assert refused(lcg(tmp_path, "mark", "delete", "before-cleanup"), 3)


def test_k_del_009_forget_deletes_episodes_by_uuid_or_by_source_and_keeps_entities(
    tmp_path: Path,
) -> None:
    episode = _write_graph(tmp_path)
    forgot = lcg(tmp_path, "forget", episode)
    assert said(forgot.stdout) == f"episode {episode}: deleted"
    left = lcg_json(tmp_path, "call", "knowledge_get_episodes", '{"group_id": "kestrel"}')
    assert left["count"] == 0
    entities = lcg_json(tmp_path, "list-entities", "-g", "kestrel", "--json")
    assert entities["count"] == 2  # what it mentioned stays
    several = lcg_json(tmp_path, "forget", episode, "never-stored", "--json")
    assert several == {
        "episodes": [
            {"episode_uuid": episode, "status": "deleted"},  # a no-op now, as the tool says
            {"episode_uuid": "never-stored", "status": "deleted"},
        ]
    }
    stopped = lcg(tmp_path, "forget", "never-stored", "x" * 65)
    assert stopped.returncode == 2
    assert stopped.stdout == "episode never-stored: deleted\n"  # what was done before
    assert "EPISODE: episode_uuid:" in said(stopped.stderr)

    notes = tmp_path / "notes.md"
    notes.write_text("Grace wrote the first compiler.\n\nAda wrote the first program.\n")
    assert lcg(tmp_path, "ingest", str(notes), "-g", "notes").returncode == 0
    by_source = lcg_json(
        tmp_path, "forget", "--source", str(notes), "-g", "notes", "-g", "other", "--json"
    )
    assert by_source["deleted_count"] >= 1
    assert by_source["deleted_count"] == len(by_source["deleted_uuids"])
    assert (
        lcg_json(tmp_path, "call", "knowledge_get_episodes", '{"group_id": "notes"}')["count"] == 0
    )
    again = lcg(tmp_path, "forget", "--source", str(notes), "-g", "notes")
    assert said(again.stdout) == f"deleted 0 episode(s) of source {str(notes)!r}"


def test_forget_refuses_neither_or_both_and_a_group_without_source(tmp_path: Path) -> None:
    rule = "EPISODE: give episode uuids or --source FILE (one of the two)"
    assert rule in refused(lcg(tmp_path, "forget"), 2)
    assert rule in refused(lcg(tmp_path, "forget", "abc", "--source", "notes.md"), 2)
    assert "--group: applies to --source only" in refused(
        lcg(tmp_path, "forget", "a", "-g", "g"), 2
    )
    assert not (tmp_path / ".lcg").exists()  # refused before the workspace is opened
    helped = said(lcg(tmp_path, "forget", "--help").stdout)
    assert "gives no tool that deletes one" in helped  # concepts: what the seed allows


def _help(*command: str) -> str:
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    return result.stdout


def _commands(help_text: str) -> list[str]:
    """The names in a help's Commands panel."""
    _, _, panel = help_text.partition("─ Commands ─")
    return [line.split()[1] for line in panel.splitlines() if re.match(r"│ [a-z][a-z-]* ", line)]


def test_no_help_shows_a_bool_metavar_for_a_flag() -> None:
    top = _commands(_help())
    assert {"search", "recall", "inspect", "mark", "forget"} <= set(top)
    seen = 0
    for command in top:
        text = _help(command)
        assert "<bool>" not in text, command
        for sub in _commands(text):  # mark, canon, gc, ontology
            assert "<bool>" not in _help(command, sub), (command, sub)
            seen += 1
    assert seen >= 6
    assert "<bool>" not in _help()
    lambo_help = CliRunner().invoke(lambo, ["serve", "--help"])
    assert lambo_help.exit_code == 0
    assert "--help" in lambo_help.stdout
    assert "<bool>" not in lambo_help.stdout
    json_flag = next(line for line in _help("search").splitlines() if "--json" in line)
    assert said(json_flag) == "│ --json Print the result as JSON. │"


def test_a_mistyped_command_gets_the_best_match_first() -> None:
    typo = CliRunner().invoke(cli, ["serch", "x"])
    assert typo.exit_code == 2
    assert "Did you mean 'search', 'serve'?" in said(typo.stderr)
    assert "Did you mean 'recall'" in said(CliRunner().invoke(cli, ["recal", "x"]).stderr)


@pytest.mark.slow
def test_every_verb_goes_through_a_running_lcg_serve(tmp_path: Path) -> None:
    service = ServiceProcess(tmp_path)
    try:
        assert service.wait_ready()["state"] == "healthy"
        added = lcg_process(tmp_path, "add-episode", "team note", NOTE, "--json")
        assert added.returncode == 0, added.stderr
        episode = json.loads(added.stdout)["episode_uuid"]
        derived = lcg_process(tmp_path, "derive", "The Kestrel queue lives in Redis")
        assert derived.returncode == 0, derived.stderr

        runs = {
            "search": lcg_process(tmp_path, "search", "job queue", "--min-score", "0"),
            "recall": lcg_process(tmp_path, "recall", "where is the queue"),
            "inspect": lcg_process(tmp_path, "inspect", "Redis"),
            "mark": lcg_process(tmp_path, "mark", "create", "m1"),
            "forget": lcg_process(tmp_path, "forget", episode),
        }
        for verb, result in runs.items():
            assert result.returncode == 0, (verb, result.stderr)
            assert "goes through" in said(result.stderr), verb
        assert f"(episode {episode})" in runs["search"].stdout
        assert runs["recall"].stdout.startswith("The Kestrel queue lives in Redis [Logic]")
        assert runs["inspect"].stdout.startswith("The Kestrel queue lives in Redis [Logic]")
        assert re.fullmatch(r"mark 'm1' at seq \d+ of group 'liminis'", said(runs["mark"].stdout))
        assert said(runs["forget"].stdout) == f"episode {episode}: deleted"
        with service.connect() as client:  # the service made every write
            assert client.result("knowledge_get_episodes", {"group_id": "liminis"})["count"] == 0
            marks = client.result("knowledge_wal_mark_list", {"group_id": "liminis"})
            assert [m["name"] for m in marks["checkpoints"]] == ["m1"]
    finally:
        assert service.stop() == 0


README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_block(section: str, fence: str) -> str:
    text = README.read_text(encoding="utf-8").split(f"## {section}\n", 1)[1]
    return text.split(f"```{fence}\n", 1)[1].split("```", 1)[0]


@pytest.mark.slow
def test_the_readme_everyday_commands_and_python_api_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for line in _readme_block("Everyday commands", "sh").splitlines():
        program, *args = shlex.split(line, comments=True)
        assert program == "lcg"
        result = lcg_process(tmp_path, *args)
        assert result.returncode == 0, (line, result.stderr)
    monkeypatch.chdir(tmp_path)
    code = compile(_readme_block("Python API", "python"), "README.md", "exec")
    exec(code, {"__name__": "readme_python_api"})  # noqa: S102 (the README's own example)
    assert capsys.readouterr().out == "Maria Chen leads the Kestrel team.\n"
