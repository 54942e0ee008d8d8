"""Issue 10: CLI commands beside a running `lcg serve` go through its socket, and say so.

They used to exit 4 ("held by another writer") and name an MCP command. Now reads and
writes reach the one writer through `.lcg/service.sock`, with the same results, the same
exit codes for refusals, and replay progress streamed from the service.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.console_script import lcg, said
from tests.helpers.service_process import ServiceProcess

pytestmark = pytest.mark.slow


def test_issue_10_reads_writes_and_refusals_go_through_the_running_service(
    tmp_path: Path,
) -> None:
    service = ServiceProcess(tmp_path)
    try:
        assert service.wait_ready()["state"] == "healthy"
        added = lcg(tmp_path, "add-episode", "note", "the launch slipped a week", "-g", "g")
        assert added.returncode == 0, added.stderr
        assert "goes through" in said(added.stderr)
        assert str(tmp_path / ".lcg" / "service.sock") in said(added.stderr)

        listed = lcg(tmp_path, "call", "knowledge_get_episodes", '{"group_id": "g"}')
        assert listed.returncode == 0, listed.stderr
        assert [e["name"] for e in json.loads(listed.stdout)["episodes"]] == ["note"]

        found = lcg(
            tmp_path,
            "call",
            "knowledge_search_passages",
            '{"query": "why was the launch late", "min_score": 0}',
        )
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["passages"][0]["name"] == "note"

        bad = lcg(tmp_path, "call", "knowledge_assert_entity", '{"group_id": "g"}')
        assert bad.returncode == 2
        assert "name: is required" in said(bad.stderr)
        refused = lcg(tmp_path, "replay", "--group", "g")
        assert refused.returncode == 3
        assert "force_clear" in said(refused.stderr)
        replayed = lcg(tmp_path, "replay", "--group", "g", "--force-clear", "--json")
        assert replayed.returncode == 0, replayed.stderr
        assert json.loads(replayed.stdout)["mutations_replayed"] == 1

        with service.connect() as client:  # the service saw every write
            episodes = client.result("knowledge_get_episodes", {"group_id": "g"})
            assert episodes["count"] == 1
    finally:
        assert service.stop() == 0
