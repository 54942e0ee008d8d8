"""An extractor behind an OpenAI-compatible chat-completions endpoint (issue 14, ADR 0033):
OpenAI itself, or a local server speaking the same API (llama.cpp's llama-server, vLLM,
Ollama's /v1). The answer is constrained by the extraction's JSON schema
(`response_format: json_schema`) and checked again on arrival (lcg.projections.extraction.llm).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

import httpx

from lcg.domain.errors import ExtractorFailed
from lcg.domain.extraction import Extraction
from lcg.projections.extraction import llm

NAME: Final = "openai-compatible"


class OpenAiCompatibleExtractor:
    """POSTs `{base_url}/chat/completions` with the extraction prompt; temperature 0."""

    name = NAME

    def __init__(
        self, base_url: str, model: str, api_key: str = "", timeout: float = 120.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout

    def request(self, text: str, reference_time: datetime) -> dict[str, Any]:
        """The request body (what the endpoint is sent)."""
        return {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": llm.SYSTEM_PROMPT},
                {"role": "user", "content": llm.user_prompt(text, reference_time)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "extraction", "strict": True, "schema": llm.SCHEMA},
            },
        }

    def extract(self, text: str, reference_time: datetime) -> Extraction:
        body = self.request(text, reference_time)
        content = chat_completion(self.base_url, body, self._headers, self._timeout)
        return llm.parse_extraction(content, NAME)


def chat_completion(
    base_url: str, body: dict[str, Any], headers: dict[str, str], timeout: float
) -> str:
    """POST one chat completion and return its message's text; every failure (unreachable,
    not HTTP 200, not a completion, no text) is an ExtractorFailed naming the URL. The one
    request of the extractor and of the typing classifier over the same endpoint."""
    url = f"{base_url}/chat/completions"
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as error:
        raise ExtractorFailed(NAME, f"{url} could not be reached: {error}") from None
    if response.status_code != httpx.codes.OK:
        raise ExtractorFailed(
            NAME, f"{url} answered HTTP {response.status_code}: {response.text[:300]}"
        )
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ExtractorFailed(
            NAME, f"{url} answered no chat completion: {response.text[:300]}"
        ) from None
    if not isinstance(content, str):
        raise ExtractorFailed(NAME, f"{url} answered a message with no text content")
    return content
