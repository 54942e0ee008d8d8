"""`[extraction] extractor = "sampling"` without an MCP client (issue 14, ADR 0044): a call
that comes over the socket, the CLI or an attached MCP server has no client model to ask, and
is refused naming the setting, with nothing written. The MCP round trips themselves are in
tests/e2e/test_extractor_sampling.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_call, make_workspace

ONTOLOGY = "relation_types:\n  - name: WORKS_FOR\n    description: employment\n"


@pytest.fixture
def ws(tmp_path: Path, embedder: Embedder) -> Iterator[Workspace]:
    settings = Settings.load({"LCG_EXTRACTION_EXTRACTOR": "sampling"}, tmp_path)
    with make_workspace(settings, embedder) as workspace:
        yield workspace


def test_issue_14_sampling_with_no_mcp_client_refuses_naming_the_setting(ws: Workspace) -> None:
    call = make_call(App(ws))
    status = call("knowledge_status")
    assert status["extractor"] == {"name": "mcp-sampling", "model": "client"}
    with pytest.raises(DomainError) as refused:
        call("knowledge_process_chunk", chunk_text="Ada works at Acme.", chunk_id="c1",
             source_file="notes.md")  # fmt: skip
    assert refused.value.field == "extraction.extractor"
    assert "lcg serve --mcp-stdio" in refused.value.message
    assert call("knowledge_get_episodes")["episodes"] == []


def test_issue_14_reprocess_with_sampling_and_no_mcp_client_refuses(ws: Workspace) -> None:
    call = make_call(App(ws))
    call("knowledge_assert_entity", name="Ada", group_id="t")
    call("knowledge_assert_entity", name="Acme", group_id="t")
    call("knowledge_assert_relationship", source_name="Ada", predicate="RELATED",
         target_name="Acme", fact="Ada is employed by Acme.", group_id="t")  # fmt: skip
    (ws.settings.state_dir / "ontology.yaml").write_text(ONTOLOGY, encoding="utf-8")
    with pytest.raises(DomainError) as refused:
        call("knowledge_reprocess_relation_types", group_id="t")
    assert refused.value.field == "extraction.extractor"
    edges = call("knowledge_list_relationships", group_ids=["t"])
    assert [e.get("relation_type") for e in edges["edges"]] == [None]
