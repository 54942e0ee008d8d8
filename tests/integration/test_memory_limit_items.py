"""The Lambo per-call limits and argument lists no other test proves at their ends (seed 001,
M-LIM, M-REC-002, M-INS-002, M-SNT-002, M-STA-002), on a real workspace through the one
dispatch: a count at its limit is admitted, one more is refused by field before the ack and
writes nothing (the session's WAL head unchanged)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
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
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    head,
    settled,
)

CITED = [f"cited ruling {n}" for n in range(16)]
TARGETS = {"depends_on": CITED[:8], "against": CITED[8:]}  # never both on one concept


def _refused(app: App, workspace: Workspace, tool: str, **params: Any) -> DomainError:
    before = head(workspace)
    with pytest.raises(DomainError) as error:
        call(app, tool, agent_id=AGENT, **params)
    assert head(workspace) == before, "a refused call wrote nothing"
    return error.value


def _applied(app: App, ack: dict[str, Any]) -> None:
    assert settled(app, ack["structuredContent"]["receipt"])["state"] == "applied"


@pytest.mark.parametrize(
    ("tool", "required", "takes"),
    [
        (
            "lambo_recall",
            {"query": "x"},
            "agent_id, image, max_tokens, query, query_vector, scope, top_k, traversal_depth",
        ),
        ("lambo_inspect", {"focus": "x"}, "agent_id, depth, focus, scope"),
        ("lambo_saints", {}, "agent_id, scope"),
        ("lambo_stats", {}, "agent_id, receipt, wait_ms"),
    ],
)
def test_m_rec_002_m_ins_002_m_snt_002_m_sta_002_each_read_takes_exactly_its_arguments(
    app: App, tool: str, required: dict[str, Any], takes: str
) -> None:
    """An argument the tool does not list is refused naming it, and the refusal lists exactly
    the tool's arguments (the seed's list, sorted)."""
    with pytest.raises(DomainError) as error:
        call(app, tool, agent_id=AGENT, colour="red", **required)
    assert error.value.field == "colour"
    assert error.value.rule == f"is not a parameter of this tool (it takes: {takes})"


def test_m_sta_002_lambo_stats_refuses_scope(app: App) -> None:
    with pytest.raises(DomainError) as error:
        call(app, "lambo_stats", agent_id=AGENT, scope=str(SESSION))
    assert error.value.field == "scope"
    assert "is not a parameter of this tool" in error.value.message


def test_m_ins_002_m_snt_002_every_listed_argument_is_accepted(app: App) -> None:
    settled(app, derive(app, concept("the build cache lives in /var/cache")))
    found = call(
        app,
        "lambo_inspect",
        agent_id=AGENT,
        focus="the build cache lives in /var/cache",
        depth=0,
        scope=str(SESSION),
    )
    assert found["structuredContent"]["content"] == "the build cache lives in /var/cache"
    saints = call(app, "lambo_saints", agent_id=AGENT, scope=str(SESSION))
    assert saints["structuredContent"]["saints"] == []


def test_m_lim_011_013_eight_citations_per_concept_pass_and_nine_are_refused(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, *(concept(text, "entity") for text in CITED)))
    for key in ("depends_on", "against"):
        eight = [concept(f"rests on eight ({key})", "observation", **{key: TARGETS[key]})]
        _applied(app, call(app, "lambo_derive", agent_id=AGENT, concepts=eight))
        nine = [concept("nine", "observation", **{key: CITED[:9]})]
        error = _refused(app, workspace, "lambo_derive", concepts=nine)
        assert error.field is not None
        assert error.field.startswith("concepts")


@pytest.mark.parametrize("key", ["depends_on", "against"])
def test_m_lim_012_014_thirty_two_per_call_pass_and_thirty_three_are_refused(
    app: App, workspace: Workspace, key: str
) -> None:
    """Counted apart: 32 `depends_on` and 32 `against` in one call pass (M-LIM-014)."""
    settled(app, derive(app, *(concept(text, "entity") for text in CITED)))
    four = [
        concept(f"four {n}", "observation", depends_on=TARGETS["depends_on"])
        | {"against": TARGETS["against"]}
        for n in range(4)
    ]
    _applied(app, call(app, "lambo_derive", agent_id=AGENT, concepts=four))
    one_more = [*four, concept("one more", "observation", **{key: TARGETS[key][:1]})]
    error = _refused(app, workspace, "lambo_derive", concepts=one_more)
    assert error.field == key


def _pairs(count: int) -> list[dict[str, str]]:
    return [{"parent": "the release checklist", "child": f"release step {n}"} for n in range(count)]


def test_m_lim_007_009_64_concepts_and_256_pairs_pass_and_257_pairs_are_refused(
    app: App, workspace: Workspace
) -> None:
    """The combined cap of 512 is kept as stated (OQ-06 open): the largest call the other caps
    allow, 64 concepts and 256 pairs (320), is admitted and applied."""
    concepts = [concept(f"release fact {n}") for n in range(64)]
    ack = call(app, "lambo_derive", agent_id=AGENT, concepts=concepts, parent_of=_pairs(256))
    _applied(app, ack)
    error = _refused(app, workspace, "lambo_derive", concepts=concepts[:1], parent_of=_pairs(257))
    assert error.field == "parent_of"


def test_m_lim_010_015_an_actions_64_targets_and_8_against_pass_and_one_more_is_refused(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, *(concept(text, "entity") for text in CITED)))
    targets = {
        "produces": [f"out/{n}.txt" for n in range(28)],
        "modifies": [f"src/{n}.py" for n in range(28)],
        "depends_on": TARGETS["depends_on"],
    }
    ack = call(
        app,
        "lambo_record_action",
        agent_id=AGENT,
        action="ran the release",
        against=TARGETS["against"],
        **targets,
    )
    _applied(app, ack)
    produces = [*targets["produces"], "out/one-more.txt"]
    error = _refused(
        app, workspace, "lambo_record_action", action="again", **{**targets, "produces": produces}
    )
    assert error.field in targets
    against = _refused(app, workspace, "lambo_record_action", action="again", against=CITED[:9])
    assert against.field == "against"


@pytest.fixture
def image_app(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[App, Workspace]]:
    """A workspace taking client vectors, as `[embedder] accept_client_vectors = true` sets."""
    values = {**Tuning().values, "[embedder] accept_client_vectors": True}
    settings = dataclasses.replace(Settings(workspace=tmp_path), tuning=Tuning(values=values))
    with make_workspace(settings, embedder) as ws:
        yield App(ws), ws


def test_m_lim_008_024_derive_image_takes_256_pairs_and_4096_values_at_most(
    image_app: tuple[App, Workspace],
) -> None:
    app, workspace = image_app
    contract = call(app, "lambo_stats", agent_id=AGENT)["structuredContent"]["embedding_contract"]
    values = [float(v) for v in workspace.embedder.embed(["a red saree"])[0]]
    caption = {"caption": "a red saree", "concept_type": "resource", "image_id": "r1"}
    pairs = [{"parent": "festive outfits", "child": f"outfit {n}"} for n in range(256)]
    vector = {"values": values, "contract": contract}
    ack = call(app, "lambo_derive_image", agent_id=AGENT, vector=vector, parent_of=pairs, **caption)
    _applied(app, ack)
    over = [*pairs, {"parent": "festive outfits", "child": "one more"}]
    error = _refused(app, workspace, "lambo_derive_image", vector=vector, parent_of=over, **caption)
    assert error.field == "parent_of"
    wide = {"values": [0.5] * 4097, "contract": contract}
    error = _refused(app, workspace, "lambo_derive_image", vector=wide, **caption)
    assert (error.field, error.rule) == ("vector.values", "too many values")


def test_m_lim_040_sixteen_full_lanes_fill_the_queue_and_the_next_write_is_dropped(
    app: App, workspace: Workspace
) -> None:
    """64 outstanding writes per agent, 1024 on the server: sixteen agents' full lanes take
    the whole queue, so a seventeenth agent's first write is dropped, writing nothing."""
    with workspace.memory.processor.paused():  # nothing settles: the queue fills
        for agent in range(16):
            for n in range(64):
                ack = call(
                    app,
                    "lambo_derive",
                    agent_id=f"agent-{agent}",
                    concepts=[concept(f"fact {n} of agent {agent}")],
                )
                assert ack["structuredContent"]["receipt_state"] == "pending"
        before = head(workspace)
        ack = call(app, "lambo_derive", agent_id="agent-16", concepts=[concept("one too many")])
        assert ack["structuredContent"]["receipt_state"] == "dropped"
        assert "write_queue_bound" in ack["text"]
        assert head(workspace) == before
