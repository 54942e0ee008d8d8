"""Every memory read tool's whole answer, pinned on one story (ADR 0060).

lambo_recall, lambo_inspect, lambo_stale and lambo_saints answer here exactly as they answered
before their compositions moved from the tool modules into `lcg.queries`: the same text and
the same structuredContent, key order included (it is the wire's order), on a story that walks
every path they have: the dependency question, fused recall with graph expansion, contradicted
hits with the concept beside them (past top_k too), rests-on lines, Canonical marks with their
blast radius, the supersession line, conflict markers, a truncated block, skip_redundant (the
second parameter), inspect's every focus form, note, refusal and suggestions, stale pages and
the saints list. Node ids come from a counter; what varies between runs (times, receipts, the
seconds of a marker) is replaced by a placeholder before the comparison.

The pinned answers live in tests/integration/pinned/, one read a line; a recall's
`structuredContent.context`, the text before the receipts, is checked against its `text` and
pinned as TEXT. `LCG_PIN_WRITE=1` rewrites them (only when an answer is meant to change, and
the diff then shows how).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from tests.conftest import make_workspace
from tests.integration.test_memory_canonization_jobs import HERO, _later, _story, _sweeps
from tests.integration.test_memory_writes import AGENT, call, concept, derive, settled

PINNED = Path(__file__).parent / "pinned"
TEXT = "<the text before its write receipts>"
MOVED = "accounts moved to the tenants table"
BUILD = "the nightly build is green"
TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
VARYING = (
    (re.compile(r"lwr1\.[0-9a-f]{16}\.[0-9a-f]+\."), "lwr1.<epoch>.<issued>."),
    (TIME, "<time>"),
    (re.compile(r"\d+ seconds ago"), "<n> seconds ago"),
    (re.compile(r"waited \d+ ms"), "waited <n> ms"),
)


def counter_ids() -> Callable[[], str]:
    """Node ids 00000001-..., 00000002-...: distinct short ids, the same on every run."""
    issued = 0

    def next_id() -> str:
        nonlocal issued
        issued += 1
        return f"{issued:08x}-0000-4000-8000-{issued:012x}"

    return next_id


@pytest.fixture(params=[False, True], ids=["plain", "skip_redundant"])
def pinned(
    tmp_path: Path, embedder: Embedder, request: pytest.FixtureRequest
) -> Iterator[Workspace]:
    tuning = Tuning().with_values(
        daemon__gc_interval=1, daemon__gc_idle_floor=0, selection__skip_redundant=request.param
    )
    settings = Settings(workspace=tmp_path, tuning=tuning)
    with make_workspace(settings, embedder, memory_ids=counter_ids()) as ws:
        yield ws


def _steady(value: Any) -> Any:
    """`value` with what varies between runs replaced, and scores to 6 places."""
    if isinstance(value, str):
        for pattern, placeholder in VARYING:
            value = pattern.sub(placeholder, value)
        return value
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {_steady(k): _steady(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_steady(v) for v in value]
    return value


def _read(app: App, tool: str, **params: Any) -> dict[str, Any]:
    """One read's answer (or refusal) as pinned. A recall's access counts are appended at
    once, so the next reads and cycles see them whatever the machine's speed."""
    app.workspace.settle()
    try:
        answer: dict[str, Any] = {"answer": call(app, tool, agent_id=AGENT, **params)}
    except DomainError as error:
        answer = {
            "refused": type(error).__name__,
            "message": str(error),
            "field": error.field,
            "rule": error.rule,
        }
    if tool == "lambo_recall":
        app.workspace.memory.flush_accesses(0)
    return {"tool": tool, "params": params, **_steady(answer)}


def _reads(app: App) -> list[dict[str, Any]]:
    """Every read of a stage: the lists and inspect first, then the recalls."""
    return [
        _read(app, "lambo_saints"),
        _read(app, "lambo_stale"),
        _read(app, "lambo_stale", offset=3),
        _read(app, "lambo_inspect", focus=HERO),
        _read(app, "lambo_inspect", focus="00000001", depth=2),
        _read(app, "lambo_inspect", focus="agent-b query 1 reads", depth=0),
        _read(app, "lambo_inspect", focus="tenants"),
        _read(app, "lambo_inspect", focus="reads the accounts"),
        _read(app, "lambo_inspect", focus="zebra crossing"),
        _read(app, "lambo_recall", query=f"what depends on {HERO}?"),
        _read(app, "lambo_recall", query="what depends on the nightly build?"),
        _read(app, "lambo_recall", query="query reads accounts", top_k=4),
        _read(app, "lambo_recall", query=HERO, top_k=10),
        _read(app, "lambo_recall", query=MOVED, top_k=3, traversal_depth=0),
        _read(app, "lambo_recall", query="nightly build green", top_k=3, traversal_depth=0),
        _read(app, "lambo_recall", query="accounts table", max_tokens=40),
        _read(app, "lambo_recall", query="lint step build note", top_k=6, traversal_depth=3),
    ]


def _stages(ws: Workspace) -> dict[str, list[dict[str, Any]]]:
    app = App(ws)
    jobs = ws.memory.jobs_or_fail()
    stages: dict[str, list[dict[str, Any]]] = {"empty": [_read(app, "lambo_inspect", focus=HERO)]}
    _story(app)
    settled(app, derive(app, concept(BUILD)))
    settled(app, derive(app, concept(BUILD, "observation"), concept("alpha bravo", "entity")))
    settled(
        app, derive(app, concept("the nightly build runs at midnight"), concept("x y", "entity"))
    )
    _later(ws, 10)
    stages["story"] = _reads(app)
    _sweeps(ws, 3)
    for _ in range(3):
        jobs.run_cycle()
    _later(ws, 10)
    stages["canonical"] = _reads(app)
    settled(app, derive(app, concept(MOVED, "entity", against=[HERO]), agent="agent-d"), "agent-d")
    for agent in ("agent-b", "agent-c"):
        citer = concept(f"{agent} report reads the accounts table", depends_on=[HERO])
        settled(app, derive(app, citer, agent=agent), agent)
    # the markers of these three writes: recalled first, within their 30 s
    marked = _read(app, "lambo_recall", query=HERO, top_k=10)
    stages["contradicted, fresh"] = [marked, *_reads(app)]
    _later(ws, 10)
    jobs.tick()
    stages["contradicted, ticked"] = _reads(app)
    for index, agent in enumerate(("agent-a", "agent-b", "agent-c")):
        _later(ws, 30)
        citer = concept(f"{agent} job {index} reads the tenants table", depends_on=[MOVED])
        settled(app, derive(app, citer, agent=agent), agent)
    _later(ws, 10)
    jobs.knobs = dataclasses.replace(jobs.knobs, supersede=True)
    jobs.run_cycle()
    _later(ws, 10)
    jobs.tick()
    stages["superseded"] = _reads(app)
    return stages


def _lines(stages: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One read a line, its stage first; a recall's context (its text) pinned once."""
    lines = []
    for stage, reads in stages.items():
        for read in reads:
            content = read.get("answer", {}).get("structuredContent", {})
            if "context" in content:
                body, context = read["answer"]["text"], content["context"]
                assert body == context or body.startswith(f"{context}\n\nwrite receipts")
                content["context"] = TEXT
            lines.append({"stage": stage, **read})
    return lines


def test_every_memory_read_answers_as_pinned(pinned: Workspace) -> None:
    name = "skip_redundant" if pinned.settings.tuning.skip_redundant else "plain"
    path = PINNED / f"memory_reads_{name}.jsonl"
    found = _lines(_stages(pinned))
    if os.environ.get("LCG_PIN_WRITE") == "1":
        path.parent.mkdir(exist_ok=True)
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in found)
        path.write_text(text, encoding="utf-8")
    pinned_lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for now, then in zip(found, pinned_lines, strict=False):
        assert now == then  # the first read that answers otherwise
        assert json.dumps(now) == json.dumps(then)  # and in the same key order
    assert len(found) == len(pinned_lines)
