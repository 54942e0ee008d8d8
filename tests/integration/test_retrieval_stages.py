"""Passage search's stages on a real workspace (issue 31, ADR 0068): each switched on through
the search context the tools build, on small hand-made conversations."""

from __future__ import annotations

from dataclasses import replace

from lcg.interfaces.app import App
from lcg.interfaces.tools.search import search_context
from lcg.interfaces.workspace import Workspace
from lcg.projections.memory import state
from lcg.queries import recall, search
from lcg.queries.stages import Stages
from tests.conftest import Call
from tests.integration.test_memory_writes import SESSION, concept, derive, settled


def _say(call: Call, group: str, name: str, body: str, when: str) -> str:
    uuid: str = call(
        "knowledge_add_episode",
        name=name,
        episode_body=body,
        group_id=group,
        source="text",
        reference_time=when,
    )["episode_uuid"]
    return uuid


def _found(
    app: App, stages: Stages, query: str, group: str, num_results: int = 10, floor: float = 0.0
) -> list[search.Passage]:
    ctx = replace(search_context(app), stages=stages, expand_depth=0)
    return search.search_passages(ctx, query, [group], num_results, floor)["passages"]


def _names(app: App, stages: Stages, query: str, group: str, num_results: int = 10) -> list[str]:
    return [p["name"] for p in _found(app, stages, query, group, num_results)]


def test_issue_31_entity_hop_finds_the_second_turn_of_a_two_hop_question(
    call: Call, app: App
) -> None:
    """The question names the teacher; the turn that answers it names only Marcus, and shares
    no word with the question: the hop through the name the first turn mentions finds it."""
    _say(call, "c", "t1", "Emi: my piano teacher is Marcus, he is great", "2024-01-02T10:00:00Z")
    _say(call, "c", "t2", "Elise: Marcus moved to Lisbon last year", "2024-01-09T10:00:00Z")
    _say(call, "c", "t3", "Elise: the weather was cold and grey", "2024-01-09T10:01:00Z")
    question = "Which city does Emi's piano teacher live in?"
    plain = _found(app, Stages(), question, "c", floor=0.5)
    assert [p["name"] for p in plain] == ["t1"]
    hopped = _found(app, Stages(entity_hop=0.5), question, "c", floor=0.5)
    assert [p["name"] for p in hopped] == ["t1", "t2"]
    assert hopped[1]["ranks"] == {"entity": 1}
    assert hopped[1]["score"] <= hopped[0]["score"] / 2


def test_issue_31_a_last_may_question_keeps_the_may_turns(call: Call, app: App) -> None:
    for name, when in (
        ("april", "2023-04-20T10:00:00Z"),
        ("may-1", "2023-05-03T10:00:00Z"),
        ("may-2", "2023-05-17T10:00:00Z"),
        ("may-3", "2023-05-29T10:00:00Z"),
        ("june", "2023-06-02T10:00:00Z"),
    ):
        _say(call, "t", name, f"Emi: we baked bread together ({name})", when)
    question = "What did Emi bake last May?"
    assert set(_names(app, Stages(), question, "t")) == {"april", "may-1", "may-2", "may-3", "june"}
    assert set(_names(app, Stages(time_filter=True), question, "t")) == {"may-1", "may-2", "may-3"}
    # a filter that would leave fewer than three hits falls back to all of them
    assert len(_names(app, Stages(time_filter=True), "bread baked in April", "t")) == 5


def test_issue_31_diversity_brings_a_second_session_into_the_top_k(call: Call, app: App) -> None:
    for n in range(4):
        _say(
            call, "d", f"a{n}", f"Emi: guitar guitar practice, take {n}", f"2024-02-01T10:0{n}:00Z"
        )
    _say(call, "d", "b0", "Elise: my guitar teacher says hi", "2024-02-05T10:00:00Z")
    plain = _names(app, Stages(), "guitar practice", "d", num_results=3)
    assert "b0" not in plain
    diverse = _names(app, Stages(per_session=2), "guitar practice", "d", num_results=3)
    assert diverse[2] == "b0"
    assert len([name for name in diverse if name.startswith("a")]) == 2


def test_issue_31_lambo_recall_reads_last_may_from_the_concepts_about_time(
    app: App, workspace: Workspace
) -> None:
    """lambo_recall runs the same time stage: a concept's day is its about_time (its write's
    event_time); with the filter on, the May concepts alone answer a 'last May' question."""
    for n, when in enumerate(
        ("2023-04-20T10:00:00Z", "2023-05-03T10:00:00Z", "2023-05-17T10:00:00Z",
         "2023-05-29T10:00:00Z", "2023-06-02T10:00:00Z")
    ):  # fmt: skip
        settled(app, derive(app, concept(f"we baked bread, batch {n}"), event_time=when))
    question = "what bread did we bake last May"
    months = {node.uuid: node.about_time[:7] for node in _concepts(workspace)}
    plain = recall.recall_concepts(search_context(app), SESSION, question, 10, 0)
    assert {months[hit.node_id] for hit in plain} == {"2023-04", "2023-05", "2023-06"}
    ctx = replace(search_context(app), stages=Stages(time_filter=True))
    filtered = recall.recall_concepts(ctx, SESSION, question, 10, 0)
    assert [months[hit.node_id] for hit in filtered] == ["2023-05"] * 3


def _concepts(workspace: Workspace) -> list[state.Node]:
    return state.concepts_containing(workspace.reader(), SESSION, "bread", 100)


def test_issue_31_speaker_weight_lifts_the_named_speakers_turn(call: Call, app: App) -> None:
    """A question about Emi: Elise's turn shares more of its words and leads; with the speaker
    stage on, Emi's own turn (a `message` episode "Emi: ...") scores 1.3x and passes it. A
    question naming both speakers, or neither, is left as it was."""
    for n, (name, body) in enumerate(
        (
            ("elise", "Elise: I like to cook pasta, I like it with garlic"),
            ("emi", "Emi: on Sundays I cook ramen"),
            ("other", "Elise: the weather was cold and grey"),
        )
    ):
        call(
            "knowledge_add_episode",
            name=name,
            episode_body=body,
            group_id="s",
            source="message",
            reference_time=f"2024-01-0{n + 1}T10:00:00Z",
        )
    question = "What does Emi like to cook?"
    plain = _names(app, Stages(), question, "s")
    assert plain.index("elise") < plain.index("emi")
    lifted = _names(app, Stages(speaker_weight=0.3), question, "s")
    assert lifted.index("emi") < lifted.index("elise")
    for asked in ("What do Emi and Elise like to cook?", "What do people like to cook?"):
        assert _names(app, Stages(speaker_weight=0.3), asked, "s") == _names(
            app, Stages(), asked, "s"
        )


def test_issue_31_lambo_recall_lifts_the_named_speakers_concept(
    app: App, workspace: Workspace
) -> None:
    """The same stage in lambo_recall: a concept whose content is a chat turn ("Emi: ...")
    whose speaker the question names scores (1 + speaker_weight) x its fused score (raw max
    by default, M-REC-026; the stage is off unless set)."""
    for text in (
        "Elise: I like to cook pasta, I like it with garlic",
        "Emi: on Sundays I cook ramen",
        "Elise: the weather was cold and grey",
    ):
        settled(app, derive(app, concept(text, "observation")))
    content = {node.uuid: node.content[:4] for node in state.concepts_containing(
        workspace.reader(), SESSION, ":", 100)}  # fmt: skip
    question = "What does Emi like to cook?"
    plain = [content[h.node_id] for h in recall.recall_concepts(search_context(app), SESSION,
                                                                question, 10, 0)]  # fmt: skip
    assert plain.index("Elis") < plain.index("Emi:")
    ctx = replace(search_context(app), stages=Stages(speaker_weight=1.0))
    lifted = [content[h.node_id] for h in recall.recall_concepts(ctx, SESSION, question, 10, 0)]
    assert lifted.index("Emi:") < lifted.index("Elis")
