"""`--scope` parsing and what each MCP server shows (lcg.interfaces.scopes), in-process.

Checklist: K-SCP-001..003/006..010/014/016/018, K-MCP-012, P-012.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lcg.interfaces.config import Settings
from lcg.interfaces.operations import BY_NAME, Scope
from lcg.interfaces.scopes import ScopeError, Visibility, parse_scopes
from lcg.interfaces.service import HEALTH_CHECK, Service
from tests.helpers.seed_scopes import SEED_000_TOOLS, SEED_SCOPE_OF, expected_tools

EVERY = frozenset(Scope)


@pytest.mark.parametrize(
    ("text", "scopes"),
    [
        ("read", {Scope.READ}),
        ("read,admin", {Scope.READ, Scope.ADMIN}),
        (" write , read,,read ", {Scope.READ, Scope.WRITE}),
        ("all", EVERY),
        ("read,all", EVERY),
        ("cypher", {Scope.CYPHER}),
        ("memory", {Scope.MEMORY}),
    ],
)
def test_scopes_are_split_trimmed_deduplicated_and_additive(text: str, scopes: set[Scope]) -> None:
    """P-012, K-SCP-002/003: commas, spaces, empty tokens and duplicates; `all` is every
    scope (memory included, so `all` keeps advertising everything as tools are added)."""
    assert parse_scopes(text) == frozenset(scopes)


@pytest.mark.parametrize("text", ["", " , ", "read,writ", "READ", "admin;read"])
def test_an_unknown_token_or_no_scope_is_refused_naming_the_valid_values(text: str) -> None:
    """P-012, K-SCP-001: the error names the token and ends with the valid values."""
    with pytest.raises(ScopeError) as refused:
        parse_scopes(text)
    assert str(refused.value).endswith("valid values: read, write, cypher, admin, memory, all")


def names(visibility: Visibility) -> set[str]:
    return {operation.name for operation in visibility.tools()}


def test_cypher_is_never_implied_by_other_scopes() -> None:
    """K-SCP-009: read, write and admin together still leave cypher out."""
    shown = names(Visibility(parse_scopes("read,write,admin")))
    assert "knowledge_query_cypher" not in shown
    assert shown == expected_tools("read", "write", "admin")


def test_k_scp_006_cypher_scope_advertises_exactly_knowledge_query_cypher() -> None:
    assert names(Visibility(parse_scopes("cypher"))) == {"knowledge_query_cypher"}


def test_k_scp_010_the_default_all_advertises_knowledge_query_cypher() -> None:
    assert "knowledge_query_cypher" in names(Visibility(parse_scopes("all")))


def test_close_follows_the_access_mode() -> None:
    """K-SCP-007/008/014/016/018, K-MCP-012: standalone admin shows knowledge_close with or
    without --allow-remote-close; attached admin hides it unless the flag is given."""
    admin = frozenset({Scope.ADMIN})
    assert "knowledge_close" in names(Visibility(admin))
    assert names(Visibility(admin, allow_remote_close=True)) == names(Visibility(admin))
    assert "knowledge_close" not in names(Visibility(admin, attached=True))
    assert "knowledge_close" not in names(Visibility(EVERY, attached=True))
    assert "knowledge_close" in names(Visibility(admin, attached=True, allow_remote_close=True))
    assert names(Visibility(admin, attached=True)) == expected_tools("admin", attached=True)


def test_k_inv_mission_tool_coverage_every_seed_000_tool_is_served_in_the_seeds_scope(
    tmp_path: Path,
) -> None:
    """Issue 15's coverage check: every tool of seed 000's scope table (its 43 knowledge_*,
    knowledge_close among them: K-INV-008) is a row of the operation table, in the scope the
    table gives it, and the service answers health_check besides; nothing outside the table is
    served but the memory tools."""
    knowledge = {name for name in SEED_SCOPE_OF if name.startswith("knowledge_")}
    assert len(knowledge) == SEED_000_TOOLS
    assert knowledge <= set(BY_NAME), sorted(knowledge - set(BY_NAME))
    assert {name: BY_NAME[name].scope.value for name in knowledge} == {
        name: SEED_SCOPE_OF[name] for name in knowledge
    }
    assert {n for n in BY_NAME if n.startswith("knowledge_")} == knowledge
    methods = Service(Settings(tmp_path), command="pytest").methods  # opens nothing
    assert {HEALTH_CHECK, *knowledge} <= set(methods)


K_SCP_019_ADMIN = (
    "knowledge_rebuild_from_wal",
    "knowledge_dump_wal",
    "knowledge_wal_mark_create",
    "knowledge_wal_mark_list",
    "knowledge_wal_mark_delete",
    "knowledge_recover",
    "knowledge_recover_full",
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [("admin", True), ("all", True), ("read,write", False), ("read,write,cypher", False)],
)
def test_k_scp_019_the_wal_and_recovery_tools_are_admin_only(text: str, shown: bool) -> None:
    served = {op.name for op in Visibility(parse_scopes(text)).tools()}
    for name in K_SCP_019_ADMIN:
        assert (name in served) is shown, (text, name)
