"""lcg.client on two nodes of one PostgreSQL log (issue 28 item 3, ADR 0086): a Memory's
`written` is what its writes made, `{group: seq}`, and another Memory reading on the other
node with `min_seq=written` sees those writes, the applied outcome of a lambo write too."""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.client import Memory, ToolError
from tests.conftest import EMBEDDER

pytestmark = pytest.mark.postgres


def test_a_memory_reads_another_nodes_writes_after_their_written_seqs(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "LCG_STORE_URL": pg_url,
        "LCG_STORE_LEASE_TTL_MS": "900",
        "LCG_STORE_MIN_SEQ_WAIT_MS": "2000",
        EMBEDDER: "hashing",
    }.items():
        monkeypatch.setenv(name, value)
    with (
        Memory.open(tmp_path / "a", session="team") as a,
        Memory.open(tmp_path / "b", session="team") as b,
    ):
        assert (a.via, b.via) == ("process", "process")  # two nodes, each its own workspace
        a.add("note", "The deploy key rotates every ninety days.", group="ops")
        assert a.written == {"ops": 1}
        assert b.written == {}
        found = b.search("deploy key rotation", groups=["ops"], min_seq=a.written, min_score=0)
        assert [p.content for p in found] == ["The deploy key rotates every ninety days."]

        derived = a.derive("The staging database is Postgres 16")
        assert derived["outcome"]["state"] == "applied"
        # the intent and its applied outcome: `written` covers the outcome's seq
        assert a.written["team"] >= 2
        recalled = b.recall("which staging database?", min_seq=a.written)
        assert [hit["content"] for hit in recalled.hits][:1] == [
            "The staging database is Postgres 16"
        ]
        with pytest.raises(ToolError) as beyond:
            b.search("deploy", groups=["ops"], min_seq={"ops": a.written["ops"] + 50})
        assert (beyond.value.kind, beyond.value.field) == ("conflict", "min_seq")
