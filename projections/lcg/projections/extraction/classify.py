"""The Classifier port and its OpenAI-compatible adapter: one text, a menu of types, a verdict.

knowledge_reprocess_relation_types sends an edge's fact and the ontology's relation types
(name + description); knowledge_reprocess_entity_types an entity's name and summary and the
entity types, or no menu at all for open-ended classification (ADR 0042). The verdict is a
type name, or None when the model abstains. The verdicts are recorded in the events the tools
append, so a replay never calls a classifier.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, Protocol

from lcg.domain.errors import ExtractorFailed
from lcg.domain.ontology import TYPE_NAME_PATTERN, UNCLASSIFIED
from lcg.projections.extraction.openai_compat import chat_completion

Kind = Literal["relation", "entity"]
Menu = Sequence[tuple[str, str]]  # (name, description)
Report = Callable[[int, int], None]  # (done, total)
NAME: Final = "openai-compatible"
_TYPE_NAME = re.compile(TYPE_NAME_PATTERN)
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)

SYSTEM_PROMPT: Final = (
    'You classify knowledge-graph items into types. Answer a JSON object {"type": ...}. '
    'When a menu of types is given, answer exactly one menu name, or "UNCLASSIFIED" when '
    "none fits: never guess the nearest. With no menu, answer a short CamelCase type name, "
    'or "UNCLASSIFIED" when you cannot tell.'
)


class Classifier(Protocol):
    """Picks one type from `menu` for `text`, or abstains (None)."""

    name: str
    model: str

    def classify(self, kind: Kind, text: str, menu: Menu) -> str | None: ...

    def classify_all(
        self, kind: Kind, texts: Sequence[str], menu: Menu, report: Report
    ) -> list[str | None]:
        """Every text's verdict, in order; `report(done, total)` as verdicts arrive."""
        ...


class OneAtATime:
    """classify_all for a classifier that asks about each text on its own."""

    def classify(self, kind: Kind, text: str, menu: Menu) -> str | None:
        raise NotImplementedError

    def classify_all(
        self, kind: Kind, texts: Sequence[str], menu: Menu, report: Report
    ) -> list[str | None]:
        verdicts = []
        for index, text in enumerate(texts, 1):
            verdicts.append(self.classify(kind, text, menu))
            report(index, len(texts))
        return verdicts


def unreported(done: int, total: int) -> None:
    """A Report that tells no one."""


def json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def user_prompt(kind: Kind, text: str, menu: Menu) -> str:
    what = "relationship fact" if kind == "relation" else "entity"
    if not menu:
        return f"Classify this {what} with one type name.\n\n{what}: {text}"
    lines = "\n".join(f"- {name}: {description}" for name, description in menu)
    return f"Types:\n{lines}\n\nPick one type for this {what}.\n\n{what}: {text}"


def schema(menu: Menu) -> dict[str, Any]:
    """The answer's JSON schema: the menu's names (and UNCLASSIFIED) when there is a menu."""
    names = [name for name, _ in menu]
    kind: dict[str, Any] = {"type": "string"}
    if names:
        kind["enum"] = [*names, UNCLASSIFIED]
    return {
        "type": "object",
        "properties": {"type": kind},
        "required": ["type"],
        "additionalProperties": False,
    }


def parse_verdict(content: str, menu: Menu, classifier: str = NAME) -> str | None:
    """The answer's type, or None for an abstention: UNCLASSIFIED, a name not on the menu (an
    answer off the menu is never mapped to a near name) or, without a menu, not a type name."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError:
        raise ExtractorFailed(classifier, f"answered no JSON verdict: {content[:200]!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("type"), str | None):
        raise ExtractorFailed(classifier, f'answered no {{"type": ...}} object: {content[:200]!r}')
    verdict = data.get("type")
    if verdict is None or verdict.strip() in ("", UNCLASSIFIED):
        return None
    verdict = verdict.strip()
    if menu:
        return verdict if verdict in {name for name, _ in menu} else None
    return verdict if _TYPE_NAME.match(verdict) and len(verdict) <= 128 else None


class OpenAiCompatibleClassifier(OneAtATime):
    """POSTs `{base_url}/chat/completions`, temperature 0, the verdict's schema attached."""

    name = NAME

    def __init__(
        self, base_url: str, model: str, api_key: str = "", timeout: float = 120.0
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout

    def request(self, kind: Kind, text: str, menu: Menu) -> dict[str, Any]:
        return {
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_prompt(kind, text, menu)},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": schema(menu)},
            },
        }

    def classify(self, kind: Kind, text: str, menu: Menu) -> str | None:
        body = self.request(kind, text, menu)
        content = chat_completion(self.base_url, body, self._headers, self._timeout)
        return parse_verdict(content, menu)
