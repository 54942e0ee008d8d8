"""Property: for any sequence of commands, a rebuild equals the incrementally built state."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.projections.embedding.hashing import HashingEmbedder
from tests.conftest import make_call, make_workspace
from tests.helpers.projection_state import assert_scorer_agrees_with_fts5, dump

GROUPS = ("g1", "g2")
NAMES = ("Ada", "Bob", "Cy", "ada ")

command = st.one_of(
    st.builds(
        lambda g, n, s: ("knowledge_assert_entity", {"group_id": g, "name": n, "summary": s}),
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.sampled_from(["", "x", "y"]),
    ),
    st.builds(
        lambda g, a, b, p: (
            "knowledge_assert_relationship",
            {"group_id": g, "source_name": a, "target_name": b, "predicate": p},
        ),
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(["KNEW", "MET"]),
    ),
    st.builds(
        lambda g, n, source: (
            "knowledge_add_episode",
            {"group_id": g, "name": n, "episode_body": f"about {n}", "source": source},
        ),
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.sampled_from(["text", "message"]),  # messages index their neighbours' words too
    ),
    st.builds(
        lambda g, canonical, aliases, every: (
            "knowledge_merge_entities",
            {
                "group_id": g,
                "canonical_name": canonical,
                "alias_names": aliases,
                "merge_all_by_name": every,
            },
        ),
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.lists(st.sampled_from(NAMES), max_size=2),
        st.booleans(),
    ),
    st.builds(
        lambda ident, g, n, action: (
            "corrections_file",
            {"id": ident, "group_id": g, "entity": n, "action": action},
        ),
        st.sampled_from(["c1", "c2", "c3"]),  # a repeated id is skipped as applied before
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.sampled_from(["set_summary", "rename", "delete_edge"]),
    ),
    st.builds(
        lambda g, t, dry: (
            "knowledge_canonicalize_relations",
            {"group_id": g, "embedding_threshold": t, "dry_run": dry},
        ),
        st.sampled_from(GROUPS),
        st.sampled_from([-1.0, 0.5, 1.0]),  # the fallback promotes everything, some, nothing
        st.booleans(),
    ),
    st.builds(
        lambda g: ("knowledge_backfill_relation_types", {"group_id": g}),
        st.sampled_from(GROUPS),
    ),
    st.builds(lambda i: ("delete_nth_episode", {"index": i}), st.integers(0, 5)),
    st.builds(
        lambda g: ("knowledge_delete_by_group", {"group_ids": [g], "confirm": True}),
        st.sampled_from(GROUPS),
    ),
    st.builds(  # ends named by pointers into either group (ADR 0041)
        lambda g, sg, sn, tg, tn, p: (
            "knowledge_add_cross_group_edge",
            {
                "group_id": g,
                "name": p,
                "fact": f"{sn} {p} {tn}",
                "source": {"source_group_id": sg, "endpoint_name": sn},
                "target": {"source_group_id": tg, "endpoint_name": tn},
            },
        ),
        st.sampled_from(GROUPS),
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.sampled_from(GROUPS),
        st.sampled_from(NAMES),
        st.sampled_from(["KNEW", "MET"]),
    ),
    st.builds(
        lambda g: ("knowledge_rebind_pointers", {"source_group_id": g}),
        st.sampled_from(GROUPS),
    ),
)


def corrections_file(params: dict[str, Any]) -> str:
    """One correction of the given action about the given entity, as the file states it."""
    head = f"- {{id: {params['id']}, group_id: {params['group_id']}, action: {params['action']}"
    entity = params["entity"].strip()
    if params["action"] == "set_summary":
        return f"corrections:\n{head}, entity: {entity}, summary: corrected}}\n"
    if params["action"] == "rename":
        return f"corrections:\n{head}, entity: {entity}, name: {entity} Jr}}\n"
    edge = f"{{source: {entity}, predicate: KNEW, target: Bob}}"
    return f"corrections:\n{head}, edge: {edge}}}\n"


def run(call: Any, name: str, params: dict[str, Any], workspace: Path | None = None) -> None:
    """Run one drawn command (test_property_memory_rebuild.py runs them without a workspace
    path: its corrections files are skipped)."""
    if name == "corrections_file":
        if workspace is None:
            return
        (workspace / "knowledge-corrections.yaml").write_text(corrections_file(params))
        call("knowledge_apply_corrections")  # a failing correction writes nothing
        return
    if name == "knowledge_canonicalize_relations" and workspace is not None:
        ontology = workspace / ".lcg" / "ontology.yaml"  # ADR 0042: KNEW maps, MET is residual
        ontology.write_text(
            "relation_types:\n  - {name: KNEW, description: Two people knew each other.}\n"
        )
    if name == "delete_nth_episode":
        episodes = [
            e for g in GROUPS for e in call("knowledge_get_episodes", group_id=g)["episodes"]
        ]
        if episodes:
            call(
                "knowledge_delete_episode",
                episode_uuid=episodes[params["index"] % len(episodes)]["uuid"],
            )
        return
    with contextlib.suppress(DomainError):  # refusals append nothing; the property holds
        call(name, **params)


@pytest.mark.slow  # a property test of seconds: `pytest -m "not slow"` skips it
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands=st.lists(command, min_size=1, max_size=25), data=st.data())
def test_rebuild_from_scratch_and_via_bounded_replay_equals_incremental_state(
    commands: list[tuple[str, dict[str, Any]]], data: st.DataObject
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        make_workspace(Settings(workspace=Path(tmp)), HashingEmbedder()) as ws,
    ):
        call = make_call(App(ws))
        for name, params in commands:
            run(call, name, params, Path(tmp))
        live = dump(ws.reader())
        assert_scorer_agrees_with_fts5(ws)
        vectors = ws.vectors.count()
        model_calls = ws.embedder.calls
        for group in ws.log.groups():
            head = ws.log.head(group)
            ws.runner.rebuild(group)  # from scratch
            assert dump(ws.reader()) == live
            to_seq = data.draw(st.integers(0, head), label=f"to_seq for {group}")
            ws.runner.rebuild(group, to_seq=to_seq)
            ws.runner.rebuild(group)  # unbounded: releases the pin, replays the rest
            ws.writer.notify_rebuilt([group])
            assert dump(ws.reader()) == live
            assert_scorer_agrees_with_fts5(ws)
        assert ws.vectors.count() == vectors
        assert ws.embedder.calls == model_calls  # rebuilds embed from the cache only
