"""repo_scope on lambo_derive and lambo_record_action, on a real workspace (issue 30 item 2,
seed 001 "Repository-scoped paths", checklist section 6, ADR 0082).

Writes go through the one dispatch and are applied by the intent processor; `settled` waits
for the receipt as an agent would. Each refusal is checked with the session's WAL head
unchanged: nothing was written.
"""

from __future__ import annotations

from typing import Any

import pytest

from lcg.domain.errors import DomainError
from lcg.domain.memory import arguments
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.repo_paths import path_key
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory import state
from tests.conftest import make_workspace
from tests.integration.test_memory_writes import AGENT, SESSION, call, concept, head, settled

ACME = "github.com/acme/widgets"
OTHER = "github.com/acme/gadgets"


def derive(app: App, *concepts: dict[str, Any], **extra: Any) -> dict[str, Any]:
    ack = call(app, "lambo_derive", agent_id=AGENT, concepts=list(concepts), **extra)
    receipt = settled(app, ack["structuredContent"]["receipt"])
    assert receipt["state"] == "applied", receipt
    return receipt


def act(app: App, action: str, **extra: Any) -> dict[str, Any]:
    ack = call(app, "lambo_record_action", agent_id=AGENT, action=action, **extra)
    receipt = settled(app, ack["structuredContent"]["receipt"])
    assert receipt["state"] == "applied", receipt
    return receipt


def concepts_named(workspace: Workspace, content: str) -> list[state.Node]:
    return state.concepts_with_content(workspace.reader(), SESSION, content)


def refused(app: App, workspace: Workspace, tool: str, **params: Any) -> DomainError:
    before = head(workspace)
    with pytest.raises(DomainError) as caught:
        call(app, tool, agent_id=AGENT, **params)
    assert head(workspace) == before  # nothing was written
    return caught.value


def unscoped_key(node: state.Node) -> str:
    return canonical_key(node.content)


def targets_of(workspace: Workspace, action: str) -> list[str]:
    edges = state.edges_of(workspace.reader(), SESSION, action)
    return [
        t for kind, s, t in edges if s == action and kind in ("produces", "modifies", "depends_on")
    ]


def recall_hits(app: App, query: str) -> dict[str, Any]:
    answer = call(app, "lambo_recall", agent_id=AGENT, query=query, top_k=10)
    content: dict[str, Any] = answer["structuredContent"]
    return content


# -- 6.1 the argument --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "rule"),
    [
        ("", "required"),  # M-RSC-005
        ("   ", "required"),
        ("g" * 513, "size cap"),  # M-RSC-006
        ("github.com/acme/my widgets", "no whitespace, control or invisible character"),
        ("github.com/acme\twidgets", "no whitespace, control or invisible character"),
        ("github.com/acme\u200dwidgets", "no whitespace, control or invisible character"),
        ("github.com/acme\u0007widgets", "control character"),  # M-RSC-008
        ("github.com/acme\u200bwidgets", "invisible formatting character: zero-width character"),
    ],
)
def test_m_rsc_005_006_007_008_a_bad_repo_scope_is_refused_before_the_ack_writing_nothing(
    app: App, workspace: Workspace, sent: str, rule: str
) -> None:
    """Also M-LIM-036: 513 bytes are refused (512 pass, below)."""
    for tool, params in (
        ("lambo_derive", {"concepts": [concept("README.md", "resource")]}),
        ("lambo_record_action", {"action": "edited", "modifies": ["README.md"]}),
    ):
        error = refused(app, workspace, tool, repo_scope=sent, **params)
        assert error.field == "repo_scope"
        assert error.rule == rule
        assert "repo_scope" in error.message


def test_m_rsc_004_006_the_scope_is_trimmed_and_512_bytes_pass(
    app: App, workspace: Workspace
) -> None:
    """Also M-LIM-036: a repo_scope of 512 bytes is admitted."""
    derive(app, concept("README.md", "resource"), repo_scope=f"  {ACME}  ")
    derive(app, concept("Makefile", "resource"), repo_scope="é" * 256)  # 512 bytes
    (readme,) = concepts_named(workspace, "README.md")
    assert readme.canonical_key == path_key(ACME, "README.md")


def test_m_rsc_001_repo_scope_is_unknown_to_the_other_tools(app: App) -> None:
    with pytest.raises(DomainError) as caught:
        call(app, "lambo_recall", agent_id=AGENT, query="x", repo_scope=ACME)
    assert "repo_scope" in caught.value.message


# -- 6.2 / 6.4 identity ----------------------------------------------------------------------


def test_m_rsc_002_020_readme_in_two_repositories_is_two_concepts(
    app: App, workspace: Workspace
) -> None:
    derive(app, concept("README.md", "resource"), repo_scope=ACME)
    derive(app, concept("README.md", "resource"), repo_scope=OTHER)
    derive(app, concept("README.md", "resource"), repo_scope=ACME)  # matched, not a third
    nodes = concepts_named(workspace, "README.md")
    assert sorted(n.canonical_key or "" for n in nodes) == sorted(
        [path_key(ACME, "README.md"), path_key(OTHER, "README.md")]
    )


def test_m_rsc_024_025_a_line_reference_names_the_same_file_first_spelling_kept(
    app: App, workspace: Workspace
) -> None:
    first = act(app, "fixed the panic", modifies=["src/main.rs:12"], repo_scope=ACME)
    second = act(app, "read the entry point", depends_on=["src/main.rs#L40"], repo_scope=ACME)
    third = act(app, "renamed main", modifies=["src/main.rs"], repo_scope=ACME)
    (node,) = concepts_named(workspace, "src/main.rs:12")
    assert node.canonical_key == path_key(ACME, "src/main.rs")
    assert concepts_named(workspace, "src/main.rs") == []
    assert concepts_named(workspace, "src/main.rs#L40") == []
    assert node.uuid in first["created"]
    for receipt in (second, third):
        assert targets_of(workspace, receipt["action_node"]) == [node.uuid]


def test_m_rsc_021_022_produces_modifies_and_a_path_action_text_are_scoped(
    app: App, workspace: Workspace
) -> None:
    act(app, "scripts/release.sh", produces=["dist/app.tar.gz"], repo_scope=ACME)
    act(app, "scripts/release.sh", produces=["dist/app.tar.gz"])  # unscoped: other concepts
    action = concepts_named(workspace, "scripts/release.sh")
    target = concepts_named(workspace, "dist/app.tar.gz")
    assert len(action) == 2
    assert len(target) == 2
    assert {path_key(ACME, "scripts/release.sh"), path_key(ACME, "dist/app.tar.gz")} <= {
        n.canonical_key for n in (*action, *target)
    }
    assert sum(1 for n in (*action, *target) if n.canonical_key == unscoped_key(n)) == 2


def test_m_rsc_026_urls_remotes_domains_and_prose_are_not_scoped(
    app: App, workspace: Workspace
) -> None:
    names = [
        "https://example.com/a.rs",
        "git@github.com:acme/widgets.git",
        "github.com/x/a.rs",
        "Node.js",
    ]
    act(app, "linked the sources", modifies=names, repo_scope=ACME)
    for name in names:
        (node,) = concepts_named(workspace, name)
        assert not (node.canonical_key or "").startswith("repo\t"), name


def test_m_rsc_040_042_043_directories_case_and_spelling(app: App, workspace: Workspace) -> None:
    act(app, "wrote the docs", produces=["docs/"], repo_scope=ACME)
    receipt = derive(
        app,
        concept("docs", "entity"),
        parent_of=[{"parent": "docs", "child": "docs/a.md"}],
        repo_scope=ACME,
    )
    (docs_dir,) = concepts_named(workspace, "docs/")
    assert docs_dir.uuid in receipt["matched"]  # docs/ and docs: one scoped directory
    act(app, "edited", modifies=["src/Main.rs", "./src/main.rs", "src/main.rs"], repo_scope=ACME)
    keys = {
        n.canonical_key
        for name in ("src/Main.rs", "./src/main.rs", "src/main.rs")
        for n in concepts_named(workspace, name)
    }
    assert len(keys) == 3  # case and spelling count


def test_m_rsc_041_a_parent_directory_of_a_scoped_child_is_that_repositorys(
    app: App, workspace: Workspace
) -> None:
    derive(app, concept("src", "entity"))  # a shared, unscoped `src`
    derive(
        app,
        concept("src/main.rs", "resource"),
        parent_of=[{"parent": "src", "child": "src/main.rs"}],
        repo_scope=ACME,
    )
    keys = {n.canonical_key for n in concepts_named(workspace, "src")}
    assert path_key(ACME, "src") in keys
    assert "src" in keys


def test_m_rsc_044_a_scoped_path_never_merges_by_similarity(app: App, workspace: Workspace) -> None:
    derive(app, concept("README.md", "resource"))
    derive(app, concept("README.md", "resource"), repo_scope=ACME)
    derive(app, concept("README.md", "resource"))  # unscoped again: joins the unscoped one
    assert len(concepts_named(workspace, "README.md")) == 2


def test_m_rsc_045_046_048_049_no_fallback_either_way(app: App, workspace: Workspace) -> None:
    old = derive(app, concept("README.md", "resource"))["created"][0]  # before any scope
    error = refused(
        app,
        workspace,
        "lambo_derive",
        concepts=[concept("the readme explains setup", depends_on=["README.md"])],
        repo_scope=ACME,
    )
    assert "matches nothing" in error.message  # M-RSC-045, M-RSC-036
    scoped = derive(app, concept("README.md", "resource"), repo_scope=ACME)["created"][0]
    unscoped = derive(app, concept("setup is in the readme", depends_on=["README.md"]))
    assert unscoped["state"] == "applied"
    edges = state.edges_of(workspace.reader(), SESSION, old)
    assert any(kind == "depends_on" and target == old for kind, _, target in edges)  # M-RSC-046
    assert not any(t == scoped for _, _, t in state.edges_of(workspace.reader(), SESSION, scoped))


def test_m_rsc_047_an_id_reference_works_with_or_without_a_scope(
    app: App, workspace: Workspace
) -> None:
    old = derive(app, concept("README.md", "resource"))["created"][0]
    receipt = derive(
        app, concept("install steps live there", depends_on=[old[:8]]), repo_scope=ACME
    )
    assert "1 citation(s) recorded" in receipt["detail"]


# -- 6.3 inferred positions -----------------------------------------------------------------


def test_m_rsc_030_031_035_produced_then_depended_on_is_one_concept(
    app: App, workspace: Workspace
) -> None:
    produced = act(app, "generated the lockfile", produces=["Cargo.lock"], repo_scope=ACME)
    later = act(app, "built the release", depends_on=["Cargo.lock"], repo_scope=ACME)
    (lock,) = concepts_named(workspace, "Cargo.lock")
    assert lock.uuid in produced["created"]
    assert targets_of(workspace, later["action_node"]) == [lock.uuid]
    derive(app, concept("config.toml", "logic"))
    cited = act(app, "read settings", depends_on=["config.toml"], repo_scope=ACME)
    (logic,) = concepts_named(workspace, "config.toml")
    assert targets_of(workspace, cited["action_node"]) == [
        logic.uuid
    ]  # M-RSC-031: a Logic config.toml is that concept


def test_m_rsc_032_a_scoped_path_and_a_concept_of_another_type_is_ambiguous(
    app: App, workspace: Workspace
) -> None:
    derive(app, concept("config.toml", "logic"))
    act(app, "wrote settings", produces=["config.toml"], repo_scope=ACME)
    error = refused(
        app,
        workspace,
        "lambo_record_action",
        action="read settings",
        depends_on=["config.toml"],
        repo_scope=ACME,
    )
    assert "ambiguous" in error.message
    assert f'repo "{ACME}"' in error.message
    ids = [n.uuid[:8] for n in concepts_named(workspace, "config.toml")]
    assert all(short in error.message for short in ids)


def test_m_rsc_033_034_037_038_what_an_inferred_entry_becomes(
    app: App, workspace: Workspace
) -> None:
    act(app, "ran tools", depends_on=["TCP/IP", "docs/reference", "scripts/build"], repo_scope=ACME)
    for plain in ("TCP/IP", "docs/reference", "scripts/build"):
        (node,) = concepts_named(workspace, plain)
        assert not (node.canonical_key or "").startswith("repo\t"), plain
    act(app, "wrote the build", produces=["scripts/build"], repo_scope=ACME)
    assert len(concepts_named(workspace, "scripts/build")) == 2  # M-RSC-037
    first = act(app, "uses the tool", depends_on=["./scripts/tool"], repo_scope=ACME)
    second = act(app, "wrote the tool", produces=["./scripts/tool"], repo_scope=ACME)
    (tool,) = concepts_named(workspace, "./scripts/tool")  # M-RSC-038
    assert tool.uuid in first["created"]
    assert targets_of(workspace, second["action_node"]) == [tool.uuid]


# -- 6.6 reading back ------------------------------------------------------------------------


def test_m_rsc_060_061_063_064_recall_labels_and_carries_the_repository(app: App) -> None:
    """Also M-DER-015: `repo_scope` names the repository a path-like resource belongs to."""
    derive(app, concept("README.md", "resource"), repo_scope=ACME)
    derive(app, concept("CONTRIBUTING.md", "resource"))
    found = recall_hits(app, "README.md CONTRIBUTING.md")
    hits = {h["content"]: h for h in found["hits"]}
    assert hits["README.md"]["repo_scope"] == ACME
    assert "repo_scope" not in hits["CONTRIBUTING.md"]
    lines = found["context"].split("\n")
    assert any(line.startswith(f'README.md [Resource, repo "{ACME}"] (score ') for line in lines)
    assert any(line.startswith("CONTRIBUTING.md [Resource] (score ") for line in lines)
    by_repo = recall_hits(app, "acme widgets")["hits"]  # M-RSC-064: text, not repository
    assert all("bm25" not in (h.get("ranks") or {}) for h in by_repo if h["content"] == "README.md")
    by_text = recall_hits(app, "README.md")["hits"]
    assert any(h["content"] == "README.md" and "bm25" in h["ranks"] for h in by_text)


def test_m_rsc_062_065_inspect_labels_and_refuses_an_ambiguous_focus(
    app: App, workspace: Workspace
) -> None:
    """Also M-INS-011/027: a scoped path is labelled with its repository, and a focus that
    matches it and another is refused listing each with its repository and node id."""
    first = derive(app, concept("README.md", "resource"), repo_scope=ACME)["created"][0]
    answer = call(app, "lambo_inspect", agent_id=AGENT, focus=first)
    assert answer["text"].startswith(f'README.md [Resource, repo "{ACME}"] (id {first[:8]}')
    assert answer["structuredContent"]["repo_scope"] == ACME
    second = derive(app, concept("README.md", "resource"), repo_scope=OTHER)["created"][0]
    with pytest.raises(DomainError) as caught:
        call(app, "lambo_inspect", agent_id=AGENT, focus="README.md")
    message = caught.value.message
    assert "matches several concepts" in message
    assert f'{first} "README.md" (repo "{ACME}")' in message
    assert f'{second} "README.md" (repo "{OTHER}")' in message


def test_m_rsc_066_m_rec_103_104_a_dependency_question_across_repositories(
    app: App, workspace: Workspace
) -> None:
    act(app, "built the widgets docs", depends_on=["README.md"], repo_scope=ACME)
    act(app, "built the gadgets docs", depends_on=["README.md"], repo_scope=OTHER)
    ids = {
        repo: next(
            n.uuid
            for n in concepts_named(workspace, "README.md")
            if repo in (n.canonical_key or "")
        )
        for repo in (ACME, OTHER)
    }
    found = recall_hits(app, "what depends on README.md")
    assert found["hits"] == []
    (warning,) = found["warnings"]
    assert warning.startswith('recall: "README.md" names 2 concepts in different repositories: ')
    assert f'{ids[ACME][:8]} README.md (repo "{ACME}")' in warning
    assert f'{ids[OTHER][:8]} README.md (repo "{OTHER}")' in warning
    assert warning.endswith("; name the repository in the question to ask about one.")
    named = recall_hits(app, f"what depends on README.md in {OTHER}?")
    assert [h["content"] for h in named["hits"]] == ["built the gadgets docs"]


# -- 6.7 across restarts ---------------------------------------------------------------------


def test_m_rsc_070_a_pending_scoped_write_is_replayed_under_its_scope(
    settings: Settings, embedder: Embedder
) -> None:
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        with ws.memory.processor.paused():
            ack = call(
                app,
                "lambo_record_action",
                agent_id=AGENT,
                action="edited the notes",
                modifies=["README.md"],
                repo_scope=ACME,
            )
            ws.memory.close()  # a clean shutdown with the write still pending
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        body = settled(app, ack["structuredContent"]["receipt"])
        assert body["state"] == "applied_after_restart"
        (readme,) = concepts_named(ws, "README.md")
        assert readme.canonical_key == path_key(ACME, "README.md")
        # rebuilt from the log: the identity is in the events, not in memory
        call(
            App(ws, operator=True), "knowledge_rebuild_from_wal", group_id=SESSION, force_clear=True
        )
        (rebuilt,) = concepts_named(ws, "README.md")
        assert (rebuilt.uuid, rebuilt.canonical_key) == (readme.uuid, readme.canonical_key)


@pytest.mark.parametrize(("stored", "state_"), [("", "failed"), ("acme widgets", "applied")])
def test_m_rsc_072_073_at_replay_a_stored_scope_is_only_checked_to_be_nonempty(
    app: App, workspace: Workspace, monkeypatch: pytest.MonkeyPatch, stored: str, state_: str
) -> None:
    """A stored scope the argument rules would refuse (whitespace inside) replays; an empty
    one settles failed with the reason on its receipt."""
    monkeypatch.setattr(arguments, "check_repo_scope", lambda _sent: stored)
    ack = call(
        app,
        "lambo_record_action",
        agent_id=AGENT,
        action="edited",
        modifies=["README.md"],
        repo_scope=ACME,
    )
    body = settled(app, ack["structuredContent"]["receipt"])
    assert body["state"] == state_
    if state_ == "failed":
        assert "repo_scope is empty" in body["detail"]
        assert concepts_named(workspace, "README.md") == []


def test_m_rsc_003_010_036_scope_chooses_the_session_repo_scope_grants_nothing(
    app: App, workspace: Workspace
) -> None:
    error = refused(
        app,
        workspace,
        "lambo_derive",
        concepts=[concept("README.md", "resource")],
        scope="another-session",
        repo_scope=ACME,
    )
    assert error.field == "scope"  # M-RSC-003: repo_scope names no session
    derive(app, concept("README.md", "resource"), repo_scope=ACME)
    hits = recall_hits(app, "README.md")["hits"]  # M-RSC-010: read without any scope
    assert [h["repo_scope"] for h in hits if h["content"] == "README.md"] == [ACME]
    error = refused(  # M-RSC-036: a citation never creates a scoped path
        app,
        workspace,
        "lambo_derive",
        concepts=[concept("the changelog is generated", against=["CHANGELOG.md"])],
        repo_scope=ACME,
    )
    assert "matches nothing" in error.message
