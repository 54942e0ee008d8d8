"""`lcg derive`, `lcg record-action`, `lcg stats`, `lcg canon`, `lcg gc`, `lcg ingest`: the
memory tools from the shell (issues 11, 13, 14), each command run in this process as the console
script runs it (the process boundary is tested in tests/e2e: test_cli.py, test_cli_memory.py)."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json
from tests.helpers.console_script import refused, said

lcg_json = functools.partial(run_json, run=lcg)


def test_issue_11_derive_waits_for_its_receipt_and_stats_counts_it(tmp_path: Path) -> None:
    first = lcg(tmp_path, "derive", "user schema", "--type", "entity", "--agent", "a1")
    assert first.returncode == 0, first.stderr
    assert "applied — derived 1 concept(s): 1 created (1 embedded)" in said(first.stdout)
    cited = lcg_json(
        tmp_path, "derive", "the lease is 45s", "--depends-on", "user schema", "--json"
    )
    assert cited["outcome"]["state"] == "applied"
    assert cited["outcome"]["detail"].endswith("; 1 citation(s) recorded")
    action = lcg_json(
        tmp_path, "record-action", "ran the tests", "--produces", "report.xml", "--json"
    )
    assert action["outcome"]["action_node"]
    stats = lcg_json(tmp_path, "stats", "--json")
    assert stats["concept_count"] == 4  # two concepts, the action, report.xml
    assert stats["session"] == "liminis"


def test_issue_11_the_cli_refuses_as_the_tools_do(tmp_path: Path) -> None:
    assert "unknown variant Entity" in refused(lcg(tmp_path, "derive", "x", "--type", "Entity"), 2)
    assert "matches nothing" in refused(lcg(tmp_path, "derive", "x", "--depends-on", "y"), 3)
    nowhere = tmp_path / "nowhere"
    assert "there is no workspace" in refused(lcg(nowhere, "stats"), 3)
    assert not nowhere.exists()


def test_issue_13_canon_and_gc_commands_run_the_jobs_and_show_what_they_appended(
    tmp_path: Path,
) -> None:
    (tmp_path / "lcg.toml").write_text("[daemon]\ngc_interval = 1\n", encoding="utf-8")
    assert lcg(tmp_path, "derive", "user schema", "--type", "entity").returncode == 0
    status = lcg_json(tmp_path, "canon", "status", "--json")
    assert status["promotion_policy"] == "Swarm"
    assert status["knobs"]["gc_interval"] == 1  # the settings file reached the jobs
    assert status["statuses"] == {"Candidate": 0, "Venerable": 0, "Canonical": 0}
    assert status["gc"]["sweeps"] == 0
    dry = lcg_json(tmp_path, "gc", "run", "--dry-run", "--json")
    assert (dry["dry_run"], dry["collected"], dry["collection_cap"]) == (True, 0, 32)
    assert lcg_json(tmp_path, "canon", "status", "--json")["gc"]["sweeps"] == 0
    swept = lcg(tmp_path, "gc", "run")
    assert swept.returncode == 0, swept.stderr
    assert said(swept.stdout).startswith("collected 0 concept(s), deferred 0 (cap 32)")
    after = lcg_json(tmp_path, "canon", "status", "--json")["gc"]
    assert (after["sweeps"], after["last_gc_epoch"]) == (1, after["epoch"])
    assert lcg_json(tmp_path, "canon", "run", "--json")["transitions"] == []
    assert lcg_json(tmp_path, "canon", "history", "--json")["rows"] == []


def test_issue_13_a_bad_settings_file_refuses_the_command_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "lcg.toml").write_text("[daemon]\ngc_intervl = 1\n", encoding="utf-8")
    message = refused(lcg(tmp_path, "canon", "status"), 2)
    assert "lcg.toml [daemon] gc_intervl: unknown key" in message


def test_issue_14_lcg_ingest_loads_files_through_process_chunk(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text(
        "Alice Chen joined Acme Corp in Berlin.\n\nBob manages the billing service.\n",
        encoding="utf-8",
    )
    first = lcg(tmp_path, "ingest", str(notes))
    assert first.returncode == 0, first.stderr
    assert said(first.stdout) == (
        f"{notes}: 1 chunk(s), 4 entities extracted, 2 edges written, 1 dropped (no entity at"
        " an end)"
    )
    again = lcg_json(tmp_path, "ingest", str(notes), "--replace", "--json")
    assert again["files"][0]["replaced_episodes"] == 1
    episodes = lcg_json(tmp_path, "call", "knowledge_get_episodes", "{}")
    assert [e["name"] for e in episodes["episodes"]] == ["notes.md-0001"]
    missing = str(tmp_path / "missing.md")
    assert "must be a readable file" in refused(lcg(tmp_path, "ingest", missing), 2)


WIDGETS = "github.com/acme/widgets"
GADGETS = "github.com/acme/gadgets"


def test_m_rsc_001_002_derive_and_record_action_take_repo_scope_on_the_command_line(
    tmp_path: Path,
) -> None:
    """--repo-scope is the tools' repo_scope: README.md in two repositories is two concepts,
    and an action's target under the same scope names the one already there."""
    for repo in (WIDGETS, GADGETS):
        made = lcg_json(
            tmp_path, "derive", "README.md", "--type", "resource", "--repo-scope", repo, "--json"
        )
        assert made["outcome"]["created_count"] == 1, made
    action = lcg_json(
        tmp_path, "record-action", "edited the readme", "--modifies", "README.md#L3",
        "--repo-scope", WIDGETS, "--json",
    )  # fmt: skip
    assert action["outcome"]["state"] == "applied"
    assert lcg_json(tmp_path, "stats", "--json")["concept_count"] == 3  # two READMEs, the action
    recalled = lcg_json(tmp_path, "call", "lambo_recall", '{"agent_id": "a", "query": "README"}')
    labels = sorted(
        h["repo_scope"] for h in recalled["structuredContent"]["hits"] if "repo_scope" in h
    )
    assert labels == [GADGETS, WIDGETS]
    message = refused(lcg(tmp_path, "derive", "README.md", "--repo-scope", "acme widgets"), 2)
    assert message.startswith("error: repo_scope must not hold whitespace"), message
    assert lcg_json(tmp_path, "stats", "--json")["concept_count"] == 3
