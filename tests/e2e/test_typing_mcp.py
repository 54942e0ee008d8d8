"""The typing tools over real transports (K-PRG-002/003/005/006..009; ADR 0042): canonicalize
over `lcg serve --mcp-stdio` with the SDK's own client and a progress token, and the backfill
over `lcg serve`'s socket with `_progress_token`; real subprocesses, MiniLM."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_workspace
from tests.helpers.mcp_session import mcp_client, structured
from tests.helpers.service_process import ServiceProcess

pytestmark = pytest.mark.slow

ONTOLOGY = """\
relation_types:
  - name: WORKS_FOR
    description: A person is employed by an organization.
    aliases: [employed by]
  - name: LOCATED_IN
    description: A place or organization is situated inside a larger place.
"""
EDGES = (
    ("Ada", "EMPLOYED_BY", "Acme", "Ada is employed by Acme."),
    ("Berlin", "RELATED", "Germany", "The city of Berlin is located inside Germany."),
    ("Cats", "RELATED", "Purring", "Cats purr."),
)


def _seed(model: Embedder, workspace: Path) -> None:
    with make_workspace(Settings(workspace), model, command="pytest seed") as ws:
        app = App(ws)
        for source, predicate, target, fact in EDGES:
            for name in (source, target):
                operations.dispatch(app, "knowledge_assert_entity", {"name": name, "group_id": "t"})
            params = {
                "source_name": source,
                "predicate": predicate,
                "target_name": target,
                "fact": fact,
                "group_id": "t",
            }
            operations.dispatch(app, "knowledge_assert_relationship", params)
    (workspace / ".lcg" / "ontology.yaml").write_text(ONTOLOGY, encoding="utf-8")


@pytest.mark.minilm  # canonicalize maps the predicates by the model's similarity
def test_k_prg_002_003_005_canonicalize_streams_progress_before_its_result(
    tmp_path: Path, embedder: Embedder
) -> None:
    """One lexical edge, two for the fallback: a frame for the fallback's page of 2 embedded
    facts, then one for the page of 3 written edges, both before the result, each one step
    of the run (P-008: progress 1 of 1, then 2 of 2); the same call without a token (a dry
    run) sends none."""
    workspace = tmp_path / "ws"
    _seed(embedder, workspace)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        async with mcp_client("serve", "--mcp-stdio", "--workspace", str(workspace)) as client:
            params = {"group_id": "t", "embedding_threshold": 0.3}
            result = structured(
                await client.call_tool(
                    "knowledge_canonicalize_relations", params, None, on_progress
                )
            )
            assert (result["mapped_count"], result["residual_count"]) == (2, 1)
            assert result["embedding_fallback_promoted"] == 1
            count = len(seen)
            quiet = await client.call_tool(
                "knowledge_canonicalize_relations", {**params, "dry_run": True}
            )
            assert structured(quiet)["mapped_count"] == 2
            assert len(seen) == count  # no token: no notifications
            edges = structured(
                await client.call_tool("knowledge_get_edges_by_group", {"group_ids": ["t"]})
            )["edges"]
            assert sorted(e["relation_type"] for e in edges) == [
                "LOCATED_IN",
                "UNCLASSIFIED",
                "WORKS_FOR",
            ]

    anyio.run(main)
    method = "knowledge_canonicalize_relations"
    assert seen == [(1, 1, f"{method}: 1 of 1"), (2, 2, f"{method}: 2 of 2")]


def test_k_prg_006_to_009_backfill_streams_socket_frames_only_with_a_token(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Over `lcg serve`'s socket: with _progress_token the deprecated backfill sends
    {"type":"progress"} lines (no id, result or error) before its response; without one the
    next line is the response. Also K-CFG-010 (the socket's half of the progress vocabulary;
    the MCP half, `_meta.progressToken`, is the SDK client's progress callback above)."""
    workspace = tmp_path / "ws"
    _seed(embedder, workspace)
    process = ServiceProcess(workspace)
    try:
        assert process.wait_ready()["healthy"] is True, process.log
        with process.connect() as client:
            params = {"group_id": "t", "dry_run": True, "_progress_token": "tok"}
            quiet = client.result("knowledge_backfill_relation_types", params)  # a dry run
            assert quiet["backfilled"] == 3
            rid = client.send("knowledge_backfill_relation_types", {**params, "dry_run": False})
            frames = [client.read()]
            while frames[-1].get("type") == "progress":
                frames.append(client.read())
            *progress, terminal = frames
            # one page of 3 written edges: one step (P-008)
            assert [(f["processed"], f["total"]) for f in progress] == [(1, 1)]
            assert all({"id", "result", "error"}.isdisjoint(f) for f in progress)
            assert terminal["id"] == rid
            assert terminal["result"]["backfilled"] == 3
            client.send("knowledge_canonicalize_relations", {"group_id": "t"})
            assert "result" in client.read()  # K-PRG-009: no token, no frame
    finally:
        process.stop()


@pytest.mark.minilm  # canonicalize maps the predicates by the model's similarity
def test_k_prg_004_attached_mcp_bridges_the_services_frames_for_canonicalize(
    tmp_path: Path, embedder: Embedder
) -> None:
    """`lcg serve --mcp-stdio --connect SOCK` in front of a real `lcg serve`: the service's
    progress frames for canonicalize arrive as the MCP client's progress notifications."""
    workspace = tmp_path / "ws"
    _seed(embedder, workspace)
    process = ServiceProcess(workspace)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        args = ("serve", "--mcp-stdio", "--connect", str(process.socket_path))
        async with mcp_client(*args) as client:
            params = {"group_id": "t", "embedding_threshold": 0.3}
            result = await client.call_tool(
                "knowledge_canonicalize_relations", params, None, on_progress
            )
            assert structured(result)["mapped_count"] == 2

    try:
        assert process.wait_ready()["healthy"] is True, process.log
        anyio.run(main)
    finally:
        process.stop()
    method = "knowledge_canonicalize_relations"
    assert seen == [(1, 1, f"{method}: 1 of 1"), (2, 2, f"{method}: 2 of 2")]
