"""knowledge_query_cypher over the ladybug Cypher projection (P-113, K-SCP-011..013, ADR 0039)."""

from __future__ import annotations

from typing import Any

import pytest

from lcg.domain.errors import InvalidParams
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace, WorkspaceClosed
from lcg.projections.cypher import store as cypher_store
from lcg.projections.cypher.store import DATABASE_FILE, SUBSCRIPTION
from lcg.projections.embedding.port import Embedder
from lcg.projections.graph.projection import GraphProjection
from tests.conftest import Call, make_call, make_workspace

TWO_HOPS = (
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity)-[s:RELATES]->(c:Entity)"
    " RETURN a.name AS source, r.name AS first, b.name AS via, s.name AS second,"
    " c.name AS target ORDER BY source, target"
)
EVERYTHING = (
    "MATCH (n:Entity) OPTIONAL MATCH (n)-[r:RELATES]->(m:Entity)"
    " RETURN n.group_id AS g, n.name AS entity, n.summary AS summary, n.labels AS labels,"
    " r.name AS p, r.fact AS fact, m.name AS other ORDER BY g, entity, p, other"
)


def _chain(call: Call, group: str = "g") -> None:
    for name in ("Ada", "Bob", "Cy"):
        call("knowledge_assert_entity", name=name, group_id=group, summary=f"{name} here")
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        target_name="Bob",
        predicate="mentors",
        group_id=group,
    )
    call(
        "knowledge_assert_relationship",
        source_name="Bob",
        target_name="Cy",
        predicate="funds",
        group_id=group,
    )


def test_k_scp_011_asserted_entities_and_edges_answer_a_two_hop_match(
    call: Call, settings: Settings
) -> None:
    _chain(call)
    result = call("knowledge_query_cypher", query=TWO_HOPS)
    assert result["columns"] == ["source", "first", "via", "second", "target"]
    assert result["rows"] == [
        {"source": "Ada", "first": "mentors", "via": "Bob", "second": "funds", "target": "Cy"}
    ]
    assert (settings.cypher_dir / DATABASE_FILE).exists()


def test_k_ast_016_entity_fields_are_read_back_with_cypher(call: Call) -> None:
    call(
        "knowledge_assert_entity",
        name="Ada",
        group_id="g",
        labels=["Person"],
        attributes={"born": 1815},
    )
    rows = call(
        "knowledge_query_cypher",
        query="MATCH (n:Entity {name: 'Ada'}) RETURN n.labels AS labels, n.attributes AS a",
    )["rows"]
    assert rows[0]["labels"] == ["Person"]
    assert rows[0]["a"] == '{"born":1815}'


def test_a_05_a_revised_entity_and_edge_are_read_as_revised(call: Call) -> None:
    _chain(call)
    call("knowledge_assert_entity", name="Bob", group_id="g", summary="Bob, revised")
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        target_name="Bob",
        predicate="mentors",
        fact="Ada mentors Bob weekly",
        group_id="g",
    )
    rows = call(
        "knowledge_query_cypher",
        query="MATCH (a:Entity)-[r:RELATES]->(b:Entity {name: 'Bob'})"
        " RETURN b.summary AS s, r.fact AS fact, count(*) AS n",
    )["rows"]
    assert rows == [{"s": "Bob, revised", "fact": "Ada mentors Bob weekly", "n": 1}]


def test_a_05_a_purged_group_is_gone_from_cypher(call: Call) -> None:
    _chain(call, "a")
    _chain(call, "b")
    call("knowledge_delete_by_group", group_ids=["a"], confirm=True)
    rows = call("knowledge_query_cypher", query="MATCH (n:Entity) RETURN DISTINCT n.group_id AS g")[
        "rows"
    ]
    assert rows == [{"g": "b"}]
    assert len(call("knowledge_query_cypher", query=TWO_HOPS)["rows"]) == 1
    call("knowledge_clear_all", confirm=True)
    assert call("knowledge_query_cypher", query=EVERYTHING)["rows"] == []


def test_k_wal_rebuild_force_clear_gives_the_same_cypher_answers(call: Call) -> None:
    _chain(call)
    before = call("knowledge_query_cypher", query=EVERYTHING)["rows"]
    assert len(before) == 3
    call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert call("knowledge_query_cypher", query=EVERYTHING)["rows"] == before
    assert call("knowledge_query_cypher", query=TWO_HOPS)["rows"] != []


@pytest.mark.parametrize(
    "query",
    [
        "CREATE (:Entity {uuid: 'x', name: 'Mallory'})",
        "MATCH (n:Entity {name: 'Ada'}) SET n.name = 'Eve'",
        "MATCH (n:Entity) DETACH DELETE n",
        "MERGE (n:Entity {uuid: 'y'})",
        "DROP TABLE RELATES",
        "COMMIT",
        "COPY Entity FROM 'x.csv'",
        "LOAD FROM '/etc/passwd' RETURN *",
    ],
)
def test_k_scp_012_a_mutating_query_is_refused_and_changes_nothing(call: Call, query: str) -> None:
    _chain(call)
    before = call("knowledge_query_cypher", query=EVERYTHING)["rows"]
    with pytest.raises(InvalidParams) as error:
        call("knowledge_query_cypher", query=query)
    assert error.value.field == "query"
    assert "WAL" in str(error.value)
    assert call("knowledge_query_cypher", query=EVERYTHING)["rows"] == before


@pytest.mark.parametrize(
    "query",
    ["MATCH (n:Entity RETURN n", "MATCH (n:Nope) RETURN n", "RETURN 1; RETURN 2"],
)
def test_bad_cypher_is_an_error_naming_query(call: Call, query: str) -> None:
    with pytest.raises(InvalidParams) as error:
        call("knowledge_query_cypher", query=query)
    assert str(error.value).startswith("query: ")


def test_the_projection_catches_up_at_open_when_it_missed_writes(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        _chain(make_call(App(ws)))
        expected = make_call(App(ws))("knowledge_query_cypher", query=EVERYTHING)["rows"]
    # a crash between graph.sqlite's commit and ladybug's: here, the whole database lost
    for path in settings.cypher_dir.iterdir():
        path.unlink()
    with make_workspace(settings, embedder) as ws:
        assert ws.cypher.resynced == ["g"]
        assert make_call(App(ws))("knowledge_query_cypher", query=EVERYTHING)["rows"] == expected
    with make_workspace(settings, embedder) as ws:
        assert ws.cypher.resynced == []  # in line: nothing copied again


def test_k_wal_a_rebuild_copies_a_group_in_several_transactions_with_nulls_kept(
    call: Call, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group is copied again COPY_ROWS rows per ladybug transaction (one transaction for a
    100k-entity group filled ladybug's buffer pool); NULL fields (relation_type, valid_at)
    are copied as NULL, given ones as given."""
    _chain(call)
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        target_name="Cy",
        predicate="knows",
        relation_type="KNOWS",
        valid_at="2024-01-02T00:00:00Z",
        group_id="g",
    )
    fields = (
        "MATCH (x:Entity)-[r:RELATES]->(y:Entity) RETURN x.name AS a, r.name AS p,"
        " r.relation_type AS t, r.valid_at IS NULL AS open, y.name AS b ORDER BY a, p"
    )
    before = call("knowledge_query_cypher", query=fields)["rows"]
    assert [(r["t"], r["open"]) for r in before] == [("KNOWS", False), (None, True), (None, True)]
    everything = call("knowledge_query_cypher", query=EVERYTHING)["rows"]
    monkeypatch.setattr(cypher_store, "COPY_ROWS", 2)  # 6 rows: four transactions
    transactions: list[int] = []
    original = cypher_store.CypherGraph._transaction

    def counted(self: cypher_store.CypherGraph) -> Any:
        transactions.append(1)
        return original(self)

    monkeypatch.setattr(cypher_store.CypherGraph, "_transaction", counted)
    call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert len(transactions) >= 4
    assert call("knowledge_query_cypher", query=fields)["rows"] == before
    assert call("knowledge_query_cypher", query=EVERYTHING)["rows"] == everything


def test_a_copy_cut_short_leaves_the_group_stale_and_the_next_open_copies_it_again(
    settings: Settings, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        _chain(call)
        expected = call("knowledge_query_cypher", query=EVERYTHING)["rows"]
        monkeypatch.setattr(cypher_store, "COPY_ROWS", 2)
        puts = 0
        real_put = cypher_store._put_edge

        def failing_put(tx: Any, row: Any, *, new: bool = False) -> None:
            nonlocal puts
            puts += 1
            if puts == 2:
                raise RuntimeError("disk gone mid-copy")
            real_put(tx, row, new=new)

        monkeypatch.setattr(cypher_store, "_put_edge", failing_put)
        with pytest.raises(RuntimeError, match="mid-copy"):
            ws.cypher.rebuilt(ws.runner.conn, ["g"])
        assert "g" not in ws.cypher.positions()  # the partial copy is not taken as current
        monkeypatch.undo()
    with make_workspace(settings, embedder) as ws:
        assert ws.cypher.resynced == ["g"]
        assert make_call(App(ws))("knowledge_query_cypher", query=EVERYTHING)["rows"] == expected


def test_every_event_type_is_handled_or_ignored_by_the_cypher_projection() -> None:
    graph = GraphProjection().subscription
    assert SUBSCRIPTION.unclaimed == frozenset()
    assert SUBSCRIPTION.handles.isdisjoint(SUBSCRIPTION.ignores)
    assert graph.handles | graph.ignores == SUBSCRIPTION.handles | SUBSCRIPTION.ignores


def test_a_read_only_workspace_refuses_cypher_with_a_clear_error(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder):
        pass
    with (
        Workspace(settings, embedder=embedder, read_only=True, command="pytest") as ws,
        pytest.raises(WorkspaceClosed, match="Cypher queries need the workspace open"),
    ):
        _ = ws.cypher


def test_a_query_sees_every_write_acknowledged_before_it(app: App) -> None:
    call = make_call(app, settle=False)  # the follower is not waited for by the test
    call("knowledge_query_cypher", query="MATCH (n:Entity) RETURN count(*) AS n")  # opens it
    for i in range(30):
        call("knowledge_assert_entity", name=f"e{i}", group_id="g")
    rows = call("knowledge_query_cypher", query="MATCH (n:Entity) RETURN count(*) AS n")["rows"]
    assert rows == [{"n": 30}]
    assert app.workspace.cypher_follower.processed_batches >= 1


def test_a_lost_follow_up_is_mended_by_the_next_commit(app: App, call: Call) -> None:
    call("knowledge_assert_entity", name="Ada", group_id="g")
    graph = app.workspace.cypher
    with graph._transaction() as tx:  # a batch the follower lost: the node is not there
        tx.execute("MATCH (n:Entity) DETACH DELETE n")
    graph.failure = "CypherGraph: lost"
    call("knowledge_assert_entity", name="Bob", group_id="g")
    rows = call(
        "knowledge_query_cypher", query="MATCH (n:Entity) RETURN n.name AS name ORDER BY name"
    )
    assert rows["rows"] == [{"name": "Ada"}, {"name": "Bob"}]
    assert graph.failure is None


def test_p_124_a_merge_is_seen_by_cypher_and_survives_a_rebuild(call: Call) -> None:
    """The merged alias leaves the Cypher graph, its edge is the canonical's, and the edge
    that became a duplicate is gone (ADR 0034, 0039); a rebuild gives the same answer."""
    _chain(call)  # Ada -mentors-> Bob -funds-> Cy
    call("knowledge_assert_entity", name="Robert", group_id="g", summary="Bob, in full")
    call(
        "knowledge_assert_relationship",
        source_name="Robert",
        target_name="Cy",
        predicate="funds",
        group_id="g",
    )
    call(
        "knowledge_assert_relationship",
        source_name="Ada",
        target_name="Robert",
        predicate="thanks",
        group_id="g",
    )
    call("knowledge_merge_entities", canonical_name="Bob", alias_names=["Robert"], group_id="g")
    rows = call("knowledge_query_cypher", query=EVERYTHING)["rows"]
    assert [(r["entity"], r["p"], r["other"]) for r in rows] == [
        ("Ada", "mentors", "Bob"),
        ("Ada", "thanks", "Bob"),
        ("Bob", "funds", "Cy"),
        ("Cy", None, None),
    ]
    call("knowledge_rebuild_from_wal", group_id="g", force_clear=True)
    assert call("knowledge_query_cypher", query=EVERYTHING)["rows"] == rows


def test_a_workspace_that_asks_no_cypher_query_opens_no_ladybug_database(
    call: Call, settings: Settings
) -> None:
    """ADR 0039: the projection opens at the first query, so writes pay nothing for it
    before; then it holds everything written before and after."""
    _chain(call)
    assert not (settings.cypher_dir / DATABASE_FILE).exists()
    assert call("knowledge_query_cypher", query=TWO_HOPS)["rows"]
    assert (settings.cypher_dir / DATABASE_FILE).exists()
    call("knowledge_assert_entity", name="Dee", group_id="g")
    rows = call("knowledge_query_cypher", query="MATCH (n:Entity) RETURN count(*) AS n")["rows"]
    assert rows == [{"n": 4}]
