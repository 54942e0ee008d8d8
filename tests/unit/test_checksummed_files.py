"""Checkpoint files carry a sha256 and a generation; corruption is recognised by its errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lcg.projections import checksummed
from lcg.projections.damage import forget_damage, is_corruption, record_damage, recorded_damage
from lcg.projections.runner import ProjectionError


def test_a_checksummed_file_reads_back_its_generation_and_payload(tmp_path: Path) -> None:
    path = tmp_path / "index.faiss"
    checksummed.write(path, "generation-1", b"payload bytes")
    assert checksummed.read(path) == checksummed.Sealed("generation-1", b"payload bytes")
    assert not (tmp_path / "index.faiss.tmp").exists()


@pytest.mark.parametrize("offset", [8, 20, 41, 44, 60])
def test_any_changed_byte_after_the_magic_is_a_checksum_mismatch(
    tmp_path: Path, offset: int
) -> None:
    path = tmp_path / "index.faiss"
    checksummed.write(path, "generation-1", b"payload bytes " * 4)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(checksummed.ChecksumMismatch, match="sha256 mismatch"):
        checksummed.read(path)


def test_a_file_without_the_header_is_told_apart_from_a_damaged_one(tmp_path: Path) -> None:
    path = tmp_path / "old.faiss"
    path.write_bytes(b"IxM2 a file written before checksums")
    with pytest.raises(checksummed.NotChecksummed):
        checksummed.read(path)


def test_corruption_errors_are_recognised_through_their_causes() -> None:
    malformed = sqlite3.DatabaseError("database disk image is malformed")
    decode = sqlite3.OperationalError("Could not decode to UTF-8 column 'summary' with text 'x'")
    wrapped = ProjectionError("projection 'graph' failed")
    wrapped.__cause__ = malformed
    assert is_corruption(malformed)
    assert is_corruption(decode)
    assert is_corruption(wrapped)
    assert not is_corruption(sqlite3.OperationalError("database is locked"))
    assert not is_corruption(sqlite3.OperationalError("database or disk is full"))


def test_damage_recorded_by_a_read_is_remembered_until_forgotten(tmp_path: Path) -> None:
    record_damage(tmp_path, tmp_path / "graph.sqlite", "Could not decode to UTF-8")
    assert recorded_damage(tmp_path) == {"graph.sqlite": "Could not decode to UTF-8"}
    forget_damage(tmp_path, "graph.sqlite")
    assert recorded_damage(tmp_path) == {}
    assert list(tmp_path.iterdir()) == []
