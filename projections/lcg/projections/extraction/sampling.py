"""The MCP client's own model as extractor and classifier, through `sampling/createMessage`
(issue 14, ADR 0044).

`[extraction] extractor = "sampling"`: knowledge_process_chunk (and the reprocess tools)
ask the model of the MCP client that made the call, so an agent host with a model needs no
key and no endpoint. The prompts and the answer's checks are the other LLM adapters' (`llm`,
`classify`); what differs is the transport, which this module does not know: the MCP server
binds a `Sampler` for the duration of each call (`CURRENT_SAMPLER`), and a call that came
some other way (the socket, the CLI) has none and is refused, naming the setting. No `mcp`
import here: the MCP server is the one place that speaks the protocol.

A sampler either answers a request at once (the initialize-handshake protocols: a request to
the client in the middle of the call) or raises `InputNeeded` with every request it could not
answer (the 2026-07-28 protocol: the server returns `input_required` and the client retries
the call carrying the answers). A request's `key` is a digest of what it asks, so a retried
call finds its answers whatever order it asks in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from lcg.domain.errors import DomainError
from lcg.domain.extraction import Extraction
from lcg.projections.extraction import classify, llm
from lcg.projections.extraction.classify import Kind, Menu, Report

NAME: Final = "mcp-sampling"
CLIENT_MODEL: Final = "client"  # what knowledge_status reports: the model is the client's
VERDICT_TOKENS: Final = 64  # a verdict is {"type": "..."}: a short answer


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """One `sampling/createMessage`: a system prompt, one user message, a token bound;
    temperature 0."""

    system_prompt: str
    user_prompt: str
    max_tokens: int

    @property
    def key(self) -> str:
        digest = hashlib.sha256(
            f"{self.max_tokens}\0{self.system_prompt}\0{self.user_prompt}".encode()
        )
        return f"lcg-{digest.hexdigest()[:24]}"


@dataclass(frozen=True, slots=True)
class SampledAnswer:
    text: str
    model: str  # the model the client says answered


class InputNeeded(DomainError):
    """Raised by a sampler that cannot ask now: the requests the call still needs answered
    (each once, in the order asked), and the argument defaults this round chose (`chosen`),
    which the retry must reuse to ask the same questions. The call has written nothing."""

    def __init__(
        self, requests: Sequence[SamplingRequest], chosen: dict[str, str] | None = None
    ) -> None:
        super().__init__(
            f"extraction.extractor: {len(requests)} sampling request(s) await the MCP"
            " client's answer; nothing was written",
            field="extraction.extractor",
            rule="sampling needs the client's answers (input_required)",
        )
        self.requests = tuple({r.key: r for r in requests}.values())
        self.chosen = dict(chosen or {})


Answered = Callable[[int], None]
Sampler = Callable[[Sequence[SamplingRequest], Answered], list[SampledAnswer]]
"""Answers every request, in order, telling `Answered` how many are answered so far, or
raises InputNeeded / DomainError."""

CURRENT_SAMPLER: ContextVar[Sampler | None] = ContextVar("lcg_sampler", default=None)


def _sampler() -> Sampler:
    sampler = CURRENT_SAMPLER.get()
    if sampler is None:
        raise DomainError(
            'extraction.extractor: "sampling" asks the model of the MCP client that made the'
            " call, and this call came with no MCP client (over the socket service, the CLI or"
            " an MCP server attached to a service); serve the workspace with `lcg serve"
            ' --mcp-stdio` on its own, or set [extraction] extractor to "openai" or "llama";'
            " nothing was written",
            field="extraction.extractor",
            rule="sampling needs a call from an MCP client (lcg serve --mcp-stdio, standalone)",
        )
    return sampler


class SamplingExtractor:
    """The extraction prompt and schema of `llm`, answered by the client's model."""

    name = NAME
    model = CLIENT_MODEL

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens

    def request(self, text: str, reference_time: datetime) -> SamplingRequest:
        return SamplingRequest(
            llm.SYSTEM_PROMPT, llm.user_prompt(text, reference_time), self.max_tokens
        )

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        sampler = _sampler()
        try:
            (answer,) = sampler([self.request(text, reference_time)], lambda done: None)
        except InputNeeded as needed:  # the retry must ask about the same reference time
            raise InputNeeded(
                needed.requests, {"reference_time": reference_time.isoformat()}
            ) from None
        extraction = llm.parse_extraction(answer.text, NAME)
        return Extraction(extraction.entities, extraction.edges, model=answer.model)


class SamplingClassifier:
    """The verdict prompt of `classify`, answered by the client's model. The schema goes in
    the prompt (sampling has no response_format); the answer is checked as any other."""

    name = NAME
    model = CLIENT_MODEL

    def request(self, kind: Kind, text: str, menu: Menu) -> SamplingRequest:
        schema = classify.json_text(classify.schema(menu))
        prompt = f"{classify.user_prompt(kind, text, menu)}\n\nJSON schema of the answer: {schema}"
        return SamplingRequest(classify.SYSTEM_PROMPT, prompt, VERDICT_TOKENS)

    def classify(self, kind: Kind, text: str, menu: Menu) -> str | None:
        return self.classify_all(kind, [text], menu, classify.unreported)[0]

    def classify_all(
        self,
        kind: Kind,
        texts: Sequence[str],
        menu: Menu,
        report: Report,
    ) -> list[str | None]:
        """All verdicts in one exchange with the sampler, so that a client on the
        2026-07-28 protocol answers every item in one input_required round."""
        requests = [self.request(kind, text, menu) for text in texts]
        answers = _sampler()(requests, lambda done: report(done, len(texts)))
        return [classify.parse_verdict(answer.text, menu, NAME) for answer in answers]
