"""An embedding-cache row's checksum (ADR 0020): the stored format, however it is computed."""

from __future__ import annotations

import hashlib

from lcg.projections.embedding.cache import checksummer, row_checksum


def written_format(contract: str, digest: bytes, vector: bytes) -> bytes:
    """blake2b-128 over each part (contract, text hash, vector bytes) after its 4-byte length."""
    hasher = hashlib.blake2b(digest_size=16)
    for part in (contract.encode("utf-8"), digest, vector):
        hasher.update(len(part).to_bytes(4, "little") + part)
    return hasher.digest()


def test_a_contracts_checksummer_gives_every_row_the_checksum_rows_were_written_with() -> None:
    check = checksummer("onnx:all-MiniLM-L6-v2:384")
    rows = [(hashlib.sha256(bytes([n])).digest(), bytes(range(n, n + 64))) for n in range(5)]
    for digest, vector in rows:
        expected = written_format("onnx:all-MiniLM-L6-v2:384", digest, vector)
        assert check(digest, vector) == expected
        assert row_checksum("onnx:all-MiniLM-L6-v2:384", digest, vector) == expected


def test_another_contract_gives_another_checksum() -> None:
    digest, vector = hashlib.sha256(b"t").digest(), b"\x00" * 16
    assert checksummer("a")(digest, vector) != checksummer("b")(digest, vector)
