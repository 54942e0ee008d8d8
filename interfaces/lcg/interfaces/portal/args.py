"""A portal request's query arguments, each checked by its rule (400 naming the field)."""

from __future__ import annotations

from typing import Final

from starlette.requests import Request

from lcg.interfaces.portal.reads import PortalError

MAX_QUERY_CHARS: Final = 4_096


class Args:
    """A request's query arguments, each checked by its rule (400 naming the field)."""

    def __init__(self, request: Request) -> None:
        self.params = request.query_params

    def text(self, name: str, *, required: bool = False) -> str | None:
        raw = self.params.get(name)
        if raw is None or not raw.strip():
            if required:
                raise PortalError(400, f"{name}: is required", name)
            return None
        if len(raw) > MAX_QUERY_CHARS:
            raise PortalError(400, f"{name}: at most {MAX_QUERY_CHARS} characters", name)
        return raw

    def integer(self, name: str, default: int | None, low: int, high: int) -> int | None:
        raw = self.params.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise PortalError(400, f"{name}: must be an integer; got {raw[:20]!r}", name) from None
        if not low <= value <= high:
            raise PortalError(400, f"{name}: must be between {low} and {high}; got {value}", name)
        return value

    def bounded(self, name: str, default: int, low: int, high: int) -> int:
        value = self.integer(name, default, low, high)
        assert value is not None
        return value
