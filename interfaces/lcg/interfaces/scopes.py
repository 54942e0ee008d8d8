"""Which operations an MCP server advertises: `--scope` parsing (P-012) and visibility rules.

The scope of each operation comes from the operation table. Scopes are additive; `all` is
every scope; `cypher` is never implied by another (K-SCP-009). In attached mode
`knowledge_close` stays hidden unless `--allow-remote-close` (K-SCP-016..018).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lcg.interfaces.operations import OPERATIONS, AnyOperation, Scope

ALL = "all"
CLOSE = "knowledge_close"
DERIVE_IMAGE = "lambo_derive_image"
SCOPE_NAMES: frozenset[str] = frozenset(scope.value for scope in Scope)
VALID_TOKENS: tuple[str, ...] = (*(scope.value for scope in Scope), ALL)


class ScopeError(ValueError):
    """A `--scope` value that names no scope, or none at all (a start-up error)."""


def parse_scopes(text: str) -> frozenset[Scope]:
    """Split on commas, trim, drop empties, expand `all`; refuse unknown tokens and emptiness."""
    tokens = list(dict.fromkeys(token.strip() for token in text.split(",") if token.strip()))
    if not tokens:
        raise ScopeError(f"no scope given; valid values: {', '.join(VALID_TOKENS)}")
    scopes: set[Scope] = set()
    for token in tokens:
        if token == ALL:
            scopes.update(Scope)
        elif token in SCOPE_NAMES:
            scopes.add(Scope(token))
        else:
            raise ScopeError(f"unknown scope {token!r}; valid values: {', '.join(VALID_TOKENS)}")
    return frozenset(scopes)


@dataclass(frozen=True, slots=True)
class Visibility:
    """What one MCP server shows and accepts: the active scopes and its access mode."""

    scopes: frozenset[Scope]
    attached: bool = False
    allow_remote_close: bool = False
    # [embedder] accept_client_vectors: lambo_derive_image is listed exactly then (M-IMG-001;
    # no embedder here embeds images, ADR 0095), a setting of the whole process (M-IMG-002)
    client_vectors: bool = False

    def shows(self, operation: AnyOperation) -> bool:
        if operation.scope not in self.scopes:
            return False
        if operation.name == DERIVE_IMAGE and not self.client_vectors:
            return False
        # Standalone: knowledge_close closes only this process, so admin shows it (K-SCP-014);
        # --allow-remote-close has no effect there (K-MCP-012).
        return not (operation.name == CLOSE and self.attached and not self.allow_remote_close)

    def tools(self, operations: Iterable[AnyOperation] = OPERATIONS) -> tuple[AnyOperation, ...]:
        """The advertised operations, in table order."""
        return tuple(operation for operation in operations if self.shows(operation))
