"""lambo_recall by query_vector on a real workspace, through the one dispatch the MCP tools use
(issue 33, ADR 0093): a client vector under the session's embedding contract searches the
vector leg instead of the text's embedding; it is checked, normalised, used for this call
only; refusals name the rule and never repeat the values. Over a real pipe:
tests/e2e/test_recall_by_vector_stdio.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import error_from_exception
from lcg.interfaces.mcp_server import _memory_error
from lcg.interfaces.service import Service
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from tests.helpers.images import b64, png
from tests.integration.test_memory_layers import QUIET, applied, tool
from tests.integration.test_memory_writes import AGENT, call, concept, derive, settled

SAREE = "red silk saree with a gold border"
KURTA = "blue cotton kurta for the monsoon"
INVOICE = "the invoice totals are rounded to cents"
UNUSUAL = 0.734  # a value sent in a vector: never shown back


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Client vectors accepted, as `[embedder] accept_client_vectors = true` sets them."""
    tuning = Tuning()
    values = {**tuning.values, "[embedder] accept_client_vectors": True}
    return dataclasses.replace(Settings(workspace=tmp_path), tuning=Tuning(values=values))


@pytest.fixture
def stored(app: App) -> None:
    for content in (SAREE, KURTA, INVOICE):
        settled(app, derive(app, concept(content, "entity")))


def _contract(app: App) -> dict[str, Any]:
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    contract: dict[str, Any] = stats["embedding_contract"]
    return contract


def _vector_of(workspace: Workspace, text: str, scale: float = 3.5) -> list[float]:
    """What a client computes with the same model: here the text's embedding, not unit."""
    return [float(v) * scale for v in workspace.embedder.embed([text])[0]]


def _recall(app: App, **params: Any) -> dict[str, Any]:
    result: dict[str, Any] = call(app, "lambo_recall", agent_id=AGENT, **params)
    return result


@pytest.mark.usefixtures("stored")
def test_m_rec_270_272_274_m_img_045_recall_by_vector_alone_finds_its_concept(
    app: App, workspace: Workspace
) -> None:
    vector = {"values": _vector_of(workspace, SAREE), "contract": _contract(app)}
    hits = _recall(app, query_vector=vector)["structuredContent"]["hits"]
    assert hits[0]["content"] == SAREE
    assert hits[0]["score"] == pytest.approx(1.0, abs=1e-5)  # normalised: cosine 1 to itself
    legs = {leg for hit in hits for leg in hit["ranks"]}
    assert "bm25" not in legs
    assert "recent" not in legs


@pytest.mark.usefixtures("stored")
def test_m_rec_273_275_102_text_beside_a_vector_matches_words_and_recent_interactions(
    app: App, workspace: Workspace
) -> None:
    vector = {"values": _vector_of(workspace, SAREE), "contract": _contract(app)}
    result = _recall(app, query="what depends on the invoice totals", query_vector=vector)
    content = result["structuredContent"]
    by_content = {hit["content"]: hit for hit in content["hits"]}
    assert "bm25" in by_content[INVOICE]["ranks"]  # the words still match (M-REC-273)
    assert any("recent" in hit["ranks"] for hit in content["hits"])  # M-REC-275
    assert "vector" in by_content[SAREE]["ranks"]
    assert not any("graph traversal" in w for w in content["warnings"])  # blended (M-REC-102)


@pytest.mark.usefixtures("stored")
def test_m_rec_281_the_vector_is_neither_stored_nor_cached(app: App, workspace: Workspace) -> None:
    vector = {"values": [UNUSUAL, *_vector_of(workspace, KURTA)[1:]], "contract": _contract(app)}
    cached = workspace._query_cache.cache_info().currsize
    head = workspace.log.head(workspace.memory.session)
    hits = _recall(app, query_vector=vector)["structuredContent"]["hits"]
    assert hits[0]["content"] == KURTA
    assert workspace._query_cache.cache_info().currsize == cached
    assert workspace.log.head(workspace.memory.session) == head


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        ({"kind": "onnx"}, "kind differs"),
        ({"model": "clip-vit-b-32-client"}, "model differs"),
        ({"dim": 512}, "dim differs"),
    ],
)
def test_m_rec_284_m_img_040_041_a_mismatched_contract_is_refused_showing_the_sessions(
    app: App, change: dict[str, Any], differs: str
) -> None:
    """Also M-STA-057: the contract checked is the one lambo_stats reports."""
    contract = _contract(app)
    values = [UNUSUAL] * int(contract["dim"])
    with pytest.raises(DomainError) as error:
        _recall(app, query_vector={"values": values, "contract": {**contract, **change}})
    message = error.value.message
    assert error.value.field == "query_vector.contract"
    assert differs in message
    shown = f'{{kind: "{contract["kind"]}", model: "{contract["model"]}", dim: {contract["dim"]}}}'
    assert shown in message
    assert str(UNUSUAL) not in message
    assert "clip-vit-b-32-client" not in message


@pytest.mark.parametrize(
    ("values", "field", "rule"),
    [
        ("short", "query_vector.values", "width"),
        ("nan", "query_vector.values[0]", "finite"),
        ("zero", "query_vector.values", "non-zero length"),
        ("huge", "query_vector.values", "too many values"),
    ],
)
def test_m_img_028_042_043_044_m_rec_283_bad_values_are_refused_without_repeating_them(
    app: App, values: str, field: str, rule: str
) -> None:
    contract = _contract(app)
    dim = int(contract["dim"])
    sent = {
        "short": [UNUSUAL] * (dim - 1),
        "nan": [float("nan")] + [UNUSUAL] * (dim - 1),
        "zero": [0.0] * dim,
        "huge": [UNUSUAL] * 4097,
    }[values]
    with pytest.raises(DomainError) as error:
        _recall(app, query="x", query_vector={"values": sent, "contract": contract})
    assert (error.value.field, error.value.rule) == (field, rule)
    assert str(UNUSUAL) not in error.value.message


def test_m_rec_012_image_and_query_vector_together_are_refused(app: App) -> None:
    vector = {"values": [1.0], "contract": _contract(app)}
    image = {"mime": "image/png", "data": "AA=="}
    with pytest.raises(DomainError) as error:
        _recall(app, query_vector=vector, image=image)
    assert error.value.rule == "at most one"


def test_m_rec_003_blank_text_beside_a_vector_counts_as_none(
    app: App, workspace: Workspace
) -> None:
    """Also M-REC-005: beside query_vector, query may be blank and then counts as none."""
    settled(app, derive(app, concept(SAREE, "entity")))
    vector = {"values": _vector_of(workspace, SAREE), "contract": _contract(app)}
    hits = _recall(app, query="   ", query_vector=vector)["structuredContent"]["hits"]
    assert [hit["content"] for hit in hits] == [SAREE]
    assert np.isfinite(hits[0]["score"])


class TestClientVectorsOff:
    """The default: `[embedder] accept_client_vectors = false`."""

    @pytest.fixture
    def settings(self, tmp_path: Path) -> Settings:
        return Settings(workspace=tmp_path)

    def test_m_rec_278_m_img_007_029_query_vector_is_a_configuration_error_naming_the_setting(
        self, app: App
    ) -> None:
        """Also M-ERR-030: `configuration error` and the setting to change."""
        contract = _contract(app)
        vector = {"values": [UNUSUAL] * int(contract["dim"]), "contract": contract}
        with pytest.raises(DomainError) as error:
            _recall(app, query="x", query_vector=vector)
        assert error.value.message.startswith("configuration error: ")
        assert "[embedder] accept_client_vectors = true" in error.value.message
        assert str(UNUSUAL) not in error.value.message

    def test_m_rec_277_an_image_is_a_configuration_error_on_a_text_only_embedder(
        self, app: App
    ) -> None:
        with pytest.raises(DomainError) as error:
            _recall(app, image={"mime": "image/png", "data": b64(png(3, 2))})
        assert error.value.message.startswith("configuration error: ")
        assert "embeds text only" in error.value.message
        assert b64(png(3, 2))[:12] not in error.value.message


def test_m_rec_260_a_recall_by_vector_on_a_layered_session_reads_the_session_alone(
    tmp_path: Path,
) -> None:
    tuning = QUIET.with_values(embedder__accept_client_vectors=True)
    settings = Settings(
        workspace=tmp_path, session="lambo", layers=("general",), tuning=tuning, embedder="hashing"
    )
    service = Service(settings, command="pytest")
    assert service.start() == "healthy", service.reason
    try:
        general = {"content": SAREE, "concept_type": "entity"}
        applied(service, tool(service, "lambo_derive", concepts=[general], scope="general"))
        applied(service, tool(service, "lambo_derive", concepts=[concept(INVOICE, "entity")]))
        contract = tool(service, "lambo_stats")["structuredContent"]["embedding_contract"]
        values = [float(v) for v in HashingEmbedder().embed([SAREE])[0]]
        vector = {"values": values, "contract": contract}
        content = tool(service, "lambo_recall", query_vector=vector)["structuredContent"]
        assert [(hit["content"], hit["session"]) for hit in content["hits"]] == [(INVOICE, "lambo")]
        said = "recall: by vector reads this session only; its layers (general) were not searched"
        assert said in content["warnings"]
        scoped = tool(service, "lambo_recall", query_vector=vector, scope="general")
        assert scoped["structuredContent"]["hits"][0]["content"] == SAREE
    finally:
        service.close()


def test_m_trn_070_a_vector_over_its_own_limit_in_a_small_request_names_that_limit(
    app: App,
) -> None:
    contract = _contract(app)
    vector = {"values": [UNUSUAL] * 4097, "contract": contract}
    with pytest.raises(DomainError) as error:
        _recall(app, query="x", query_vector=vector)
    assert error.value.field == "query_vector.values"
    assert "4096" in error.value.message


@pytest.mark.usefixtures("stored")
def test_m_rec_280_a_vector_search_the_store_fails_is_an_error(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The vector store failing the search (FAISS raising, injected) fails the recall by
    vector, with text beside it too: no answer from the keyword and recent legs alone. Also
    M-ERR-024 (its query_vector half): a failed vector read fails the call (isError over MCP)
    rather than answering from the other legs."""
    vector = {"values": _vector_of(workspace, SAREE), "contract": _contract(app)}
    assert _recall(app, query="invoice totals", query_vector=vector)["structuredContent"]["hits"]

    def failing(*_: object, **__: object) -> list[object]:
        raise RuntimeError("faiss: the index could not be searched")

    monkeypatch.setattr(workspace.vectors, "search", failing)
    for params in ({"query_vector": vector}, {"query": "invoice totals", "query_vector": vector}):
        with pytest.raises(RuntimeError, match="could not be searched"):
            _recall(app, **params)


@pytest.mark.usefixtures("stored")
def test_m_err_023_a_vector_read_of_another_width_is_a_store_error_with_advice(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The query's vector comes back one value short of the index's width (the embedder
    changed under the session, injected): the recall is refused as a `store error` advising
    to re-check the session's embedding contract (lambo_stats) and retry, and nothing of
    the refusal itself is shown."""
    embed = workspace.embedder.embed_queries

    def narrower(texts: Any) -> Any:
        return embed(texts)[:, :-1]

    monkeypatch.setattr(workspace.embedder, "embed_queries", narrower)
    workspace.forget_query_embeddings()
    with pytest.raises(Exception) as raised:  # noqa: PT011 (what it becomes is the subject)
        _recall(app, query="red silk saree")
    text = _memory_error(error_from_exception(raised.value)).content[0].text  # type: ignore[union-attr]
    assert text.startswith("store error: "), text
    assert "lambo_stats" in text
    assert "embedding contract" in text


@pytest.mark.usefixtures("stored")
def test_m_err_024_a_vector_read_refused_fails_a_recall_by_vector_with_text_beside_it(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session's embedding contract narrows under the call (injected: the embedder now
    says one value fewer, the index still holds the wider vectors): a query_vector under the
    new contract passes its check, but the index refuses the read, and the recall fails as
    that store error, with text beside it too, rather than answering from the keyword and
    recent legs. The values sent are not shown back."""
    own = app.reads.embedder.contract
    narrower = dataclasses.replace(own, dim=own.dim - 1)
    monkeypatch.setattr(type(app.reads.embedder), "contract", property(lambda _: narrower))
    contract = _contract(app)
    assert contract["dim"] == own.dim - 1
    vector = {"values": [UNUSUAL] * (own.dim - 1), "contract": contract}
    for params in ({"query_vector": vector}, {"query": "invoice totals", "query_vector": vector}):
        with pytest.raises(Exception) as raised:  # noqa: PT011 (what it becomes is the subject)
            _recall(app, **params)
        answer = _memory_error(error_from_exception(raised.value))
        assert answer.is_error is True
        text = answer.content[0].text  # type: ignore[union-attr]
        assert text.startswith("store error: "), text
        assert "lambo_stats" in text
        assert str(UNUSUAL) not in text
        assert str(own.dim) not in text
