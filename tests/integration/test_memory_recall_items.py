"""lambo_recall items no other test names (seed 001, M-REC): its arguments and defaults, the
recent leg, read-your-writes, an unlayered session's `scope`, and the result's shape, on a real
workspace through the one dispatch (over MCP in process for `isError`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.text import reader as text_reader
from tests.conftest import make_workspace
from tests.helpers.images import b64, png
from tests.helpers.mcp_session import mcp_in_process
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)


def _recall(app: App, query: str, **extra: object) -> dict[str, Any]:
    result: dict[str, Any] = call(app, "lambo_recall", agent_id=AGENT, query=query, **extra)
    return result


@pytest.mark.parametrize(
    ("argument", "value", "message"),
    [
        ("query", "x" * 16_385, "query"),
        ("top_k", 0, "top_k must be in 1..=100"),
        ("top_k", 101, "top_k must be in 1..=100"),
        ("max_tokens", 0, "max_tokens must be in 1..=100000"),
        ("max_tokens", 100_001, "max_tokens must be in 1..=100000"),
        ("traversal_depth", 6, "traversal_depth must be in 0..=5"),
        ("traversal_depth", -1, "traversal_depth must be in 0..=5"),
    ],
)
def test_m_rec_004_006_008_009_an_argument_beyond_its_bound_is_refused(
    app: App, argument: str, value: object, message: str
) -> None:
    params: dict[str, Any] = {"query": "q", argument: value}
    with pytest.raises(DomainError) as refused:
        call(app, "lambo_recall", agent_id=AGENT, **params)
    assert refused.value.field == argument
    assert message in refused.value.message


def test_m_rec_004_006_008_009_the_ends_of_each_bound_are_accepted(app: App) -> None:
    _recall(app, "x" * 16_384, top_k=100, max_tokens=100_000, traversal_depth=5)
    _recall(app, "q", top_k=1, max_tokens=1, traversal_depth=0)


def test_m_rec_006_without_top_k_a_recall_returns_the_configured_five(app: App) -> None:
    for n in range(8):
        settled(app, derive(app, concept(f"deploy step {n} runs the release checklist")))
    app.workspace.settle()
    hits = _recall(app, "deploy step release checklist")["structuredContent"]["hits"]
    assert len(hits) == 5
    wider = _recall(app, "deploy step release checklist", top_k=7)["structuredContent"]["hits"]
    assert len(wider) == 7


def test_m_rec_029_recent_concepts_join_a_text_query_at_a_fixed_score(
    app: App, workspace: Workspace
) -> None:
    """A concept sharing no word or meaning with the query still comes back, from the recent
    leg, at its fixed score (0.25, below any real match)."""
    settled(app, derive(app, concept("user schema owns the users table", "entity")))
    settled(app, derive(app, concept("zebra crossings are painted white")))
    workspace.settle()
    hits = _recall(app, "who owns the users table")["structuredContent"]["hits"]
    zebra = node_by_content(workspace, "zebra crossings are painted white").uuid
    (recent,) = [hit for hit in hits if hit["node_id"] == zebra]
    assert recent["score"] == 0.25
    assert "recent" in recent["ranks"]
    assert hits[0]["score"] > recent["score"]


def test_m_rec_030_ordinary_recall_leaves_function_words_out_of_keyword_matching(
    app: App, workspace: Workspace
) -> None:
    """The keyword leg of ordinary recall (the BM25 search recall runs per session) drops the
    query's function words: a concept sharing only "the", "of" and "is" with the query is no
    keyword match, one sharing a content word is, and a query of function words alone still
    searches for them."""
    settled(app, derive(app, concept("the vault of the north is sealed")))
    vault = node_by_content(workspace, "the vault of the north is sealed").uuid

    def keyword_hits(query: str) -> list[str]:
        found = text_reader.search(workspace.reader(), "concept", query, [SESSION], 10)
        return [hit.owner_uuid for hit in found]

    assert text_reader.query_words("the zebras of the plain is") == ["zebras", "plain"]
    assert keyword_hits("the zebras of the plain is") == []
    assert keyword_hits("the vault of the plain") == [vault]
    assert keyword_hits("the of is") == [vault]


def test_m_rec_032_a_read_sees_a_write_once_applied_and_a_receipt_wait_gives_read_your_writes(
    app: App, workspace: Workspace
) -> None:
    """Also OQ-04: the ack returns before the write is applied (the async sections), so a
    recall right after it need not see it; lambo_stats with the receipt and wait_ms gives
    read-your-writes."""
    with workspace.memory.processor.paused():
        receipt = derive(app, concept("the staging cluster runs on spot instances"))
        before = _recall(app, "staging cluster spot instances")["structuredContent"]["hits"]
        assert before == []
    settled(app, receipt)  # lambo_stats with the receipt and wait_ms
    after = _recall(app, "staging cluster spot instances")["structuredContent"]["hits"]
    assert [hit["content"] for hit in after] == ["the staging cluster runs on spot instances"]


def test_m_rec_043_a_successful_recall_is_not_an_error(tmp_path: Path) -> None:
    async def main() -> Any:
        async with mcp_in_process(tmp_path, session="demo") as client:
            return await client.call_tool("lambo_recall", {"agent_id": AGENT, "query": "q"})

    result = anyio.run(main)
    assert result.is_error is False


def test_m_rec_055_056_hits_are_in_the_contexts_block_order_and_no_warnings_is_empty(
    app: App, workspace: Workspace
) -> None:
    for text in (
        "the users table holds one row per account",
        "the users table is sharded by region",
        "accounts are archived after a year",
    ):
        settled(app, derive(app, concept(text)))
    workspace.settle()
    content = _recall(app, "users table accounts", max_tokens=100_000)["structuredContent"]
    assert content["warnings"] == []
    hits = content["hits"]
    assert len(hits) == 3
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    blocks = content["context"].split("\n\n")
    assert [block.split(" [", 1)[0] for block in blocks] == [hit["content"] for hit in hits]


def test_m_rec_013_014_015_016_an_unlayered_sessions_scope_is_its_own_name(app: App) -> None:
    settled(app, derive(app, concept("the cache is content addressed")))
    app.workspace.settle()
    plain = _recall(app, "content addressed cache")
    scoped = _recall(app, "content addressed cache", scope=str(SESSION))
    assert scoped == plain
    for other in ("elsewhere", ""):
        with pytest.raises(DomainError) as refused:
            _recall(app, "content addressed cache", scope=other)
        assert refused.value.field == "scope"
        assert str(SESSION) in refused.value.message  # the session's own scopes are listed


RULING = "the billing ledger is kept in postgres"
CORRECTION = "we migrated everything to mongodb last spring"
REBUTTAL = "that mongodb migration was rolled back in june"


def _block(context: str, content: str) -> list[str]:
    (block,) = [b for b in context.split("\n\n") if b.startswith(content)]
    return block.split("\n")


def _chain(app: App) -> None:
    """A ruling, a correction contradicting it, and a rebuttal contradicting the correction."""
    settled(app, derive(app, concept(RULING, "entity")))
    settled(app, derive(app, concept(CORRECTION, "observation", against=[RULING])))
    settled(app, derive(app, concept(REBUTTAL, "observation", against=[CORRECTION])))
    app.workspace.settle()


def test_m_rec_129_141_the_companion_comes_beside_the_hit_and_pulls_in_no_more(
    app: App,
) -> None:
    _chain(app)
    result = _recall(app, "billing ledger postgres", top_k=1, traversal_depth=0)
    hits = result["structuredContent"]["hits"]
    assert [hit["content"] for hit in hits] == [RULING, CORRECTION]  # never without it


def test_m_rec_140_a_companion_shows_only_its_contradicts_line(
    app: App, workspace: Workspace
) -> None:
    _chain(app)
    result = _recall(app, "billing ledger postgres", top_k=1, traversal_depth=0)
    ruling = node_by_content(workspace, RULING)
    lines = _block(result["structuredContent"]["context"], CORRECTION)
    assert [line for line in lines if line.startswith("⚠")] == [
        f'⚠ Contradicts "{RULING}" (id {ruling.uuid[:8]})'
    ]


def test_m_rec_142_a_recall_matching_the_contradicting_concept_shows_its_own_lines(
    app: App, workspace: Workspace
) -> None:
    _chain(app)
    result = _recall(app, "migrated everything to mongodb", top_k=1, traversal_depth=0)
    hits = result["structuredContent"]["hits"]
    assert hits[0]["content"] == CORRECTION
    lines = _block(result["structuredContent"]["context"], CORRECTION)
    rebuttal = node_by_content(workspace, REBUTTAL)
    assert any(
        line.startswith("⚠ Contradicted at ") and f"(id {rebuttal.uuid[:8]})" in line
        for line in lines
    )


def test_m_rec_139_a_contradiction_changes_no_score_or_rank(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Two workspaces hold the same texts; in one the correction contradicts the ruling. The
    ruling's score, rank and status are the same in both."""
    seen = []
    for against in ([RULING], []):
        with make_workspace(Settings(workspace=tmp_path / str(bool(against))), embedder) as ws:
            app = App(ws)
            settled(app, derive(app, concept(RULING, "entity")))
            settled(app, derive(app, concept(CORRECTION, "observation", against=against)))
            ws.settle()
            hits = _recall(app, "billing ledger postgres mongodb")["structuredContent"]["hits"]
            seen.append([(h["content"], round(h["score"], 6), h["is_canonical"]) for h in hits][:2])
    assert seen[0] == seen[1]


def test_m_cfg_023_fusion_rrf_ranks_recall_by_reciprocal_rank(
    tmp_path: Path, embedder: Embedder
) -> None:
    """`[fusion] strategy = "rrf"` in the settings file ranks recall by reciprocal rank: a
    hit's score is its legs' weighted 1/(k + rank), so the same texts score otherwise than
    under the default max of the legs' raw scores (where a hit only the recent leg found
    scores that leg's fixed 0.25). Also M-REC-027."""
    scores = {}
    for strategy in ("max", "rrf"):
        where = tmp_path / strategy
        where.mkdir()
        (where / "lcg.toml").write_text(f'[fusion]\nstrategy = "{strategy}"\n', encoding="utf-8")
        settings = Settings.load({}, where)
        assert settings.search_fusion == strategy
        with make_workspace(settings, embedder) as ws:
            app = App(ws)
            for text in ("user schema owns the users table", "zebra crossings are white"):
                settled(app, derive(app, concept(text)))
            ws.settle()
            hits = _recall(app, "user schema users table")["structuredContent"]["hits"]
            scores[strategy] = {hit["content"]: round(hit["score"], 6) for hit in hits}
    assert scores["max"]["zebra crossings are white"] == 0.25
    assert scores["rrf"]["zebra crossings are white"] != 0.25


def test_m_err_031_only_image_and_vector_calls_answer_with_a_configuration_error(
    app: App, workspace: Workspace
) -> None:
    """On the default server (a text-only embedder, client vectors off) every lambo tool is
    called once with valid arguments, and the image and vector forms too: exactly
    lambo_derive_image and lambo_recall with `image` or `query_vector` answer with a
    configuration error; every other call answers."""
    settled(app, derive(app, concept("the ledger closes at midnight")))
    node = node_by_content(workspace, "the ledger closes at midnight").uuid
    stats = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]
    vector = {
        "values": [0.5] * int(stats["embedding_contract"]["dim"]),
        "contract": stats["embedding_contract"],
    }
    image = {"mime": "image/png", "data": b64(png(3, 2))}
    calls: list[tuple[str, dict[str, Any]]] = [
        ("lambo_recall", {"query": "ledger"}),
        ("lambo_recall", {"image": image}),
        ("lambo_recall", {"query_vector": vector}),
        ("lambo_derive", {"concepts": [concept("the ledger reopens at six")]}),
        ("lambo_record_action", {"action": "closed the ledger", "produces": ["a report"]}),
        ("lambo_reserve", {"node_id": node}),
        ("lambo_stats", {}),
        ("lambo_inspect", {"focus": node}),
        ("lambo_stale", {}),
        ("lambo_saints", {}),
        ("lambo_derive_image", {"caption": "a photo", "concept_type": "resource", "image": image}),
        (
            "lambo_derive_image",
            {"caption": "a vector", "concept_type": "resource", "vector": vector},
        ),
    ]
    configuration: list[str] = []
    other: list[tuple[str, str]] = []
    for name, params in calls:
        try:
            call(app, name, agent_id=AGENT, **params)
        except DomainError as error:
            if error.message.startswith("configuration error: "):
                configuration.append(f"{name} {'/'.join(params)}")
            else:
                other.append((name, error.message))
    assert other == []
    assert configuration == [
        "lambo_recall image",
        "lambo_recall query_vector",
        "lambo_derive_image caption/concept_type/image",
        "lambo_derive_image caption/concept_type/vector",
    ]


def test_m_rec_022_on_sqlite_recall_uses_keywords_vectors_and_graph_expansion(
    app: App, workspace: Workspace
) -> None:
    """The ruling is found by both legs; the concept citing it shares no word with the query
    and is written among 704 unrelated notes (so neither leg nor a neighbour's words reach
    it): only graph expansion brings it, one hop from the ruling."""
    ruling = "the billing ledger is kept in postgres"
    citing = "nightly exports run at two"

    def notes(batch: str) -> None:
        settled(app, derive(app, *(concept(f"note {batch}-{n} about lunch") for n in range(64))))

    settled(app, derive(app, concept(ruling, "entity")))
    notes("x")
    settled(app, derive(app, concept(citing, depends_on=[ruling])))
    for batch in range(10):
        notes(str(batch))
    workspace.settle()
    query = "billing ledger postgres"
    flat = _recall(app, query, top_k=3, traversal_depth=0)["structuredContent"]["hits"]
    assert citing not in [hit["content"] for hit in flat]
    hits = _recall(app, query, top_k=3, traversal_depth=1)["structuredContent"]["hits"]
    ranks = {hit["content"]: hit["ranks"] for hit in hits}
    assert set(ranks[ruling]) >= {"bm25", "vector"}
    assert ranks[citing] == {"graph": 1}
