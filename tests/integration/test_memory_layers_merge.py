"""A layered recall merged by relevance (`[serve] layer_merge`, ADR 0107) through one holder:
a real workspace opened by `Service.start` (SQLite, the text scorer, FAISS, the embedder), its
session `lambo` layered over `general`, each holding a few concepts, recalled as a serve
recalls."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.service import Service
from tests.integration.test_memory_layers import QUIET, applied, tool

LAYER = (  # general: what the question is about
    "worktree branches are always rebased onto origin main first",
    "a rebased worktree branch is pushed with force-with-lease",
    "worktree branches are deleted once their merge lands",
)
PROJECT = (  # lambo: nothing to do with it
    "the soup simmers twenty minutes on a low flame",
    "basil goes in after the sauce leaves the heat",
    "the bread dough rests overnight in the fridge",
)
QUESTION = "how are worktree branches rebased"


def _served(workspace: Path, merge: str, fusion: str = "max") -> Service:
    tuning = QUIET.with_values(serve__layer_merge=merge)
    settings = Settings(
        workspace=workspace,
        session="lambo",
        layers=("general",),
        tuning=tuning,
        search_fusion=fusion,  # type: ignore[arg-type]
    )
    served = Service(settings, command="pytest")
    assert served.start() == "healthy", served.reason
    return served


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """general holds LAYER, lambo holds PROJECT; all applied."""
    served = _served(tmp_path, "rank")
    try:
        for scope, texts in (("general", LAYER), (None, PROJECT)):
            concepts = [{"content": text, "concept_type": "logic"} for text in texts]
            extra = {} if scope is None else {"scope": scope}
            applied(served, tool(served, "lambo_derive", concepts=concepts, **extra))
    finally:
        served.close()
    return tmp_path


def _sessions(workspace: Path, merge: str, fusion: str = "max", query: str = QUESTION) -> list[str]:
    served = _served(workspace, merge, fusion)
    try:
        found = tool(served, "lambo_recall", query=query, top_k=4)
    finally:
        served.close()
    hits = found["structuredContent"]["hits"]
    assert all(hit["session"] in ("lambo", "general") for hit in hits)
    return [f"{hit['session']}:{hit['content']}" for hit in hits]


def test_m_rec_240_245_by_relevance_the_layers_evidence_is_not_crowded_out(
    workspace: Path,
) -> None:
    by_rank = _sessions(workspace, "rank")
    by_relevance = _sessions(workspace, "relevance")
    # rank by rank: the unrelated project takes every other slot, the session's first
    assert [hit.split(":")[0] for hit in by_rank] == ["lambo", "general", "lambo", "general"]
    # by relevance: the layer's three concepts first, the project's best after them
    assert sorted(by_relevance[:3]) == sorted(f"general:{text}" for text in LAYER)
    assert by_relevance[3].startswith("lambo:")
    assert by_relevance[3] == by_rank[0]  # each session's own order is kept


def test_m_rec_245_by_relevance_falls_back_to_rank_under_reciprocal_rank_fusion(
    workspace: Path,
) -> None:
    """An rrf score is a function of a hit's ranks in its own session, not comparable across
    sessions: the merge is rank by rank, as with layer_merge = "rank"."""
    by_relevance = _sessions(workspace, "relevance", "rrf")
    assert by_relevance == _sessions(workspace, "rank", "rrf")
    assert [hit.split(":")[0] for hit in by_relevance] == ["lambo", "general", "lambo", "general"]


def test_m_rec_245_by_relevance_a_dependency_question_merges_rank_by_rank(
    workspace: Path,
) -> None:
    """A dependency question's hits answer a traversal (or, with no anchor, stand in for
    one): merged rank by rank whatever layer_merge says."""
    question = "what depends on worktree branches being rebased"
    by_relevance = _sessions(workspace, "relevance", query=question)
    assert by_relevance == _sessions(workspace, "rank", query=question)
    assert by_relevance[0].startswith("lambo:")
