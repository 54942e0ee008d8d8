"""knowledge_dump_wal and restoring a dump, on real SQLite files (ADR 0032).

Checklist: K-INV-048, K-WAL-003/004/005, P-133. A workspace restored from a dump answers every
read tool as the original does (search included), with both opened under the same frozen
clock; memory sessions are groups and are carried whole.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lcg.commands.restore import restore
from lcg.domain.errors import InvalidParams, NotFound
from lcg.domain.events import EventCodec
from lcg.domain.ids import GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.operations import BY_NAME, OPERATIONS, Scope
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import StorageFailure
from lcg.projections.wal.dump import BadDump, check_dump
from lcg.projections.wal.store import EventLog
from tests.conftest import Call, make_call, make_workspace
from tests.integration.test_memory_writes import concept, derive, settled
from tests.integration.test_rebuild import write_ten

FROZEN = datetime(2026, 6, 1, tzinfo=UTC)
SESSION = "agent-mem"
AGENT = "agent-a"


def _frozen() -> datetime:
    return FROZEN


def _story(call: Call) -> None:
    """Two knowledge groups with revisions, a deletion, a purge and a pin, and marks."""
    write_ten(call, group="liminis")
    call("knowledge_assert_entity", name="A", summary="Ada wrote the first program")
    call(
        "knowledge_add_episode",
        name="notes-1843",
        episode_body="In 1843 Ada published notes; note G computes Bernoulli numbers.",
        source_description="letters/1843.txt",
    )
    doomed = call("knowledge_add_episode", name="draft", episode_body="a draft to delete")
    call("knowledge_delete_episode", episode_uuid=doomed["episode_uuid"])
    write_ten(call, group="purged")
    call("knowledge_delete_by_group", group_ids=["purged"], confirm=True)
    call(
        "knowledge_assert_entity",
        name="After",
        summary="written after the purge",
        group_id="purged",
    )
    write_ten(call, group="pinned")
    call("knowledge_rebuild_from_wal", group_id="pinned", to_seq=6, force_clear=True)
    call("knowledge_wal_mark_create", name="before-dump")
    call("knowledge_wal_mark_create", name="also", group_id="purged")


def _memory(app: App) -> None:
    settled(app, derive(app, concept("user schema owns the account table", "entity")))
    settled(
        app,
        derive(
            app,
            concept(
                "logins read the account table", depends_on=["user schema owns the account table"]
            ),
        ),
    )
    settled(
        app,
        derive(
            app,
            concept(
                "accounts moved to tenants",
                "observation",
                against=["logins read the account table"],
            ),
        ),
    )


def _read_calls(call: Call) -> dict[str, list[dict[str, Any]]]:
    """Parameters for every read tool of the table (the test fails when one is added)."""
    edges = [edge["uuid"] for edge in call("knowledge_list_relationships")["edges"]]
    ada = next(n["uuid"] for n in call("knowledge_list_entities")["nodes"] if n["name"] == "A")
    groups = ["liminis", "purged", "pinned", SESSION]
    return {
        "knowledge_status": [{}],
        "knowledge_get_episodes": [{"group_id": g, "last_n": 50} for g in groups],
        "knowledge_get_nodes_by_group": [{}, {"group_ids": ["purged", "pinned"]}],
        "knowledge_get_edges_by_group": [{}, {"group_ids": ["liminis"]}],
        "knowledge_get_edges_by_uuids": [{"uuids": edges}],
        "knowledge_list_entities": [{}, {"group_ids": ["pinned"]}],
        "knowledge_list_relationships": [{}],
        "knowledge_get_entity_neighbors": [{"entity_uuid": ada}],
        "knowledge_find_entities": [
            {"query": "Ada"},
            {"query": "first program"},
            {"query": "written after the purge", "group_ids": ["purged"]},
        ],
        "knowledge_find_relationships": [{"query": "A NEXT B"}, {"query": "next"}],
        "knowledge_search_passages": [
            {"query": "Bernoulli numbers", "min_score": 0.0},
            {"query": "A to E", "min_score": 0.0},
        ],
        "knowledge_get_entities_by_source": [{"source": "letters/1843.txt"}],
        "knowledge_rebuild_status": [{"job_id": "never-given"}],  # jobs are the process's
        "knowledge_validate_corrections": [{}],  # neither workspace holds a corrections file
    }


MEMORY_READS: dict[str, list[dict[str, Any]]] = {
    "lambo_recall": [{"agent_id": AGENT, "query": "account table"}],
    "lambo_inspect": [{"agent_id": AGENT, "focus": "user schema owns the account table"}],
    "lambo_stale": [{"agent_id": AGENT}],
    "lambo_saints": [{"agent_id": AGENT}],
}
STATUS_COUNTS = ("entity_count", "relationship_count", "episode_count")


def _answers(call: Call, reads: dict[str, list[dict[str, Any]]]) -> dict[str, list[Any]]:
    answers: dict[str, list[Any]] = {}
    for name, calls in reads.items():
        results = [call(name, **params) for params in calls]
        if name == "knowledge_status":  # seqs are renumbered and pins dropped by design
            results = [{key: r[key] for key in STATUS_COUNTS} for r in results]
        answers[name] = results
    return answers


@pytest.fixture
def original(settings: Settings) -> Settings:
    return dataclasses.replace(settings, session=SESSION)


def _restored_settings(tmp_path: Path) -> Settings:
    return Settings(workspace=tmp_path / "restored", session=SESSION)


def _dump_and_restore(
    original: Settings, embedder: Embedder, tmp_path: Path, **params: Any
) -> tuple[dict[str, Any], Settings]:
    with make_workspace(original, embedder) as ws:
        dumped = make_call(App(ws))(
            "knowledge_dump_wal", target_dir=str(tmp_path / "dump"), **params
        )
    restored = _restored_settings(tmp_path)
    restore(tmp_path / "dump", restored.files, force=False, now=FROZEN)
    return dumped, restored


def test_k_inv_048_dump_wal_is_an_admin_row() -> None:
    assert BY_NAME["knowledge_dump_wal"].scope is Scope.ADMIN


def test_k_wal_003_a_restored_dump_answers_every_read_tool_the_same(
    original: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    with make_workspace(original, embedder) as ws:
        app = App(ws)
        call = make_call(app)
        _story(call)
        _memory(app)
    dumped, restored = _dump_and_restore(original, embedder, tmp_path)
    assert dumped["success"] is True
    assert dumped["files_written"] == 2
    assert sorted(p.name for p in (tmp_path / "dump").iterdir()) == ["dump.json", "wal.sqlite"]
    answers = []
    for settings in (original, restored):
        with make_workspace(settings, embedder, clock=_frozen) as ws:
            ws.settle()
            call = make_call(App(ws))
            reads = _read_calls(call)
            assert set(reads) == {op.name for op in OPERATIONS if op.scope is Scope.READ}
            answers.append((_answers(call, reads), _answers(call, MEMORY_READS)))
    assert answers[0] == answers[1]
    knowledge, memory = answers[0]
    assert knowledge["knowledge_find_entities"][0]["count"] > 0  # the comparison compared something
    assert knowledge["knowledge_search_passages"][0]["count"] > 0
    assert "user schema owns the account table" in memory["lambo_recall"][0]["text"]
    assert dumped["nodes_dumped"] == knowledge["knowledge_status"][0]["entity_count"]
    assert dumped["edges_dumped"] == knowledge["knowledge_status"][0]["relationship_count"]


def test_k_wal_004_a_dump_renumbers_each_streams_seqs_from_1(
    original: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    with make_workspace(original, embedder) as ws:
        _story(make_call(App(ws)))
    dumped, _ = _dump_and_restore(original, embedder, tmp_path)
    groups = {g["group_id"]: g for g in dumped["groups"]}
    # purged: ten events, the purge (11), then "After" (12): only seq 12 rebuilds anything
    assert groups["purged"] == {
        "group_id": "purged",
        "events": 1,
        "source_from_seq": 12,
        "source_to_seq": 12,
    }
    # pinned at 6: the graph shows seqs 1..6, and the dump carries what the graph shows
    assert groups["pinned"]["events"] == 6
    log = EventLog(tmp_path / "dump" / "wal.sqlite", EventCodec())
    try:
        assert log.heads() == {"liminis": 14, "pinned": 6, "purged": 1}
        ((first,),) = list(log.read(GroupId("purged")))
        assert first.seq == 1
        assert first.event.wire_name == "entity_created"
        assert log.pins() is None  # nothing is pinned in a dump
    finally:
        log.close()
    with make_workspace(_restored_settings(tmp_path), embedder) as ws:
        call = make_call(App(ws))
        status = call("knowledge_status")["wal_groups"]
        assert status["pinned"]["pinned_to"] is None
        assert status["purged"]["max_seq"] == 1
        call("knowledge_assert_entity", name="G", group_id="pinned")  # writes are accepted


def test_k_wal_005_marks_are_not_carried_and_the_dump_has_its_own_identity(
    original: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    with make_workspace(original, embedder) as ws:
        _story(make_call(App(ws)))
        source_identity = ws.log.identity
    _dump_and_restore(original, embedder, tmp_path)
    with sqlite3.connect(tmp_path / "dump" / "wal.sqlite") as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert "lcg_marks" not in tables
    manifest = json.loads((tmp_path / "dump" / "dump.json").read_text())
    assert manifest["source_wal"] == source_identity != manifest["wal"]
    with make_workspace(_restored_settings(tmp_path), embedder) as ws:
        call = make_call(App(ws))
        assert call("knowledge_wal_mark_list")["checkpoints"] == []
        assert call("knowledge_wal_mark_list", group_id="purged")["checkpoints"] == []
        assert ws.log.identity == manifest["wal"]
    with make_workspace(original, embedder) as ws:  # the source keeps its marks
        assert len(make_call(App(ws))("knowledge_wal_mark_list")["checkpoints"]) == 1


def test_a_memory_session_is_dumped_whole_with_its_seqs(
    original: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    with make_workspace(original, embedder) as ws:
        app = App(ws)
        _memory(app)
        head = ws.log.head(SESSION)
    dumped, restored = _dump_and_restore(original, embedder, tmp_path, group_ids=[SESSION])
    assert dumped["groups"] == [
        {"group_id": SESSION, "events": head, "source_from_seq": 1, "source_to_seq": head}
    ]
    rows = []
    for settings in (original, restored):
        with make_workspace(settings, embedder, clock=_frozen) as ws:
            conn = ws.reader()
            rows.append(
                [
                    conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                    for table in ("memory_nodes", "memory_edges", "memory_writes")
                ]
            )
    assert rows[0] == rows[1]
    assert rows[0][0]  # concepts and interactions were compared


def test_p_133_group_ids_dumps_only_those_groups(
    original: Settings, embedder: Embedder, tmp_path: Path
) -> None:
    with make_workspace(original, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call, group="a")
        write_ten(call, group="b")
        with pytest.raises(NotFound) as unknown:
            call("knowledge_dump_wal", target_dir=str(tmp_path / "x"), group_ids=["a", "nope"])
        assert unknown.value.field == "group_ids"
        assert "'nope'" in str(unknown.value)
        with pytest.raises(InvalidParams) as empty:
            call("knowledge_dump_wal", target_dir=str(tmp_path / "x"), group_ids=[])
        assert empty.value.field == "group_ids"
        assert not (tmp_path / "x").exists()  # refused before anything was written
    _, restored = _dump_and_restore(original, embedder, tmp_path, group_ids=["a"])
    with make_workspace(restored, embedder) as ws:
        assert list(ws.log.heads()) == ["a"]


def test_p_133_the_target_must_not_exist_or_be_empty(settings: Settings, call: Call) -> None:
    write_ten(call)
    busy = settings.workspace / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    a_file = settings.workspace / "file"
    a_file.write_text("mine")
    for target in (busy, a_file):
        with pytest.raises(InvalidParams) as error:
            call("knowledge_dump_wal", target_dir=str(target))
        assert error.value.field == "target_dir"
        assert "must name a directory that does not exist or is empty" in str(error.value)
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]
    empty = settings.workspace / "empty"
    empty.mkdir()
    assert call("knowledge_dump_wal", target_dir=str(empty))["target_dir"] == str(empty)
    relative = call("knowledge_dump_wal", target_dir="dumps/one")
    assert relative["target_dir"] == str(settings.workspace / "dumps" / "one")  # from the workspace
    default = call("knowledge_dump_wal")
    assert default["target_dir"] == str(settings.state_dir / "wal-compacted")
    for target in (
        empty,
        settings.workspace / "dumps" / "one",
        settings.state_dir / "wal-compacted",
    ):
        check_dump(target)


@pytest.mark.parametrize("exists", [False, True], ids=["created", "empty-before"])
def test_p_133_a_failed_dump_leaves_no_partial_output(
    settings: Settings, app: App, call: Call, exists: bool
) -> None:
    write_ten(call)
    target = settings.workspace / "dump"
    if exists:
        target.mkdir()

    def fail(done: int, total: int) -> None:
        raise RuntimeError(f"stopped at {done} of {total}")

    with pytest.raises(RuntimeError, match="stopped at 10 of 10"):
        operations.dispatch(app, "knowledge_dump_wal", {"target_dir": str(target)}, fail)
    assert target.exists() is exists
    if exists:
        assert list(target.iterdir()) == []
    call("knowledge_assert_entity", name="F", group_id="g")  # the writer was released


def test_a_dump_streams_progress_up_to_its_total(settings: Settings, app: App, call: Call) -> None:
    write_ten(call, group="a")
    write_ten(call, group="b")
    seen: list[tuple[int, int]] = []
    params = {"target_dir": str(settings.workspace / "dump")}
    operations.dispatch(app, "knowledge_dump_wal", params, lambda d, t: seen.append((d, t)))
    assert seen == [(10, 20), (20, 20)]


@pytest.mark.parametrize(
    ("harm", "why"),
    [
        (lambda d: (d / "dump.json").unlink(), "it needs dump.json and wal.sqlite"),
        (lambda d: (d / "dump.json").write_text("{}"), "is not an lcg-wal-dump manifest"),
        (
            lambda d: (d / "dump.json").write_text(
                (d / "dump.json").read_text().replace('"events": 10', '"events": 11')
            ),
            "does not hold the events",
        ),
    ],
    ids=["no-manifest", "not-a-manifest", "incomplete"],
)
def test_a_directory_that_is_not_a_whole_dump_is_refused(
    settings: Settings, call: Call, tmp_path: Path, harm: Callable[[Path], object], why: str
) -> None:
    write_ten(call)
    target = settings.workspace / "dump"
    call("knowledge_dump_wal", target_dir=str(target))
    harm(target)
    with pytest.raises(BadDump, match=why):
        check_dump(target)
    other = Settings(workspace=tmp_path / "other")
    with pytest.raises(InvalidParams) as error:
        restore(target, other.files, force=False, now=FROZEN)
    assert error.value.field == "PATH"
    assert not other.state_dir.exists()


# Issue 24, item 4 (ADR 0048): where a serving process's clients may have a dump written.


@pytest.fixture
def held(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Workspace, Call]]:
    """A workspace at tmp_path/ws called as a serving process's client calls it."""
    with make_workspace(Settings(workspace=tmp_path / "ws"), embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        yield ws, call


def test_k_wal_003_a_client_dump_outside_the_workspace_is_refused_naming_the_setting(
    held: tuple[Workspace, Call], tmp_path: Path
) -> None:
    ws, call = held
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.settings.workspace / "link").symlink_to(outside)
    for target in (str(outside / "dump"), "../outside/dump", "../../dump", "link/dump"):
        with pytest.raises(InvalidParams) as refused:
            call("knowledge_dump_wal", target_dir=target)
        assert refused.value.field == "target_dir"
        message = str(refused.value)
        assert "must be a directory inside the workspace" in message
        assert "[wal] dump_dir (LCG_WAL_DUMP_DIR)" in message
        assert repr(target) in message
    assert list(outside.iterdir()) == []
    assert not (tmp_path.parent / "dump").exists()
    assert ws.faults() == []


def test_k_wal_003_a_client_may_dump_into_the_directory_the_operator_configured(
    tmp_path: Path, embedder: Embedder
) -> None:
    dumps = tmp_path / "dumps"
    env = {"LCG_WAL_DUMP_DIR": str(dumps)}
    settings = Settings.load(env, tmp_path, tmp_path / "ws")
    assert settings.dump_dir == dumps
    with make_workspace(settings, embedder) as ws:
        call = make_call(App(ws))
        write_ten(call)
        dumped = call("knowledge_dump_wal", target_dir=str(dumps / "one"))
        with pytest.raises(InvalidParams, match="target_dir"):
            call("knowledge_dump_wal", target_dir=str(tmp_path / "beside"))
    assert dumped["target_dir"] == str(dumps / "one")
    check_dump(dumps / "one")


def test_k_wal_003_the_operator_at_the_cli_may_dump_anywhere(
    held: tuple[Workspace, Call], tmp_path: Path
) -> None:
    ws, _ = held
    operator = make_call(App(ws, operator=True))
    dumped = operator("knowledge_dump_wal", target_dir=str(tmp_path / "backups" / "one"))
    assert dumped["target_dir"] == str(tmp_path / "backups" / "one")
    check_dump(tmp_path / "backups" / "one")


def test_k_wal_003_a_nul_in_target_dir_is_invalid_params(held: tuple[Workspace, Call]) -> None:
    _, call = held
    with pytest.raises(InvalidParams) as refused:
        call("knowledge_dump_wal", target_dir="dump\x00here")
    assert refused.value.field == "target_dir"
    assert "must not contain a NUL character" in str(refused.value)


def test_k_wal_003_a_failed_dump_does_not_degrade_the_workspace(
    held: tuple[Workspace, Call],
) -> None:
    ws, call = held
    too_long = "n" * 300  # a name the file system refuses: mkdir fails with ENAMETOOLONG
    with pytest.raises(StorageFailure) as failed:
        call("knowledge_dump_wal", target_dir=too_long)
    assert ws.faults() == []  # health stays healthy
    assert "the workspace is unaffected" in str(failed.value)
    call("knowledge_assert_entity", name="After the dump", group_id="g")
