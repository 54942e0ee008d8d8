"""knowledge_process_chunk with the default extractor (spaCy's small English pipeline, real),
and the two source deletions (issue 14: K-ING, K-DEL; P-105, P-106, P-121)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from lcg.domain import rules
from lcg.domain.errors import DomainError, InvalidParams
from lcg.domain.events import ChunkExtracted, EventCodec
from lcg.domain.extraction import Extraction, same_numbers
from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.extraction.spacy_rules import default_extractor
from tests.conftest import make_call, make_workspace
from tests.helpers.projection_state import dump

STORY = (
    "Alice Chen joined Acme Corp in Berlin. Acme Corp acquired Globex for 3 million dollars. "
    "Bob manages the billing service."
)
GROUP = GroupId("liminis")


class CountingExtractor:
    """The real default extractor, counting its calls (a replay must make none)."""

    def __init__(self) -> None:
        self.inner = default_extractor()
        self.name = self.inner.name
        self.model = self.inner.model
        self.calls = 0

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        self.calls += 1
        return self.inner.extract(text, reference_time)


@pytest.fixture
def extractor() -> CountingExtractor:
    return CountingExtractor()


@pytest.fixture
def ws(tmp_path: Path, embedder: Embedder, extractor: CountingExtractor) -> Iterator[Workspace]:
    settings = Settings(workspace=tmp_path, chunk_advisory_max_chars=200)
    with make_workspace(settings, embedder, extractor=extractor) as workspace:
        yield workspace


def _chunk(ws: Workspace, text: str = STORY, **extra: Any) -> dict[str, Any]:
    params = {"chunk_text": text, "chunk_id": "notes-0001", "source_file": "notes.md", **extra}
    result: dict[str, Any] = make_call(App(ws))("knowledge_process_chunk", **params)
    return result


def test_k_ing_process_chunk_writes_the_episode_entities_edges_and_mentions(
    ws: Workspace,
) -> None:
    result = _chunk(ws)
    assert result["success"] is True
    assert (result["chunk_id"], result["source_file"]) == ("notes-0001", "notes.md")
    assert result["nodes_extracted"] == 5  # Alice Chen, Acme Corp, Berlin, Globex, Bob
    call = make_call(App(ws))
    names = {n["name"] for n in call("knowledge_list_entities", group_ids=["liminis"])["nodes"]}
    assert names == {"Alice Chen", "Acme Corp", "Berlin", "Globex", "Bob"}
    edges = call("knowledge_list_relationships", group_ids=["liminis"])["edges"]
    stated = {(e["name"], e["fact"]) for e in edges}
    assert ("JOIN", "Alice Chen joined Acme Corp in Berlin.") in stated
    assert ("ACQUIRE", "Acme Corp acquired Globex for 3 million dollars.") in stated
    episodes = call("knowledge_get_episodes")["episodes"]
    assert episodes[0]["name"] == "notes-0001"
    assert episodes[0]["source_description"] == "notes.md:notes-0001"
    by_source = call("knowledge_get_entities_by_source", source="notes.md")
    assert by_source["count"] == 5  # the mentions are recorded (they were empty before)


def test_k_ing_001_002_005_006_010_011_012_013_an_edge_to_no_entity_is_dropped_and_reported(
    ws: Workspace,
) -> None:
    result = _chunk(ws)
    dropped = result["dropped_edges"]
    assert result["edges_dropped_unresolvable"] == len(dropped)  # K-ING-008
    by_fact = {d["fact"]: d for d in dropped}
    billing = by_fact["Bob manages the billing service."]
    assert billing == {
        "source_name": "Bob",
        "target_name": "billing service",
        "relation_type": None,  # K-ING-012
        "fact": "Bob manages the billing service.",
        "unresolved_endpoint": "target",
    }
    # K-ING-013: no edge, and no event, holds a dropped edge
    conn = ws.reader()
    facts = [row[0] for row in conn.execute("SELECT fact FROM relationships")]
    assert "Bob manages the billing service." not in facts
    codec = EventCodec()
    for page in ws.log.read(GROUP):
        for recorded in page:
            if not isinstance(recorded.event, ChunkExtracted | type(None)):
                continue
            assert "billing service" not in str(codec.encode(recorded.event))


def test_k_ing_003_004_an_endpoint_in_the_batch_or_the_graph_is_resolved(ws: Workspace) -> None:
    """Also K-ING-007: `dropped_edges` is `[]` when nothing was dropped."""
    call = make_call(App(ws))
    call("knowledge_assert_entity", name="billing service", summary="The service that bills.")
    result = _chunk(ws, "Bob manages the billing service.")
    assert result["dropped_edges"] == []  # K-ING-007: present and empty
    edges = call("knowledge_list_relationships", group_ids=["liminis"])["edges"]
    assert [(e["name"], e["fact"]) for e in edges] == [
        ("MANAGE", "Bob manages the billing service.")
    ]
    # Bob came from this chunk, the billing service from the graph: both mentioned
    assert call("knowledge_get_entities_by_source", source="notes.md")["count"] == 2


def test_k_ing_009_dropped_edges_keep_extraction_order(ws: Workspace) -> None:
    result = _chunk(
        ws, "Bob manages the billing service. Carol owns the deploy pipeline and the build."
    )
    assert [d["source_name"] for d in result["dropped_edges"]] == ["Bob", "Carol"]


def test_k_ing_014_016_017_018_019_020_021_the_oversized_warning(
    ws: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    """Also K-CFG-007: the telemetry event is named `chunk_text_oversized`."""
    assert "warning" not in _chunk(ws, "Bob met Alice." + " " * 186)  # 200: not over
    with caplog.at_level(logging.INFO, logger="lcg.telemetry"):
        over = _chunk(ws, "Bob met Alice." + " " * 187, chunk_id="c2")
    assert over["warning"]["type"] == "chunk_text_oversized"
    assert over["warning"]["chunk_text_chars"] == 201
    assert over["warning"]["recommended_max_chars"] == 200
    assert "201 characters" in over["warning"]["message"]
    assert "200 characters" in over["warning"]["message"]
    assert any("chunk_text_oversized chunk_id=c2" in r.getMessage() for r in caplog.records)
    assert over["nodes_extracted"] == 2  # K-ING-020: processed whole
    assert "warning" not in _chunk(ws, "é" * 200, chunk_id="c3")  # code points, not bytes


def test_k_ing_015_022_the_threshold_comes_from_the_environment(tmp_path: Path) -> None:
    """Also K-CFG-002: LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS, default 8000 (characters: the
    oversized-warning test counts code points)."""
    assert Settings.load({}, tmp_path).chunk_advisory_max_chars == 8_000
    loaded = Settings.load({"LCG_CHUNK_TEXT_ADVISORY_MAX_CHARS": "100"}, tmp_path)
    assert loaded.chunk_advisory_max_chars == 100


def test_p_105_a_json_source_is_stored_as_json_and_bad_params_are_named(ws: Workspace) -> None:
    _chunk(ws, '{"owner": "Alice Chen"}', source_file="people.json")
    call = make_call(App(ws))
    assert call("knowledge_get_episodes")["episodes"][0]["source"] == "json"
    with pytest.raises(DomainError, match="chunk_text"):
        _chunk(ws, "")
    with pytest.raises(DomainError, match="reference_time"):
        _chunk(ws, reference_time="yesterday")


def test_issue_24_a_chunk_at_the_schema_cap_is_extracted_and_one_past_it_refused(
    ws: Workspace,
) -> None:
    """The published cap (rules.MAX_EPISODE_BODY) is what the extractor takes: a chunk of
    exactly that many characters is processed whole (spaCy's own limit is 1,000,000), one
    more is refused naming the field and the cap, and nothing is written."""
    head = "Alice Chen joined Acme Corp in Berlin. "
    largest = head + " " * (rules.MAX_EPISODE_BODY - len(head))
    assert len(largest) > 1_000_000
    result = _chunk(ws, largest)
    assert result["nodes_extracted"] == 3
    assert result["warning"]["chunk_text_chars"] == rules.MAX_EPISODE_BODY
    call = make_call(App(ws))
    head_seq = call("knowledge_status")["wal_groups"]["liminis"]["max_seq"]
    with pytest.raises(InvalidParams) as refused:
        _chunk(ws, largest + " ", chunk_id="notes-0002")
    assert refused.value.field == "chunk_text"
    assert str(rules.MAX_EPISODE_BODY) in refused.value.message
    assert call("knowledge_status")["wal_groups"]["liminis"]["max_seq"] == head_seq
    assert [e["name"] for e in call("knowledge_get_episodes")["episodes"]] == ["notes-0001"]


def test_a_replay_of_process_chunk_calls_no_extractor_and_equals_the_incremental_state(
    ws: Workspace, extractor: CountingExtractor
) -> None:
    _chunk(ws)
    _chunk(ws, "Globex was founded by Carol Diaz in Berlin.", chunk_id="notes-0002")
    live = dump(ws.reader())
    calls = extractor.calls
    make_call(App(ws))("knowledge_rebuild_from_wal", group_id="liminis", force_clear=True)
    assert dump(ws.reader()) == live
    assert extractor.calls == calls


@pytest.mark.parametrize(
    ("tool", "key"),
    [("knowledge_delete_by_source", "source_file"), ("knowledge_delete_chunk_episode", "chunk_id")],
)
@pytest.mark.parametrize("group_ids", ["omitted", None, [], [""]])
def test_k_del_001_002_003_004_005_006_007_013_group_ids_is_required_before_any_delete(
    ws: Workspace, tool: str, key: str, group_ids: Any
) -> None:
    """K-DEL-007, K-DEL-013: an omitted group_ids never deletes across every group, nor in
    the default group `liminis`: the same chunk in `liminis` and in `other` both stay."""
    _chunk(ws)
    _chunk(ws, group_id="other")
    call = make_call(App(ws))
    value = {"source_file": "notes.md", "chunk_id": "notes-0001"}[key]
    params: dict[str, Any] = {key: value}
    if group_ids != "omitted":
        params["group_ids"] = group_ids
    head = ws.log.head(GROUP)
    with pytest.raises(DomainError) as refused:
        call(tool, **params)
    assert refused.value.field == "group_ids"  # P-121's rule, in the house's "field: rule" form
    assert "is required and must be a non-empty array of non-empty strings" in str(refused.value)
    assert ws.log.head(GROUP) == head  # K-DEL-006
    assert len(call("knowledge_get_episodes")["episodes"]) == 1
    assert len(call("knowledge_get_episodes", group_id="other")["episodes"]) == 1


def test_k_del_008_009_010_011_012_deletion_is_limited_to_the_listed_groups(
    ws: Workspace,
) -> None:
    _chunk(ws)
    _chunk(ws, group_id="other")
    call = make_call(App(ws))
    none = call("knowledge_delete_by_source", source_file="notes.md", group_ids=["empty"])
    assert (none["deleted_count"], none["deleted_uuids"]) == (0, [])  # K-DEL-011
    gone = call("knowledge_delete_chunk_episode", chunk_id="notes-0001", group_ids=["liminis"])
    assert gone["success"] is True
    assert gone["deleted_count"] == 1
    assert call("knowledge_get_episodes")["episodes"] == []
    assert len(call("knowledge_get_episodes", group_id="other")["episodes"]) == 1  # K-DEL-010
    # entities stay (P-121), their mentions by the deleted episode go
    assert (
        call("knowledge_get_entities_by_source", source="notes.md", group_ids=["liminis"])["count"]
        == 0
    )
    by_source = call("knowledge_delete_by_source", source_file="notes.md", group_ids=["other"])
    assert by_source["deleted_count"] == 1
    assert call("knowledge_get_episodes", group_id="other")["episodes"] == []


def test_process_chunk_edges_record_their_episode_and_repeat_no_edge(ws: Workspace) -> None:
    first = _chunk(ws, "Acme Corp acquired Globex.")
    second = _chunk(ws, "Acme Corp acquired Globex.", chunk_id="notes-0002")
    call = make_call(App(ws))
    (edge,) = call("knowledge_list_relationships", group_ids=["liminis"])["edges"]
    stored = ws.reader().execute("SELECT episodes FROM relationships").fetchone()[0]
    assert first["episode_uuid"] in stored
    assert second["episode_uuid"] in stored
    assert edge["name"] == "ACQUIRE"


MEETING = "Mayor Adams met the Acme Corporation board in New York yesterday."


def _entities(ws: Workspace) -> dict[str, str]:
    nodes = make_call(App(ws))("knowledge_list_entities", group_ids=["liminis"])["nodes"]
    return {n["name"]: n["uuid"] for n in nodes}


def _known_places(ws: Workspace) -> dict[str, str]:
    call = make_call(App(ws))
    for name in ("New York City", "Acme Corporation", "Room 101"):
        call("knowledge_assert_entity", name=name, summary=f"{name}, asserted")
    assert ws.settle(60)  # resolution by embedding reads the name vectors the index holds
    return _entities(ws)


@pytest.mark.minilm
def test_issue_14_a_name_resolves_by_embedding_after_no_name_matched(ws: Workspace) -> None:
    """Name first, then the nearest name embedding at or above [extraction] name_similarity
    (0.92): "New York" (0.95 to "New York City") lands on the asserted entity and "the Acme
    Corporation" (named without its "the") on its own name, with their mentions and edges;
    "Adams" is new."""
    known = _known_places(ws)
    result = _chunk(ws, MEETING)
    assert result["nodes_extracted"] == 3
    after = _entities(ws)
    assert set(after) == {*known, "Adams"}
    edges = make_call(App(ws))("knowledge_list_relationships", group_ids=["liminis"])["edges"]
    ends = {(e["source_node_uuid"], e["name"], e["target_node_uuid"]) for e in edges}
    assert (after["Adams"], "MEET_IN", known["New York City"]) in ends
    mentioned = make_call(App(ws))("knowledge_get_entities_by_source", source="notes.md")
    assert {n["name"] for n in mentioned["nodes"]} >= {"New York City", "Acme Corporation"}


@pytest.mark.minilm
def test_issue_14_resolution_by_embedding_off_and_the_numbers_guard(
    tmp_path: Path, embedder: Embedder, extractor: CountingExtractor
) -> None:
    """Above 1 the setting turns resolution by embedding off: the chunk's names are new
    entities. Names with other numbers never resolve to each other ("Room 101" and "Room 102"
    embed at 0.91)."""
    off = Settings(workspace=tmp_path).tuning.with_values(extraction__name_similarity=1.01)
    settings = Settings(workspace=tmp_path, tuning=off)
    with make_workspace(settings, embedder, extractor=extractor) as ws:
        known = _known_places(ws)
        _chunk(ws, MEETING)
        # "the Acme Corporation" is named without its "the" (issue 26): that name matches
        assert set(_entities(ws)) == {*known, "Adams", "New York"}
    assert not same_numbers("Room 101", "Room 102")
    assert same_numbers("Room 101", "room 101 east")


def test_k_sem_007_the_extraction_path_embeds_the_summary_of_an_entity_it_creates(
    ws: Workspace,
) -> None:
    """Bob, created by the extractor with the sentence that names him as his summary, is
    found by that summary's meaning (the summary-vector leg), as an asserted entity is
    (K-SEM-006)."""
    _chunk(ws)
    call = make_call(App(ws))
    nodes = call("knowledge_list_entities", group_ids=["liminis"])["nodes"]
    (bob,) = [n for n in nodes if n["name"] == "Bob"]
    assert bob["summary"] == "Bob manages the billing service."
    found = call("knowledge_find_entities", query="manages the billing service")["nodes"]
    (hit,) = [n for n in found if n["name"] == "Bob"]
    assert "summary_vector" in hit["ranks"]
