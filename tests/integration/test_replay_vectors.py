"""A replay brings the group's FAISS indexes back from the embedding cache (ADR 0058).

After `lcg replay` (knowledge_rebuild_from_wal) every catalog row has a new vec_id, so every
vector of the group is read again from the cache, never from the model: one pass over the
cache, in key order, so that SQLite reads neighbouring pages instead of pages all over the
file (half the time for 8,000 vectors).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.port import Vectors
from tests.conftest import Call

EPISODES = 300  # more than one chunk of the model's batches (256)


def write_episodes(call: Call) -> None:
    for index in range(EPISODES):
        call("knowledge_add_episode", name=f"n{index}", episode_body=f"note {index} of the run")


def group_vectors(workspace: Workspace) -> dict[str, Any]:
    """Each passage's vector in the group's index, by its text."""
    conn = workspace.reader()
    rows = conn.execute("SELECT vec_id, text FROM vector_catalog WHERE group_id='liminis'")
    index = workspace.vectors._indexes[("liminis", "passage")].index
    return {text: index.reconstruct(vec_id) for vec_id, text in rows}


def test_a_replay_reads_the_groups_vectors_from_the_cache_in_one_pass_in_key_order(
    workspace: Workspace, call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_episodes(call)
    before = group_vectors(workspace)
    lookups: list[list[bytes]] = []
    lookup = EmbeddingCache._lookup

    def spy(self: EmbeddingCache, hashes: list[bytes]) -> dict[bytes, Vectors]:
        lookups.append(list(hashes))
        return lookup(self, hashes)

    monkeypatch.setattr(EmbeddingCache, "_lookup", spy)
    replayed = call("knowledge_rebuild_from_wal", group_id="liminis", force_clear=True)
    assert replayed["mutations_replayed"] == EPISODES
    assert [len(hashes) for hashes in lookups] == [EPISODES]
    assert lookups[0] == sorted(lookups[0])
    after = group_vectors(workspace)
    assert after.keys() == before.keys()
    assert all(np.array_equal(after[text], before[text]) for text in before)
