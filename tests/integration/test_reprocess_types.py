"""knowledge_reprocess_relation_types and knowledge_reprocess_entity_types (seed 000 §Relation
typing; K-RT-028..050, K-ET-001..004, P-004, P-126, P-129; ADR 0042).

The classifier is the configured OpenAI-compatible endpoint, remote by nature: here a local
stand-in server speaks the chat-completions API on a real socket (as in
test_extractor_openai.py), answering per item what each test scripts and recording what lcg
sent. Everything on lcg's side is real.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from tests.conftest import Call, make_call, make_workspace
from tests.helpers.projection_state import dump
from tests.integration.test_relation_typing import edge, types, write_ontology


@dataclass
class StandIn:
    """Verdicts by the item's text (anything else: UNCLASSIFIED) and what it was sent."""

    verdicts: dict[str, str] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def items(self) -> list[str]:
        return [r["messages"][1]["content"].rsplit(": ", 1)[-1] for r in self.requests]


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    state = StandIn()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            prompt = body["messages"][1]["content"]
            verdict = next(
                (t for text, t in state.verdicts.items() if prompt.endswith(text)), "UNCLASSIFIED"
            )
            content = json.dumps({"type": verdict})
            answer = {"choices": [{"message": {"role": "assistant", "content": content}}]}
            payload = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def ws(tmp_path: Path, embedder: Embedder, stand_in: StandIn) -> Iterator[Workspace]:
    env = {
        "LCG_EXTRACTION_EXTRACTOR": "openai",
        "LCG_EXTRACTION_BASE_URL": stand_in.url,
        "LCG_EXTRACTION_MODEL": "stand-in-model",
    }
    with make_workspace(Settings.load(env, tmp_path), embedder) as workspace:
        yield workspace


@pytest.fixture
def llm(ws: Workspace) -> Call:
    return make_call(App(ws))


def reprocess(call: Call, **params: Any) -> dict[str, Any]:
    params.setdefault("group_id", "g1")
    return call("knowledge_reprocess_relation_types", **params)


JOB = "Ada is on the payroll of Acme."
TITLE = "Ada is the chair of the board."
ODD = "Ada and Acme share a birthday."


@pytest.fixture
def story(ws: Workspace, llm: Call, stand_in: StandIn) -> dict[str, str]:
    write_ontology(ws)
    stand_in.verdicts = {JOB: "WORKS_FOR", TITLE: "HOLDS"}
    return {
        "job": edge(llm, "PAID_BY", JOB),
        "title": edge(llm, "CHAIRS", TITLE),
        "odd": edge(llm, "SHARES", ODD),
        "typed": edge(llm, "KNOWS", "Ada knows Bob.", relation_type="HOLDS"),
        "pseudo": edge(llm, "SAYS", TITLE, relation_type="ADA_IS_THE_CHAIR"),
    }


def test_k_rt_028_029_the_fact_and_the_declared_types_are_sent_never_the_predicate(
    llm: Call, stand_in: StandIn, story: dict[str, str]
) -> None:
    reprocess(llm, dry_run=True)
    assert sorted(stand_in.items()) == sorted([JOB, TITLE, ODD])  # untyped edges only
    prompt = stand_in.requests[0]["messages"][1]["content"]
    assert "- WORKS_FOR: A person is employed by an organization." in prompt
    assert "- LOCATED_IN: " in prompt
    assert not any(
        p in r["messages"][1]["content"]
        for r in stand_in.requests
        for p in ("PAID_BY", "CHAIRS", "SHARES")
    )
    enum = stand_in.requests[0]["response_format"]["json_schema"]["schema"]
    assert enum["properties"]["type"]["enum"] == [
        "WORKS_FOR",
        "HOLDS",
        "LOCATED_IN",
        "UNCLASSIFIED",
    ]
    assert stand_in.requests[0]["model"] == "stand-in-model"


def test_k_rt_029_changing_only_the_predicate_does_not_change_the_verdict(
    ws: Workspace, llm: Call, stand_in: StandIn
) -> None:
    write_ontology(ws)
    stand_in.verdicts = {JOB: "WORKS_FOR"}
    first = edge(llm, "PAID_BY", JOB, target="Acme")
    second = edge(llm, "LOCATED_IN", JOB, target="Acme")  # a predicate naming another type
    reprocess(llm)
    assert types(llm)[first] == types(llm)[second] == "WORKS_FOR"


@pytest.mark.parametrize("scope", ["untyped", "off_ontology", "all"])
def test_k_rt_030_to_033_no_declared_relation_types_fails_with_no_classification(
    ws: Workspace, llm: Call, stand_in: StandIn, scope: str
) -> None:
    edge(llm, "PAID_BY", JOB)
    write_ontology(ws, "entity_types:\n  - {name: Person}\n")
    head = ws.log.head("g1")
    result = reprocess(llm, scope=scope)
    assert result["success"] is False
    assert "declares no relation types" in result["error"]
    assert stand_in.requests == []
    assert ws.log.head("g1") == head


def test_k_rt_034_035_an_abstention_writes_unclassified_with_a_wal_entry(
    ws: Workspace, llm: Call, story: dict[str, str]
) -> None:
    head = ws.log.head("g1")
    result = reprocess(llm)
    got = types(llm)
    assert got[story["odd"]] == "UNCLASSIFIED"  # never a nearest match
    assert (got[story["job"]], got[story["title"]]) == ("WORKS_FOR", "HOLDS")
    assert ws.log.head("g1") == head + 1  # one page: one event
    assert result == {
        "success": True,
        "reclassified_count": 3,
        "unchanged_count": 0,
        "group_id": "g1",
        "breakdown": {"HOLDS": 1, "UNCLASSIFIED": 1, "WORKS_FOR": 1},
    }


def test_k_rt_036_to_039_scope_defaults_to_untyped_and_selects_candidates(
    llm: Call, stand_in: StandIn, story: dict[str, str]
) -> None:
    schema = operations.BY_NAME["knowledge_reprocess_relation_types"].input_schema()
    assert schema["properties"]["scope"]["default"] == "untyped"
    assert schema["properties"]["group_id"]["default"] == "liminis"
    counts = {}
    for scope in ("untyped", "off_ontology", "all"):
        stand_in.requests.clear()
        reprocess(llm, scope=scope, dry_run=True)
        counts[scope] = len(stand_in.requests)
    assert counts == {"untyped": 3, "off_ontology": 4, "all": 5}  # + pseudo; + typed
    reprocess(llm)  # the odd edge now reads UNCLASSIFIED: off_ontology takes it again
    stand_in.requests.clear()
    reprocess(llm, scope="off_ontology", dry_run=True)
    assert sorted(stand_in.items()) == sorted([ODD, TITLE])


def test_k_rt_040_other_groups_edges_are_never_read_or_written(
    ws: Workspace, llm: Call, stand_in: StandIn, story: dict[str, str]
) -> None:
    theirs = edge(llm, "PAID_BY", "Bob is on the payroll of Initech.", group="g2")
    head = ws.log.head("g2")
    reprocess(llm, scope="all")
    assert "Bob is on the payroll of Initech." not in stand_in.items()
    assert types(llm, "g2")[theirs] is None
    assert ws.log.head("g2") == head


def test_k_rt_041_042_a_rerun_with_the_same_verdicts_writes_nothing(
    ws: Workspace, llm: Call, story: dict[str, str]
) -> None:
    reprocess(llm, scope="all")
    head = ws.log.head("g1")
    again = reprocess(llm, scope="all")
    assert ws.log.head("g1") == head
    assert again["reclassified_count"] == 0
    assert again["unchanged_count"] == 5
    assert again["breakdown"] == {}  # unchanged edges are not counted


def test_a_11_breakdown_counts_only_the_edges_written_or_to_be_written(
    ws: Workspace, llm: Call, stand_in: StandIn, story: dict[str, str]
) -> None:
    """Each new_type maps to the edges a dry run would write or an apply wrote; an edge whose
    verdict is its current type is in neither the plan nor the breakdown."""
    reprocess(llm, scope="all")
    stand_in.verdicts[ODD] = "WORKS_FOR"  # one verdict changes; four stay as written
    plan = reprocess(llm, scope="all", dry_run=True)
    assert [(p["edge_id"], p["new_type"]) for p in plan["plan"]] == [(story["odd"], "WORKS_FOR")]
    assert plan["breakdown"] == {"WORKS_FOR": 1}
    done = reprocess(llm, scope="all")
    assert (done["reclassified_count"], done["unchanged_count"]) == (1, 4)
    assert done["breakdown"] == {"WORKS_FOR": 1}


def test_k_rt_043_to_046_p_129_a_dry_run_plans_and_writes_nothing(
    ws: Workspace, llm: Call, story: dict[str, str]
) -> None:
    head, before = ws.log.head("g1"), dump(ws.reader())
    result = reprocess(llm, scope="off_ontology", dry_run=True)
    assert ws.log.head("g1") == head
    assert dump(ws.reader()) == before
    assert set(result) == {"would_reclassify_count", "plan", "breakdown"}
    assert result["would_reclassify_count"] == len(result["plan"]) == 4
    assert {tuple(sorted(entry)) for entry in result["plan"]} == {
        ("edge_id", "fact", "new_type", "old_type")
    }
    pseudo = next(p for p in result["plan"] if p["edge_id"] == story["pseudo"])
    assert pseudo == {
        "edge_id": story["pseudo"],
        "fact": TITLE,
        "old_type": "ADA_IS_THE_CHAIR",
        "new_type": "HOLDS",
    }
    assert result["breakdown"] == {"HOLDS": 2, "UNCLASSIFIED": 1, "WORKS_FOR": 1}


def test_k_rt_047_to_050_apply_answers_counts_and_breakdown_never_a_plan(
    ws: Workspace, llm: Call
) -> None:
    write_ontology(ws)
    result = reprocess(llm)  # no candidates at all
    assert result == {
        "success": True,
        "reclassified_count": 0,
        "unchanged_count": 0,
        "group_id": "g1",
        "breakdown": {},
    }


def test_p_129_p_004_an_unknown_scope_is_a_result_level_failure(ws: Workspace, llm: Call) -> None:
    write_ontology(ws)
    for tool in ("knowledge_reprocess_relation_types", "knowledge_reprocess_entity_types"):
        assert llm(tool, group_id="g1", scope="typed") == {
            "success": False,
            "error": "unknown scope 'typed'; valid values: untyped, off_ontology, all",
        }


def test_adr_0042_a_replay_asks_the_classifier_nothing_and_equals_the_live_state(
    ws: Workspace, llm: Call, stand_in: StandIn, story: dict[str, str]
) -> None:
    reprocess(llm, scope="all")
    llm("knowledge_assert_entity", name="Ada", group_id="g1")
    stand_in.verdicts["Ada"] = "Person"
    llm("knowledge_reprocess_entity_types", group_id="g1")
    live, asked = dump(ws.reader()), len(stand_in.requests)
    llm("knowledge_rebuild_from_wal", group_id="g1", force_clear=True)
    assert dump(ws.reader()) == live
    assert len(stand_in.requests) == asked


def test_reclassification_with_only_spacy_is_a_configuration_error_naming_the_setting(
    call: Call, workspace: Workspace
) -> None:
    write_ontology(workspace)
    edge(call, "PAID_BY", JOB)
    head = workspace.log.head("g1")
    for tool in ("knowledge_reprocess_relation_types", "knowledge_reprocess_entity_types"):
        with pytest.raises(DomainError) as refused:
            call(tool, group_id="g1")
        assert refused.value.field == "extraction.extractor"
        assert "LCG_EXTRACTION_EXTRACTOR=openai" in refused.value.message
    assert workspace.log.head("g1") == head


# --- entity types ---------------------------------------------------------------------


def entity(call: Call, name: str, labels: list[str] | None = None, summary: str = "") -> str:
    params: dict[str, Any] = {"name": name, "group_id": "g1", "summary": summary}
    if labels is not None:
        params["labels"] = labels
    uuid: str = call("knowledge_assert_entity", **params)["entity_uuid"]
    return uuid


def labels(call: Call) -> dict[str, list[str]]:
    nodes = call("knowledge_get_nodes_by_group", group_ids=["g1"])["nodes"]
    return {n["uuid"]: n["labels"] for n in nodes}


def test_k_et_002_untyped_scope_works_open_ended_without_an_ontology(
    ws: Workspace, llm: Call, stand_in: StandIn
) -> None:
    ada = entity(llm, "Ada Lovelace", summary="Wrote the first program.")
    stand_in.verdicts = {"Ada Lovelace: Wrote the first program.": "Mathematician"}
    result = llm("knowledge_reprocess_entity_types", group_id="g1")
    assert result["success"] is True
    assert result["reclassified_count"] == 1
    assert labels(llm)[ada] == ["Mathematician"]
    schema = stand_in.requests[0]["response_format"]["json_schema"]["schema"]
    assert "enum" not in schema["properties"]["type"]  # no menu: open-ended


def test_k_et_003_an_entity_the_model_cannot_classify_is_left_unchanged(
    ws: Workspace, llm: Call, stand_in: StandIn
) -> None:
    write_ontology(ws)
    thing = entity(llm, "Zorblax")
    head = ws.log.head("g1")
    result = llm("knowledge_reprocess_entity_types", group_id="g1")
    assert ws.log.head("g1") == head  # no write, no sentinel
    assert labels(llm)[thing] == ["Entity"]
    assert (result["reclassified_count"], result["unchanged_count"]) == (0, 1)


@pytest.mark.parametrize("scope", ["off_ontology", "all"])
def test_p_126_p_004_scopes_beyond_untyped_need_declared_entity_types(
    llm: Call, stand_in: StandIn, scope: str
) -> None:
    entity(llm, "Ada")
    result = llm("knowledge_reprocess_entity_types", group_id="g1", scope=scope)
    assert result["success"] is False
    assert "needs declared entity types" in result["error"]
    assert stand_in.requests == []


def test_k_et_004_p_126_scopes_plan_and_apply_with_restamps(
    ws: Workspace, llm: Call, stand_in: StandIn
) -> None:
    write_ontology(ws)
    bare = entity(llm, "Ada")
    off = entity(llm, "Grace", labels=["Admiral"])
    lower = entity(llm, "Alan", labels=["person"])
    typed = entity(llm, "Bob", labels=["Person"])
    stand_in.verdicts = {"Ada": "Person", "Grace": "Person", "Alan": "Person", "Bob": "Person"}
    asked = {}
    for scope in ("untyped", "off_ontology", "all"):
        stand_in.requests.clear()
        plan = llm("knowledge_reprocess_entity_types", group_id="g1", scope=scope, dry_run=True)
        asked[scope] = len(stand_in.requests)
    assert asked == {"untyped": 1, "off_ontology": 3, "all": 4}
    assert plan["would_reclassify_count"] == len(plan["plan"]) == 3  # Bob is already Person
    assert {tuple(sorted(p)) for p in plan["plan"]} == {
        ("entity_id", "entity_name", "new_type", "old_type")
    }
    assert {p["entity_name"]: p["old_type"] for p in plan["plan"]} == {
        "Ada": None,
        "Grace": "Admiral",
        "Alan": "person",
    }
    result = llm("knowledge_reprocess_entity_types", group_id="g1", scope="all")
    assert result == {
        "success": True,
        "reclassified_count": 2,
        "unchanged_count": 1,
        "restamped_count": 1,
        "group_id": "g1",
        "breakdown": {"Person": 3},  # Bob, already Person, is not written
    }
    assert labels(llm) == {bare: ["Person"], off: ["Person"], lower: ["Person"], typed: ["Person"]}


def test_k_et_001_k_prg_001_both_reprocess_tools_report_progress(
    ws: Workspace, llm: Call, stand_in: StandIn, story: dict[str, str]
) -> None:
    frames: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        frames.append((done, total))

    app = App(ws)
    operations.dispatch(app, "knowledge_reprocess_relation_types", {"group_id": "g1"}, progress)
    assert frames[:3] == [(1, 3), (2, 3), (3, 3)]  # one per classified edge, then the writes
    frames.clear()
    entity(llm, "Ada")
    operations.dispatch(app, "knowledge_reprocess_entity_types", {"group_id": "g1"}, progress)
    assert frames[0][1] >= 1


def test_a_10_both_reprocess_tools_default_group_id_to_liminis(
    ws: Workspace, llm: Call, stand_in: StandIn
) -> None:
    """Unlike canonicalize and the two backfills (group_id required: K-RT-001..005, K-SEM),
    an omitted group_id reads and writes the default group `liminis` only."""
    write_ontology(ws)
    stand_in.verdicts = {JOB: "WORKS_FOR", "Ada": "Person"}
    mine = edge(llm, "PAID_BY", JOB, group="liminis")
    theirs = edge(llm, "PAID_BY", JOB, group="g1")
    relations = llm("knowledge_reprocess_relation_types")
    assert (relations["group_id"], relations["reclassified_count"]) == ("liminis", 1)
    assert types(llm, "liminis")[mine] == "WORKS_FOR"
    assert types(llm, "g1")[theirs] is None
    entities = llm("knowledge_reprocess_entity_types")
    assert entities["group_id"] == "liminis"
    nodes = llm("knowledge_get_nodes_by_group", group_ids=["liminis", "g1"])["nodes"]
    typed = {(n["group_id"], n["name"]) for n in nodes if n["labels"][0] == "Person"}
    assert typed == {("liminis", "Ada")}
