"""The pure parts of extraction: resolution, dropped edges, the oversized warning, chunking."""

from __future__ import annotations

from lcg.domain.extraction import (
    ExtractedEdge,
    ExtractedEntity,
    Extraction,
    chunks,
    oversized_warning,
    prefix_alias,
    resolve,
    split_text,
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
    assert warning["type"] == "chunk_text_oversized"
    assert warning["recommended_max_chars"] == 8_000


def test_chunks_keep_paragraphs_whole() -> None:
    text = "a" * 50 + "\n\n" + "b" * 50 + "\n\n" + "c" * 100 + "\n\n\n" + "d" * 10
    assert chunks(text, 120) == ["a" * 50 + "\n\n" + "b" * 50, "c" * 100 + "\n\n" + "d" * 10]
    assert chunks("  \n\n ", 100) == []


def test_issue_26_a_paragraph_over_the_limit_is_split_at_sentence_ends() -> None:
    paragraph = "Maria Chen leads Kestrel. Tom Berg maintains it! Does Redis hold the queue? Yes."
    assert split_text(paragraph, 50) == [
        "Maria Chen leads Kestrel. Tom Berg maintains it!",
        "Does Redis hold the queue? Yes.",
    ]
    assert chunks(f"Intro.\n\n{paragraph}", 60) == [
        "Intro.\n\nMaria Chen leads Kestrel. Tom Berg maintains it!",
        "Does Redis hold the queue? Yes.",
    ]
    # a sentence longer than the limit is cut at a space, a word longer than it in the word
    assert split_text("one two three four", 9) == ["one two", "three", "four"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert all(len(p) <= 50 for p in chunks(paragraph * 40, 50))


def test_issue_26_a_prefix_alias_is_the_one_longer_name_it_begins() -> None:
    assert prefix_alias("Kestrel", ["Kestrel Scheduler", "Redis"]) == "Kestrel Scheduler"
    assert prefix_alias("kestrel", ["Kestrel Scheduler"]) == "Kestrel Scheduler"
    assert prefix_alias("Ada", ["Ada Byrne", "Ada Lovelace"]) is None
    assert prefix_alias("Kes", ["Kestrel Scheduler"]) is None  # whole words only
    assert prefix_alias("Kestrel Scheduler", ["Kestrel Scheduler"]) is None


def test_the_first_mention_of_a_name_wins_and_the_store_is_asked_once_per_name() -> None:
    asked: list[str] = []

    def stored(name: str) -> str | None:
        asked.append(name)
        return "cache-uuid" if name == "Cache" else None

    extraction = Extraction(
        (
            ExtractedEntity("Redis", summary="first"),
            ExtractedEntity("redis", summary="second"),
            ExtractedEntity("Cache"),
            ExtractedEntity("cache"),
        ),
        (),
    )
    resolved = resolve(extraction, stored)
    assert [(e.name, e.summary) for e in resolved.new] == [("Redis", "first")]
    assert resolved.existing == {"cache": "cache-uuid"}
    assert asked == ["Redis", "Cache"]


def test_the_last_chunk_keeps_its_paragraphs_apart_too() -> None:
    assert chunks("one\n\ntwo", 100) == ["one\n\ntwo"]
    assert chunks("a" * 50 + "\n\nb\n\nc", 55) == ["a" * 50 + "\n\nb", "c"]
    assert chunks("a" * 50 + "\n\nb\n\nc", 56) == ["a" * 50 + "\n\nb\n\nc"]
