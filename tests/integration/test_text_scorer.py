"""The in-memory BM25 scorer gives FTS5's own scores and follows every change (ADR 0016)."""

from __future__ import annotations

import math
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.tools.search import search_context
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.text import reader
from lcg.projections.text.scorer import TextScorer
from lcg.projections.text.tables import TEXT_TABLES, TOKENIZER
from tests.conftest import Call, make_call, make_workspace

VOCABULARY = (
    "alice bob carol dave garden trip lisbon porto guitar lesson coffee rain summer winter "
    "dog cat postman letter report revenue budget meeting project deadline paint canvas "
    "museum river bridge train ticket bakery bread cheese wine recipe running marathon "
    "knee doctor clinic movie concert ticket book novel poem chapter school exam teacher"
)
WORDS = VOCABULARY.split()
QUERIES = (
    "Alice's trip to Lisbon",
    "what did Bob say about the budget meeting?",
    "guitar lesson with Carol",
    "doctor clinic knee marathon running",
    "bread bread cheese",
    "the and of",  # stop words only: still searched
    "zebra",  # in no document
    "Tickets! for the concert?",
)
GROUPS = ("g1", "g2")


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14))).capitalize() + "."


def fill(call: Call, seed: int = 1, episodes: int = 60) -> dict[str, list[str]]:
    """Chat and text episodes, entities with summaries and facts, in two groups."""
    rng = random.Random(seed)
    made: dict[str, list[str]] = {"episodes": [], "entities": []}
    for n in range(episodes):
        group = GROUPS[n % 2]
        source = "message" if n % 3 else "text"
        body = " ".join(sentence(rng) for _ in range(rng.randint(1, 3)))
        made["episodes"].append(
            call(
                "knowledge_add_episode",
                name=f"e{n}",
                episode_body=body,
                source=source,
                group_id=group,
            )["episode_uuid"]
        )
    for n in range(12):
        group = GROUPS[n % 2]
        name = f"{WORDS[n].title()} {n}"
        made["entities"].append(
            call("knowledge_assert_entity", name=name, summary=sentence(rng), group_id=group)[
                "entity_uuid"
            ]
        )
        if n >= 2:
            call(
                "knowledge_assert_relationship",
                source_name=name,
                predicate=rng.choice(["KNOWS", "VISITED", "LIKES"]),
                target_name=f"{WORDS[n - 2].title()} {n - 2}",
                fact=sentence(rng),
                group_id=group,
            )
    return made


def by_fts5_and_by_memory(ws: Workspace, kind: str, query: str, groups: Any) -> None:
    """Both engines return the same documents with the same scores (ties may swap)."""
    conn = ws.reader()
    fts5 = reader.search(conn, kind, query, groups, 1000)
    memory = reader.search(conn, kind, query, groups, 1000, ws.text_scorer)
    assert reader.scored_docs(ws.text_scorer, kind, query, groups, 1000) is not None
    expected = {(h.owner_uuid, h.part): h.score for h in fts5}
    got = {(h.owner_uuid, h.part): h.score for h in memory}
    assert got.keys() == expected.keys(), (kind, query)
    for key, score in expected.items():
        assert got[key] == pytest.approx(score, rel=1e-9, abs=1e-12), (kind, query, key)
    assert [h.score for h in memory] == sorted((h.score for h in memory), reverse=True)
    by_doc = reader.coverage(conn, kind, query, fts5)
    assert reader.coverage(conn, kind, query, memory, ws.text_scorer) == pytest.approx(by_doc)
    assert all(0.0 < share <= 1.0 for share in by_doc.values()), (kind, query)


def assert_same_as_fts5(ws: Workspace) -> None:
    for text_table in TEXT_TABLES:
        for query in QUERIES:
            for groups in (None, ["g1"], ["g2", "nope"]):
                by_fts5_and_by_memory(ws, text_table.kind, query, groups)
        rows = ws.reader().execute(f"SELECT count(*) FROM {text_table.name}").fetchone()[0]
        assert ws.text_scorer.count(text_table.kind) == rows


def test_memory_bm25_equals_fts5_bm25_for_every_kind_and_group_filter(
    workspace: Workspace, call: Call
) -> None:
    fill(call)
    assert_same_as_fts5(workspace)
    hits = reader.search(workspace.reader(), "passage", "guitar lesson", None, 5)
    assert hits
    assert all(h.score > 0 for h in hits)


def test_coverage_weighs_query_words_by_idf_and_a_word_no_document_holds_most(
    workspace: Workspace, call: Call
) -> None:
    """ADR 0024: the share of the query's weight a document matches, each word weighing
    ln(1 + (N - n + 0.5) / (n + 0.5)), from the scorer and from FTS5 alike."""
    for name, summary in (("Alpha", "red"), ("Beta", "red blue"), ("Gamma", "green")):
        call("knowledge_assert_entity", name=name, summary=summary, group_id="g")

    def weight(holding: int) -> float:
        return math.log(1 + (3 - holding + 0.5) / (holding + 0.5))

    conn = workspace.reader()
    for scorer in (None, workspace.text_scorer):
        for query, expected in (
            ("blue red", {"Beta": 1.0, "Alpha": weight(2) / (weight(1) + weight(2))}),
            ("red zebra", dict.fromkeys(("Alpha", "Beta"), weight(2) / (weight(2) + weight(0)))),
        ):
            hits = reader.search(conn, "entity", query, None, 10, scorer)
            shares = reader.coverage(conn, "entity", query, hits, scorer)
            names = {h.doc_id: _name(conn, h) for h in hits}
            assert {names[doc]: share for doc, share in shares.items()} == pytest.approx(expected)


def _name(conn: sqlite3.Connection, hit: reader.TextHit) -> str:
    return str(
        conn.execute("SELECT name FROM entities WHERE uuid=?", (hit.owner_uuid,)).fetchone()[0]
    )


def test_the_scorer_follows_deletes_revisions_chat_context_and_purges(
    workspace: Workspace, call: Call
) -> None:
    made = fill(call)
    for uuid in made["episodes"][1:40:3]:  # chat neighbours get their context rewritten
        call("knowledge_delete_episode", episode_uuid=uuid)
    call("knowledge_assert_entity", name="Alice 0", summary="now paints canvas", group_id="g1")
    call(
        "knowledge_assert_relationship",
        source_name="Carol 2",
        predicate="KNOWS",
        target_name="Alice 0",
        fact="Carol taught Alice guitar in Lisbon",
        group_id="g1",
    )
    assert_same_as_fts5(workspace)
    call("knowledge_delete_by_group", group_ids=["g2"], confirm=True)
    assert_same_as_fts5(workspace)
    assert all(
        h.group_id == "g1" for h in reader.search(workspace.reader(), "passage", "bread", None, 50)
    )


@pytest.mark.parametrize("to_seq", [10, None])
def test_a_rebuild_is_followed_by_the_scorer(
    workspace: Workspace, call: Call, to_seq: int | None
) -> None:
    fill(call, episodes=30)
    call("knowledge_rebuild_from_wal", group_id="g1", to_seq=to_seq, force_clear=True)
    assert_same_as_fts5(workspace)
    if to_seq is not None:
        assert workspace.text_scorer.count("passage") < 30


def test_the_checkpoint_is_loaded_and_the_change_log_tail_applied(
    workspace: Workspace, call: Call
) -> None:
    fill(call, seed=2, episodes=20)
    conn = workspace.runner.conn
    workspace.text_scorer.checkpoint(conn)
    checkpointed = workspace.text_scorer.applied
    assert conn.execute("SELECT count(*) FROM text_changes").fetchone()[0] == 0  # pruned
    fill(call, seed=3, episodes=20)  # not checkpointed: only in the change log
    assert conn.execute("SELECT min(change_id) FROM text_changes").fetchone()[0] > checkpointed
    fresh = TextScorer(workspace.settings.text_scorer_path, TOKENIZER, TEXT_TABLES)
    fresh.open(conn)
    assert fresh.loaded_from_file
    assert fresh.applied == workspace.text_scorer.applied
    for text_table in TEXT_TABLES:
        for query in QUERIES:
            assert fresh.search(text_table.kind, query.lower().split(), None, 100) == (
                workspace.text_scorer.search(text_table.kind, query.lower().split(), None, 100)
            )


@pytest.mark.parametrize("damage", ["corrupt", "missing", "foreign"])
def test_a_corrupt_missing_or_foreign_scorer_file_is_rebuilt_from_fts5(
    settings: Settings, damage: str, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        fill(make_call(App(ws)), episodes=20)
    path = settings.text_scorer_path
    assert path.exists()
    if damage == "corrupt":
        path.write_bytes(path.read_bytes()[:100])
    elif damage == "missing":
        path.unlink()
    else:  # a file written for another graph database
        Path(settings.graph_path).unlink()
    with make_workspace(settings, embedder) as ws:
        assert not ws.text_scorer.loaded_from_file
        assert_same_as_fts5(ws)
    with make_workspace(settings, embedder) as ws:
        assert ws.text_scorer.loaded_from_file
        assert_same_as_fts5(ws)


def test_a_word_the_tokenizer_splits_is_left_to_fts5(workspace: Workspace, call: Call) -> None:
    call("knowledge_add_episode", name="x", episode_body="the snake_case name", group_id="g1")
    assert reader.scored_docs(workspace.text_scorer, "passage", "snake_case", None, 10) is None
    found = call("knowledge_search_passages", query="snake_case", min_score=0.0)["passages"]
    assert [p["name"] for p in found] == ["x"]


def test_bm25_engine_setting(tmp_path: Path, embedder: Embedder) -> None:
    with pytest.raises(InvalidParams) as error:
        Settings.load({"LCG_BM25_ENGINE": "lucene"}, tmp_path)
    assert error.value.field == "LCG_BM25_ENGINE"
    assert Settings.load({}, tmp_path).bm25_engine == "memory"
    settings = Settings.load({"LCG_BM25_ENGINE": "fts5"}, tmp_path)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        assert search_context(app).text_scorer is None
        call = make_call(app)
        call("knowledge_add_episode", name="x", episode_body="rare zanzibar words", group_id="g")
        found = call("knowledge_search_passages", query="zanzibar", min_score=0.0)["passages"]
        assert [p["name"] for p in found] == ["x"]


def test_clear_all_empties_the_scorer(workspace: Workspace, call: Call) -> None:
    fill(call, episodes=10)
    call("knowledge_clear_all", confirm=True)
    assert all(workspace.text_scorer.count(text_table.kind) == 0 for text_table in TEXT_TABLES)
    call("knowledge_add_episode", name="after", episode_body="bread after the clear", group_id="g1")
    assert_same_as_fts5(workspace)
    assert workspace.text_scorer.count("passage") == 1


def test_a_scorer_that_failed_to_follow_a_commit_catches_up_at_the_next(
    workspace: Workspace, call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill(call, episodes=10)
    tokenizer = workspace.text_scorer.tokenizer

    def broken(*_: object) -> list[tuple[int, str, float, int]]:
        raise RuntimeError("tokenizer down")

    monkeypatch.setattr(tokenizer, "weighted", broken)
    made = call("knowledge_add_episode", name="lost?", episode_body="zanzibar", group_id="g1")
    assert made["episode_uuid"]  # the write itself is durable and answered
    assert workspace.writer.listener_failure is not None
    assert "tokenizer down" in workspace.writer.listener_failure
    monkeypatch.undo()
    call("knowledge_add_episode", name="next", episode_body="more bread", group_id="g1")
    assert_same_as_fts5(workspace)
    found = call("knowledge_search_passages", query="zanzibar", min_score=0.0)["passages"]
    assert found[0]["name"] == "lost?"
    assert found[0]["ranks"]["text"] == 1


def test_the_last_querys_scores_are_reused_only_until_the_postings_change(
    workspace: Workspace, call: Call
) -> None:
    """A layered recall asks the same phrases once per session: the second group's search
    reuses the scores, and a write in between is seen."""
    fill(call)
    scorer = workspace.text_scorer
    first = reader.scored_docs(scorer, "passage", "guitar lesson", ["g1"], 1000)
    again = reader.scored_docs(scorer, "passage", "guitar lesson", ["g2"], 1000)
    assert first
    assert again
    assert not {doc for doc, _ in first} & {doc for doc, _ in again}
    by_fts5_and_by_memory(workspace, "passage", "guitar lesson", ["g2"])
    call(
        "knowledge_add_episode",
        name="late",
        episode_body="Guitar lesson, guitar lesson, guitar lesson.",
        source="text",
        group_id="g2",
    )
    after = reader.scored_docs(scorer, "passage", "guitar lesson", ["g2"], 1000)
    assert after is not None
    assert len(after) == len(again) + 1
    by_fts5_and_by_memory(workspace, "passage", "guitar lesson", ["g2"])


def test_m_rec_240_one_pass_over_the_postings_ranks_each_group_as_its_own_search(
    workspace: Workspace, call: Call
) -> None:
    """A layered recall's keyword leg (ADR 0097): the matches found once and split by group
    give each group what a search of that group alone gives, at any limit; a group the
    scorer does not know finds nothing."""
    fill(call)
    scorer = workspace.text_scorer
    for text_table in TEXT_TABLES:
        for query in QUERIES:
            for limit in (1, 3, 1000):
                each = reader.scored_each(scorer, text_table.kind, query, [*GROUPS, "nope"], limit)
                assert each is not None
                for group in (*GROUPS, "nope"):
                    alone = reader.scored_docs(scorer, text_table.kind, query, [group], limit)
                    assert each[group] == alone, (text_table.kind, query, group, limit)
    found = reader.scored_each(scorer, "passage", "guitar lesson", list(GROUPS), 5)
    assert found is not None
    assert found["g1"]
