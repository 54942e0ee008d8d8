"""Issue 9 on a real read-only disk, with a real `lcg serve`: the read-only WAL and F6.

"Writes refused by a read-only WAL answer `internal error` while health says healthy: a
storage failure is reported as such and reflected in health"; F6: "Same under a read-only
workspace. Every close step runs and failures are logged."

The workspace lives on an ext4 disk on a loop device (tests/helpers/read_only_disk.py; root
only, skipped saying why elsewhere). It turns read-only two ways: remounted read-only while no
service runs, and switched read-only under a running service by an ext4 error (the only live
switch this kernel allows: remounting a tmpfs or a bind mount read-only is refused with EBUSY
while files are open for writing, and `chattr +i` does not stop writes through open files).
Each test ends with the disk writable again and a new service holding every acknowledged
write.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.interfaces.exit_codes import EXIT_STORAGE
from lcg.interfaces.jsonrpc import STORAGE_ERROR, UNAVAILABLE
from lcg.interfaces.operations import OPERATIONS
from tests.helpers.read_only_disk import LoopDisk, loop_disk
from tests.helpers.service_process import DEADLINE, RpcClient, ServiceProcess, wait_until

pytestmark = pytest.mark.slow

READ_ONLY = "[Errno 30] Read-only file system"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[LoopDisk]:
    with loop_disk(tmp_path) as mounted:
        yield mounted


@pytest.fixture
def workspace(disk: LoopDisk) -> Path:
    """The workspace on the disk, reached through a link beside the disk, so that the serve
    logs land off it (ServiceProcess writes them beside the workspace)."""
    (disk.mount / "ws").mkdir()
    (disk.mount / "ws" / "knowledge-corrections.yaml").write_text(  # what apply is refused
        "corrections:\n  - {id: ada, action: retype, entity: Ada, labels: [Person]}\n"
    )
    link = disk.mount.parent / "ws"
    link.symlink_to(disk.mount / "ws")
    return link


def state_file(workspace: Path, name: str) -> str:
    """A file of the workspace as the service names it (the link resolved)."""
    return str(workspace.resolve() / ".lcg" / name)


def write_some(client: RpcClient) -> dict[str, str]:
    """Four episodes (one a processed chunk), a WAL mark, two entities and a relationship; the
    episodes' uuids by name."""
    uuids = {}
    for name in ("e1", "e2", "e3"):
        body = f"a note about {name} and the lighthouse"
        result = client.result("knowledge_add_episode", {"name": name, "episode_body": body})
        uuids[name] = result["episode_uuid"]
    chunk = {"chunk_text": "a note about the lighthouse, chunk four", "source_file": "n.md"}
    result = client.result("knowledge_process_chunk", {**chunk, "chunk_id": "c4"})
    assert result["nodes_extracted"] == 0, result  # the extractor finds no name here
    uuids["c4"] = result["episode_uuid"]
    client.result("knowledge_wal_mark_create", {"name": "m1"})
    for name in ("Ada", "Lighthouse"):
        client.result("knowledge_assert_entity", {"name": name, "summary": f"{name}, kept"})
    client.result(
        "knowledge_assert_relationship",
        {"source_name": "Ada", "target_name": "Lighthouse", "predicate": "keeps"},
    )
    # the vector indexes follow on their own thread (ADR 0022): once they hold every write,
    # close has index files to write
    wait_until(lambda: client.result("knowledge_status")["vector_pending"] == 0, "vectors")
    return uuids


def write_while_serving(workspace: Path) -> dict[str, str]:
    """Acknowledged writes from a service that then stops cleanly."""
    service = ServiceProcess(workspace)
    try:
        assert service.wait_ready()["state"] == "healthy", service.own_log
        with service.connect() as client:
            uuids = write_some(client)
    finally:
        assert service.stop() == 0, service.own_log
    return uuids


# lambo_derive_image is served where client vectors are accepted (ADR 0095)
VECTORS = {"LCG_EMBEDDER_ACCEPT_CLIENT_VECTORS": "true"}


def writes(
    uuids: dict[str, str], contract: dict[str, Any] | None = None
) -> list[tuple[str, dict[str, Any], str]]:
    """Every write operation, with params it would succeed with on a writable disk, and the
    file a read-only disk refuses it with (under .lcg/; a directory: a file in it).
    `contract`: the session's embedding contract, for lambo_derive_image's vector."""
    wal, graph = "wal.sqlite", "graph.sqlite"
    contract = contract or {"kind": "onnx", "model": "all-MiniLM-L6-v2-int8", "dim": 384}
    vector = {"values": [1.0] + [0.0] * (int(contract["dim"]) - 1), "contract": contract}
    image = {"agent_id": "a", "caption": "never acked", "concept_type": "resource"}
    return [
        ("lambo_derive_image", {**image, "vector": vector}, wal),
        ("knowledge_add_episode", {"name": "refused", "episode_body": "never acked"}, wal),
        ("knowledge_assert_entity", {"name": "Refused", "summary": "never acked"}, wal),
        (
            "knowledge_assert_relationship",
            {"source_name": "Ada", "target_name": "Lighthouse", "predicate": "leaves"},
            wal,
        ),
        ("knowledge_delete_episode", {"episode_uuid": uuids["e1"]}, wal),
        ("knowledge_delete_by_group", {"group_ids": ["liminis"], "confirm": True}, wal),
        ("knowledge_clear_all", {"confirm": True}, wal),
        ("knowledge_clear_all", {"confirm": True, "preserve_wal": True}, wal),
        ("knowledge_rebuild_from_wal", {"force_clear": True}, graph),  # reads the WAL only
        ("knowledge_rebuild_from_wal", {"to_seq": 1, "force_clear": True}, wal),  # a pin
        ("knowledge_backfill_summary_embeddings", {"group_id": "liminis"}, wal),
        ("knowledge_build_indices", {}, "vectors/"),
        (
            "lambo_derive",
            {"agent_id": "a", "concepts": [{"content": "never acked", "concept_type": "logic"}]},
            wal,
        ),
        ("lambo_record_action", {"agent_id": "a", "action": "never acked"}, wal),
        (
            "knowledge_process_chunk",
            {"chunk_text": "Ada keeps the lighthouse.", "chunk_id": "c9", "source_file": "o.md"},
            wal,
        ),
        ("knowledge_delete_by_source", {"source_file": "n.md", "group_ids": ["liminis"]}, wal),
        ("knowledge_delete_chunk_episode", {"chunk_id": "c4", "group_ids": ["liminis"]}, wal),
        ("knowledge_wal_mark_create", {"name": "m2"}, wal),
        ("knowledge_wal_mark_delete", {"name": "m1"}, wal),
        ("knowledge_dump_wal", {}, "wal-compacted"),  # the default target is in .lcg/
        ("knowledge_merge_entities", {"canonical_name": "Ada", "alias_names": ["Lighthouse"]}, wal),
        ("knowledge_apply_corrections", {}, wal),
        (
            "knowledge_add_cross_group_edge",
            {
                "name": "CITES",
                "source": {"source_group_id": "liminis", "endpoint_name": "Ada"},
                "target": {"source_group_id": "liminis", "endpoint_name": "Lighthouse"},
                "fact": "Ada cites the lighthouse.",
                "group_id": "hub",
            },
            wal,
        ),
        ("knowledge_backfill_relation_types", {"group_id": "liminis"}, wal),  # types `keeps`
    ]


def test_every_write_operation_is_tried() -> None:
    """The list above covers the table's write and admin operations that change memory
    (lambo_reserve's locks live in memory only; the memory reads are read_only)."""
    tried = {name for name, _, _ in writes({"e1": "0" * 32})}
    # not tried on a read-only disk yet: recovery (it renames files and reopens the
    # workspace, ADR 0038) and prepare_checkpoint (ADR 0036)
    untried = {
        "knowledge_close",
        "lambo_reserve",
        "knowledge_recover",
        "knowledge_recover_full",
        "knowledge_prepare_checkpoint",
        # they append nothing in this workspace, so a read-only disk is never met: no
        # pointer to rebind, no ontology to canonicalize against, no LLM endpoint to ask
        "knowledge_rebind_pointers",
        "knowledge_canonicalize_relations",
        "knowledge_reprocess_relation_types",
        "knowledge_reprocess_entity_types",
    }
    assert tried == {op.name for op in OPERATIONS if not op.read_only} - untried


CYPHER_NAMES = "MATCH (n:Entity) RETURN n.name AS name"


def assert_all_acknowledged_writes_present(workspace: Path, uuids: dict[str, str]) -> None:
    """Nothing acknowledged is lost: a new service on the writable disk holds every
    acknowledged write and nothing that was refused, and takes writes again."""
    service = ServiceProcess(workspace)
    try:
        assert service.wait_ready()["state"] == "healthy", service.own_log
        with service.connect() as client:
            episodes = client.result("knowledge_get_episodes", {"last_n": 50})["episodes"]
            assert {e["name"]: e["uuid"] for e in episodes} == uuids
            entities = client.result("knowledge_list_entities")["nodes"]
            assert sorted(e["name"] for e in entities) == ["Ada", "Lighthouse"]
            edges = client.result("knowledge_list_relationships")["edges"]
            assert [edge["name"] for edge in edges] == ["keeps"]
            client.result("knowledge_add_episode", {"name": "e4", "episode_body": "after"})
            wait_until(lambda: client.result("knowledge_status")["vector_pending"] == 0, "vectors")
            hits = client.result("knowledge_search_passages", {"query": "lighthouse"})
            assert hits["passages"], hits
            found = client.result("knowledge_query_cypher", {"query": CYPHER_NAMES})["rows"]
            assert sorted(row["name"] for row in found) == ["Ada", "Lighthouse"]
        assert service.stop() == 0, service.own_log
    finally:
        service.stop()
    assert "internal error" not in service.own_log


def test_issue9_read_only_workspace_at_start_exits_7_naming_the_socket_it_cannot_create(
    disk: LoopDisk, workspace: Path
) -> None:
    """Started on a workspace whose disk is read-only, `lcg serve` cannot create its socket
    (<workspace>/.lcg/service.sock): it exits 7 (EXIT_STORAGE: a file cannot be used, full or
    read-only disk) with one line naming the socket and the reason, no traceback."""
    uuids = write_while_serving(workspace)
    disk.remount(read_only=True)
    service = ServiceProcess(workspace)
    try:
        code = service.proc.wait(DEADLINE)
    finally:
        service.stop()
    log = service.own_log
    assert code == EXIT_STORAGE, log
    assert f"error: cannot listen at {state_file(workspace, 'service.sock')}: {READ_ONLY}" in log
    assert "Traceback" not in log
    assert "internal error" not in log
    disk.remount(read_only=False)
    assert_all_acknowledged_writes_present(workspace, uuids)


def test_issue9_read_only_workspace_at_start_serves_degraded_naming_the_file_no_write_acked(
    disk: LoopDisk, workspace: Path, tmp_path: Path
) -> None:
    """With its socket off the read-only disk, the service starts degraded (ADR 0019: the
    open's failure is the reason; every write answers "DB unavailable", -32001): health and
    knowledge_status name the file the open could not write (the writer lease, the first
    file it opens for writing) and why; no call answers `internal error`. SIGTERM stops it
    with exit 0 and its socket removed."""
    uuids = write_while_serving(workspace)
    disk.remount(read_only=True)
    lease = state_file(workspace, "writer.lock")
    reason = f"{READ_ONLY}: '{lease}'"
    service = ServiceProcess(workspace, socket_path=tmp_path / "lcg.sock", env=VECTORS)
    try:
        health = service.wait_ready()
        assert health == {"ok": False, "healthy": False, "state": "degraded", "reason": reason}
        with service.connect() as client:
            status = client.result("knowledge_status")
            assert (status["degraded"], status["reason"], status["queryable"]) == (
                True,
                reason,
                False,
            )
            for method, params, _ in writes(uuids):
                error = client.call(method, params)["error"]
                assert error["code"] == UNAVAILABLE, (method, error)
                assert error["message"] == f"DB unavailable, recovery required: {reason}"
            reads = [op.name for op in OPERATIONS if op.read_only and op.name != "knowledge_status"]
            for method in reads:
                error = client.call(method, {})["error"]
                assert error["code"] == UNAVAILABLE, (method, error)
        assert service.stop() == 0, service.own_log
    finally:
        service.stop()
    assert not service.socket_path.exists()
    assert "internal error" not in service.own_log
    disk.remount(read_only=False)
    assert_all_acknowledged_writes_present(workspace, uuids)


@pytest.mark.parametrize(
    ("close", "cypher"),
    [("knowledge_close", False), ("SIGTERM", False), ("knowledge_close", True)],
)
def test_issue9_read_only_wal_under_a_running_service_refuses_writes_as_storage_failures(
    disk: LoopDisk, workspace: Path, close: str, cypher: bool
) -> None:
    """The disk turns read-only under a running service. Every write is refused as a storage
    failure (-32002, `data.file` naming the file that refused it: wal.sqlite for an append,
    a pin or an erase, graph.sqlite for a full rebuild, an index file for build_indices),
    health says degraded with that failure after each (a dump's failure, of its own
    directory, leaves health as it was: ADR 0048), knowledge_status too; reads (and
    search) still answer. Closing (by
    knowledge_close or SIGTERM) runs every close step: the process exits 0, logging each
    file it could not write (index files, the text scorer) and the socket it could not
    remove (a read-only directory keeps it; the next start replaces it).

    Durability is `full` here: the ext4 error aborts the journal, which drops what was not
    synced as a power loss would, and only `full` syncs each commit before acknowledging it
    (ADR 0005: `normal` may lose the last commits on power loss)."""
    env = {"LCG_DURABILITY": "full", **VECTORS}
    service = ServiceProcess(workspace, env=env)
    try:
        assert service.wait_ready()["state"] == "healthy", service.own_log
        with service.connect() as client:
            uuids = write_some(client)
            if cypher:  # the Cypher projection open too (ladybug's files on the same disk)
                found = client.result("knowledge_query_cypher", {"query": CYPHER_NAMES})
                assert sorted(row["name"] for row in found["rows"]) == ["Ada", "Lighthouse"]
            stats = client.result("lambo_stats", {"agent_id": "a"})["structuredContent"]
            disk.fail_read_only()
            for method, params, refused_by in writes(uuids, stats["embedding_contract"]):
                error = client.call(method, params)["error"]
                assert error["code"] == STORAGE_ERROR, (method, error)
                assert error["data"]["kind"] == "storage_failure", (method, error)
                assert error["data"]["file"].startswith(state_file(workspace, refused_by)), error
                assert error["message"].startswith("storage error: cannot "), (method, error)
                health = client.result("health_check")
                assert (health["state"], health["serving"]) == ("degraded", True), health
                if method == "knowledge_dump_wal":  # its directory is not the workspace's:
                    assert "the workspace is unaffected" in error["message"]  # (ADR 0048)
                    assert health["reason"] != error["message"].removeprefix("storage error: ")
                    continue
                assert health["reason"] == error["message"].removeprefix("storage error: ")
            status = client.result("knowledge_status")
            assert status["degraded"] is True
            assert status["reason"] == health["reason"]
            episodes = client.result("knowledge_get_episodes", {"last_n": 50})["episodes"]
            assert {e["name"]: e["uuid"] for e in episodes} == uuids
            entities = client.result("knowledge_list_entities")["nodes"]
            assert sorted(e["name"] for e in entities) == ["Ada", "Lighthouse"]
            hits = client.result("knowledge_search_passages", {"query": "lighthouse"})
            assert {hit["name"] for hit in hits["passages"]} == set(uuids)
            if close == "knowledge_close":
                assert client.result("knowledge_close") == {"status": "closed"}
            else:
                service.proc.send_signal(signal.SIGTERM)
            code = service.proc.wait(DEADLINE)
    finally:
        service.stop()
    log = service.own_log
    assert code == 0, log
    assert "internal error" not in log
    assert "cannot listen" not in log
    assert "text scorer checkpoint failed at close" in log
    assert state_file(workspace, "text-scorer.npz") in log
    assert "vectors could not be released; the other close steps ran" in log
    assert ".faiss" in log
    socket = state_file(workspace, "service.sock")
    assert f"could not remove the socket {socket}: Read-only file system" in log
    # ladybug throws from a destructor when its close cannot write: the handles are left
    # open instead of aborting the process (exit -6 before)
    assert ("Cypher projection in" in log and "left unclosed" in log) == cypher, log
    disk.repair()
    assert_all_acknowledged_writes_present(workspace, uuids)
