"""What a write's reference names (domain.memory.references): given the session's nodes, then the
one concept, text to create, or the seed 001 refusal naming the field and the rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.references import (
    ACTION_CYCLE,
    HIERARCHY_CYCLE,
    NodeView,
    ReferenceRefused,
    Resolved,
    by_text,
    resolve,
    still_names,
)

CACHE = "aaaaaaaa-0000-4000-8000-000000000001"
CACHE_TWIN = "aaaaaaaa-0000-4000-8000-000000000002"
TURN = "bbbbbbbb-0000-4000-8000-000000000003"
STORE = "cccccccc-0000-4000-8000-000000000004"


@dataclass(frozen=True)
class Node:
    uuid: str
    node_kind: str
    content: str


@dataclass(frozen=True)
class Session:
    nodes: tuple[Node, ...]

    def node(self, uuid: str) -> NodeView | None:
        return next((n for n in self.nodes if n.uuid == uuid), None)

    def with_prefix(self, prefix: str) -> Sequence[NodeView]:
        return [n for n in self.nodes if n.uuid.startswith(prefix)]

    def with_content(self, content: str) -> Sequence[NodeView]:
        return [n for n in self.nodes if n.content == content]

    def with_key(self, key: str) -> Sequence[NodeView]:
        return [n for n in self.nodes if canonical_key(n.content) == key]


def session(*nodes: Node) -> Session:
    return Session(nodes)


CACHE_NODE = Node(CACHE, "concept", "The cache is warm")
TURN_NODE = Node(TURN, "interaction", "user asked about the cache")
STORE_NODE = Node(STORE, "concept", "The store is durable")


def refusal(field: str, ref: str, lookup: Session, *, create: bool = False) -> DomainError:
    with pytest.raises(ReferenceRefused) as caught:
        resolve(field, ref, lookup, create=create)
    return caught.value


def test_a_full_id_names_its_concept_by_id_in_either_case() -> None:
    lookup = session(CACHE_NODE, STORE_NODE)
    assert resolve("against", CACHE, lookup, create=False) == Resolved(CACHE, CACHE, "id")
    upper = f" {CACHE.upper()} "
    assert resolve("against", upper, lookup, create=False) == Resolved(upper, CACHE, "id")


def test_an_interactions_full_id_is_refused_with_field_and_rule() -> None:
    error = refusal("depends_on[0]", TURN, session(CACHE_NODE, TURN_NODE), create=True)
    assert error.field == "depends_on[0]"
    assert error.rule == "is an interaction's id, not a concept's"
    assert error.message == (
        f"reference refused: depends_on[0] \"{TURN}\" is an interaction's id, not a concept's; "
        "nothing was written"
    )


def test_an_unknown_full_id_is_text_matched_then_refused_as_matching_nothing() -> None:
    error = refusal("against", STORE, session(CACHE_NODE))
    assert error.field == "against"
    assert error.rule == "matches nothing in this session"
    assert error.message == (
        f'reference refused: against "{STORE}" matches nothing in this session; nothing was written'
    )


def test_exact_content_names_its_concept_by_content() -> None:
    lookup = session(CACHE_NODE, STORE_NODE)
    resolved = resolve("against", " The cache is warm ", lookup, create=False)
    assert resolved == Resolved(" The cache is warm ", CACHE, "content")


def test_content_with_the_same_canonical_key_names_the_concept() -> None:
    lookup = session(CACHE_NODE, STORE_NODE)
    assert resolve("against", "cache warm", lookup, create=False).node == CACHE


def test_by_text_prefers_exact_content_over_canonical_key_and_skips_interactions() -> None:
    """Also OQ-44: "exact content" is raw equality of the text, tried before the canonical
    key (spacing, invisible characters and case), which answers only when no content is
    equal."""
    warm = Node(CACHE_TWIN, "concept", "the cache is warm")
    lookup = session(CACHE_NODE, warm, Node(TURN, "interaction", "The cache is warm"))
    assert [n.uuid for n in by_text("The cache is warm", lookup)] == [CACHE]
    assert [n.uuid for n in by_text("cache WARM", lookup)] == [CACHE, CACHE_TWIN]


def test_by_text_of_stopwords_alone_matches_nothing() -> None:
    assert by_text("the", session(Node(CACHE, "concept", "a"))) == []


def test_text_matching_several_concepts_is_refused_with_a_listing() -> None:
    twin = Node(CACHE_TWIN, "concept", "the cache is warm")
    error = refusal("against", "cache warm", session(CACHE_NODE, twin))
    why = (
        'matches several concepts (aaaaaaaa "The cache is warm", aaaaaaaa "the cache is warm"); '
        "name one by its id"
    )
    assert error.rule == why
    assert error.message == f'reference refused: against "cache warm" {why}; nothing was written'


def test_a_listing_shows_ten_concepts_and_counts_the_rest() -> None:
    many = [Node(f"{i:08x}-0000-4000-8000-000000000000", "concept", "same") for i in range(12)]
    error = refusal("against", "same", session(*many))
    shown = ", ".join(f'{i:08x} "same"' for i in range(10))
    assert error.rule == f"matches several concepts ({shown} and 2 more); name one by its id"


def test_a_listing_of_exactly_ten_says_no_more() -> None:
    many = [Node(f"{i:08x}-0000-4000-8000-000000000000", "concept", "same") for i in range(10)]
    error = refusal("against", "same", session(*many))
    shown = ", ".join(f'{i:08x} "same"' for i in range(10))
    assert error.rule == f"matches several concepts ({shown}); name one by its id"


def test_a_quoted_reference_escapes_double_quotes() -> None:
    error = refusal("against", 'say "hi"', session(CACHE_NODE))
    assert error.message == (
        'reference refused: against "say \\"hi\\"" matches nothing in this session; '
        "nothing was written"
    )


def test_a_short_id_names_its_one_concept_in_either_case() -> None:
    lookup = session(CACHE_NODE, STORE_NODE, TURN_NODE)
    assert resolve("against", "CCCCCCCC", lookup, create=False) == Resolved(
        "CCCCCCCC", STORE, "short_id"
    )


def test_an_8_hex_concept_content_wins_over_the_short_id() -> None:
    hexed = Node(CACHE_TWIN, "concept", "cccccccc")
    resolved = resolve("against", "cccccccc", session(STORE_NODE, hexed), create=False)
    assert resolved == Resolved("cccccccc", CACHE_TWIN, "content")


def test_a_short_id_of_several_concepts_is_refused_with_a_listing() -> None:
    """M-ACT-023: an 8-hex entry prefixing several concept ids is refused, listing them."""
    twin = Node(CACHE_TWIN, "concept", "Another")
    error = refusal("against", "aaaaaaaa", session(CACHE_NODE, twin))
    assert error.rule == (
        'matches several concepts (aaaaaaaa "The cache is warm", aaaaaaaa "Another"); '
        "name one by its id"
    )


def test_an_interactions_short_id_is_refused() -> None:
    error = refusal("against", "bbbbbbbb", session(CACHE_NODE, TURN_NODE), create=True)
    assert error.rule == "is an interaction's id, not a concept's"


def test_with_create_unmatched_text_is_kept_as_text() -> None:
    lookup = session(CACHE_NODE)
    assert resolve("produces[0]", "new idea", lookup, create=True) == Resolved(
        "new idea", None, "text"
    )
    assert resolve("produces[0]", "dddddddd", lookup, create=True) == Resolved(
        "dddddddd", None, "text"
    )


def test_an_unknown_short_id_without_create_matches_nothing() -> None:
    error = refusal("against", "dddddddd", session(CACHE_NODE))
    assert error.rule == "matches nothing in this session"


def test_resolved_round_trips_through_json() -> None:
    resolved = Resolved("aaaaaaaa", CACHE, "short_id")
    assert resolved.to_json() == {"ref": "aaaaaaaa", "node": CACHE, "by": "short_id"}
    assert Resolved.from_json(resolved.to_json()) == resolved
    for by in ("id", "content", "text"):
        data: dict[str, str | None] = {"ref": "idea", "node": None, "by": by}
        assert Resolved.from_json(data).to_json() == data


def test_still_names_accepts_text_and_a_present_concept() -> None:
    lookup = session(CACHE_NODE)
    assert still_names(Resolved("idea", None, "text"), lookup) is None
    assert still_names(Resolved(CACHE, CACHE, "id"), lookup) is None
    assert still_names(Resolved(" AAAAAAAA ", CACHE, "short_id"), lookup) is None


def test_still_names_reports_a_removed_concept() -> None:
    """M-DER-035/036/062: what a reference named is fixed; a removed one fails the write."""
    assert still_names(Resolved(STORE, STORE, "id"), session(CACHE_NODE)) == (
        "named a concept that was removed before the write was applied"
    )


def test_still_names_reports_a_short_id_that_now_matches_several_concepts() -> None:
    """M-DER-037/062, M-ACT-025: a short id that came to match a second concept fails the
    write."""
    twin = Node(CACHE_TWIN, "concept", "Another")
    assert still_names(Resolved("AAAAAAAA", CACHE, "short_id"), session(CACHE_NODE, twin)) == (
        "named something else when the write was applied (its short id now matches "
        "several concepts)"
    )
    assert still_names(Resolved(CACHE, CACHE, "id"), session(CACHE_NODE, twin)) is None


def test_cycle_refusals_carry_seed_001s_wording() -> None:
    assert HIERARCHY_CYCLE == (
        "store error: parent_of would close a Hierarchical cycle (the hierarchy must stay "
        "acyclic); nothing was written"
    )
    assert ACTION_CYCLE == (
        "store error: record_action would close a Causal or Dependency cycle (produces, "
        "modifies and depends_on must stay acyclic); nothing was written"
    )
