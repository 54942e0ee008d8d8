"""Who may call the HTTP transport, and how often (ADR 0064): credentials, the bind rule, the
bearer check, the token buckets and what a request body asks for.

Nothing here imports the HTTP stack or the MCP SDK, so it is checked before either loads and
tested alone. A credential is a bearer token and the tool scopes it reaches: `--auth-token`,
then `LCG_AUTH_TOKEN`, then `LAMBO_AUTH_TOKEN` give one credential (named `token`) reaching
every scope the serve advertises; each `[[serve.credential]]` of `lcg.toml` gives one more.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import parse_qsl

import orjson

from lcg.domain.errors import InvalidParams
from lcg.interfaces.operations import OPERATIONS, Scope
from lcg.interfaces.settings_file import AUTH_TOKEN_VARIABLES, CredentialEntry

MIN_TOKEN_CHARS: Final = 16
ENV_CREDENTIAL: Final = "token"  # the name of the --auth-token / environment credential
# Query parameters that would carry a credential; the token belongs in the Authorization
# header only (a URL is logged by proxies and kept in histories).
TOKEN_PARAMETERS: Final = frozenset(
    {"access_token", "token", "auth_token", "auth", "authorization", "bearer", "api_key", "key"}
)
WRITE_TOOLS: Final = frozenset(op.name for op in OPERATIONS if not op.read_only)


@dataclass(frozen=True, slots=True)
class Credential:
    """One bearer token, the scopes it reaches (None: every scope the serve shows) and the
    sessions it may address (None: every session, ADR 0071)."""

    name: str
    token: str = field(repr=False)
    scopes: frozenset[Scope] | None = None
    sessions: frozenset[str] | None = None

    def may_address(self, session: str) -> bool:
        return self.sessions is None or session in self.sessions


def credentials_of(
    entries: Sequence[CredentialEntry],
    auth_token: str | None,
    env: Mapping[str, str],
    workspace: Path,
) -> tuple[Credential, ...]:
    """Every credential the serve accepts; each token checked (length, uniqueness)."""
    found: list[Credential] = []
    given = (auth_token or "").strip()
    where = "--auth-token"
    if not given:
        set_in_env = [(name, env[name].strip()) for name in AUTH_TOKEN_VARIABLES if env.get(name)]
        where, given = next(((name, text) for name, text in set_in_env if text), ("", ""))
    if given:
        found.append(Credential(ENV_CREDENTIAL, _checked_token(given, where)))
    for entry in entries:
        where = f"lcg.toml [[serve.credential]] {entry.name}"
        if given and entry.name == ENV_CREDENTIAL:  # the name keys its session manager
            raise InvalidParams(
                f"{where} name", f"{ENV_CREDENTIAL!r} names the --auth-token credential here"
            )
        token = entry.token or _token_file(workspace, entry.token_file, where)
        scopes = frozenset(Scope(scope) for scope in entry.scopes)
        sessions = None if entry.sessions is None else frozenset(entry.sessions)
        found.append(Credential(entry.name, _checked_token(token, where), scopes, sessions))
    tokens = [credential.token for credential in found]
    if len(set(tokens)) != len(tokens):
        raise InvalidParams("[[serve.credential]] token", "must differ from every other token")
    return tuple(found)


def _token_file(workspace: Path, name: str, where: str) -> str:
    path = Path(name).expanduser()
    path = path if path.is_absolute() else workspace / path
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        rule = "must be a readable UTF-8 file"
        raise InvalidParams(f"{where} token_file", rule, str(error)) from None


def _checked_token(token: str, where: str) -> str:
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() or not ch.isprintable() for ch in token):
        raise InvalidParams(
            where,
            f"a token must be at least {MIN_TOKEN_CHARS} printable characters without spaces",
            f"got {len(token)} characters",  # never the token itself
        )
    return token


def is_loopback(bind: str) -> bool:
    """127.0.0.0/8, ::1 and `localhost`; a wildcard (0.0.0.0, ::) or a name is not."""
    if bind.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind.strip("[]")).is_loopback
    except ValueError:
        return False


def refuse_open_bind(bind: str, credentials: Sequence[Credential]) -> None:
    """Fail closed: anything but loopback needs a credential (M-TRN-015)."""
    if not credentials and not is_loopback(bind):
        raise InvalidParams(
            "--bind",
            "an address other than loopback (127.0.0.1, ::1, localhost) needs a credential: "
            "--auth-token, LCG_AUTH_TOKEN / LAMBO_AUTH_TOKEN or a [[serve.credential]] in "
            "lcg.toml; refusing to serve memory writes to the network unauthenticated",
            f"got {bind!r}",
        )


def bearer_credential(
    authorization: str | None, credentials: Sequence[Credential]
) -> Credential | None:
    """The credential whose token the header carries, compared in constant time against
    every credential (no early exit), or None."""
    scheme, _, presented = (authorization or "").strip().partition(" ")
    candidate = presented.strip().encode() if scheme.lower() == "bearer" else b""
    matched: Credential | None = None
    for credential in credentials:
        if hmac.compare_digest(candidate, credential.token.encode()) and candidate:
            matched = credential
    return matched


def token_in_query(query_string: bytes) -> bool:
    """Whether the URL's query names a credential-carrying parameter (refused, M-TRN-019)."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    return any(key.strip().lower() in TOKEN_PARAMETERS for key, _ in pairs)


def request_costs(body: bytes) -> tuple[int, int]:
    """(reads, writes) one POST body asks for: each JSON-RPC message counts one, a tools/call
    of a tool that writes counts as a write; a body that is not JSON counts one read (the SDK
    answers it)."""
    try:
        parsed = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return 1, 0
    messages = parsed if isinstance(parsed, list) else [parsed]
    writes = sum(1 for message in messages if _writes(message))
    return max(len(messages) - writes, 0), writes


def _writes(message: object) -> bool:
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return False
    params = message.get("params")
    return isinstance(params, dict) and params.get("name") in WRITE_TOOLS


class TokenBucket:
    """`rate` tokens a second up to `burst`; take() answers 0 or the seconds to wait."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()

    def take(self, count: int) -> float:
        if count <= 0:
            return 0.0
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens >= count:
            self._tokens -= count
            return 0.0
        return (count - self._tokens) / self.rate


class RateLimiter:
    """Per credential, one bucket for reads and one for writes (M-TRN-020)."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: dict[tuple[str, str], TokenBucket] = {}

    def retry_after(self, credential: str, reads: int, writes: int) -> int:
        """0 when admitted (the tokens are taken), else whole seconds to wait (at least 1)."""
        waits = [self._bucket(credential, "write").take(writes)]
        if waits[0] == 0.0:
            waits.append(self._bucket(credential, "read").take(reads))
        wait = max(waits)
        return 0 if wait == 0.0 else max(1, math.ceil(wait))

    def _bucket(self, credential: str, kind: str) -> TokenBucket:
        key = (credential, kind)
        if key not in self._buckets:
            self._buckets[key] = TokenBucket(self.rate, self.burst)
        return self._buckets[key]


def held_by(holder: str | None) -> str:
    """The lease holder as `pid N, `command``: no host, time or path (M-TRN-039)."""
    found = re.match(r"pid (\d+) on .*?, `(.*)`", holder or "")
    if found is None:
        return "another process"
    command = found.group(2).split(" (", 1)[0]
    words = " ".join(word for word in command.split() if "/" not in word and "\\" not in word)
    return f"pid {found.group(1)}, `{words}`"
