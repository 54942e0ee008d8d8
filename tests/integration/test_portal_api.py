"""The portal's REST API (issue 29) on a real workspace over real HTTP: every endpoint's answer
validated against /api/openapi.json (jsonschema), the annotation kinds of /api/recall
(M-CFG-053, M-REC-144/176/227/235), "as of seq N", bounded pages, unknown ids, the token, and
HTML escaped everywhere."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from lcg.interfaces.http_auth import Credential
from lcg.projections.canonization.projection import install as install_canon
from lcg.queries.recall_annotations import annotations_of
from tests.helpers.portal import (
    CITING,
    CORRECTION,
    RULING,
    SCRIPT,
    Portal,
    concept,
    derive,
    serving,
)


@pytest.fixture(scope="module")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Portal]:
    with serving(tmp_path_factory.mktemp("portal")) as running:
        yield running


@pytest.fixture(scope="module")
def spec(portal: Portal) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{portal.base}/api/openapi.json").json()
    return found


def get(portal: Portal, spec: dict[str, Any], path: str, **params: str | int) -> dict[str, Any]:
    """GET an endpoint; its 200 answer must match the document's schema for it."""
    answer = httpx.get(f"{portal.base}{path}", params=params, timeout=60)
    assert answer.status_code == 200, answer.text
    schema = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
    body: dict[str, Any] = answer.json()
    jsonschema.validate(body, schema["schema"])
    return body


def by_content(body: dict[str, Any], content: str) -> dict[str, Any]:
    (hit,) = [h for h in body["hits"] if h["content"] == content]
    found: dict[str, Any] = hit
    return found


def test_portal_api_every_endpoint_answers_as_its_openapi_document_says(
    portal: Portal, spec: dict[str, Any]
) -> None:
    jsonschema.Draft202012Validator.check_schema({"$defs": {}})
    assert spec["openapi"].startswith("3.")
    assert set(spec["paths"]) == {
        "/api/overview",
        "/api/recall",
        "/api/search",
        "/api/inspect",
        "/api/stats",
        "/api/events",
        "/api/graph",
        "/api/canon",
    }
    overview = get(portal, spec, "/api/overview")
    assert [s["session"] for s in overview["sessions"]] == ["liminis"]
    assert overview["wal"]["liminis"]["max_seq"] >= 8
    recall = get(portal, spec, "/api/recall", query="users table")
    assert recall["context"].startswith(CITING) or RULING in recall["context"]
    search = get(portal, spec, "/api/search", query="users table")
    assert {"bm25", "vector"} <= set(by_content(search, RULING)["ranks"])
    ruling = by_content(search, RULING)["node_id"]
    inspect = get(portal, spec, "/api/inspect", focus=ruling)
    assert inspect["content"] == RULING
    assert inspect["dependents"][0]["label"] == CITING
    assert inspect["receipts"], "the write receipt that made the concept"
    stats = get(portal, spec, "/api/stats")
    assert stats["stats"]["concept_count"] == 4
    events = get(portal, spec, "/api/events", limit=3)
    assert [e["seq"] for e in events["events"]] == [1, 2, 3]
    assert events["next_after_seq"] == 3
    more = get(portal, spec, "/api/events", after_seq=3, limit=2)
    assert [e["seq"] for e in more["events"]] == [4, 5]
    graph = get(portal, spec, "/api/graph")
    assert len(graph["nodes"]) == 4
    assert graph["offset"] == 0
    paged = get(portal, spec, "/api/graph", limit=3, offset=2)
    assert [n["id"] for n in paged["nodes"]] == [n["id"] for n in graph["nodes"]][2:]
    assert paged["total_nodes"] == 4
    assert paged["truncated"]
    assert {"depends_on", "contradicts"} <= {e["kind"] for e in graph["edges"]}
    around = get(portal, spec, "/api/graph", focus=ruling, hops=1)
    assert {n["content"] for n in around["nodes"]} == {RULING, CITING, CORRECTION}
    canon = get(portal, spec, "/api/canon")
    assert canon["budget"]["canonical"] == 0


def test_m_cfg_053_m_rec_144_176_recall_hits_carry_their_annotations_by_kind(
    portal: Portal, spec: dict[str, Any]
) -> None:
    body = get(portal, spec, "/api/recall", query="users table")
    ruling, citing, correction = (by_content(body, c) for c in (RULING, CITING, CORRECTION))
    assert {"kind": "contradiction", "by": correction["node_id"]} in ruling["annotations"]
    assert {"kind": "contradicts", "of": ruling["node_id"]} in correction["annotations"]
    assert {
        "kind": "rests_on_contradicted",
        "cited": ruling["node_id"],
        "contradicted_by": correction["node_id"],
    } in citing["annotations"]
    assert by_content(body, SCRIPT)["annotations"] == []
    # the MCP tool's hits carry none (M-REC-143)
    tool = portal.service.call("lambo_recall", {"agent_id": "agent-a", "query": "users table"})[
        "structuredContent"
    ]
    assert all("annotations" not in hit for hit in tool["hits"])
    assert tool["context"] == body["context"]


def test_m_rec_227_235_possibly_superseded_and_superseded_annotations(
    portal: Portal, tmp_path: Path
) -> None:
    """The two kinds from the facts recall hands the annotation step; through `/api/recall`
    on a workspace where both happened by writes and canonization:
    tests/integration/test_portal_superseded.py."""
    conn = sqlite3.connect(tmp_path / "canon.sqlite")
    install_canon(conn)
    conn.execute(
        "INSERT INTO canon_nodes (node_id, group_id, status, last_demotion_at, demotion_cause,"
        " superseded_by) VALUES ('old', 's', 'None', '2026-09-30T12:00:00+00:00',"
        " 'supersession', 'new')"
    )
    notes = annotations_of(conn, "s", ["old", "new"], {}, {}, {}, {}, {"old": "new"})
    assert notes["old"] == (
        {"kind": "possibly_superseded", "by": "new"},
        {"kind": "superseded", "by": "new", "at": "2026-09-30T12:00:00+00:00"},
    )
    assert notes["new"] == ()


def test_portal_api_hits_carry_each_legs_own_score(portal: Portal, spec: dict[str, Any]) -> None:
    """Per-leg scores, not only ranks: bm25's keyword score, vector's cosine, recent's fixed
    score; a graph neighbour has its hop as its rank and no score of its own."""
    search = by_content(get(portal, spec, "/api/search", query="users table"), RULING)
    assert set(search["scores"]) == set(search["ranks"]) >= {"bm25", "vector"}
    assert search["scores"]["bm25"] > 0
    assert 0 < search["scores"]["vector"] <= 1
    assert search["score"] == pytest.approx(max(search["scores"].values()), abs=1e-6)  # max
    recall = get(portal, spec, "/api/recall", query="users table")
    for hit in recall["hits"]:
        legs = set(hit.get("ranks") or {}) - {"graph"}
        assert set(hit["scores"]) == legs, hit
        if "recent" in hit["scores"]:
            assert hit["scores"]["recent"] == 0.25
    page = httpx.get(f"{portal.base}/portal/recall", params={"query": "users table"}, timeout=60)
    bm25 = search["scores"]["bm25"]
    assert f"bm25 #{search['ranks']['bm25']} ({bm25:.3f})" in page.text


def test_portal_api_as_of_seq_shows_the_memory_as_it_stood(
    portal: Portal, spec: dict[str, Any]
) -> None:
    now = get(portal, spec, "/api/recall", query="users table")
    assert len(now["hits"]) == 4
    then = get(portal, spec, "/api/recall", query="users table", as_of_seq=2)
    assert then["as_of_seq"] == 2
    assert [h["content"] for h in then["hits"]] == [RULING]
    assert then["hits"][0]["annotations"] == []  # not contradicted yet
    graph = get(portal, spec, "/api/graph", as_of_seq=4)
    assert {n["content"] for n in graph["nodes"]} == {RULING, CITING}
    stats = get(portal, spec, "/api/stats", as_of_seq=2)
    assert stats["stats"]["concept_count"] == 1
    events = get(portal, spec, "/api/events", as_of_seq=3, limit=50)
    assert [e["seq"] for e in events["events"]] == [1, 2, 3]
    assert events["next_after_seq"] is None
    # the live memory is untouched
    assert get(portal, spec, "/api/stats")["stats"]["concept_count"] == 4


def test_portal_api_overview_takes_as_of_seq(portal: Portal, spec: dict[str, Any]) -> None:
    """The overview of one session as it stood at seq N: its counts, WAL row and jobs from the
    snapshot; the live overview lists every memory session at its head."""
    now = get(portal, spec, "/api/overview")
    assert now["as_of_seq"] is None
    assert now["session"] is None
    assert now["sessions"][0]["concept_count"] == 4
    then = get(portal, spec, "/api/overview", as_of_seq=2)
    assert then["as_of_seq"] == 2
    assert then["session"] == "liminis"
    assert [s["session"] for s in then["sessions"]] == ["liminis"]
    assert then["sessions"][0]["concept_count"] == 1
    assert then["wal"]["liminis"]["max_seq"] == 2
    assert [j["session"] for j in then["jobs"]] == ["liminis"]
    named = get(portal, spec, "/api/overview", session="liminis")
    assert named["as_of_seq"] is None
    assert named["sessions"][0]["concept_count"] == 4
    page = httpx.get(f"{portal.base}/portal", params={"as_of_seq": 2}, timeout=60)
    assert page.status_code == 200
    assert "as of seq 2" in page.text


@pytest.mark.parametrize(
    ("path", "params", "status", "named"),
    [
        ("/api/recall", {"query": "x", "as_of_seq": 10**6}, 400, "as_of_seq"),
        ("/api/overview", {"as_of_seq": 10**6}, 400, "as_of_seq"),
        ("/api/overview", {"session": "nosuchsession"}, 404, "session"),
        ("/api/graph", {"offset": -1}, 400, "offset"),
        ("/api/recall", {"query": "x", "as_of_seq": 0}, 400, "as_of_seq"),
        ("/api/recall", {}, 400, "query"),
        ("/api/recall", {"query": "x", "top_k": 101}, 400, "top_k"),
        ("/api/events", {"limit": 100_000}, 400, "limit"),
        ("/api/graph", {"limit": 10**9}, 400, "limit"),
        ("/api/graph", {"focus": "0000dead-0000-0000-0000-000000000000"}, 404, "focus"),
        ("/api/inspect", {"focus": "no such concept anywhere"}, 404, "focus"),
        ("/api/stats", {"session": "nosuchsession"}, 404, "session"),
        ("/api/stats", {"session": "Bad Name!"}, 400, "session"),
        ("/api/events", {"after_seq": "ten"}, 400, "after_seq"),
    ],
)
def test_portal_api_bad_input_is_refused_naming_the_field(
    portal: Portal,
    spec: dict[str, Any],
    path: str,
    params: dict[str, str | int],
    status: int,
    named: str,
) -> None:
    answer = httpx.get(f"{portal.base}{path}", params=params, timeout=60)
    assert answer.status_code == status
    body = answer.json()
    refusal = spec["paths"][path]["get"]["responses"][str(status)]["content"]["application/json"]
    jsonschema.validate(body, refusal["schema"])
    assert body["field"] == named
    assert named in body["error"] or "not found" in body["error"] or "matches no" in body["error"]


def test_portal_never_writes_and_answers_no_other_method(portal: Portal) -> None:
    app = portal.service.app
    assert app is not None
    # the access counts of earlier tests' MCP recalls go to the log now, not inside the window
    app.memory_of("liminis").flush_accesses(min_age=0)
    head = portal.service.call("knowledge_status", {})["wal_groups"]["liminis"]["max_seq"]
    for path in ("/api/recall?query=users", "/api/inspect?focus=logins", "/portal/recall?query=x"):
        assert httpx.get(f"{portal.base}{path}", timeout=60).status_code == 200
        assert httpx.post(f"{portal.base}{path}", timeout=60).status_code == 405
    since = httpx.get(f"{portal.base}/api/events", params={"after_seq": head}, timeout=60).json()
    # the session's own jobs may append (the daemon's tick); the portal appends nothing: no
    # access counted (memory_accessed), no write
    kinds = {event["type"] for event in since["events"]}
    assert not {"memory_accessed", "memory_write_accepted"} & kinds, kinds


def test_portal_pages_escape_html_in_concept_text(portal: Portal) -> None:
    for path in (
        "/portal/recall?query=users+table",
        "/portal/graph",
        "/portal/history",
        "/portal/concept?focus=escaping+test",
    ):
        page = httpx.get(f"{portal.base}{path}", timeout=60)
        assert page.status_code == 200
        assert "<script>alert" not in page.text
    concept = httpx.get(f"{portal.base}/portal/concept?focus=escaping+test", timeout=60).text
    assert "&lt;script&gt;alert(&#x27;users table&#x27;)&lt;/script&gt;" in concept


def test_portal_with_a_credential_answers_401_without_the_token(tmp_path: Path) -> None:
    token = "portal-test-token-0123456789abcdef"  # noqa: S105 (a test token)
    with serving(tmp_path, (Credential("ops", token),), story=False) as running:
        for path in ("/api/stats", "/api/openapi.json", "/portal"):
            assert httpx.get(f"{running.base}{path}").status_code == 401
            wrong = {"Authorization": "Bearer nope-nope-nope-nope-nope-nope"}
            assert httpx.get(f"{running.base}{path}", headers=wrong).status_code == 401
        bearer = {"Authorization": f"Bearer {token}"}
        assert httpx.get(f"{running.base}/api/openapi.json", headers=bearer).status_code == 200
        cookie = {"lcg_portal": token}
        assert httpx.get(f"{running.base}/portal", cookies=cookie).status_code == 200
        in_query = f"{running.base}/api/openapi.json?access_token={token}"
        assert httpx.get(in_query, headers=bearer).status_code == 401  # never in a URL


def test_portal_a_credential_reads_only_its_sessions(tmp_path: Path) -> None:
    token = "portal-ops-token-0123456789abcdef"  # noqa: S105 (a test token)
    ops = Credential("ops", token, sessions=frozenset({"ops"}))
    with serving(tmp_path, (ops,)) as running:
        bearer = {"Authorization": f"Bearer {token}"}
        # the serve's own session (liminis) is outside the credential's: as if not there
        assert httpx.get(f"{running.base}/api/stats", headers=bearer).status_code == 404
        named = f"{running.base}/api/stats?session=liminis"
        assert httpx.get(named, headers=bearer).status_code == 404


def test_m_rec_201_api_recall_carries_skipped_redundant(tmp_path: Path) -> None:
    """With [selection] skip_redundant on, the hit kept carries the same `skipped_redundant`
    key as structuredContent does (a logic and an observation with one text are two
    concepts: an observation never merges by key)."""
    build = "the nightly build is green"
    with serving(tmp_path, story=False) as running:
        service = running.service
        derive(service, concept(build, "logic"))
        derive(service, concept(build, "observation"))
        app = service.app
        assert app is not None
        workspace = app.workspace
        workspace.settle()
        tuning = workspace.settings.tuning.with_values(selection__skip_redundant=True)
        workspace.settings = dataclasses.replace(workspace.settings, tuning=tuning)
        body = httpx.get(f"{running.base}/api/recall", params={"query": build}, timeout=60).json()
        (kept,) = body["hits"]
        tool = service.call("lambo_recall", {"agent_id": "agent-a", "query": build})
        assert (
            kept["skipped_redundant"] == tool["structuredContent"]["hits"][0]["skipped_redundant"]
        )
        assert kept["skipped_redundant"][0]["signal"] == "same_content"
