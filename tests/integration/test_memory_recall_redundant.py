"""lambo_recall with [selection] skip_redundant and similar_signals on a real workspace (issue 12,
seed 001 "Duplicate hits", M-REC-180..200; 201..204 need the portal, the ledger and layers,
which this server does not have).

Same-text duplicates are real here: an observation never matches a concept by key, and a
write merges by similarity only into a concept of its own type, so a logic and an observation
with the same text, or two observations framed by different calls, stay two concepts. The
setting is flipped on the open workspace between recalls of the same store, so "on" and "off"
are compared on the same data.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import timedelta
from typing import Any

import pytest

from lcg.domain.memory.redundancy import same_content
from lcg.interfaces.app import App
from lcg.interfaces.workspace import Workspace
from lcg.projections.memory import state
from tests.conftest import SteppingClock
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    node_by_content,
    settled,
)

BUILD = "the nightly build is green"
DISTINCT = "the nightly build runs at midnight on the build farm"
OTHER = "the nightly build publishes its logs to the build dashboard"


def _tune(workspace: Workspace, **values: bool) -> None:
    """Set [selection] keys on the open workspace (the tool reads them at every call)."""
    tuning = workspace.settings.tuning.with_values(
        **{f"selection__{name}": value for name, value in values.items()}
    )
    workspace.settings = dataclasses.replace(workspace.settings, tuning=tuning)


def _recall(app: App, query: str, **extra: object) -> dict[str, Any]:
    app.workspace.settle()  # every write's vector is indexed: rankings do not move between calls
    result: dict[str, Any] = call(app, "lambo_recall", agent_id=AGENT, query=query, **extra)
    return result


def _hits(result: dict[str, Any]) -> list[dict[str, Any]]:
    hits: list[dict[str, Any]] = result["structuredContent"]["hits"]
    return hits


def _copies(workspace: Workspace, content: str) -> list[str]:
    """The node ids of every concept holding exactly `content`."""
    return [n.uuid for n in state.concepts_with_content(workspace.reader(), SESSION, content)]


WORDS = (
    *("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"),
    *("kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"),
    *("uniform", "victor", "whiskey", "xray", "yankee", "zulu", "amber", "basalt", "cobalt"),
    *("dune", "ember", "fjord", "glacier", "harbor", "iris", "jasper", "kelp", "lagoon", "meadow"),
    *("nectar", "orchid", "pebble", "quartz", "reef", "saffron", "tundra", "umber", "violet"),
    *("willow", "yarrow", "zephyr", "acorn", "birch", "cedar"),
)


def companion(index: int) -> str:
    """Six words no other companion and no query uses: one more call's framing."""
    return " ".join(WORDS[6 * index : 6 * index + 6])


def _is_build(hit: dict[str, Any]) -> bool:
    return same_content(hit["content"], BUILD)


def _write_copy(app: App, content: str, companion: str, kind: str = "observation") -> None:
    """One more concept with `content`, framed by a call of its own (so it is not merged)."""
    settled(app, derive(app, concept(content, kind), concept(companion, "entity")))


@pytest.fixture
def repeated(app: App) -> None:
    """BUILD three times (a logic, two observations: one with its spacing and an invisible
    joiner changed) and two distinct facts about the nightly build."""
    settled(app, derive(app, concept(BUILD)))
    _write_copy(app, BUILD, companion(0))
    _write_copy(app, "the  nightly\u200d build is\tgreen", companion(1))
    settled(app, derive(app, concept(DISTINCT), concept(OTHER)))


@pytest.mark.usefixtures("repeated")
def test_m_rec_180_198_off_by_default_and_off_is_the_recall_without_the_feature(
    app: App, workspace: Workspace
) -> None:
    assert workspace.settings.tuning.skip_redundant is False
    assert workspace.settings.tuning.similar_signals is False
    off = _recall(app, "nightly build green", top_k=3, traversal_depth=0)
    assert [_is_build(h) for h in _hits(off)] == [True] * 3  # every copy
    assert all("skipped_redundant" not in h for h in _hits(off))
    assert ", also " not in off["text"]
    _tune(workspace, similar_signals=True)  # similar_signals alone does nothing
    assert _recall(app, "nightly build green", top_k=3, traversal_depth=0) == off


@pytest.mark.usefixtures("repeated")
def test_m_rec_181_182_184_200_a_repeat_gives_its_slot_to_the_next_distinct_hit(
    app: App, workspace: Workspace
) -> None:
    wide = _recall(app, "nightly build green", top_k=10, traversal_depth=0)
    _tune(workspace, skip_redundant=True)
    result = _recall(app, "nightly build green", top_k=3, traversal_depth=0)
    hits = _hits(result)
    first, *rest = wide_hits = _hits(wide)
    assert _is_build(first)
    copies = [h["node_id"] for h in wide_hits[1:] if _is_build(h)]
    assert len(copies) == 2  # the logic and both observations, whatever their spacing
    distinct = [h for h in rest if h["node_id"] not in copies]
    assert [h["node_id"] for h in hits] == [first["node_id"], *(h["node_id"] for h in distinct[:2])]
    assert hits[0]["skipped_redundant"] == [
        {"node_id": copy, "signal": "same_content"} for copy in copies
    ]
    assert all("skipped_redundant" not in h for h in hits[1:])  # no other hit has the key
    label = (
        f"{first['content']} [{first['concept_type']}] (score {first['score']:.2f},"
        f" id {first['node_id'][:8]}, also {copies[0][:8]}, {copies[1][:8]})"
    )
    assert str(result["text"]).split("\n")[0] == label


def test_m_rec_182_case_is_kept_and_concept_types_do_not_matter(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(BUILD, "entity")))
    _write_copy(app, BUILD, companion(0))  # an observation: another type
    _write_copy(app, BUILD.capitalize(), companion(1))  # case differs
    _tune(workspace, skip_redundant=True)
    hits = _hits(_recall(app, "nightly build green", top_k=5, traversal_depth=0))
    contents = [h["content"] for h in hits]
    assert contents.count(BUILD) == 1  # the entity and the observation are one repeat
    assert BUILD.capitalize() in contents  # "The nightly ..." is not "the nightly ..."
    (kept,) = [h for h in hits if h["content"] == BUILD]
    assert [s["signal"] for s in kept["skipped_redundant"]] == ["same_content"]


def test_m_rec_194_195_only_the_first_min_20_4_top_k_hits_are_checked(
    app: App, workspace: Workspace
) -> None:
    """Ten copies of one text and top_k 2: the first 8 hits (4 x 2) are checked, so the
    first copy names the seven after it (three ids, then +4 more) and the ninth copy, which
    is not checked, takes the second slot although it repeats the first. Also M-LIM-043."""
    settled(app, derive(app, concept(BUILD)))
    for index in range(9):
        _write_copy(app, BUILD, companion(index))
    _tune(workspace, skip_redundant=True)
    result = _recall(app, "nightly build green", top_k=2, traversal_depth=0)
    hits = _hits(result)
    assert [h["content"] for h in hits] == [BUILD, BUILD]
    skipped = hits[0]["skipped_redundant"]
    assert len(skipped) == 7
    assert "skipped_redundant" not in hits[1]
    ids = [s["node_id"][:8] for s in skipped]
    label = str(result["text"]).split("\n")[0]
    assert label.endswith(f", also {ids[0]}, {ids[1]}, {ids[2]}, +4 more)")
    assert len({hits[0]["node_id"], hits[1]["node_id"], *(s["node_id"] for s in skipped)}) == 9


@pytest.mark.usefixtures("repeated")
def test_m_rec_196_each_also_id_is_an_inspect_focus(app: App, workspace: Workspace) -> None:
    _tune(workspace, skip_redundant=True)
    result = _recall(app, "nightly build green", top_k=3, traversal_depth=0)
    skipped = _hits(result)[0]["skipped_redundant"]
    assert skipped
    for item in skipped:
        short = item["node_id"][:8]
        assert f"{short}" in str(result["text"]).split("\n")[0]
        inspected = call(app, "lambo_inspect", agent_id=AGENT, focus=short, depth=0)
        assert inspected["structuredContent"]["node_id"] == item["node_id"]


def test_m_rec_197_the_also_items_count_toward_max_tokens(app: App, workspace: Workspace) -> None:
    """A budget the first block fits without its also item, not with it: the block is cut
    (with the marker), so the item counted."""
    long = (
        "the nightly build is green when the unit suites, the integration suites and the"
        " packaging checks all pass on the build farm"
    )
    settled(app, derive(app, concept(long)))
    _write_copy(app, long, companion(0))
    _tune(workspace, skip_redundant=True)
    query = "nightly build green unit integration packaging suites"
    whole = _recall(app, query, top_k=2, traversal_depth=0)
    first_block = str(whole["text"]).split("\n\n")[0]
    assert ", also " in first_block
    also = first_block[first_block.index(", also ") : -1]
    without_also = first_block.replace(also, "")
    budget = math.ceil(len(without_also.encode()) / 3.5)
    assert math.ceil(len(first_block.encode()) / 3.5) > budget
    cut = _recall(app, query, top_k=2, traversal_depth=0, max_tokens=budget)
    text = str(cut["text"])
    assert math.ceil(len(text.encode()) / 3.5) <= budget
    assert text.rsplit("\n", maxsplit=1)[-1].startswith("[truncated: ")
    assert also in text  # the label is kept whole, the text is cut for it
    assert _hits(cut)[0]["truncated_in_context"] is True
    roomy = math.ceil(len(first_block.encode()) / 3.5)
    assert _recall(app, query, top_k=2, traversal_depth=0, max_tokens=roomy)["text"] == (
        first_block
    )


@pytest.mark.usefixtures("repeated")
def test_m_rec_199_scores_and_order_of_the_kept_hits_are_unchanged(
    app: App, workspace: Workspace
) -> None:
    off = _hits(_recall(app, "nightly build green", top_k=10))
    _tune(workspace, skip_redundant=True)
    on = _hits(_recall(app, "nightly build green", top_k=10))
    skipped = {s["node_id"] for h in on for s in h.get("skipped_redundant", [])}
    assert len(skipped) == 2
    expected = [(h["node_id"], h["score"], h["ranks"]) for h in off if h["node_id"] not in skipped]
    assert [(h["node_id"], h["score"], h["ranks"]) for h in on][: len(expected)] == expected


def test_m_rec_198_nothing_repeated_gives_a_byte_identical_result(
    app: App, workspace: Workspace
) -> None:
    settled(app, derive(app, concept(BUILD), concept(DISTINCT), concept(OTHER)))
    settled(app, derive(app, concept("the nightly build is red", "observation")))
    settled(app, derive(app, concept("the nightly build is not green", "observation")))
    queries = ["nightly build green", "what runs at midnight?", "build dashboard logs"]
    for top_k in (1, 2, 5):
        off = [_recall(app, q, top_k=top_k) for q in queries]
        _tune(workspace, skip_redundant=True, similar_signals=True)
        on = [_recall(app, q, top_k=top_k) for q in queries]
        _tune(workspace, skip_redundant=False, similar_signals=False)
        assert on == off


def _contradiction_story(app: App, workspace: Workspace) -> tuple[str, str]:
    """BUILD as a logic and as an observation of agent-c that contradicts it. Returns their
    node ids (logic, observation)."""
    settled(app, derive(app, concept(BUILD)))
    logic = node_by_content(workspace, BUILD).uuid
    settled(
        app,
        derive(
            app,
            concept(BUILD, "observation", against=[logic]),
            concept(companion(0), "entity"),
            agent="agent-c",
        ),
    )
    (observation,) = [uuid for uuid in _copies(workspace, BUILD) if uuid != logic]
    return logic, observation


def test_m_rec_185_a_contradiction_pair_is_never_a_repeat(app: App, workspace: Workspace) -> None:
    """Once newer support has outweighed the contradiction there is no warning line left to
    protect either hit: the pair still is not a repeat, because one contradicts the other."""
    logic, observation = _contradiction_story(app, workspace)
    settled(
        app, derive(app, concept("the release waits for the nightly build", depends_on=[logic]))
    )
    clock = workspace.clock
    assert isinstance(clock, SteppingClock)
    clock.now += timedelta(seconds=120)
    _tune(workspace, skip_redundant=True)
    result = _recall(app, "nightly build green", top_k=5, traversal_depth=0)
    assert "⚠" not in str(result["text"])  # the contradiction lapsed: no line protects them
    ids = [h["node_id"] for h in _hits(result)]
    assert logic in ids
    assert observation in ids
    assert all("skipped_redundant" not in h for h in _hits(result))


def test_m_rec_192_193_hits_with_their_own_warning_lines_are_never_skipped(
    app: App, workspace: Workspace
) -> None:
    """A copy that is contradicted carries a Contradicted line of its own, and the concept
    beside it (kept past top_k when it did not rank in) carries the Contradicts line: neither
    is skipped, though each repeats a hit kept before it."""
    settled(app, derive(app, concept(BUILD)))
    _write_copy(app, BUILD, companion(0))
    ranked = _hits(_recall(app, "nightly build green", top_k=2, traversal_depth=0))
    copies = [h["node_id"] for h in ranked]
    assert set(copies) == set(_copies(workspace, BUILD))
    correction = "the nightly build turned red at noon"  # contradicts the second copy
    settled(app, derive(app, concept(correction, "observation", against=copies[1:])))
    settled(app, derive(app, concept(correction, "logic"), concept(companion(1), "entity")))
    _tune(workspace, skip_redundant=True)
    result = _recall(app, "nightly build green, red at noon?", top_k=4, traversal_depth=0)
    hits = _hits(result)
    ids = [h["node_id"] for h in hits]
    assert set(copies) <= set(ids)  # the contradicted copy is kept beside the plain one
    contradicting = [
        uuid
        for uuid in _copies(workspace, correction)
        if (n := state.node(workspace.reader(), SESSION, uuid)) is not None
        and n.concept_type == "observation"
    ]
    assert contradicting[0] in ids  # shown beside the contradicted copy, with its own line
    assert f'⚠ Contradicts "{BUILD}" (id {copies[1][:8]})' in str(result["text"]).split("\n")
    skipped = {s["node_id"] for h in hits for s in h.get("skipped_redundant", [])}
    assert not set(copies) & skipped
    assert contradicting[0] not in skipped
    # the logic copy of the correction is kept too (then the observation repeats a kept hit
    # and is still shown) or it is the one skipped, as a repeat of the observation
    (logic,) = [uuid for uuid in _copies(workspace, correction) if uuid != contradicting[0]]
    assert logic in ids or logic in skipped
    assert any(
        line.startswith("⚠ Contradicted at ") for line in result["structuredContent"]["warnings"]
    )


@pytest.mark.minilm
def test_m_rec_183_similar_signals_adds_vectors_at_the_merge_threshold(
    app: App, workspace: Workspace
) -> None:
    """Two observations of one call, framed alike: their stored vectors are at or above the
    merge threshold (0.98 for MiniLM) though their texts differ, so with similar_signals the
    second is a repeat found by cosine; without it they are two hits."""
    first, second = "the nightly build passed", "the nightly build has passed"
    settled(app, derive(app, concept(first, "observation"), concept(second, "observation")))
    _tune(workspace, skip_redundant=True)
    off = _hits(_recall(app, "did the nightly build pass?", top_k=2, traversal_depth=0))
    assert sorted(h["content"] for h in off) == sorted([first, second])
    _tune(workspace, skip_redundant=True, similar_signals=True)
    hits = _hits(_recall(app, "did the nightly build pass?", top_k=2, traversal_depth=0))
    kept = hits[0]
    assert kept["content"] in (first, second)
    (skipped,) = kept["skipped_redundant"]
    assert skipped["signal"] == "cosine"
    assert skipped["node_id"] not in {h["node_id"] for h in hits}


@pytest.mark.minilm
def test_m_rec_186_188_a_possibly_superseded_pair_is_never_a_repeat(
    app: App, workspace: Workspace
) -> None:
    """Version 2.3 against 2.4: MiniLM puts them above the merge threshold, the write flagged
    them possibly superseded; they differ in a number and are a flagged pair, so neither
    signal makes them a repeat."""
    older, newer = (
        "the release pins version 2.3 of the parser",
        "the release pins version 2.4 of the parser",
    )
    settled(app, derive(app, concept(older)))
    settled(app, derive(app, concept(newer)))
    _tune(workspace, skip_redundant=True, similar_signals=True)
    hits = _hits(_recall(app, "which parser version does the release pin?", top_k=2))
    assert {h["content"] for h in hits} == {older, newer}
    assert all("skipped_redundant" not in h for h in hits)
