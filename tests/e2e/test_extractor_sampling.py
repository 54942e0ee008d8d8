"""The MCP client's own model as extractor and classifier (issue 14, ADR 0044): `lcg serve
--mcp-stdio` as a real subprocess with `[extraction] extractor = "sampling"`, driven by the
SDK's own client whose sampling callback answers as the client's model would (the model
itself is the agent host's, remote: the callback is what an SDK host runs). Both protocol
generations: the initialize handshake (a sampling/createMessage request in the middle of the
call) and 2026-07-28 (input_required, then the client's retry carrying the answers).

Checklist: K-ING-002/005/006/008/010 through this adapter; P-129 (reprocess over sampling).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pytest
from mcp import MCPError
from mcp.client.session import ClientRequestContext

from lcg.domain.events import ChunkExtracted, EventCodec
from lcg.domain.ids import GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.port import Embedder
from lcg.projections.extraction import classify, llm
from lcg.projections.wal.store import EventLog
from tests.conftest import make_workspace
from tests.helpers.mcp_session import mcp_client, structured

pytestmark = pytest.mark.slow

SAMPLING = {"LCG_EXTRACTION_EXTRACTOR": "sampling"}
CHUNK = "Ada Lovelace works at Analytical Engines. She met Charles Babbage."
ANSWER = {
    "entities": [
        {"name": "Ada Lovelace", "type": "Person", "summary": "Works at Analytical Engines."},
        {"name": "Analytical Engines", "type": "Organization", "summary": "Ada's employer."},
    ],
    "facts": [
        {
            "source": "Ada Lovelace",
            "target": "Analytical Engines",
            "predicate": "WORKS_AT",
            "fact": "Ada Lovelace works at Analytical Engines.",
        },
        {  # Babbage is no listed entity: dropped, reported (K-ING-002/010)
            "source": "Ada Lovelace",
            "target": "Charles Babbage",
            "predicate": "MET",
            "fact": "Ada Lovelace met Charles Babbage.",
        },
    ],
}
Mode = Literal["legacy", "auto"]


class ClientModel:
    """The agent host's side: records what the server asked, answers like a model."""

    def __init__(self, answer: str | None = None) -> None:
        self.asked: list[types.CreateMessageRequestParams] = []
        self.answer = answer

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        self.asked.append(params)
        if self.answer is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="the user declined")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.answer),
            model="host-model-7b",
        )


def _text_of(params: types.CreateMessageRequestParams) -> str:
    (message,) = params.messages
    assert isinstance(message.content, types.TextContent)
    return message.content.text


async def _chunk(client: Any) -> Any:
    return await client.call_tool(
        "knowledge_process_chunk",
        {"chunk_text": CHUNK, "chunk_id": "c1", "source_file": "notes.md", "group_id": "g"},
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_k_ing_002_006_010_process_chunk_asks_the_clients_model(tmp_path: Path, mode: Mode) -> None:
    """One chunk, one sampling request carrying the extraction prompt (system prompt, the
    text, temperature 0, the [extraction] max_tokens); the answer is resolved as any
    extractor's: two entities, two edges of which the one to an unlisted name is dropped and
    reported.
    knowledge_status names the adapter; the entities are the source's."""
    workspace = tmp_path / "ws"
    model = ClientModel(json.dumps(ANSWER))

    async def main() -> None:
        async with mcp_client(
            "serve", "--mcp-stdio", "--workspace", str(workspace),
            env=SAMPLING, mode=mode, sampling_callback=model,
        ) as client:  # fmt: skip
            result = await _chunk(client)
            assert result.is_error is False, result.content
            done = structured(result)
            assert (done["nodes_extracted"], done["edges_extracted"]) == (2, 2)  # as extracted
            assert done["edges_dropped_unresolvable"] == 1
            assert [d["target_name"] for d in done["dropped_edges"]] == ["Charles Babbage"]
            status = structured(await client.call_tool("knowledge_status", {}))
            assert status["extractor"] == {"name": "mcp-sampling", "model": "client"}
            found = structured(
                await client.call_tool(
                    "knowledge_get_entities_by_source",
                    {"source": "notes.md", "group_ids": ["g"]},
                )
            )
            names = {node["name"] for node in found["nodes"]}
            assert names == {"Ada Lovelace", "Analytical Engines"}
            rebuilt = await client.call_tool(
                "knowledge_rebuild_from_wal", {"group_id": "g", "force_clear": True}
            )
            assert rebuilt.is_error is False, rebuilt.content
            again = await client.call_tool(
                "knowledge_get_entities_by_source", {"source": "notes.md", "group_ids": ["g"]}
            )
            assert structured(again)["nodes"] == found["nodes"]

    anyio.run(main)
    # one question: the 2026-07-28 retry asks nothing again, the replay asks nothing at all
    (asked,) = model.asked
    assert asked.system_prompt == llm.SYSTEM_PROMPT
    assert CHUNK in _text_of(asked)
    assert asked.temperature == 0
    assert asked.max_tokens == 1024
    assert asked.include_context == "none"
    log = EventLog(Settings(workspace).wal_path, EventCodec())
    try:
        (extracted,) = [
            e.event
            for page in log.read(GroupId("g"))
            for e in page
            if isinstance(e.event, ChunkExtracted)
        ]
    finally:
        log.close()
    assert (extracted.extractor, extracted.model) == ("mcp-sampling", "host-model-7b")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_refused_or_unusable_sampling_answer_writes_nothing(tmp_path: Path, mode: Mode) -> None:
    """The client declines (an error answer), answers what is not an extraction, or declares
    no sampling capability at all: each is a refusal naming the extractor, and the group
    holds no episode afterwards."""
    workspace = tmp_path / "ws"
    model = ClientModel(None)

    async def refused(client: Any, *, capable: bool = True) -> str:
        if mode == "auto" and model.answer is None and capable:
            # 2026-07-28: the declined request never reaches the server; the SDK client
            # raises instead of retrying the call
            with pytest.raises(MCPError, match="the user declined"):
                await _chunk(client)
            message = "the user declined (raised by the client)"
        else:
            result = await _chunk(client)
            assert result.is_error is True
            error = structured(result)
            assert error["data"]["field"] == "extraction.extractor" or (
                error["data"]["kind"] == "extractor_failed"
            )
            message = str(error["message"])
        episodes = structured(await client.call_tool("knowledge_get_episodes", {"group_id": "g"}))
        assert episodes["episodes"] == []
        return message

    async def main() -> None:
        async with mcp_client(
            "serve", "--mcp-stdio", "--workspace", str(workspace),
            env=SAMPLING, mode=mode, sampling_callback=model,
        ) as client:  # fmt: skip
            declined = await refused(client)
            assert "the user declined" in declined
            assert mode == "auto" or "extractor: mcp-sampling failed" in declined
            model.answer = "I think Ada works somewhere."
            garbled = await refused(client)
            assert "mcp-sampling" in garbled
            assert "not a usable extraction" in garbled
        async with mcp_client(
            "serve", "--mcp-stdio", "--workspace", str(workspace), env=SAMPLING, mode=mode
        ) as client:
            incapable = await refused(client, capable=False)
            assert "did not declare the sampling capability" in incapable

    anyio.run(main)


ONTOLOGY = """\
relation_types:
  - name: WORKS_FOR
    description: A person is employed by an organization.
  - name: LOCATED_IN
    description: A place is situated inside a larger place.
"""
FACTS = {
    "Ada is employed by Acme.": "WORKS_FOR",
    "Berlin is inside Germany.": "LOCATED_IN",
    "Cats purr.": "UNCLASSIFIED",
}


def _seed(model: Embedder, workspace: Path) -> None:
    with make_workspace(Settings(workspace), model, command="pytest seed") as ws:
        app = App(ws)
        for index, fact in enumerate(FACTS):
            for name in (f"s{index}", f"t{index}"):
                operations.dispatch(app, "knowledge_assert_entity", {"name": name, "group_id": "t"})
            params = {
                "source_name": f"s{index}",
                "predicate": "RELATED",
                "target_name": f"t{index}",
                "fact": fact,
                "group_id": "t",
            }
            operations.dispatch(app, "knowledge_assert_relationship", params)
    (workspace / ".lcg" / "ontology.yaml").write_text(ONTOLOGY, encoding="utf-8")


class Typist(ClientModel):
    """Answers each verdict request with the type its fact is listed under."""

    async def __call__(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        self.asked.append(params)
        text = _text_of(params)
        verdict = next(t for fact, t in FACTS.items() if fact in text)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=json.dumps({"type": verdict})),
            model="host-model-7b",
        )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_p_129_reprocess_relation_types_classifies_with_the_clients_model(
    tmp_path: Path, embedder: Embedder, mode: Mode
) -> None:
    """Every in-scope fact is asked once with the menu and the verdict's schema (on the
    2026-07-28 protocol all of them in one input_required round, so the SDK's round cap is
    never the limit); the verdicts are written, the abstention as UNCLASSIFIED."""
    workspace = tmp_path / "ws"
    _seed(embedder, workspace)
    model = Typist()

    async def main() -> None:
        async with mcp_client(
            "serve", "--mcp-stdio", "--workspace", str(workspace),
            env=SAMPLING, mode=mode, sampling_callback=model, input_required_max_rounds=1,
        ) as client:  # fmt: skip
            result = await client.call_tool(
                "knowledge_reprocess_relation_types", {"group_id": "t", "scope": "all"}
            )
            assert result.is_error is False, result.content
            done = structured(result)
            assert done["reclassified_count"] == 3
            assert done["breakdown"] == {"WORKS_FOR": 1, "LOCATED_IN": 1, "UNCLASSIFIED": 1}

    anyio.run(main)
    assert len(model.asked) == 3
    assert all(p.system_prompt == classify.SYSTEM_PROMPT for p in model.asked)
    assert all("WORKS_FOR" in _text_of(p) and '"enum"' in _text_of(p) for p in model.asked)
