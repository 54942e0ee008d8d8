"""The pure parts of extraction: resolution, dropped edges, the oversized warning, chunking."""

from __future__ import annotations

from lcg.domain.extraction import (
    ExtractedEdge,
    ExtractedEntity,
    Extraction,
    chunks,
    oversized_warning,
    resolve,
)


def test_k_ing_003_004_011_resolution_names_the_endpoint_that_failed() -> None:
    extraction = Extraction(
        (ExtractedEntity("Bob"),),
        (
            ExtractedEdge("Bob", "billing", "MANAGE", "f1"),
            ExtractedEdge("nobody", "Bob", "KNOW", "f2"),
            ExtractedEdge("ghost", "shade", "HAUNT", "f3"),
            ExtractedEdge("bob", "Acme", "WORK_AT", "f4"),  # Acme is stored: resolved
        ),
    )
    resolved = resolve(extraction, lambda name: "acme-uuid" if name == "Acme" else None)
    assert [d.unresolved_endpoint for d in resolved.dropped] == ["target", "source", "both"]
    assert [d.fact for d in resolved.dropped] == ["f1", "f2", "f3"]  # K-ING-009
    assert [e.fact for _, _, e in resolved.edges] == ["f4"]
    assert resolved.existing == {"acme": "acme-uuid"}
    assert [e.name for e in resolved.new] == ["Bob"]


def test_k_ing_016_017_strictly_longer_in_code_points() -> None:
    assert oversized_warning("x" * 8_000, 8_000) is None
    assert oversized_warning("é" * 8_000, 8_000) is None
    warning = oversized_warning("x" * 8_001, 8_000)
    assert warning is not None
    assert warning["chunk_text_chars"] == 8_001


def test_chunks_keep_paragraphs_whole() -> None:
    text = "a" * 50 + "\n\n" + "b" * 50 + "\n\n" + "c" * 300 + "\n\n\n" + "d" * 10
    assert chunks(text, 120) == ["a" * 50 + "\n\n" + "b" * 50, "c" * 300, "d" * 10]
    assert chunks("  \n\n ", 100) == []
