"""Damaged derivable files (issue 9, F2 and F3): found at open or by a read, set aside, rebuilt.

Real workspaces on real files: each test writes, closes, damages one file on disk as a failing
disk would, opens again and checks that every acknowledged write is visible, that the file was
set aside (never deleted) and that knowledge_status names it (ADR 0020).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections import checksummed
from lcg.projections.damage import DamagedFile
from lcg.projections.embedding.cache import EmbeddingCache, text_hash
from lcg.projections.embedding.port import CountingEmbedder, Embedder
from lcg.projections.vectors.index import Hit
from tests.conftest import make_workspace
from tests.helpers import damage

QUERIES = [f"topic {n} of the notes" for n in range(15)]


def _call(ws: Workspace, operation: str, /, **params: Any) -> dict[str, Any]:
    return operations.dispatch(App(ws), operation, params)


def _seed(settings: Settings, embedder: Embedder, count: int = 30) -> dict[str, str]:
    """Write entities and episodes; return every acknowledged uuid with what it holds."""
    acked: dict[str, str] = {}
    with make_workspace(settings, embedder) as ws:
        for n in range(count):
            entity = _call(
                ws,
                "knowledge_assert_entity",
                name=f"entity {n}",
                summary=f"topic {n} summary",
                attributes={"note": f"attribute of entity {n:03}"},
            )
            acked[entity["entity_uuid"]] = f"entity {n}"
            episode = _call(
                ws,
                "knowledge_add_episode",
                name=f"episode {n}",
                episode_body=f"notes about topic {n}, written on day {n}.",
            )
            acked[episode["episode_uuid"]] = f"episode {n}"
    return acked


def _visible(ws: Workspace) -> dict[str, str]:
    nodes = _call(ws, "knowledge_list_entities", num_results=1000)["nodes"]
    episodes = _call(ws, "knowledge_get_episodes", last_n=1000)["episodes"]
    return {row["uuid"]: row["name"] for row in [*nodes, *episodes]}


def _vector_hits(ws: Workspace) -> list[list[Hit]]:
    vectors = ws.embedder.embed(QUERIES)
    return [ws.vectors.search("entity", None, vector, 10) for vector in vectors]


def _repaired_files(ws: Workspace) -> list[str]:
    return [Path(r["file"]).name for r in _call(ws, "knowledge_status")["repaired"]]


@pytest.mark.parametrize(
    "harm", [damage.truncate_half, damage.corrupt_header], ids=["half-truncated", "bad-header"]
)
def test_f2_a_damaged_graph_is_set_aside_and_rebuilt_from_the_wal(
    settings: Settings, embedder: Embedder, harm: Any
) -> None:
    acked = _seed(settings, embedder)
    harm(settings.graph_path)
    with make_workspace(settings, embedder) as ws:
        assert _visible(ws) == acked
        status = _call(ws, "knowledge_status")
        assert status["entity_count"] == status["episode_count"] == 30
        (repair,) = status["repaired"]
        assert repair["file"] == str(settings.graph_path)
        assert "WAL" in repair["action"]
        (aside,) = damage.damaged_copies(settings.graph_path)
        assert repair["set_aside_as"] == str(aside)
        _call(ws, "knowledge_assert_entity", name="after the repair")
    with make_workspace(settings, embedder) as ws:  # the rebuilt file is sound: no repair
        assert _call(ws, "knowledge_status")["repaired"] == []
        assert len(_visible(ws)) == len(acked) + 1


def test_f2_a_half_truncated_embedding_cache_is_set_aside_and_the_workspace_opens(
    settings: Settings, embedder: Embedder
) -> None:
    acked = _seed(settings, embedder)
    with make_workspace(settings, embedder) as ws:
        before = _vector_hits(ws)
    damage.truncate_half(settings.embeddings_path)
    for path in settings.vectors_dir.rglob("*.faiss"):
        path.unlink()  # make the open re-embed through the cache
    with make_workspace(settings, embedder) as ws:
        assert _visible(ws) == acked
        assert _repaired_files(ws) == ["embeddings.sqlite"]
        assert ws.settle(timeout=30)  # the follower embeds what the cache lost (ADR 0047)
        assert _vector_hits(ws) == before
    assert len(damage.damaged_copies(settings.embeddings_path)) == 1


def test_f3_bytes_overwritten_in_a_faiss_file_are_found_and_the_index_rebuilt_from_the_catalog(
    settings: Settings, embedder: Embedder
) -> None:
    _seed(settings, embedder)
    with make_workspace(settings, embedder) as ws:
        before = _vector_hits(ws)
    (index_file,) = settings.vectors_dir.rglob("*-entity.faiss")
    damage.overwrite_middle(index_file, 64)
    with make_workspace(settings, embedder) as ws:
        assert _vector_hits(ws) == before
        assert _repaired_files(ws) == [index_file.name]
        ws.vectors.checkpoint()
    with make_workspace(settings, embedder) as ws:  # rewritten whole: loads without repair
        assert _repaired_files(ws) == []
        assert ws.vectors.loaded_from_files >= 1
        assert _vector_hits(ws) == before
    assert len(damage.damaged_copies(index_file)) == 1


@pytest.mark.parametrize(
    "harm",
    [damage.truncate_half, damage.corrupt_header, damage.overwrite_middle],
    ids=["half-truncated", "bad-header", "bytes-overwritten"],
)
def test_f3_a_damaged_text_scorer_file_is_set_aside_and_rebuilt_from_fts5(
    settings: Settings, embedder: Embedder, harm: Any
) -> None:
    _seed(settings, embedder)
    with make_workspace(settings, embedder) as ws:
        before = [ws.text_scorer.search("passage", [f"{n}"], None, 5) for n in range(15)]
    harm(settings.text_scorer_path)
    with make_workspace(settings, embedder) as ws:
        assert _repaired_files(ws) == [settings.text_scorer_path.name]
        assert not ws.text_scorer.loaded_from_file
        assert [ws.text_scorer.search("passage", [f"{n}"], None, 5) for n in range(15)] == before
    assert len(damage.damaged_copies(settings.text_scorer_path)) == 1


def test_f3_a_corrupted_row_in_the_embedding_cache_is_dropped_and_embedded_again(
    settings: Settings, embedder: Embedder
) -> None:
    _seed(settings, embedder)
    text = "topic 7 summary"
    (expected,) = embedder.embed([text])
    damage.overwrite(
        settings.embeddings_path, _offset_of(settings.embeddings_path, expected), b"\x7f" * 64
    )
    for path in settings.vectors_dir.rglob("*.faiss"):
        path.unlink()  # the open rebuilds every vector from the cache
    with make_workspace(settings, embedder) as ws:
        assert ws.settle(timeout=30)  # the row the cache dropped is embedded by the follower
        (hit, *_) = ws.vectors.search("entity", None, expected, 1)
        assert hit.score == pytest.approx(1.0, abs=1e-5)
        (repair,) = _call(ws, "knowledge_status")["repaired"]
        assert repair["file"] == str(settings.embeddings_path)
        assert "checksum" in repair["problem"]
    with sqlite3.connect(settings.embeddings_path) as conn:
        assert conn.execute(
            "SELECT count(*) FROM embeddings WHERE checksum IS NULL"
        ).fetchone() == (0,)


def _offset_of(path: Path, vector: np.ndarray) -> int:
    """Where the last 256 bytes of a cached vector sit in the file (checkpointed into it)."""
    with sqlite3.connect(path) as conn:
        blobs = [row[0] for row in conn.execute("SELECT vector FROM embeddings")]
    (blob,) = [b for b in blobs if np.allclose(np.frombuffer(b, dtype=np.float32), vector)]
    tail = blob[-256:]  # a long row spills into an overflow page: its tail is contiguous
    offset = path.read_bytes().find(tail)
    assert offset > 0, "the vector is not in the main database file"
    return offset


def test_f3_a_read_that_meets_a_damaged_row_refuses_writes_and_the_next_open_rebuilds(
    settings: Settings, embedder: Embedder
) -> None:
    acked = _seed(settings, embedder)
    assert damage.overwrite_text(settings.graph_path, "attribute of entity 003", b"\xff\xfe") == 1
    with make_workspace(settings, embedder) as ws:
        with pytest.raises(DamagedFile, match=r"graph\.sqlite"):
            _call(ws, "knowledge_list_entities", num_results=1000)
        assert ws.repairs == []  # the open reads no attributes: it could not see this damage
        with pytest.raises(DamagedFile, match=r"graph\.sqlite"):
            _call(ws, "knowledge_assert_entity", name="not acked")
        status = _call(ws, "knowledge_status")
        (damaged,) = status["damaged_files"]
        assert damaged["file"] == str(settings.graph_path)
        (recovery,) = status["recovery_available"]
        assert "WAL" in recovery
    with make_workspace(settings, embedder) as ws:
        assert _repaired_files(ws) == ["graph.sqlite"]
        assert _visible(ws) == acked
        nodes = {n["name"]: n for n in _call(ws, "knowledge_list_entities")["nodes"]}
        assert nodes["entity 3"]["attributes"] == '{"note":"attribute of entity 003"}'


def test_f3_a_damaged_row_the_open_reads_sets_the_graph_aside_and_rebuilds_it(
    settings: Settings, embedder: Embedder
) -> None:
    """The summary's bytes are in the entity, FTS5 and vector-catalog rows; syncing the vector
    index at open reads the catalog's, so the open itself meets the damage."""
    acked = _seed(settings, embedder)
    assert damage.overwrite_text(settings.graph_path, "topic 3 summary", b"\xff\xfe") >= 2
    with make_workspace(settings, embedder) as ws:
        assert _repaired_files(ws) == ["graph.sqlite"]
        assert _visible(ws) == acked
        nodes = {n["name"]: n for n in _call(ws, "knowledge_list_entities")["nodes"]}
        assert nodes["entity 3"]["summary"] == "topic 3 summary"


def test_a_cache_written_before_row_checksums_keeps_its_vectors_and_gains_checksums(
    tmp_path: Path, embedder: Embedder
) -> None:
    path = tmp_path / "embeddings.sqlite"
    (vector,) = embedder.embed(["an old cached text"])
    with sqlite3.connect(path) as conn:  # the layout before ADR 0020
        conn.execute(
            "CREATE TABLE embeddings (contract TEXT NOT NULL, text_hash BLOB NOT NULL, vector BLOB"
            " NOT NULL, PRIMARY KEY (contract, text_hash)) WITHOUT ROWID"
        )
        conn.execute(
            "INSERT INTO embeddings VALUES (?, ?, ?)",
            (embedder.contract.key, text_hash("an old cached text"), vector.tobytes()),
        )
    counting = CountingEmbedder(embedder)
    cache = EmbeddingCache(path, counting)
    try:
        assert np.array_equal(cache.embed(["an old cached text"])[0], vector)
        assert counting.texts == 0  # read from the cache, not embedded again
        assert cache.repairs == []
    finally:
        cache.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute(
            "SELECT count(*) FROM embeddings WHERE checksum IS NULL"
        ).fetchone() == (0,)


def test_a_faiss_file_written_before_checksums_is_rebuilt_from_the_catalog_without_a_report(
    settings: Settings, embedder: Embedder
) -> None:
    _seed(settings, embedder)
    with make_workspace(settings, embedder) as ws:
        before = _vector_hits(ws)
    (index_file,) = settings.vectors_dir.rglob("*-entity.faiss")
    sealed = checksummed.read(index_file)
    index_file.write_bytes(sealed.payload)  # what faiss.write_index wrote before ADR 0020
    with make_workspace(settings, embedder) as ws:
        assert _repaired_files(ws) == []
        assert _vector_hits(ws) == before
    assert checksummed.read(index_file).generation == sealed.generation  # rewritten at close
