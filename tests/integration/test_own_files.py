"""Issue 24, item 3, at each opener: the writer lease, the WAL and the embedding cache refuse a
link or another user's file themselves (ADR 0048), not only through the check of `.lcg/` that
opens a workspace: a link planted after that check is not followed either."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lcg.domain.events import EventCodec
from lcg.interfaces.config import Settings
from lcg.projections.embedding.cache import EmbeddingCache
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.own_files import ForeignFile, open_own
from lcg.projections.wal.lease import WriterLease
from lcg.projections.wal.store import EventLog
from tests.conftest import SteppingClock, make_workspace

NOBODY = 65534
PRECIOUS = "root's file\n"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root here")


@pytest.fixture
def precious(tmp_path: Path) -> Path:
    path = tmp_path / "precious.txt"
    path.write_text(PRECIOUS)
    return path


def test_the_writer_lease_never_truncates_through_a_link(tmp_path: Path, precious: Path) -> None:
    lock = tmp_path / "writer.lock"
    lock.symlink_to(precious)
    lease = WriterLease(lock, "pytest", SteppingClock()())
    with pytest.raises(ForeignFile) as refused:
        lease.acquire()
    assert str(lock) in str(refused.value)
    assert f"is a symbolic link (to {precious})" in str(refused.value)
    assert precious.read_text() == PRECIOUS


@needs_root
def test_the_writer_lease_of_another_user_is_neither_taken_nor_emptied(tmp_path: Path) -> None:
    lock = tmp_path / "writer.lock"
    lock.write_text('{"pid": 1}')
    os.chown(lock, NOBODY, NOBODY)
    with pytest.raises(ForeignFile, match=f"belongs to uid {NOBODY}"):
        WriterLease(lock, "pytest", SteppingClock()()).acquire()
    assert lock.read_text() == '{"pid": 1}'


@pytest.mark.parametrize("suffix", ["", "-wal", "-shm"])
def test_the_wal_and_its_sidecars_are_never_opened_through_a_link(
    tmp_path: Path, suffix: str
) -> None:
    wal, chosen = tmp_path / "wal.sqlite", tmp_path / "chosen"
    (tmp_path / f"wal.sqlite{suffix}").symlink_to(chosen)
    with pytest.raises(ForeignFile, match="is a symbolic link"):
        EventLog(wal, EventCodec())
    assert not chosen.exists()


def test_the_embedding_cache_is_never_opened_through_a_link(tmp_path: Path) -> None:
    path, chosen = tmp_path / "embeddings.sqlite", tmp_path / "chosen.sqlite"
    path.symlink_to(chosen)
    with pytest.raises(ForeignFile, match=r"embeddings\.sqlite"):
        EmbeddingCache(path, HashingEmbedder())
    assert not chosen.exists()


def test_a_link_inside_the_vectors_directory_refuses_the_open(tmp_path: Path) -> None:
    settings = Settings(workspace=tmp_path / "ws")
    with make_workspace(settings, HashingEmbedder()):
        pass
    planted = settings.vectors_dir / "planted"
    planted.symlink_to(tmp_path)
    with pytest.raises(ForeignFile) as refused:
        make_workspace(settings, HashingEmbedder()).open()
    assert str(planted) in str(refused.value)


@needs_root
def test_a_file_opened_to_be_rewritten_is_checked_before_it_is_emptied(tmp_path: Path) -> None:
    """An index file's temporary, planted by another user after the open's check: refused
    with its contents intact (O_TRUNC waits for the owner check)."""
    planted = tmp_path / "index.tmp"
    planted.write_text(PRECIOUS)
    os.chown(planted, NOBODY, NOBODY)
    with pytest.raises(ForeignFile, match=f"belongs to uid {NOBODY}"):
        open_own(planted, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "write")
    assert planted.read_text() == PRECIOUS
    mine = tmp_path / "mine.tmp"
    mine.write_text("old contents")
    os.close(open_own(mine, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "write"))
    assert mine.read_text() == ""
