"""`lambo session verify` (issue 29, seed 001, ADR 0079): a session's graph checked against its
log, on a real workspace; the graph projection tampered with in SQLite (an edge row deleted, a
status flipped, an edge pointed at nothing) is named by kind and concept, and the command exits
non-zero; a clean session exits 0. Annotation kinds are listed in the seed's words.

Checklist: M-REC-176, M-CFG-052. (M-REC-227's possibly_superseded kind is listed, but no test
here makes a possibly-superseded pair.)
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
from pathlib import Path

import pytest

from lcg.interfaces.app import App
from lcg.interfaces.cli_verify import running_holder
from lcg.interfaces.workspace import Workspace
from lcg.queries.session_verify import verify_session
from tests.helpers.mcp_session import CONSOLE_SCRIPTS
from tests.helpers.service_process import clean_env
from tests.integration.test_memory_writes import (
    SESSION,
    concept,
    derive,
    node_by_content,
    settled,
)

RULING = "user schema owns the users table"
CITING = "logins read the users table"
CORRECTION = "accounts replaced the users table"


@pytest.fixture
def story(app: App) -> None:
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept(CITING, depends_on=[RULING])))
    settled(app, derive(app, concept(CORRECTION, "observation", against=[RULING]), agent="agent-c"))


def verify(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CONSOLE_SCRIPTS / "lambo"), "session", "verify", "--workspace", str(workspace), *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
        check=False,
    )


def tamper(workspace: Workspace, statement: str, *args: str) -> None:
    conn = sqlite3.connect(workspace.settings.graph_path)
    try:
        with conn:
            changed = conn.execute(statement, args).rowcount
        assert changed == 1
    finally:
        conn.close()


@pytest.mark.usefixtures("story")
def test_m_rec_176_a_clean_session_verifies_and_lists_its_annotation_kinds(
    workspace: Workspace,
) -> None:
    report = verify_session(workspace.reader(), workspace.log, SESSION, workspace.clock())
    assert report.ok, report.problems
    ruling = node_by_content(workspace, RULING).uuid
    citing = node_by_content(workspace, CITING).uuid
    assert report.annotations["contradiction"] == [ruling]
    assert report.annotations["rests_on_contradicted"] == [citing]
    assert set(report.annotations) == {
        "contradiction",
        "rests_on_contradicted",
        "possibly_superseded",
        "superseded",
    }
    assert report.concepts == 3
    assert report.receipts == 3

    done = verify(workspace.settings.workspace, "--session", SESSION, "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["ok"] is True
    assert found["problems"] == []
    assert found["checked"]["concepts"] == 3
    assert set(found["annotations"]) == set(report.annotations)
    text = verify(workspace.settings.workspace, "--session", SESSION)
    assert text.returncode == 0
    assert "ok: the graph agrees with the log" in text.stdout
    # this test's process holds the workspace (its writer lease) as a serve would: verify
    # read the files beside it, and says so, naming the holder and the seq of the report
    assert found["holder"] == f"pid {os.getpid()}, `pytest`"
    seq = workspace.log.head(SESSION)
    assert f"note: pid {os.getpid()}, `pytest` holds this workspace" in text.stderr
    assert "verify did not go through it" in text.stderr
    assert f"the session up to seq {seq}" in text.stderr


@pytest.mark.usefixtures("story")
def test_m_cfg_052_verify_with_no_holder_names_none(workspace: Workspace) -> None:
    """Once the holder has closed the workspace (its lease record emptied), verify names no
    holder and prints no note."""
    assert running_holder(workspace.settings.lease_path) == f"pid {os.getpid()}, `pytest`"
    workspace.close()
    alone = verify(workspace.settings.workspace, "--session", SESSION, "--json")
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["holder"] is None
    assert "holds this workspace" not in alone.stderr


def test_a_lease_record_left_by_a_process_that_is_gone_is_no_holder(tmp_path: Path) -> None:
    lease = tmp_path / "writer.lock"
    lease.write_text(
        json.dumps(
            {
                "pid": _gone_pid(),
                "host": socket.gethostname(),
                "command": "lambo serve",
                "since": "",
            }
        )
    )
    assert running_holder(lease) is None
    lease.write_text(
        json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": "lambo serve"})
    )
    assert running_holder(lease) == f"pid {os.getpid()}, `lambo serve`"
    lease.write_text("")  # released: the holder empties its record
    assert running_holder(lease) is None


def _gone_pid() -> int:
    ended = subprocess.Popen(["true"])  # a process that has ended (and been reaped)
    ended.wait()
    return ended.pid


@pytest.mark.usefixtures("story")
def test_a_deleted_edge_row_and_a_flipped_status_are_named_by_kind_and_concept(
    workspace: Workspace,
) -> None:
    citing = node_by_content(workspace, CITING).uuid
    ruling = node_by_content(workspace, RULING).uuid
    tamper(
        workspace,
        "DELETE FROM memory_edges WHERE kind='depends_on' AND source=? AND target=?",
        citing,
        ruling,
    )
    tamper(
        workspace,
        "INSERT INTO canon_nodes (node_id, group_id, status) VALUES (?, ?, 'Canonical')",
        ruling,
        SESSION,
    )
    report = verify_session(workspace.reader(), workspace.log, SESSION, workspace.clock())
    kinds = {(p.kind, p.subject) for p in report.problems}
    assert kinds == {("missing_edge", citing), ("status_mismatch", ruling)}

    done = verify(workspace.settings.workspace, "--session", SESSION)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "2 problem(s):" in done.stdout
    assert f"missing_edge: {citing}: depends_on edge {citing} -> {ruling}" in done.stdout
    assert f"status_mismatch: {ruling}: status Canonical in the graph" in done.stdout


@pytest.mark.usefixtures("story")
def test_an_edge_to_no_concept_is_a_dangling_edge(workspace: Workspace) -> None:
    citing = node_by_content(workspace, CITING).uuid
    tamper(
        workspace,
        "UPDATE memory_edges SET target='00000000-0000-0000-0000-000000000000'"
        " WHERE kind='depends_on' AND source=?",
        citing,
    )
    report = verify_session(workspace.reader(), workspace.log, SESSION, workspace.clock())
    kinds = sorted(p.kind for p in report.problems if p.subject == citing)
    assert kinds == ["dangling_edge", "missing_edge", "unexpected_edge"]


def test_a_session_the_workspace_does_not_hold_is_refused(workspace: Workspace) -> None:
    done = verify(workspace.settings.workspace, "--session", "nosuch")
    assert done.returncode == 3
    assert "--session: the workspace holds no session 'nosuch'" in done.stderr
    bad = verify(workspace.settings.workspace, "--session", "")
    assert bad.returncode == 2
    assert "--session" in bad.stderr
