"""knowledge_process_chunk through an OpenAI-compatible endpoint (issue 14, ADR 0033).

The endpoint is remote by nature, so here a local stand-in server speaks the chat-completions
API on a real socket: it records what lcg sends and answers what each test scripts. Everything
on lcg's side is real (settings, the HTTP client, the parsing, the write, the replay).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import DomainError, InvalidParams
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.extraction import llm
from tests.conftest import make_call, make_workspace
from tests.helpers.projection_state import dump

TEXT = "Alice Chen joined Acme Corp in Berlin."
ANSWER = {
    "entities": [
        {"name": "Alice Chen", "type": "Person", "summary": "Alice Chen joined Acme Corp."},
        {"name": "Acme Corp", "type": "Organization", "summary": "A company in Berlin."},
    ],
    "facts": [
        {
            "source": "Alice Chen",
            "target": "Acme Corp",
            "predicate": "JOINED",
            "fact": "Alice Chen joined Acme Corp.",
            "relation_type": None,
            "valid_at": "2026-11-30T09:00:00Z",
        },
        {
            "source": "Alice Chen",
            "target": "Berlin",  # not listed, not in the group: dropped
            "predicate": "WORKS_IN",
            "fact": "Alice Chen works in Berlin.",
        },
    ],
}


@dataclass
class StandIn:
    """What the stand-in answers next (status, message content) and what it was sent."""

    status: int = 200
    content: str = json.dumps(ANSWER)
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((dict(self.headers), body))
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            answer = {"choices": [{"message": {"role": "assistant", "content": state.content}}]}
            payload = json.dumps(answer if state.status == 200 else {"error": "boom"}).encode()
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _settings(tmp_path: Path, url: str) -> Settings:
    env = {
        "LCG_EXTRACTION_EXTRACTOR": "openai",
        "LCG_EXTRACTION_BASE_URL": url,
        "LCG_EXTRACTION_MODEL": "stand-in-model",
        "LCG_EXTRACTION_API_KEY": "sk-test",
    }
    return Settings.load(env, tmp_path)


@pytest.fixture
def ws(tmp_path: Path, embedder: Embedder, stand_in: StandIn) -> Iterator[Workspace]:
    with make_workspace(_settings(tmp_path, stand_in.url), embedder) as workspace:
        yield workspace


def _chunk(ws: Workspace, chunk_id: str = "c1") -> dict[str, Any]:
    params = {"chunk_text": TEXT, "chunk_id": chunk_id, "source_file": "notes.md"}
    result: dict[str, Any] = make_call(App(ws))("knowledge_process_chunk", **params)
    return result


def test_issue_14_the_endpoint_is_asked_with_the_schema_and_its_answer_is_written(
    ws: Workspace, stand_in: StandIn
) -> None:
    result = _chunk(ws)
    counts = ("nodes_extracted", "edges_extracted", "edges_dropped_unresolvable")
    assert tuple(result[key] for key in counts) == (2, 2, 1)
    assert result["dropped_edges"] == [
        {
            "source_name": "Alice Chen",
            "target_name": "Berlin",
            "relation_type": None,
            "fact": "Alice Chen works in Berlin.",
            "unresolved_endpoint": "target",
        }
    ]
    (headers, body), *_ = stand_in.requests
    assert headers["Authorization"] == "Bearer sk-test"
    assert body["model"] == "stand-in-model"
    assert body["temperature"] == 0
    assert body["response_format"]["json_schema"]["schema"] == llm.SCHEMA
    assert TEXT in body["messages"][1]["content"]
    call = make_call(App(ws))
    edges = call("knowledge_list_relationships", group_ids=["liminis"])["edges"]
    assert [(e["name"], e["fact"]) for e in edges] == [("JOINED", "Alice Chen joined Acme Corp.")]
    assert edges[0]["valid_at"].startswith("2026-11-30T09:00:00")
    status = call("knowledge_status")["extractor"]
    assert status == {"name": "openai-compatible", "model": "stand-in-model"}


def test_issue_14_a_replay_asks_the_endpoint_nothing_and_equals_the_incremental_state(
    ws: Workspace, stand_in: StandIn
) -> None:
    _chunk(ws)
    live = dump(ws.reader())
    asked = len(stand_in.requests)
    make_call(App(ws))("knowledge_rebuild_from_wal", group_id="liminis", force_clear=True)
    assert dump(ws.reader()) == live
    assert len(stand_in.requests) == asked


@pytest.mark.parametrize(
    ("status", "content", "said"),
    [
        (200, "Sure! Here are the entities: Alice, Acme.", "is not a usable extraction"),
        (200, json.dumps({"entities": [{"name": 7}], "facts": []}), "entities[0].name"),
        (200, json.dumps({"entities": "Alice", "facts": []}), "entities must be an array"),
        (500, "", "answered HTTP 500"),
    ],
)
def test_issue_14_an_unusable_answer_refuses_the_chunk_and_writes_nothing(
    ws: Workspace, stand_in: StandIn, status: int, content: str, said: str
) -> None:
    stand_in.status, stand_in.content = status, content
    before = dump(ws.reader())
    with pytest.raises(DomainError) as refused:
        _chunk(ws)
    assert refused.value.field == "extractor"
    assert "openai-compatible failed" in refused.value.message
    assert said in refused.value.message
    assert "nothing was written" in refused.value.message
    assert dump(ws.reader()) == before


def test_issue_14_an_answer_in_a_code_fence_is_read(ws: Workspace, stand_in: StandIn) -> None:
    stand_in.content = f"```json\n{json.dumps(ANSWER)}\n```"
    assert _chunk(ws)["nodes_extracted"] == 2


def test_issue_14_an_unreachable_endpoint_is_named(tmp_path: Path, embedder: Embedder) -> None:
    settings = _settings(tmp_path, "http://127.0.0.1:9/v1")
    with make_workspace(settings, embedder) as workspace, pytest.raises(DomainError) as refused:
        _chunk(workspace)
    assert "http://127.0.0.1:9/v1/chat/completions could not be reached" in refused.value.message


@pytest.mark.parametrize("missing", ["LCG_EXTRACTION_BASE_URL", "LCG_EXTRACTION_MODEL"])
def test_issue_14_the_openai_extractor_needs_its_endpoint_and_model(
    tmp_path: Path, missing: str
) -> None:
    env = {
        "LCG_EXTRACTION_EXTRACTOR": "openai",
        "LCG_EXTRACTION_BASE_URL": "http://127.0.0.1:8080/v1",
        "LCG_EXTRACTION_MODEL": "m",
    }
    del env[missing]
    with pytest.raises(InvalidParams) as refused:
        Settings.load(env, tmp_path)
    key = missing.removeprefix("LCG_EXTRACTION_").lower()
    assert refused.value.field == f"[extraction] {key}"
    assert "is required when [extraction] extractor is openai" in refused.value.message
    bad = {"LCG_EXTRACTION_EXTRACTOR": "gpt"}
    with pytest.raises(InvalidParams) as unknown:
        Settings.load(bad, tmp_path)
    assert unknown.value.field == "LCG_EXTRACTION_EXTRACTOR"
    assert "must be spacy | openai | llama" in unknown.value.message


def test_issue_14_the_key_is_never_shown(tmp_path: Path, stand_in: StandIn) -> None:
    settings = _settings(tmp_path, stand_in.url)
    assert "sk-test" not in repr(settings)
