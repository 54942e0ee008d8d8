"""Resolutions of seed 000's ambiguities about the admin tools (A-07, A-13) and the embedder
seam (P-019), on real workspaces."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from lcg.interfaces import operations
from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.port import Vectors
from tests.conftest import Call
from tests.integration.test_relation_typing import edge, write_ontology


def test_a_07_the_recover_tools_are_not_among_the_six_that_report_progress(
    settings: Settings,
) -> None:
    """Given a progress sink through the serving process's one dispatch, knowledge_recover and
    knowledge_recover_full report nothing; knowledge_rebuild_from_wal, one of the six, does."""
    service = Service(settings, command="lcg test")
    service.start()
    try:
        for name in ("A", "B"):
            service.call("knowledge_assert_entity", {"name": name, "group_id": "g"})
        frames: dict[str, list[tuple[int, int]]] = {}
        calls: dict[str, dict[str, object]] = {
            "knowledge_recover_full": {},
            "knowledge_recover": {"strategy": "rebuild_from_workspace_wal"},
            "knowledge_rebuild_from_wal": {"group_id": "g", "force_clear": True},
        }
        for name, params in calls.items():
            got = frames.setdefault(name, [])

            def sink(done: int, total: int, got: list[tuple[int, int]] = got) -> None:
                got.append((done, total))

            assert service.call(name, params, sink)["success"] is True, name
        assert frames["knowledge_recover_full"] == frames["knowledge_recover"] == []
        assert frames["knowledge_rebuild_from_wal"] != []
    finally:
        service.close()


def test_a_13_dry_run_defaults_to_false_on_every_tool_that_has_it(
    call: Call, workspace: Workspace
) -> None:
    """Every tool with a `dry_run` publishes false as its default, canonicalize and
    backfill_relation_types included; both write when it is omitted."""
    defaults = {
        name: op.params.model_fields["dry_run"].default
        for name, op in operations.BY_NAME.items()
        if "dry_run" in op.params.model_fields
    }
    assert {"knowledge_canonicalize_relations", "knowledge_backfill_relation_types"} <= set(
        defaults
    )
    assert set(defaults.values()) == {False}
    write_ontology(workspace)
    edge(call, "WORKS_FOR", "Ada works for Acme.")
    edge(call, "RELATED", "Cats purr.", target="Cats")
    for tool in ("knowledge_backfill_relation_types", "knowledge_canonicalize_relations"):
        head = workspace.log.head("g1")
        result = call(tool, group_id="g1")
        assert result["dry_run"] is False, tool
        assert workspace.log.head("g1") > head, tool


def test_p_019_an_embedder_failing_during_an_assert_fails_no_write(
    call: Call, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedder is a seam (here the deterministic hashing double). lcg's resolution (ADR
    0022): an assert never waits on the model, so a model that fails takes nothing from the
    write; no vector is stored for it meanwhile (rather than a zero vector), the status names
    the failure, and the next commit embeds what was missed."""
    embed = EmbeddingCache.embed
    failures = [RuntimeError("the model is down")]

    def once_down(self: EmbeddingCache, texts: Sequence[str]) -> Vectors:
        if failures and threading.current_thread().name == "lcg-vectors":
            raise failures.pop()
        return embed(self, texts)

    monkeypatch.setattr(EmbeddingCache, "embed", once_down)
    created = call("knowledge_assert_entity", name="Ada", summary="a mathematician")
    assert created["created"] is True
    assert created["embedding_warning"] is None
    assert call("knowledge_list_entities")["count"] == 1
    status = call("knowledge_status")
    assert status["index_error"] == "VectorIndex: the model is down"
    assert status["vector_count"] == 0
    call("knowledge_assert_entity", name="Bob")
    status = call("knowledge_status")
    assert (status["index_error"], status["vector_count"]) == (None, 3)  # Ada's two, Bob's
