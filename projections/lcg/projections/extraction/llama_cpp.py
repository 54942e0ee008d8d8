"""An extractor running a GGUF model in this process through llama-cpp-python (issue 14, ADR 0043).

The `lcg[llama]` extra. The model is the GGUF file the user names (`LCG_EXTRACT_MODEL` or
`[extraction] model_path`); it answers the shared prompt (lcg.projections.extraction.llm)
under a llama.cpp grammar built from the extraction's JSON schema, so its tokens can only
spell that JSON, at temperature 0 with a fixed seed. The answer is still checked field by
field (`parse_extraction`): a cut answer or one over the limits refuses the chunk whole.

The model loads on the first chunk, once per process for one file and set of options
(`loaded_extractor`), and one chunk at a time runs through it (a llama.cpp context is not
safe to share between threads).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from lcg.domain.errors import ExtractorFailed
from lcg.domain.extraction import Extraction
from lcg.projections.extraction import llm

NAME: Final = "llama-cpp"
PACKAGE: Final = "llama_cpp"
SEED: Final = 0
GGUF_MAGIC: Final = b"GGUF"


# What the grammar lets one answer hold. A small model under a grammar tends to run on inside
# a string or an array until max_tokens; these bounds make it close them (a chunk of 2,000
# characters names far fewer things). Within the domain's limits, so a grammatical answer
# always parses.
GRAMMAR_ITEMS: Final = {"entities": 40, "facts": 60}
GRAMMAR_CHARS: Final = {
    "name": 100,
    "type": 40,
    "summary": 300,
    "source": 100,
    "target": 100,
    "predicate": 60,
    "fact": 400,
    "relation_type": 60,
}
# valid_at is spelled by the grammar as an RFC 3339 time or null (a small model otherwise
# writes any text there, and parse_extraction refuses the whole chunk for it)
VALID_AT: Final = {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}
REPEAT_PENALTY: Final = 1.1  # llama.cpp's own default; 1.0 lets a small model loop


def grammar_schema() -> dict[str, Any]:
    """The extraction schema with the grammar's bounds on items and string lengths, and
    valid_at as a date-time."""
    schema: dict[str, Any] = json.loads(json.dumps(llm.SCHEMA))
    for key, most in GRAMMAR_ITEMS.items():
        array = schema["properties"][key]
        array["maxItems"] = most
        for field, value in array["items"]["properties"].items():
            if field in GRAMMAR_CHARS:
                value["maxLength"] = GRAMMAR_CHARS[field]
    schema["properties"]["facts"]["items"]["properties"]["valid_at"] = dict(VALID_AT)
    return schema


# One worked example before the chunk: measured on SmolLM2-135M, without it the model ran on
# to max_tokens on every chunk tried; with it, it closed the JSON (ADR 0043).
EXAMPLE_TEXT: Final = "Ada Byrne founded Lumen Tools in Dublin."
EXAMPLE_ANSWER: Final = {
    "entities": [
        {"name": "Ada Byrne", "type": "Person", "summary": "Founded Lumen Tools."},
        {"name": "Lumen Tools", "type": "Organization", "summary": "A company in Dublin."},
        {"name": "Dublin", "type": "Location", "summary": "Where Lumen Tools was founded."},
    ],
    "facts": [
        {
            "source": "Ada Byrne",
            "target": "Lumen Tools",
            "predicate": "FOUNDED",
            "fact": "Ada Byrne founded Lumen Tools.",
            "relation_type": None,
            "valid_at": None,
        },
        {
            "source": "Lumen Tools",
            "target": "Dublin",
            "predicate": "LOCATED_IN",
            "fact": "Lumen Tools is in Dublin.",
            "relation_type": None,
            "valid_at": None,
        },
    ],
}


def messages(text: str, reference_time: datetime) -> list[dict[str, str]]:
    """The chat the model answers: the shared instructions, the example, the chunk."""
    return [
        {"role": "system", "content": llm.SYSTEM_PROMPT},
        {"role": "user", "content": user_prompt(EXAMPLE_TEXT, reference_time)},
        {"role": "assistant", "content": json.dumps(EXAMPLE_ANSWER)},
        {"role": "user", "content": user_prompt(text, reference_time)},
    ]


def user_prompt(text: str, reference_time: datetime) -> str:
    """The shared prompt without the schema's text: the grammar already holds the answer to
    the schema, and a small model copies schema words ("object", "string") into its answer."""
    return (
        f"Reference time (when the text was written): {reference_time.isoformat()}\n\nText:\n{text}"
    )


class LlamaCppExtractor:
    """A GGUF model behind the Extractor port. `model` is the file's name."""

    name = NAME

    def __init__(
        self,
        model_path: Path,
        threads: int = 1,
        context_tokens: int = 4096,
        max_tokens: int = 1024,
    ) -> None:
        self.model_path = model_path
        self.model = model_path.name
        self.threads = threads
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self._llama: Any = None
        self._grammar: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        """Called with the lock held."""
        llama_cpp: Any = importlib.import_module(PACKAGE)
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(self.model_path),
                n_ctx=self.context_tokens,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=SEED,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as error:
            raise ExtractorFailed(
                NAME,
                f"[extraction] model_path {self.model_path} could not be loaded as a GGUF "
                f"model: {error}",
            ) from None
        self._grammar = llama_cpp.LlamaGrammar.from_json_schema(
            json.dumps(grammar_schema()), verbose=False
        )

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        with self._lock:
            if self._llama is None:
                self._load()
            try:
                answer = self._llama.create_chat_completion(
                    messages=messages(text, reference_time),
                    grammar=self._grammar,
                    temperature=0.0,
                    repeat_penalty=REPEAT_PENALTY,
                    seed=SEED,
                    max_tokens=self.max_tokens,
                )
            except ValueError as error:  # the prompt does not fit the context
                raise ExtractorFailed(NAME, f"{error} ([extraction] context_tokens)") from None
        choice = answer["choices"][0]
        if choice.get("finish_reason") == "length":
            raise ExtractorFailed(
                NAME,
                f"its answer was cut at [extraction] max_tokens ({self.max_tokens}) before "
                "the JSON closed",
            )
        content = choice["message"].get("content")
        if not isinstance(content, str):
            raise ExtractorFailed(NAME, "its answer has no text content")
        return llm.parse_extraction(content, NAME)


@functools.cache
def loaded_extractor(
    model_path: Path, threads: int, context_tokens: int, max_tokens: int
) -> LlamaCppExtractor:
    """One extractor per model file and options per process: every workspace of the process
    shares its loaded model (a GGUF load takes seconds and the model's size in memory)."""
    return LlamaCppExtractor(model_path, threads, context_tokens, max_tokens)


def installed() -> bool:
    """Whether llama-cpp-python (the `lcg[llama]` extra) can be imported."""
    return importlib.util.find_spec(PACKAGE) is not None


def model_file_problem(path: Path) -> str | None:
    """What makes `path` unusable as a GGUF model file, or None. Reads 4 bytes: the file is
    loaded only by the first chunk."""
    if not path.exists():
        return f"{path} does not exist"
    if not path.is_file():
        return f"{path} is not a file"
    try:
        with path.open("rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as error:
        return f"{path} cannot be read: {error.strerror or error}"
    if magic != GGUF_MAGIC:
        return f"{path} is not a GGUF file (it does not start with {GGUF_MAGIC.decode()})"
    return None
