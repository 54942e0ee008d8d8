"""lambo_inspect and lambo_saints on a real workspace (issue 12, seed 001 M-INS, M-SNT)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from tests.integration.test_memory_writes import (
    AGENT,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)


def _inspect(app: App, focus: str, **extra: Any) -> dict[str, Any]:
    return call(app, "lambo_inspect", agent_id=AGENT, focus=focus, **extra)


@pytest.fixture
def story(app: App) -> None:
    """A ruling, two concepts citing it, a child, a contradiction of the ruling."""
    settled(app, derive(app, concept("user schema owns the account table", "entity")))
    settled(
        app,
        derive(
            app,
            concept(
                "logins read the account table", depends_on=["user schema owns the account table"]
            ),
            concept(
                "exports read the account table", depends_on=["user schema owns the account table"]
            ),
            parent_of=[{"parent": "user schema owns the account table", "child": "audit columns"}],
        ),
    )
    settled(
        app,
        derive(
            app,
            concept(
                "accounts moved to the tenants table",
                "observation",
                against=["user schema owns the account table"],
            ),
        ),
    )


@pytest.mark.usefixtures("story")
@pytest.mark.parametrize("form", ["content", "short_id", "node_id"])
def test_m_ins_006_020_022_023_focus_forms_dependents_and_blast_radius(
    app: App, workspace: Workspace, form: str
) -> None:
    ruling = node_by_content(workspace, "user schema owns the account table")
    focus = {"content": ruling.content, "short_id": ruling.uuid[:8], "node_id": ruling.uuid}[form]
    result = _inspect(app, focus)
    content = result["structuredContent"]
    assert content["node_id"] == ruling.uuid
    assert content["blast_radius"] == 3  # two citations and one parent_of child (M-INS-021)
    assert "dependents (3):" in result["text"].split("\n")
    assert {d["edge_type"] for d in content["dependents"]} == {"Dependency", "Hierarchical"}
    assert content["dependents_truncated"] is False
    assert len(content["contradicted_by"]) == 1  # M-INS-025
    assert content["admission"]["policy"] == "Swarm"
    lines = result["text"].split("\n")
    canonization = lines[lines.index("canonization (Swarm): None -> Candidate refused") :]
    assert canonization[1:] == [  # M-INS-031: one line per failing gate of the next hop
        "  - stage 1: 5 peer concepts in the session, needs at least 20",
        "  - stage 1: survived 0 garbage collections, needs at least 3",
        # the best connected of five: with so few peers the 90th percentile is its own score
        "  - stage 1: score 0.522 not above the session's 90th percentile 0.522",
    ]


@pytest.mark.usefixtures("story")
def test_m_ins_007_009_010_substring_several_and_nothing(app: App) -> None:
    """Also M-ERR-016: a focus matching several concepts is refused with the candidates."""
    found = _inspect(app, "tenants")
    assert found["structuredContent"]["content"] == "accounts moved to the tenants table"
    assert "as a substring" in found["text"]
    with pytest.raises(DomainError, match="matches several concepts") as several:
        _inspect(app, "account table")
    assert several.value.field == "focus"
    with pytest.raises(DomainError, match="matches no concept"):
        _inspect(app, "zebra crossing")


@pytest.mark.usefixtures("story")
def test_m_ins_004_020_depth_bounds_the_neighbourhood(app: App, workspace: Workspace) -> None:
    child = node_by_content(workspace, "audit columns")
    near = _inspect(app, child.uuid, depth=1)["structuredContent"]["edges"]
    far = _inspect(app, child.uuid, depth=2)["structuredContent"]["edges"]
    assert {e["hop"] for e in near} == {1}
    assert len(far) > len(near)
    assert _inspect(app, child.uuid, depth=0)["structuredContent"]["edges"] == []
    with pytest.raises(DomainError, match="depth"):
        _inspect(app, child.uuid, depth=6)


def test_m_snt_003_006_a_young_session_has_no_canonical_memories(app: App) -> None:
    settled(app, derive(app, concept("not canonical yet")))
    result = call(app, "lambo_saints", agent_id=AGENT)
    assert result["structuredContent"]["saints"] == []
    assert result["text"] == "0 canonical memories in session 'liminis'"
    with pytest.raises(DomainError):
        call(app, "lambo_saints", agent_id=AGENT, limit=5)  # M-SNT-002


@pytest.mark.usefixtures("story")
def test_m_stl_003_004_006_citations_of_a_contradicted_concept_are_stale(
    app: App, workspace: Workspace
) -> None:
    ruling = node_by_content(workspace, "user schema owns the account table")
    result = call(app, "lambo_stale", agent_id=AGENT)
    content = result["structuredContent"]
    assert content["total"] == 2  # the two citations; the parent_of child is not a row
    assert {row["cited_id"] for row in content["rows"]} == {ruling.uuid}
    citing = {
        node_by_content(workspace, text).uuid
        for text in ("logins read the account table", "exports read the account table")
    }
    assert {row["node_id"] for row in content["rows"]} == citing
    assert result["text"].startswith("2 stale citation(s) in session 'liminis'; rows 1-2")
    later = call(app, "lambo_stale", agent_id=AGENT, offset=50)["structuredContent"]
    assert later["rows"] == []
    assert later["total"] == 2
    with pytest.raises(DomainError, match="offset"):
        call(app, "lambo_stale", agent_id=AGENT, offset=-1)


def test_m_stl_014_018_m_der_067_a_contradiction_settles_with_its_stale_report(
    app: App, workspace: Workspace
) -> None:
    """Also M-STA-083: a derive with `against` carries `stale_report` on its settled receipt."""
    settled(app, derive(app, concept("the cache lives in redis", "entity")))
    settled(
        app, derive(app, concept("sessions use the cache", depends_on=["the cache lives in redis"]))
    )
    receipt = derive(
        app,
        concept(
            "the cache moved to memcached", "observation", against=["the cache lives in redis"]
        ),
    )
    body = settled(app, receipt)
    report = body["stale_report"]
    assert report["total"] == 1
    (row,) = report["rows"]
    assert row["node_id"] == node_by_content(workspace, "sessions use the cache").uuid
    assert row["cited_id"] == node_by_content(workspace, "the cache lives in redis").uuid
    text = call(app, "lambo_stats", agent_id=AGENT, receipt=receipt)["text"]
    assert "stale report: 1 citation(s) rest on what this contradicted" in text
    plain = settled(app, derive(app, concept("no contradiction here")))
    assert "stale_report" not in plain


@pytest.mark.usefixtures("story")
def test_m_ins_020_concept_type_is_the_concepts_type(app: App, workspace: Workspace) -> None:
    """The type shown is the concept's own, in the text and in structuredContent, not the kind
    of the last dependent's edge (issue 24 item 10: it read `parent_of`)."""
    ruling = node_by_content(workspace, "user schema owns the account table")
    result = _inspect(app, ruling.uuid)
    assert result["structuredContent"]["concept_type"] == "Entity"
    assert result["text"].split("\n")[0].startswith(f"{ruling.content} [Entity]")
    observation = node_by_content(workspace, "accounts moved to the tenants table")
    assert _inspect(app, observation.uuid)["structuredContent"]["concept_type"] == "Observation"


@pytest.mark.usefixtures("story")
def test_m_ins_010_a_focus_matching_nothing_lists_the_closest_concepts_with_ids(
    app: App, workspace: Workspace
) -> None:
    """No word of the focus occurs in any concept, yet the refusal suggests the closest ones
    (at most 10), each with its node id, and writes nothing."""
    with pytest.raises(DomainError, match="matches no concept") as nothing:
        _inspect(app, "zebra crossing")
    assert nothing.value.field == "focus"
    message = nothing.value.message
    assert "closest:" in message
    uuids = re.findall(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", message)
    assert 1 <= len(uuids) <= 10
    for content in ("user schema owns the account table", "accounts moved to the tenants table"):
        node = node_by_content(workspace, content)
        assert f'{node.uuid} "{content}"' in message


def test_m_ins_010_more_than_ten_concepts_give_ten_suggestions(app: App) -> None:
    settled(app, derive(app, *(concept(f"service {n} reads the ledger") for n in range(12))))
    with pytest.raises(DomainError, match="matches no concept") as nothing:
        _inspect(app, "quantum entanglement")
    listed = nothing.value.message.split("closest: ", 1)[1]
    assert len(listed.split("; ")) == 10


def test_m_ins_010_an_empty_session_says_there_is_nothing_to_suggest(app: App) -> None:
    with pytest.raises(DomainError, match="holds no concepts yet"):
        _inspect(app, "anything at all")


def _tree(app: App, workspace: Workspace, grandchildren: int) -> str:
    """A hub with 150 parent_of children, the first of which has `grandchildren` children of
    its own: the hub's neighbours number 150 at one hop, 150 + `grandchildren` at two."""
    hub = "the Wrenfield platform hub"
    children = [f"Wrenfield service {_word(i)}" for i in range(150)]
    below = [f"Wrenfield worker {_word(i)}" for i in range(grandchildren)]
    pairs = [{"parent": hub, "child": child} for child in children]
    pairs += [{"parent": children[0], "child": leaf} for leaf in below]
    settled(app, derive(app, concept(hub, "entity"), parent_of=pairs))
    count = "SELECT count(*) FROM memory_nodes WHERE node_kind='concept' AND content LIKE ?"
    assert workspace.reader().execute(count, ("%Wrenfield%",)).fetchone()[0] == len(pairs) + 1
    return node_by_content(workspace, hub).uuid


def _word(n: int) -> str:
    """A distinct made-up word per number (look-alike texts would merge into one concept)."""
    syllables = ("ka", "lo", "mi", "ru", "te", "za", "po", "ni", "su", "ve", "do", "fa")
    return "".join(syllables[int(d)] for d in f"{n:03d}") + syllables[n % 12] + "x"


def _neighbours(content: dict[str, Any], start: str) -> set[str]:
    return {end for e in content["edges"] for end in (e["source"], e["target"])} - {start}


def test_m_ins_024_the_neighbourhood_stops_at_200_neighbours_across_every_hop(
    app: App, workspace: Workspace
) -> None:
    """150 at the first hop and 51 more at the second: no hop reaches 200, but together they
    pass it, so the second hop stops after 50 and says so."""
    hub = _tree(app, workspace, grandchildren=51)
    near = _inspect(app, hub, depth=1)
    assert len(_neighbours(near["structuredContent"], hub)) == 150
    assert near["structuredContent"]["neighbours_truncated"] is False
    assert "(the neighbourhood stops at 200 neighbours)" not in near["text"].split("\n")
    far = _inspect(app, hub, depth=2)
    content = far["structuredContent"]
    assert len(_neighbours(content, hub)) == 200
    assert [e["hop"] for e in content["edges"]].count(2) == 50
    assert content["neighbours_truncated"] is True
    assert "(the neighbourhood stops at 200 neighbours)" in far["text"].split("\n")


def test_m_ins_024_exactly_200_neighbours_are_all_shown_untruncated(
    app: App, workspace: Workspace
) -> None:
    hub = _tree(app, workspace, grandchildren=50)
    far = _inspect(app, hub, depth=2)
    content = far["structuredContent"]
    assert len(_neighbours(content, hub)) == 200
    assert len(content["edges"]) == 200
    assert content["neighbours_truncated"] is False
    assert "(the neighbourhood stops at 200 neighbours)" not in far["text"].split("\n")
