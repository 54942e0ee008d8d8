"""Domain errors: each names the field it concerns and the rule that was broken."""

from __future__ import annotations


class DomainError(Exception):
    """A request the domain refuses; nothing was written."""

    def __init__(self, message: str, *, field: str | None = None, rule: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field
        self.rule = rule


class InvalidParams(DomainError):
    """A parameter breaks a rule (type, bound, format, required)."""

    def __init__(self, field: str, rule: str, detail: str | None = None):
        text = f"{field}: {rule}" if detail is None else f"{field}: {rule} ({detail})"
        super().__init__(text, field=field, rule=rule)


class NotFound(DomainError):
    """A referenced object does not exist where the request says it does."""


class Conflict(DomainError):
    """The request contradicts the current state (a duplicate, a pinned group, ...)."""


class ExtractorFailed(DomainError):
    """The configured extractor (a model behind an endpoint, the client's own model) gave no
    usable extraction; the chunk was not written."""

    def __init__(self, extractor: str, detail: str):
        super().__init__(
            f"extractor: {extractor} failed: {detail}; nothing was written",
            field="extractor",
            rule="must answer an extraction",
        )
