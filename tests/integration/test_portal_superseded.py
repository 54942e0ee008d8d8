"""The `possibly_superseded` and `superseded` annotations through `/api/recall` (issue 29,
M-REC-227/235), on a workspace where both happened through the tools: a concept written again
with one value changed (the write flags the older one as possibly superseded, #198), and a
Canonical concept demoted by canonization's supersession path (a concept contradicting it
with newer support from three other interactions, `canonization_supersede` on). The workspace
is built with a stepping clock (the canonization ladder needs hours of history), closed, and
then served by the portal over real HTTP; every answer is checked against the OpenAPI
document."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import jsonschema
import pytest

from lcg.domain.memory.gc import Trigger
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.canonization import state as canon
from lcg.projections.embedding.port import Embedder
from lcg.queries.session_verify import verify_session
from tests.conftest import SteppingClock, make_workspace
from tests.helpers.portal import Portal, serving
from tests.integration.test_memory_writes import AGENT, SESSION, concept, derive, node_by_content
from tests.integration.test_memory_writes import settled as settled_once

OLDER = "the release pins version 2.3 of the parser"
NEWER = "the release pins version 2.4 of the parser"
HERO = "user schema owns the accounts table"
MOVED = "accounts moved to the tenants table"
AGENTS = ("agent-a", "agent-b", "agent-c")


def settled(app: App, receipt: str, agent: str = AGENT) -> dict[str, Any]:
    """The receipt once applied: asked again while pending (MiniLM on a loaded box can take
    longer than one wait), failing on any other state."""
    for _ in range(12):  # 10 s each
        body = settled_once(app, receipt, agent)
        if body["state"] != "pending":
            break
    assert body["state"] == "applied", body
    return body


def _later(ws: Workspace, minutes: float) -> None:
    clock = ws.clock
    assert isinstance(clock, SteppingClock)
    clock.now += timedelta(minutes=minutes)


def _write_story(ws: Workspace) -> dict[str, str]:
    """The changed value, then the canonization demo (the hero made Canonical by three
    agents citing it over the session) and its supersession. The ids, by name."""
    app = App(ws)
    settled(app, derive(app, concept(OLDER)))
    _later(ws, 1)
    body = settled(app, derive(app, concept(NEWER)))
    assert "1 possible undeclared supersession(s) flagged" in body["detail"]
    fillers = [
        concept(f"build note number {i} about the lint step", "observation") for i in range(25)
    ]
    settled(app, derive(app, *fillers))
    _later(ws, 10)
    settled(app, derive(app, concept(HERO, "entity")))
    for agent in AGENTS:
        _later(ws, 10)
        citers = [
            concept(f"{agent} query {i} reads the accounts table", depends_on=[HERO])
            for i in range(3)
        ]
        settled(app, derive(app, *citers, agent=agent), agent)
    _later(ws, 10)
    jobs = ws.memory.jobs_or_fail()
    for _ in range(3):
        jobs.sweep(Trigger.MUTATIONS)
    for _ in range(3):
        jobs.run_cycle()
    hero = node_by_content(ws, HERO).uuid
    assert canon.statuses(ws.reader(), [hero])[hero] == "Canonical"
    settled(app, derive(app, concept(MOVED, "entity", against=[HERO]), agent="agent-d"), "agent-d")
    for index, agent in enumerate(AGENTS):
        _later(ws, 30)
        citer = concept(f"{agent} job {index} reads the tenants table", depends_on=[MOVED])
        settled(app, derive(app, citer, agent=agent), agent)
    _later(ws, 10)
    jobs.knobs = dataclasses.replace(jobs.knobs, supersede=True)
    (demotion,) = [h for h in jobs.run_cycle() if h.node_id == hero]
    assert demotion.cause.value == "supersession"
    return {
        "older": node_by_content(ws, OLDER).uuid,
        "newer": node_by_content(ws, NEWER).uuid,
        "hero": hero,
        "moved": node_by_content(ws, MOVED).uuid,
    }


# MiniLM: a changed value is near its older text by meaning (the hashing embedder's vectors
# of the two texts are not near enough to be flagged); about 40 short concepts to embed.
pytestmark = pytest.mark.minilm


@pytest.fixture(scope="module")
def built(
    tmp_path_factory: pytest.TempPathFactory, minilm: Embedder
) -> Iterator[tuple[Portal, dict[str, str]]]:
    where = tmp_path_factory.mktemp("portal-superseded")
    tuning = Tuning().with_values(daemon__gc_interval=1, daemon__gc_idle_floor=0)
    settings = Settings(workspace=where, tuning=tuning, embedder="minilm")
    with make_workspace(settings, minilm) as ws:
        ids = _write_story(ws)
        report = verify_session(ws.reader(), ws.log, SESSION, ws.clock())
    assert report.ok, report.problems
    # lambo session verify lists both kinds (M-REC-227: "either way", shown or not)
    assert ids["older"] in report.annotations["possibly_superseded"]
    assert report.annotations["superseded"] == [ids["hero"]]
    with serving(where, story=False, embedder="minilm") as running:
        yield running, ids


def _recall(portal: Portal, query: str) -> dict[str, dict[str, Any]]:
    spec = httpx.get(f"{portal.base}/api/openapi.json", timeout=60).json()
    answer = httpx.get(f"{portal.base}/api/recall", params={"query": query}, timeout=60)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    schema = spec["paths"]["/api/recall"]["get"]["responses"]["200"]["content"]
    jsonschema.validate(body, schema["application/json"]["schema"])
    return {hit["node_id"]: hit for hit in body["hits"]}


def test_m_rec_227_api_recall_annotates_a_possibly_superseded_hit(
    built: tuple[Portal, dict[str, str]],
) -> None:
    portal, ids = built
    hits = _recall(portal, "which parser version does the release pin?")
    older, newer = hits[ids["older"]], hits[ids["newer"]]
    assert {"kind": "possibly_superseded", "by": ids["newer"]} in older["annotations"]
    assert older["possibly_superseded_by"] == ids["newer"]
    assert all(a["kind"] != "possibly_superseded" for a in newer["annotations"])


def test_m_rec_235_api_recall_annotates_a_superseded_hit(
    built: tuple[Portal, dict[str, str]],
) -> None:
    portal, ids = built
    hits = _recall(portal, HERO)
    (note,) = [a for a in hits[ids["hero"]]["annotations"] if a["kind"] == "superseded"]
    assert note["by"] == ids["moved"]
    assert note["at"]  # the demotion's time
    assert not any(
        a["kind"] == "superseded"
        for a in hits.get(ids["moved"], {"annotations": []})["annotations"]
    )
