"""Replacement candidates on a derive's receipt (seed 001 "Replacement candidates"; each test
names the items it proves): which stored concepts are listed, how they are marked, what
listing them leaves alone, and the bound on their rows, on a real workspace through the one
dispatch. MiniLM where a near match by meaning is the subject: a sentence with one number
changed clears the merge threshold and the digit guard refuses the merge."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from lcg.domain.ids import GroupId
from lcg.domain.memory.identity import MINILM_MERGE_THRESHOLD
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

V23 = "the release pins version 2.3 of the parser"
V24 = "the release pins version 2.4 of the parser"
FLAGGED = "possible undeclared supersession(s) flagged"
NEWER = (
    "; newer: dated after this write, so it may replace this write, not the other way round;"
    " do not cite it in against."
)


def _listed(body: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = body.get("replacement_candidates", {}).get("candidates", [])
    return found


def _after(app: App, first: dict[str, Any], second: dict[str, Any], **extra: Any) -> Any:
    """`second`'s settled receipt, written after `first`."""
    assert settled(app, derive(app, first))["state"] == "applied"
    return settled(app, derive(app, second, **extra))


def _lines(app: App, body: dict[str, Any]) -> list[str]:
    text = str(call(app, "lambo_stats", agent_id=AGENT, receipt=body["id"])["text"])
    return [line for line in text.split("\n") if line.startswith("  - ")]


@pytest.mark.minilm
def test_m_der_101_a_candidate_is_a_hit_at_or_above_the_threshold_the_write_used(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under the threshold the write used (MiniLM's), the changed version is listed with a
    cosine at or above it; with the threshold raised past that cosine, the next such write
    lists nothing."""
    body = _after(app, concept(V23), concept(V24))
    (listed,) = _listed(body)
    assert listed["cosine"] >= MINILM_MERGE_THRESHOLD
    monkeypatch.setattr(workspace.memory.processor, "threshold", listed["cosine"] + 0.005)
    later = settled(app, derive(app, concept("the release pins version 2.5 of the parser")))
    assert later["state"] == "applied"
    assert "replacement_candidates" not in later


@pytest.mark.minilm
def test_m_der_102_a_candidate_is_of_the_same_session(
    settings: Settings, embedder: Embedder
) -> None:
    other = dataclasses.replace(settings, session="elsewhere")
    with make_workspace(other, embedder) as ws:
        app = App(ws)
        ack = call(app, "lambo_derive", agent_id=AGENT, concepts=[concept(V23)])
        answer = call(
            app,
            "lambo_stats",
            agent_id=AGENT,
            receipt=ack["structuredContent"]["receipt"],
            wait_ms=10_000,
        )
        assert answer["structuredContent"]["receipt"]["state"] == "applied"
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = settled(app, derive(app, concept(V24)))
        assert body["state"] == "applied"
        assert "replacement_candidates" not in body
        assert state.concepts_with_content(ws.reader(), GroupId("elsewhere"), V23)


@pytest.mark.minilm
@pytest.mark.parametrize(
    ("first", "second", "listed"),
    [
        ("logic", "logic", True),
        ("constraint", "constraint", True),
        ("observation", "observation", True),
        ("entity", "entity", False),  # not a type a write replaces
        ("resource", "resource", False),
        ("logic", "constraint", False),  # another type
        ("observation", "logic", False),
    ],
)
def test_m_der_103_a_candidate_is_of_the_same_type_logic_constraint_or_observation(
    app: App, first: str, second: str, listed: bool
) -> None:
    body = _after(app, concept(V23, first), concept(V24, second))
    assert body["state"] == "applied"
    assert bool(_listed(body)) is listed


@pytest.mark.minilm
def test_m_der_104_a_repository_scope_excludes_no_candidate_today(app: App) -> None:
    """Only a path-like resource records a scope, and resources are never candidates: two
    writes under different repo_scopes still list each other's logic."""
    assert (
        settled(app, derive(app, concept(V23), repo_scope="github.com/acme/api"))["state"]
        == "applied"
    )
    body = settled(app, derive(app, concept(V24), repo_scope="github.com/acme/web"))
    assert [c["excerpt"] for c in _listed(body)] == [V23]


@pytest.mark.minilm
def test_m_der_105_no_candidate_is_cited_or_contradicted_by_the_new_concept(
    app: App, workspace: Workspace
) -> None:
    """V2.5 cites V2.3 and V2.6 contradicts it: each lists only the other near versions."""
    settled(app, derive(app, concept(V23)))
    settled(app, derive(app, concept(V24)))
    v25, v26 = (f"the release pins version 2.{n} of the parser" for n in (5, 6))
    cites = settled(app, derive(app, concept(v25, depends_on=[V23])))
    assert cites["state"] == "applied"
    assert V23 not in [c["excerpt"] for c in _listed(cites)]
    assert V24 in [c["excerpt"] for c in _listed(cites)]
    contradicts = settled(app, derive(app, concept(v26, against=[V23])))
    assert contradicts["state"] == "applied"
    assert V23 not in [c["excerpt"] for c in _listed(contradicts)]
    assert V24 in [c["excerpt"] for c in _listed(contradicts)]


@pytest.mark.minilm
def test_m_der_106_a_concept_the_same_call_re_derived_is_never_a_candidate(app: App) -> None:
    settled(app, derive(app, concept(V23)))
    body = settled(app, derive(app, concept(V23), concept(V24)))
    assert body["state"] == "applied"
    assert body["created_count"] == 1  # V2.4; V2.3 matched by its key
    assert "replacement_candidates" not in body
    alone = settled(app, derive(app, concept("the release pins version 2.5 of the parser")))
    assert V23 in [c["excerpt"] for c in _listed(alone)]  # listed by a call that did not write it


@pytest.mark.minilm
def test_m_der_111_a_pair_flagged_possibly_superseded_is_listed_too(
    app: App, workspace: Workspace
) -> None:
    body = _after(app, concept(V23), concept(V24))
    assert FLAGGED in body["detail"]
    older = node_by_content(workspace, V23)
    assert [c["node_id"] for c in _listed(body)] == [older.uuid]


@pytest.mark.minilm
def test_m_der_113_listing_a_candidate_records_nothing(app: App, workspace: Workspace) -> None:
    """No edge joins the two, no merge happened, and the listed concept's counters (what its
    score and canonization read) are what they were before the write."""
    settled(app, derive(app, concept(V23)))
    older = node_by_content(workspace, V23)

    def counters() -> tuple[Any, ...]:
        return tuple(
            workspace.reader()
            .execute(
                "SELECT incident, derived_by, steady, parents, produced, access_count"
                " FROM memory_concept_stats WHERE node_id=?",
                (older.uuid,),
            )
            .fetchone()
        )

    before = counters()
    body = settled(app, derive(app, concept(V24)))
    assert _listed(body)
    assert (body["created_count"], body["semantic_merged"]) == (1, 0)
    newer = node_by_content(workspace, V24)
    conn = workspace.reader()
    joined = conn.execute(
        "SELECT kind FROM memory_edges WHERE (source=? AND target=?) OR (source=? AND target=?)",
        (newer.uuid, older.uuid, older.uuid, newer.uuid),
    ).fetchall()
    assert joined == []
    assert counters() == before


@pytest.mark.minilm
def test_m_der_114_116_a_candidate_dated_after_the_new_concept_is_marked_newer(
    app: App, workspace: Workspace
) -> None:
    """A backfilled write (event_time before the stored concept's) lists it as newer, its
    line ending in the seed's words; each concept is dated by its write's event_time."""
    body = _after(
        app,
        concept(V24),
        concept(V23),
        event_time="2025-03-01T00:00:00Z",
    )
    (listed,) = _listed(body)
    assert listed["newer"] is True
    assert "merged" not in listed
    (line,) = _lines(app, body)
    assert line.endswith(NEWER)
    assert node_by_content(workspace, V23).about_time.startswith("2025-03-01T00:00:00")


@pytest.mark.minilm
def test_m_der_115_two_concepts_dated_alike_are_not_marked_newer(app: App) -> None:
    at = "2025-06-01T00:00:00Z"
    settled(app, derive(app, concept(V23), event_time=at))
    body = settled(app, derive(app, concept(V24), event_time=at))
    (listed,) = _listed(body)
    assert "newer" not in listed
    (line,) = _lines(app, body)
    assert "newer" not in line


@pytest.mark.minilm
def test_m_der_116_a_concept_is_never_dated_later_than_its_write(
    app: App, workspace: Workspace
) -> None:
    """An event_time after the write time dates the concept at its write time, so a later
    write is never listed as newer because of a date in the future."""
    settled(app, derive(app, concept(V23), event_time="2099-01-01T00:00:00Z"))
    older = node_by_content(workspace, V23)
    assert older.about_time <= older.created_at
    body = settled(app, derive(app, concept(V24)))
    (listed,) = _listed(body)
    assert "newer" not in listed


LONG = (
    "the release pins version 2.{} of the parser, which the nightly build, the docs site and"
    " the importer all read at start-up"
)


def test_m_der_122_candidate_rows_are_bounded_at_2048_bytes_and_total_stays_true(
    app: App,
) -> None:
    """The hashing embedder: sentences sharing all their words but one are near whatever
    call text frames them, so a call of four new versions lists three older ones each."""
    for minor in (1, 3, 5, 7, 9):
        settled(app, derive(app, concept(LONG.format(minor))))
    body = settled(app, derive(app, *(concept(LONG.format(n)) for n in (0, 2, 4, 6))))
    found = body["replacement_candidates"]
    rows = [len(json.dumps(row, ensure_ascii=False).encode()) for row in found["candidates"]]
    assert sum(rows) <= 2048
    assert found["total"] > len(rows)  # some rows left off, the total still counts them
    assert found["total"] == 12  # 3 per new concept
    assert sum(rows) + rows[0] > 2048  # no room for another row of this size


def test_m_der_109_each_concept_tied_for_the_merge_is_marked_merged(
    app: App, workspace: Workspace
) -> None:
    """Two observations of one text (observations never match by key) written in one call
    have one vector; a third, alone, merges into one of them at the same cosine as the other,
    and both are listed, marked merged."""
    seen = "the deploy to staging failed at the migration step"
    first = settled(app, derive(app, concept(seen, "observation"), concept(seen, "observation")))
    assert first["created_count"] == 2
    body = settled(app, derive(app, concept(seen, "observation")))
    assert body["semantic_merged"] == 1
    listed = _listed(body)
    assert len(listed) == 2
    assert listed[0]["cosine"] == listed[1]["cosine"]
    assert [c.get("merged") for c in listed] == [True, True]
    for line in _lines(app, body):
        assert line.endswith("; merged with this write, may be replaced")


SEEN = "the deploy to staging failed at the migration step"


def test_m_der_108_the_concept_the_write_merged_with_is_listed_marked_merged(
    app: App, workspace: Workspace
) -> None:
    """An observation (never matched by key) written again alone has the stored one's vector
    and merges into it by similarity: that concept is listed, marked merged."""
    settled(app, derive(app, concept(SEEN, "observation")))
    stored = node_by_content(workspace, SEEN)
    body = settled(app, derive(app, concept(SEEN, "observation")))
    assert (body["created_count"], body["semantic_merged"]) == (0, 1)
    (listed,) = _listed(body)
    assert (listed["node_id"], listed["new_id"], listed["merged"]) == (
        stored.uuid,
        stored.uuid[:8],
        True,
    )
    (line,) = _lines(app, body)
    assert line.startswith(f'  - {stored.uuid[:8]} "{SEEN}" (cosine ')
    assert line.endswith("; merged with this write, may be replaced")


def test_m_der_107_an_image_concept_is_never_a_candidate(
    settings: Settings, embedder: Embedder
) -> None:
    """An image concept of the same type whose client vector is exactly the framed text a
    later write embeds (cosine 1) is neither merged with nor listed; the older version of that
    text, a text concept (cosine 0.98 under the hashing embedder), is listed."""
    values = {**Tuning().values, "[embedder] accept_client_vectors": True}
    accepting = dataclasses.replace(settings, tuning=Tuning(values=values))
    older, newer = LONG.format(3), LONG.format(4)
    with make_workspace(accepting, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept(older)))
        own = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]["embedding_contract"]
        vector = [float(v) for v in ws.embedder.embed([f"{newer} — {newer}"])[0]]
        ack = call(
            app,
            "lambo_derive_image",
            agent_id=AGENT,
            caption="the release dashboard",
            concept_type="logic",
            vector={"values": vector, "contract": own},
            image_id="r17",
        )
        assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"
        ws.settle()
        body = settled(app, derive(app, concept(newer)))
        assert (body["created_count"], body["semantic_merged"]) == (1, 0)
        assert [c["node_id"] for c in _listed(body)] == [node_by_content(ws, older).uuid]
