"""knowledge_prepare_checkpoint (P-134, K-INV-049): with writes held off, every SQLite
database's -wal sidecar is folded into its file and truncated and the index files are
written, so that a copy of the main files alone is a consistent backup (ADR 0036)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import AGENT, concept, derive, settled

SIDECARS = ("wal.sqlite-wal", "graph.sqlite-wal", "embeddings.sqlite-wal")


def _call(app: App, tool: str, /, **params: Any) -> dict[str, Any]:
    """A tool's result (a lambo_* tool's structuredContent)."""
    result: dict[str, Any] = operations.dispatch(app, tool, params)
    return result.get("structuredContent", result) if tool.startswith("lambo_") else result


def _write_some(app: App) -> None:
    for name in ("Ada", "Grace", "Linus"):
        _call(app, "knowledge_assert_entity", name=name, summary=f"{name} writes compilers")
    _call(
        app,
        "knowledge_assert_relationship",
        source_name="Ada",
        predicate="mentors",
        target_name="Grace",
    )
    _call(app, "knowledge_add_episode", name="notes", episode_body="Ada mentors Grace on Fridays")
    settled(app, derive(app, concept("the compiler ships on Fridays", "observation")))
    app.workspace.settle()


def test_k_inv_049_p_134_every_sidecar_is_folded_in_and_truncated(
    app: App, workspace: Workspace
) -> None:
    _write_some(app)
    state = workspace.settings.state_dir
    assert any((state / name).stat().st_size > 0 for name in SIDECARS)
    result = _call(app, "knowledge_prepare_checkpoint")
    assert result["success"] is True
    assert result["files_flushed"] == result["files_total"] == 5
    assert [f["file"] for f in result["files"]] == [
        "vectors",
        "text-scorer.npz",
        "wal.sqlite",
        "graph.sqlite",
        "embeddings.sqlite",
    ]
    for name in SIDECARS:
        sidecar = state / name
        assert not sidecar.exists() or sidecar.stat().st_size == 0, name


def test_p_134_a_copy_of_the_main_files_alone_answers_every_read_the_same(
    app: App, workspace: Workspace, tmp_path: Path, embedder: Embedder
) -> None:
    """The backup an operator takes after the call: the main files, no -wal or -shm."""
    _write_some(app)
    _call(app, "knowledge_prepare_checkpoint")
    copy = tmp_path / "backup"
    state = workspace.settings.state_dir
    shutil.copytree(state, copy / ".lcg", ignore=shutil.ignore_patterns("*-wal", "*-shm", "*.lock"))
    reads: dict[str, dict[str, Any]] = {
        "knowledge_list_entities": {},
        "knowledge_get_edges_by_group": {"group_ids": ["liminis"]},
        "knowledge_search_passages": {"query": "who mentors Grace"},
        "lambo_recall": {"agent_id": AGENT, "query": "when does the compiler ship"},
    }
    before = {name: _call(app, name, **params) for name, params in reads.items()}
    workspace.close()
    with make_workspace(Settings(workspace=copy), embedder) as restored:
        copied = App(restored)
        after = {name: _call(copied, name, **params) for name, params in reads.items()}
        status = _call(copied, "knowledge_status")
    assert after == before
    assert status["wal_groups"]["liminis"]["hydration_status"] == "hydrated"
    assert not status.get("repaired")  # nothing had to be rebuilt: the files were whole


def test_prepare_checkpoint_is_admin_scope_and_takes_no_arguments(app: App) -> None:
    row = {op.name: op for op in operations.OPERATIONS}["knowledge_prepare_checkpoint"]
    assert row.scope == "admin"
    assert _call(app, "knowledge_prepare_checkpoint")["success"] is True
