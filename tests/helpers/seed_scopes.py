"""Seed 000's scope table (§Scopes), verbatim, plus our `memory` scope for seed 001's lambo
tools (issue 11; seed 000 has no such scope), and the advertised sets they imply.

Tests compare tools/list against this table restricted to the operations that exist, so a
tool added by a later issue is checked without editing the tests.
"""

from __future__ import annotations

from lcg.interfaces.operations import BY_NAME

SEED_SCOPES: dict[str, tuple[str, ...]] = {
    "read": (
        "knowledge_status",
        "knowledge_find_entities",
        "knowledge_find_relationships",
        "knowledge_get_episodes",
        "knowledge_get_nodes_by_group",
        "knowledge_get_edges_by_group",
        "knowledge_get_edges_by_uuids",
        "knowledge_search_passages",
        "knowledge_list_entities",
        "knowledge_list_relationships",
        "knowledge_get_entity_neighbors",
        "knowledge_get_entities_by_source",
        "knowledge_rebuild_status",
        "knowledge_validate_corrections",
    ),
    "write": (
        "knowledge_process_chunk",
        "knowledge_add_episode",
        "knowledge_delete_episode",
        "knowledge_delete_by_source",
        "knowledge_delete_chunk_episode",
        "knowledge_clear_all",
        "knowledge_apply_corrections",
        "knowledge_merge_entities",
        "knowledge_reprocess_entity_types",
        "knowledge_canonicalize_relations",
        "knowledge_backfill_relation_types",
        "knowledge_reprocess_relation_types",
        "knowledge_add_cross_group_edge",
        "knowledge_assert_entity",
        "knowledge_assert_relationship",
    ),
    "cypher": ("knowledge_query_cypher",),
    "admin": (
        "knowledge_dump_wal",
        "knowledge_prepare_checkpoint",
        "knowledge_wal_mark_create",
        "knowledge_wal_mark_list",
        "knowledge_wal_mark_delete",
        "knowledge_rebuild_from_wal",
        "knowledge_recover",
        "knowledge_recover_full",
        "knowledge_close",
        "knowledge_build_indices",
        "knowledge_rebind_pointers",
        "knowledge_delete_by_group",
        "knowledge_backfill_summary_embeddings",
    ),
    "memory": (  # ours, not seed 000's: the agent-memory tools of seed 001
        "lambo_recall",
        "lambo_derive",
        "lambo_record_action",
        "lambo_reserve",
        "lambo_inspect",
        "lambo_stale",
        "lambo_saints",
        "lambo_stats",
        "lambo_derive_image",  # listed only with client vectors on (M-IMG-001)
    ),
}
SEED_000_TOOLS = 43  # K-INV-008: seed 000's MCP registry holds exactly 43 knowledge_* tools
SEED_001_TOOLS = 9  # OQ-01: seed 001's eight always-on lambo_* tools and lambo_derive_image
SEED_SCOPE_OF: dict[str, str] = {
    name: scope for scope, names in SEED_SCOPES.items() for name in names
}


def expected_tools(
    *scopes: str,
    attached: bool = False,
    allow_remote_close: bool = False,
    client_vectors: bool = False,
) -> set[str]:
    """The seed's tools of the scopes that exist in the table; `all` is every scope;
    lambo_derive_image only on a server accepting client vectors."""
    chosen = set(SEED_SCOPES) if "all" in scopes else set(scopes)
    names = {
        name
        for scope in chosen & set(SEED_SCOPES)
        for name in SEED_SCOPES[scope]
        if name in BY_NAME
    }
    if attached and not allow_remote_close:
        names.discard("knowledge_close")
    if not client_vectors:
        names.discard("lambo_derive_image")
    return names
