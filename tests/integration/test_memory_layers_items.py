"""Layered sessions: items no other test names (seed 001 "Layered sessions", "Writing to a
layer"; ADR 0080). A real workspace opened by `Service.start`, `lambo` layered over
`general`, calls as a serve makes them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.service import Service
from tests.integration.test_memory_layers import applied, derive, heads, refused, tool
from tests.integration.test_memory_layers_order import open_service

RULING = "the billing ledger is kept in postgres"
CITING = "the monthly billing report reads the ledger tables"
CORRECTION = "we migrated everything to mongodb last spring"
ACME, OTHER = "github.com/acme/widgets", "github.com/acme/gadgets"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    served = open_service(tmp_path)
    try:
        yield served
    finally:
        served.close()


def _resource(service: Service, path: str, repo: str, scope: str | None = None) -> None:
    concept = {"content": path, "concept_type": "resource"}
    extra: dict[str, Any] = {"repo_scope": repo, **({"scope": scope} if scope else {})}
    applied(service, tool(service, "lambo_derive", concepts=[concept], **extra))


def test_m_lay_002_every_write_tool_and_saints_take_scope(service: Service) -> None:
    """lambo_derive, lambo_record_action, lambo_reserve and lambo_saints act on the layer
    `scope` names (lambo_derive_image: test_m_img_032_m_lay_scope_writes_the_image_to_a_layer
    in test_memory_derive_image.py)."""
    applied(service, derive(service, RULING, "general"))
    ran = tool(service, "lambo_record_action", action="exported the ledger", scope="general")
    applied(service, ran)
    alone = tool(service, "lambo_recall", query="ledger exported", scope="general")
    assert {h["content"] for h in alone["structuredContent"]["hits"]} >= {
        RULING,
        "exported the ledger",
    }
    own = tool(service, "lambo_recall", query="ledger exported", scope="lambo")
    assert own["structuredContent"]["hits"] == []
    node = alone["structuredContent"]["hits"][0]["node_id"]
    assert "reserved node" in tool(service, "lambo_reserve", node_id=node, scope="general")["text"]
    saints = tool(service, "lambo_saints", scope="general")
    assert saints["text"] == "0 canonical memories in session 'general'"


def test_m_lay_012_no_edge_joins_two_sessions(service: Service) -> None:
    """The same texts written to both sessions, each with citations, a contradiction, a
    parent_of pair and an action: every edge's two ends are nodes of the edge's session."""
    for scope in (None, "general"):
        applied(service, derive(service, RULING, scope))
        applied(service, derive(service, CITING, scope, depends_on=[RULING]))
        applied(service, derive(service, CORRECTION, scope, against=[RULING]))
        pair = {"parent": RULING, "child": "ledger partitions"}
        concept = {"content": "ledger partitions", "concept_type": "entity"}
        extra = {"scope": scope} if scope else {}
        ack = tool(service, "lambo_derive", concepts=[concept], parent_of=[pair], **extra)
        applied(service, ack)
        ran = tool(service, "lambo_record_action", action="ran it", depends_on=[RULING], **extra)
        applied(service, ran)
    workspace = service._workspace
    assert workspace is not None
    conn = workspace.reader()
    edges = conn.execute(
        "SELECT e.group_id, s.group_id, t.group_id FROM memory_edges e"
        " JOIN memory_nodes s ON s.uuid = e.source JOIN memory_nodes t ON t.uuid = e.target"
    ).fetchall()
    (total,) = conn.execute("SELECT COUNT(*) FROM memory_edges").fetchone()
    assert len(edges) == total > 10  # every edge's ends are nodes
    assert {row[0] for row in edges} == {"lambo", "general"}
    assert all(edge == source == target for edge, source, target in edges)


def test_m_rec_173_a_layer_hits_rests_on_line_starts_with_the_layers_name(
    service: Service,
) -> None:
    """In general, a concept cites the ruling a later one contradicts; lambo holds the same
    citing text citing nothing. The merged recall warns on general's copy only, its line
    prefixed with `[general]`; lambo's own copy, which rests on nothing, gets no line."""
    applied(service, derive(service, RULING, "general"))
    applied(service, derive(service, CITING, "general", depends_on=[RULING]))
    applied(service, derive(service, CORRECTION, "general", against=[RULING]))
    applied(service, derive(service, "the billing report is emailed monthly"))
    merged = tool(service, "lambo_recall", query="monthly billing report ledger")
    rests = [w for w in merged["structuredContent"]["warnings"] if "Rests on" in w]
    assert rests
    assert all(line.startswith("[general] ⚠ Rests on a contradicted concept") for line in rests)
    assert any(line.startswith("[general] ⚠ Rests on") for line in merged["text"].split("\n"))


def test_m_rec_259_copies_of_a_scoped_path_join_only_on_equal_repository_and_path(
    service: Service,
) -> None:
    """README.md of acme in both sessions is one hit (general's named on lambo's copy); the
    same text of another repository in general, whose vector is identical, stays its own hit,
    and so does a path of acme that differs."""
    _resource(service, "README.md", ACME)
    _resource(service, "README.md", ACME, "general")
    _resource(service, "README.md", OTHER, "general")
    _resource(service, "docs/README.md", ACME, "general")
    merged = tool(service, "lambo_recall", query="README.md", top_k=10)
    hits = [(h["session"], h["content"]) for h in merged["structuredContent"]["hits"]]
    assert sorted(hits) == [
        ("general", "README.md"),
        ("general", "docs/README.md"),
        ("lambo", "README.md"),
    ]
    by_session = {(h["session"], h["repo_scope"]): h for h in merged["structuredContent"]["hits"]}
    assert by_session[("general", OTHER)]["content"] == "README.md"
    acme = tool(service, "lambo_recall", query="README.md", top_k=10, scope="general")
    (copy,) = [
        h["node_id"]
        for h in acme["structuredContent"]["hits"]
        if (h["content"], h["repo_scope"]) == ("README.md", ACME)
    ]
    first_line = merged["text"].split("\n")[0]
    assert first_line.endswith(f"also {copy[:8]} in general)")  # only acme's copy joins


def test_m_lay_028_a_scoped_derive_image_is_refused_naming_the_layers_setting(
    service: Service,
) -> None:
    """Client vectors off: an image scoped to general is refused with a configuration error
    naming the setting that governs the layer (one holder serves the layer, so its settings
    are the holder's), and nothing is written in either session."""
    before = heads(service)
    vector = {"values": [1.0, 0.0], "contract": {"kind": "k", "model": "m", "dim": 2}}
    message = refused(
        service,
        "lambo_derive_image",
        caption="a red saree",
        concept_type="resource",
        vector=vector,
        scope="general",
    )
    assert message.startswith("configuration error: vector is a client vector")
    assert "[embedder] accept_client_vectors = true" in message
    assert heads(service) == before
