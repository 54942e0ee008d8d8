"""The pure rules of layered sessions (lcg.domain.memory.layers, ADR 0080): scope, bare
relative paths, the merged recall's order and labels; the layered instructions paragraph;
`[serve] layers` in the settings file and the environment."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from lcg.domain.errors import InvalidParams
from lcg.domain.memory import context
from lcg.domain.memory.context import AlsoItem, HitView
from lcg.domain.memory.layers import (
    SessionHits,
    check_layers,
    is_bare_relative_path,
    merge,
    refuse_relative_paths,
    resolve_scope,
    same_anchor,
)
from lcg.domain.memory.receipts import ReceiptBook, ReceiptState
from lcg.domain.memory.text import MemoryArgumentError
from lcg.interfaces.layer_rates import LayerRates
from lcg.interfaces.mcp_server import instructions_for
from lcg.interfaces.scopes import Visibility, parse_scopes
from lcg.interfaces.settings_file import load_tuning

LAMBO_GENERAL = "scope must name this session or one of its layers: lambo, general"


def test_m_lay_001_scope_omitted_or_the_session_writes_here_a_layer_name_there() -> None:
    assert resolve_scope("lambo", ["general"], None) == "lambo"
    assert resolve_scope("lambo", ["general"], "lambo") == "lambo"
    assert resolve_scope("lambo", ["general"], "general") == "general"


@pytest.mark.parametrize("scope", ["rustydocs", "", "General", " general"])
def test_m_lay_003_m_rec_256_any_other_scope_is_refused_listing_the_sessions_scopes(
    scope: str,
) -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        resolve_scope("lambo", ["general"], scope)
    assert refused.value.message == LAMBO_GENERAL
    assert refused.value.field == "scope"


def test_m_lay_029_an_unlayered_session_accepts_only_its_own_name() -> None:
    assert resolve_scope("lambo", [], "lambo") == "lambo"
    with pytest.raises(MemoryArgumentError) as refused:
        resolve_scope("lambo", [], "general")
    assert refused.value.message == "scope must name this session or one of its layers: lambo"


def test_a_layer_name_that_is_the_session_itself_is_refused() -> None:
    assert check_layers("lambo", ["general", "shared", "general"]) == ("general", "shared")
    with pytest.raises(MemoryArgumentError, match="cannot be its own layer"):
        check_layers("lambo", ["general", "lambo"])


REFUSED = [
    "README.md",
    "Cargo.toml",
    ".env",
    "Makefile",
    "src/main.rs",
    "docs/reference/",
    "./run.sh",
    "..\\lambo\\AGENTS.md",
]


@pytest.mark.parametrize("path", REFUSED)
@pytest.mark.parametrize("line", ["", ":12", ":12:5", "#L12"])
def test_m_lay_015_bare_relative_paths_are_refused_with_a_line_reference_too(
    path: str, line: str
) -> None:
    if path.endswith("/") and line:
        path = path.rstrip("/")  # docs/reference:12 is a directory named without a /
        assert not is_bare_relative_path(path + line)
        return
    assert is_bare_relative_path(path + line)


@pytest.mark.parametrize(
    "entry",
    [
        "/home/dev/lambo/README.md",
        "C:\\src\\lambo\\README.md",
        "https://github.com/acme/widgets/blob/main/README.md",
        "git@github.com:acme/widgets.git",
        "github.com/x/README.md",
        "crates.io",
        "socket.io",
        "Node.js",
        "vercel/next.js",
        "main",
        "feature/layered-recall",
        "acme/widgets",
        "and/or",
        "I/O",
        "TCP/IP",
        "docs/reference",
        "merged PR #52",
        "edit README.md before the tag",
    ],
)
def test_m_lay_016_absolute_paths_urls_remotes_names_slugs_and_prose_pass(entry: str) -> None:
    assert not is_bare_relative_path(entry)


def test_m_lay_013_the_refusal_names_the_field_the_entry_and_the_layer() -> None:
    with pytest.raises(MemoryArgumentError) as refused:
        refuse_relative_paths(
            [("action", "merged PR #52"), ("produces[0]", "README.md")], "general"
        )
    assert refused.value.field == "produces[0]"
    assert "produces[0]: 'README.md' is a relative path, refused in scope \"general\"" in (
        refused.value.message
    )
    assert refused.value.message.endswith("nothing was written")


def _view(node: str, content: str, score: float, *lines: str) -> HitView:
    return HitView(node, content, "Logic", score, warning_lines=lines)


RELEASE = "57fc442c-0000-4000-8000-000000000001"
RELEASE_GENERAL = "9f8e7d6c-0000-4000-8000-000000000002"
WORKTREE = "b86d4709-0000-4000-8000-000000000003"
OTHER = "c0ffee00-0000-4000-8000-000000000004"


def test_m_rec_241_242_245_the_merge_labels_layer_hits_and_keeps_the_sessions_copy() -> None:
    own = SessionHits("lambo", (_view(RELEASE, "release notes are drafted before the tag", 0.71),))
    layer = SessionHits(
        "general",
        (
            _view(RELEASE_GENERAL, "release notes are drafted before the tag", 0.93),
            _view(WORKTREE, "worktree branches are always rebased onto origin main first", 0.42),
        ),
    )
    merged = merge(own, [layer], top_k=5)
    assert [(session, view.node_id) for session, view in merged.hits] == [
        ("lambo", RELEASE),
        ("general", WORKTREE),
    ]
    text = context.render_context([view for _, view in merged.hits], 500).text
    assert text == (
        "release notes are drafted before the tag [Logic] (score 0.71, id 57fc442c, "
        "also 9f8e7d6c in general)\n\n"
        "worktree branches are always rebased onto origin main first [Logic] "
        "(score 0.42, id b86d4709, from general)"
    )


SKIPPED = "5ca1ab1e-0000-4000-8000-000000000005"
SKIPPED_OWN = "0ddba11a-0000-4000-8000-000000000006"


def test_m_rec_203_what_the_layer_skipped_for_its_merged_copy_is_named_after_it() -> None:
    """The session's copy names its own repeat, then the layer's copy, then the repeat the
    layer skipped for that copy, each in general; `absorbed` says which copy merged in."""
    own_view = HitView(
        RELEASE,
        "release notes are drafted before the tag",
        "Logic",
        0.71,
        also=(AlsoItem(SKIPPED_OWN),),
    )
    layer_copy = HitView(
        RELEASE_GENERAL,
        "release notes are drafted before the tag",
        "Logic",
        0.93,
        also=(AlsoItem(SKIPPED),),
    )
    merged = merge(SessionHits("lambo", (own_view,)), [SessionHits("general", (layer_copy,))], 5)
    text = context.render_context([view for _, view in merged.hits], 500).text
    assert text == (
        "release notes are drafted before the tag [Logic] (score 0.71, id 57fc442c, "
        "also 0ddba11a, 9f8e7d6c in general, 5ca1ab1e in general)"
    )
    assert merged.absorbed == {RELEASE: (("general", RELEASE_GENERAL),)}
    plain = merge(SessionHits("lambo", (own_view,)), [SessionHits("general", ())], 5)
    assert plain.absorbed == {}


def test_m_rec_240_one_top_k_over_the_stack_rank_by_rank_session_first() -> None:
    own = SessionHits("lambo", (_view(RELEASE, "a", 0.2), _view(OTHER, "b", 0.1)))
    layer = SessionHits("general", (_view(WORKTREE, "c", 0.9), _view(RELEASE_GENERAL, "d", 0.8)))
    merged = merge(own, [layer], top_k=3)
    assert [view.node_id for _, view in merged.hits] == [RELEASE, WORKTREE, OTHER]


def test_m_rec_150_151_255_a_layers_lines_and_warnings_start_with_its_name() -> None:
    line = '⚠ Contradicted by "x" (id 00000000)'
    own = SessionHits("lambo", (_view(RELEASE, "release notes are drafted before the tag", 0.5),))
    layer = SessionHits(
        "general",
        (
            _view(RELEASE_GENERAL, "release notes are drafted before the tag", 0.5, line),
            _view(WORKTREE, "worktree", 0.4, line),
        ),
        warnings=(line, line),
    )
    merged = merge(own, [layer], top_k=5)
    shown = dict(merged.hits)
    assert shown["general"].warning_lines == (f"[general] {line}",)
    assert merged.warnings == (f"[general] {line}", f"[general] {line}")
    assert shown["lambo"].also == (AlsoItem(RELEASE_GENERAL, "general"),)
    assert shown["lambo"].warning_lines == ()  # the session's copy is the block shown


def test_m_rec_147_a_companion_follows_its_hit_and_takes_no_slot() -> None:
    own = SessionHits(
        "lambo",
        (_view(RELEASE, "a", 0.5, "⚠ x"), _view(OTHER, "b", 0.0)),
        companions=frozenset({OTHER}),
    )
    layer = SessionHits("general", (_view(WORKTREE, "c", 0.9),))
    merged = merge(own, [layer], top_k=2)
    assert [view.node_id for _, view in merged.hits] == [RELEASE, OTHER, WORKTREE]


def test_m_instr_014_to_020_the_layered_paragraph() -> None:
    """Also M-INSTR-015..020: the paragraph's opening, its sentences on hits' sessions, on
    scope for inspect and recall, on where writes go, on depends_on and relative paths, and
    its closing sentence, word for word."""
    memory = Visibility(parse_scopes("memory"))
    plain = instructions_for(memory, "lambo")
    layered = instructions_for(memory, "lambo", ("general",))
    assert layered.startswith(plain + "\n\n")
    assert layered[len(plain) + 2 :] == (
        "lambo_recall in session 'lambo' also searches its shared layers: general. Every recall"
        " hit\nnames the session it is from (structuredContent hits[].session, and 'from"
        " <session>' in a\nlayer hit's block), and its id belongs to that session: pass the same"
        ' scope (scope =\n"general") to lambo_inspect to inspect a hit from that layer. Pass'
        ' scope = "general" to\nlambo_recall to read that layer alone, or scope = "lambo" for'
        " this session alone. Writes\ngo to session 'lambo' unless you pass scope: write a"
        ' ruling or preference that applies in\nevery project with scope = "general", and'
        " project facts, file actions and decisions without\na scope. A write's depends_on must"
        " name concepts in the session it writes to, and a write\ninto a layer refuses relative"
        " file paths. Writes to different sessions have no ordering\nbetween them."
        " lambo_reserve and lambo_saints take the same scope, and lambo_stats finds a\nreceipt"
        " from any of them."
    )
    two = instructions_for(memory, "lambo", ("general", "team"))
    assert "also searches its shared layers: general, team." in two


def test_serve_layers_from_the_settings_file_and_the_environment(tmp_path: Path) -> None:
    (tmp_path / "lcg.toml").write_text('[serve]\nlayers = ["general", "team"]\n')
    assert load_tuning(tmp_path, {}).layers == ("general", "team")
    assert load_tuning(tmp_path, {"LCG_SERVE_LAYERS": "shared, general"}).layers == (
        "shared",
        "general",
    )
    assert load_tuning(tmp_path / "none", {}).layers == ()


@pytest.mark.parametrize("value", ['"general"', '["general", "no spaces"]', "[1]"])
def test_a_layer_that_is_not_a_session_name_refuses_start_up(tmp_path: Path, value: str) -> None:
    (tmp_path / "lcg.toml").write_text(f"[serve]\nlayers = {value}\n")
    with pytest.raises(InvalidParams) as refused:
        load_tuning(tmp_path, {})
    assert "lcg.toml [serve] layers" in refused.value.message
    assert "must be a list of session names" in refused.value.message


def test_m_lay_022_eight_receipts_a_response_each_session_waiting_gets_one() -> None:
    book = ReceiptBook(epoch=7)
    now = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)
    own = [book.issue("a", "lambo", now) for _ in range(10)]
    layer = book.issue("a", "lambo", now, written_to="general")
    for receipt in [*own, layer]:
        book.settle(receipt, ReceiptState.APPLIED, now)
    first = book.take_piggyback("a", "lambo", now)
    assert len(first.receipts) == 8
    assert str(layer) in [answer.receipt for answer in first.receipts]
    assert [answer.receipt for answer in first.receipts][:7] == [str(r) for r in own[:7]]
    assert first.waiting == 3
    assert book.take_piggyback("a", "general", now).receipts == ()  # never through general


def test_m_rec_074_a_cut_layer_blocks_marker_names_its_scope() -> None:
    layer = SessionHits("general", (_view(WORKTREE, "worktree " * 300, 0.4),))
    merged = merge(SessionHits("lambo", ()), [layer], top_k=5)
    rendered = context.render_context([view for _, view in merged.hits], 60)
    assert rendered.truncated == WORKTREE
    assert "lambo_inspect b86d4709 (scope general) for the full concept]" in rendered.text


def test_m_rec_100_101_a_layers_traversal_joins_only_on_the_callers_anchor() -> None:
    assert same_anchor("user db schema", "User DB Schema")
    assert not same_anchor("user db schema", "billing queue")
    assert same_anchor(None, "billing queue")  # the caller resolved none: the layer's own
    assert same_anchor("user db schema", None)  # the layer answered an ordinary recall


def test_m_rec_251_m_lay_023_each_layer_has_its_own_buckets_for_reads_and_writes() -> None:
    """A layer's bucket holds `burst` requests and refills at per_session_rps; reads and
    writes draw on separate buckets, and each layer on its own."""
    now = [0.0]
    rates = LayerRates(0.5, 2, clock=lambda: now[0])
    assert rates.draw("general", "write") is None
    assert rates.draw("general", "write") is None
    assert rates.draw("general", "write") == (
        "it is over its rate: per_session_rps 0.5 writes a second, burst 2; the next is free in 2 s"
    )
    assert rates.draw("general", "read") is None  # reads have a bucket of their own
    assert rates.draw("team", "write") is None  # and so does every other layer
    now[0] = 2.0  # one request refilled
    assert rates.draw("general", "write") is None
    assert rates.draw("general", "write") is not None


def test_m_rec_148_a_contradicted_layer_hit_needs_a_slot_then_its_companion_comes_past_top_k() -> (
    None
):
    """General's contradicted hit ranks second in the merge: with top_k 1 it gets no slot and
    neither does its companion; with top_k 2 it takes the second slot and its companion is
    added beside it, past top_k."""
    own = SessionHits("lambo", (_view(RELEASE, "a", 0.5),))
    layer = SessionHits(
        "general",
        (_view(WORKTREE, "c", 0.9, "⚠ Contradicted"), _view(OTHER, "b", 0.0)),
        companions=frozenset({OTHER}),
    )
    assert [view.node_id for _, view in merge(own, [layer], top_k=1).hits] == [RELEASE]
    two = merge(own, [layer], top_k=2).hits
    assert [(session, view.node_id) for session, view in two] == [
        ("lambo", RELEASE),
        ("general", WORKTREE),
        ("general", OTHER),
    ]


def test_m_rec_259_the_merge_joins_a_scoped_path_only_within_one_repository() -> None:
    def readme(node: str, repo: str) -> HitView:
        return HitView(node, "README.md", "Resource", 0.9, repo_scope=repo)

    own = SessionHits("lambo", (readme(RELEASE, "github.com/acme/widgets"),))
    layer = SessionHits(
        "general",
        (readme(RELEASE_GENERAL, "github.com/acme/widgets"), readme(WORKTREE, "github.com/x/y")),
    )
    merged = merge(own, [layer], top_k=5)
    assert [(session, view.node_id) for session, view in merged.hits] == [
        ("lambo", RELEASE),
        ("general", WORKTREE),
    ]
    assert merged.hits[0][1].also == (AlsoItem(RELEASE_GENERAL, "general"),)
