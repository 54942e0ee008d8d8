"""Text and vector projections: rebuilds, the embedding cache, index files, contracts, K-SEM.

Workspaces embed with the hashing embedder; tests that find things by meaning are marked
`minilm` and run on the real model.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.operations import BY_NAME
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import Embedder
from tests.conftest import Call, make_call, make_workspace

QUERIES = ("dog chased the postman", "revenue report", "mathematician", "trip to Portugal")


def write(call: Call, n: int) -> None:
    """The n-th of a fixed sequence of writes to group g (0-based)."""
    steps: list[tuple[str, dict[str, Any]]] = [
        ("knowledge_add_episode", {"name": "dog", "episode_body": "My dog chased the postman."}),
        ("knowledge_assert_entity", {"name": "Ada", "summary": "a mathematician"}),
        ("knowledge_add_episode", {"name": "report", "episode_body": "Revenue report due."}),
        ("knowledge_assert_entity", {"name": "Bob", "summary": "a sailor"}),
        (
            "knowledge_assert_relationship",
            {"source_name": "Ada", "predicate": "KNEW", "target_name": "Bob"},
        ),
        ("knowledge_add_episode", {"name": "trip", "episode_body": "Flying to Lisbon in June."}),
        ("knowledge_assert_entity", {"name": "Ada", "summary": "now a poet"}),
        ("knowledge_delete_episode", {}),
    ]
    name, params = steps[n]
    if name == "knowledge_delete_episode":
        episode = call("knowledge_get_episodes", group_id="g", last_n=10)["episodes"][-1]
        params = {"episode_uuid": episode["uuid"]}
    call(name, group_id="g", **params) if name != "knowledge_delete_episode" else call(
        name, **params
    )


def search_state(call: Call, conn: sqlite3.Connection) -> dict[str, Any]:
    """Everything the text and vector projections answer, without their internal ids."""
    return {
        "docs": sorted(
            tuple(row)
            for row in conn.execute("SELECT group_id, kind, owner_uuid, part FROM text_docs")
        ),
        "catalog": sorted(
            tuple(row)
            for row in conn.execute(
                "SELECT group_id, embedding, owner_uuid, part, text, seq FROM vector_catalog"
            )
        ),
        "passages": {
            q: [
                (p["episode_uuid"], p["part"], p["ranks"])
                for p in call("knowledge_search_passages", query=q, min_score=0.0)["passages"]
            ]
            for q in QUERIES
        },
        "entities": {
            q: [(n["uuid"], n["ranks"]) for n in call("knowledge_find_entities", query=q)["nodes"]]
            for q in QUERIES
        },
    }


@pytest.mark.parametrize("to_seq", [2, 5, 7])
def test_rebuild_to_seq_equals_incremental_state_without_model_calls(
    workspace: Workspace, to_seq: int
) -> None:
    call = make_call(App(workspace))
    at: dict[int, dict[str, Any]] = {}
    for n in range(8):
        write(call, n)
        at[n + 1] = search_state(call, workspace.reader())
    calls = workspace.embedder.calls
    call("knowledge_rebuild_from_wal", group_id="g", to_seq=to_seq, force_clear=True)
    assert search_state(call, workspace.reader()) == at[to_seq]
    call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert search_state(call, workspace.reader()) == at[8]
    # The model did not run: no stored text was re-embedded, and the queries of search_state
    # were embedded before the rebuilds (the workspace keeps query embeddings, M-REC-031).
    assert workspace.embedder.calls - calls == 0


def corrupt(path: Path) -> None:
    path.write_bytes(b"not a faiss index" * 10)


@pytest.mark.parametrize("damage", [corrupt, Path.unlink])
def test_a_corrupted_or_missing_index_file_is_rebuilt_at_start(
    settings: Settings, damage: Any, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(6):
            write(call, n)
        expected = search_state(call, ws.reader())
        count = ws.vectors.count()
    files = sorted(settings.vectors_dir.rglob("*.faiss"))
    assert files, "closing the workspace checkpoints the index files"
    for path in files:
        damage(path)
    with make_workspace(settings, embedder) as ws:
        assert ws.embedder.calls == 0
        assert ws.vectors.count() == count
        assert ws.embedder.calls == 0  # rebuilt from the catalog and the embedding cache
        assert search_state(make_call(App(ws)), ws.reader()) == expected


def test_index_files_are_loaded_and_synced_with_the_catalog(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(4):
            write(call, n)
    with make_workspace(settings, embedder) as ws:
        assert ws.vectors.loaded_from_files >= 1
        call = make_call(App(ws))
        write(call, 4)
        assert call("knowledge_find_relationships", query="knew")["count"] == 1


def test_a_catalog_with_the_old_kind_column_is_renamed_in_place_and_keeps_its_vectors(
    settings: Settings, embedder: Embedder
) -> None:
    """The catalog column once called `kind` is `embedding` now: renamed at open, rows and
    vec_ids kept, so the FAISS files still match it and nothing is re-embedded."""
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(3):
            write(call, n)
        expected = search_state(call, ws.reader())
    with sqlite3.connect(settings.graph_path) as conn:
        conn.execute("ALTER TABLE vector_catalog RENAME COLUMN embedding TO kind")
    conn.close()
    with make_workspace(settings, embedder) as ws:
        assert ws.embedder.calls == 0
        assert ws.vectors.loaded_from_files >= 1
        columns = {row[1] for row in ws.reader().execute("PRAGMA table_info(vector_catalog)")}
        assert "embedding" in columns
        assert "kind" not in columns
        assert search_state(make_call(App(ws)), ws.reader()) == expected


@pytest.mark.minilm  # ranking by meaning / the model's own contract
def test_a_new_embedding_contract_gets_its_own_vectors(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(4):
            write(call, n)
        count = ws.vectors.count()
    other = MiniLmEmbedder(max_tokens=128)
    with Workspace(settings, embedder=other) as ws:
        assert ws.embedder.contract != MiniLmEmbedder().contract
        assert ws.settle(timeout=60)  # the open left them to the follower (ADR 0047)
        assert ws.embedder.texts == count  # nothing cached under the new contract
        status = make_call(App(ws))("knowledge_status")
        assert status["embedding"]["model"].endswith("@128")
        assert status["vector_count"] == count
    contracts = {path.parent.name for path in settings.vectors_dir.rglob("*.faiss")}
    assert len(contracts) == 2  # two vector spaces, never mixed in one file


@pytest.mark.parametrize("group_id", [None, "", "   "])
def test_k_sem_backfill_requires_a_group(call: Call, group_id: str | None) -> None:
    """P-130, issue 10: a blank group_id is refused like a missing one, and the schema lists
    group_id as required (P-010 checks that list before dispatching). Also K-SEM-013/015."""
    params = {} if group_id is None else {"group_id": group_id}
    with pytest.raises(InvalidParams) as error:
        call("knowledge_backfill_summary_embeddings", **params)
    assert error.value.field == "group_id"
    schema = BY_NAME["knowledge_backfill_summary_embeddings"].input_schema()
    assert schema["required"] == ["group_id"]


@pytest.mark.minilm  # ranking by meaning / the model's own contract
def test_k_sem_backfill_refreshes_summary_vectors_of_one_group(
    call: Call, workspace: Workspace
) -> None:
    """Also K-SEM-001/003/005/010/016/018/019: the group's entities with a summary are the
    candidates (another group's stay untouched and its log unwritten); a dry run writes
    nothing; a re-assert that changes a summary leaves its vector stale until a backfill
    brings it back in sync, after which find_entities fuses the summary-vector match."""
    call("knowledge_assert_entity", name="Ada", summary="", group_id="g")
    call("knowledge_assert_entity", name="Bob", summary="a sailor", group_id="g")
    call("knowledge_assert_entity", name="Cy", summary="a sailor too", group_id="h")
    stale = call(
        "knowledge_assert_entity",
        name="Ada",
        group_id="g",
        summary="wrote the first computer program",
    )
    assert stale["embedding_stale"] == ["summary_embedding"]
    head = workspace.log.head("g")
    dry = call("knowledge_backfill_summary_embeddings", group_id="g", dry_run=True)
    assert dry == {"group_id": "g", "total_entities": 2, "backfilled": 2, "dry_run": True}
    assert workspace.log.head("g") == head
    before = call("knowledge_find_entities", query="software pioneer", group_ids=["g"])["nodes"]
    assert all("summary_vector" not in n["ranks"] for n in before if n["name"] == "Ada")
    result = call("knowledge_backfill_summary_embeddings", group_id="g")
    assert result == {"group_id": "g", "total_entities": 2, "backfilled": 2, "dry_run": False}
    assert workspace.log.head("g") == head + 2
    assert workspace.log.head("h") == 1  # other groups untouched
    after = call("knowledge_find_entities", query="software pioneer", group_ids=["g"])["nodes"]
    ada = next(n for n in after if n["name"] == "Ada")
    assert "summary_vector" in ada["ranks"]
    wal = call("knowledge_status")["wal_groups"]["g"]
    assert wal["applied_seq"] == wal["max_seq"]


def test_p_138_build_indices_is_idempotent(call: Call, workspace: Workspace) -> None:
    write(call, 0)
    assert call("knowledge_status")["last_index_time"] is None  # P-102: none built yet
    assert call("knowledge_build_indices") == {"status": "ok", "indices_built": True}
    built = call("knowledge_status")["last_index_time"]
    assert built is not None
    assert built.startswith("2026-")
    assert call("knowledge_build_indices") == {"status": "ok", "indices_built": True}
    assert any(workspace.settings.vectors_dir.rglob("*.faiss"))


def test_a_deleted_projection_database_is_rebuilt_from_the_wal_at_start(
    settings: Settings,
    embedder: Embedder,
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        for n in range(8):
            write(call, n)
        expected = search_state(call, ws.reader())
        entities = call("knowledge_list_entities")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{settings.graph_path}{suffix}").unlink(missing_ok=True)
    with make_workspace(settings, embedder) as ws:
        assert ws.caught_up == 8
        assert ws.embedder.calls == 0
        call = make_call(App(ws))
        assert call("knowledge_list_entities") == entities
        assert search_state(call, ws.reader()) == expected


@pytest.mark.minilm  # ranking by meaning / the model's own contract
def test_an_index_above_the_threshold_becomes_a_removable_ivf_index(
    tmp_path: Path, embedder: Embedder
) -> None:
    settings = Settings(workspace=tmp_path, vector_ivf_threshold=40)
    bodies = [
        f"Note {n}: the team met about topic {n} and agreed on step {n % 7}." for n in range(60)
    ]
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        uuids = [
            call("knowledge_add_episode", name=f"n{n}", episode_body=body, group_id="g")[
                "episode_uuid"
            ]
            for n, body in enumerate(bodies)
        ]
        call(
            "knowledge_add_episode",
            name="dog",
            episode_body="My dog chased the postman.",
            group_id="g",
        )
        index = ws.vectors._indexes[("g", "passage")].index
        assert type(index).__name__ == "IndexIVFFlat"
        assert passages_named(call, "puppy ran after the mail carrier")[0] == "dog"
        call("knowledge_delete_episode", episode_uuid=uuids[0])
        assert ws.vectors.count() == 60
    with make_workspace(settings, embedder) as ws:
        assert ws.vectors.loaded_from_files >= 1
        assert ws.vectors.count() == 60
        assert ws.embedder.calls == 0
        assert passages_named(make_call(App(ws)), "puppy ran after the mail carrier")[0] == "dog"


def passages_named(call: Call, query: str) -> list[str]:
    found = call("knowledge_search_passages", query=query, min_score=0.0)["passages"]
    return [str(p["name"]) for p in found]


@pytest.mark.minilm  # ranking by meaning / the model's own contract
def test_a_flat_index_file_above_a_lowered_threshold_is_loaded_as_ivf(
    tmp_path: Path, embedder: Embedder
) -> None:
    bodies = [f"Note {n}: the team met about topic {n}." for n in range(50)]
    with make_workspace(Settings(workspace=tmp_path, vector_ivf_threshold=1_000), embedder) as ws:
        call = make_call(App(ws))
        for n, body in enumerate(bodies):
            call("knowledge_add_episode", name=f"n{n}", episode_body=body, group_id="g")
        call("knowledge_add_episode", name="dog", episode_body="My dog chased the postman.")
        assert type(ws.vectors._indexes[("g", "passage")].index).__name__ == "IndexIDMap2"
    with make_workspace(Settings(workspace=tmp_path, vector_ivf_threshold=40), embedder) as ws:
        index = ws.vectors._indexes[("g", "passage")].index
        assert type(index).__name__ == "IndexIVFFlat"
        assert index.nprobe == min(64, index.nlist)
        assert ws.embedder.calls == 0
        assert passages_named(make_call(App(ws)), "puppy ran after the mail carrier")[0] == "dog"


def test_equal_scores_come_back_in_uuid_order_before_and_after_a_rebuild(
    call: Call, workspace: Workspace
) -> None:
    """Issue 9: identical passages tie in every leg; their order is by episode uuid, the same
    before and after knowledge_rebuild_from_wal."""
    for index in range(12):
        call(
            "knowledge_add_episode",
            name=f"twin {index}",
            episode_body="the same note",
            group_id="t",
        )

    def order() -> list[str]:
        found = call(
            "knowledge_search_passages",
            query="same note",
            group_ids=["t"],
            num_results=12,
            min_score=0,
        )["passages"]
        return [p["episode_uuid"] for p in found]

    before = order()
    assert before == sorted(before)
    assert len(before) == 12
    call("knowledge_rebuild_from_wal", group_id="t", force_clear=True)
    assert order() == before


def test_issue_10_a_summary_cleared_by_re_assertion_is_no_longer_found_by_its_old_vector(
    call: Call, workspace: Workspace
) -> None:
    """K-SEM-019's gap: the old summary vector stayed, and backfill (which skips an empty
    summary) could not remove it. A summary revised to blank now drops its vector."""
    call("knowledge_assert_entity", name="Ada", summary="wrote the first program", group_id="g")
    call("knowledge_assert_entity", name="Bob", summary="a sailor", group_id="g")
    before = call("knowledge_find_entities", query="wrote the first program", group_ids=["g"])
    assert "summary_vector" in next(n for n in before["nodes"] if n["name"] == "Ada")["ranks"]
    cleared = call("knowledge_assert_entity", name="Ada", group_id="g")
    assert cleared["embedding_stale"] == []  # nothing embedded is out of date any more
    after = call("knowledge_find_entities", query="wrote the first program", group_ids=["g"])
    ranks = [n["ranks"] for n in after["nodes"] if n["name"] == "Ada"]
    assert all("summary_vector" not in r for r in ranks)
    rows = (
        workspace.reader()
        .execute("SELECT COUNT(*) FROM vector_catalog WHERE embedding='summary_embedding'")
        .fetchone()[0]
    )
    assert rows == 1  # Bob's
