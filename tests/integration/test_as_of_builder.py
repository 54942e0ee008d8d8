"""The one "as of seq" builder (lcg.projections.as_of, ADR 0089), used by export and by the
portal's recall: the group's events 1..N from any LogStore, replayed in a directory of their
own. On PostgreSQL: `lcg export` of a workspace whose `[store] url` is the real server, at
its head and as of an earlier seq, with the live log untouched. The portal's snapshot is a
workspace that opens at N without replaying."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from lcg.domain.ids import GroupId
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.portal.as_of import Snapshots
from lcg.projections.as_of import AsOf, AsOfSeqTooHigh
from lcg.projections.embedding.port import Embedder
from lcg.projections.wal.opening import open_url
from tests.conftest import make_call, make_workspace
from tests.helpers.console_script import lcg_in_process as lcg
from tests.helpers.console_script import lcg_json as run_json

lcg_json = functools.partial(run_json, run=lcg)


def names_in(path: Path) -> list[str]:
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()[1:]]
    return [x["name"] for x in lines if x["kind"] == "entity"]


@pytest.mark.postgres
def test_issue_32_export_reads_a_workspace_whose_store_url_is_postgresql(
    tmp_path: Path, pg_url: str
) -> None:
    (tmp_path / "lcg.toml").write_text(f'[store]\nurl = "{pg_url}"\n', encoding="utf-8")
    for name in ("Ada", "Charles", "Mary"):
        done = lcg(tmp_path, "assert-entity", name, "-g", "g")
        assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".lcg" / "wal.sqlite").exists()  # the log is the server's
    now = lcg_json(
        tmp_path, "export", "-f", "lcg-jsonl", "-g", "g", "-o", str(tmp_path / "a"), "--json"
    )
    assert now["as_of_seq"] == 3
    assert names_in(tmp_path / "a") == ["Ada", "Charles", "Mary"]
    then = lcg_json(
        tmp_path, "export", "-f", "lcg-jsonl", "-g", "g", "--as-of-seq", "1",
        "-o", str(tmp_path / "b"), "--json",
    )  # fmt: skip
    assert then["as_of_seq"] == 1
    assert names_in(tmp_path / "b") == ["Ada"]
    log = open_url(pg_url)
    try:
        assert log.head(GroupId("g")) == 3  # read, never written
        with AsOf(log, "g", 2, copy_log=True) as built:
            assert built.files.wal_path.exists()  # a file of its own, never the server
            rows = built.conn.execute("SELECT name FROM entities ORDER BY seq").fetchall()
            assert [r[0] for r in rows] == ["Ada", "Charles"]
        assert not built.where.exists()
        with pytest.raises(AsOfSeqTooHigh, match="as_of_seq 4 is past the group's last seq 3"):
            AsOf(log, "g", 4)
    finally:
        log.close()


def test_issue_32_the_portals_snapshot_opens_at_its_seq_without_replaying(
    tmp_path: Path, embedder: Embedder
) -> None:
    settings = Settings(workspace=tmp_path / "live", embedder="hashing")
    with make_workspace(settings, embedder) as live:
        call = make_call(App(live))
        for name in ("first", "second", "third"):
            call(
                "knowledge_add_episode", name=name, episode_body=f"{name} body", group_id="liminis"
            )
        snapshots = Snapshots(live)
        try:
            old = snapshots.app("liminis", 2).workspace
            assert old.caught_up == 0  # the builder replayed; the open found it done
            assert old.log.head(GroupId("liminis")) == 2
            rows = old.runner.conn.execute("SELECT name FROM episodes ORDER BY seq").fetchall()
            assert [r[0] for r in rows] == ["first", "second"]
        finally:
            snapshots.close()
