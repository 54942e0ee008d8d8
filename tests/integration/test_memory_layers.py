"""Layered sessions through one holder (seed 001 "Layered sessions", "Writing to a layer";
ADR 0080): a real workspace opened by `Service.start`, its own session `lambo` layered over
`general` (`[serve] layers`), calls as a serve makes them. Every refusal is checked to write
nothing: the WAL heads of every session involved are unchanged."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lcg.domain.ids import GroupId
from lcg.interfaces.config import Settings
from lcg.interfaces.jsonrpc import RpcError
from lcg.interfaces.ledger_lines import RECALL_DETAIL
from lcg.interfaces.service import Service
from lcg.interfaces.settings_file import Tuning
from lcg.projections.vectors.follower import CONCEPTS
from tests.helpers.memory_log import ACCEPTED, head, session_events

AGENT = "gpt-6.1-sol"
RULING = "worktree branches are always rebased onto origin main first"
PROJECT = "release notes are drafted before the tag"
QUIET = Tuning().with_values(  # no tick or cycle appends while a test compares heads
    daemon__tick_interval_secs=3600, daemon__canonization_eval_interval_secs=86_400
)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Service]:
    settings = Settings(workspace=tmp_path, session="lambo", layers=("general",), tuning=QUIET)
    served = Service(settings, command="pytest")
    assert served.start() == "healthy", served.reason
    try:
        yield served
    finally:
        served.close()


def tool(
    service: Service, name: str, session: str | None = None, layers: Any = None, **params: Any
) -> dict[str, Any]:
    result: dict[str, Any] = service.call(
        name, {"agent_id": AGENT, **params}, session=session, layers=layers
    )
    return result


def refused(service: Service, name: str, **params: Any) -> str:
    with pytest.raises(RpcError) as error:
        tool(service, name, **params)
    return error.value.message


def applied(service: Service, ack: dict[str, Any], session: str | None = None) -> None:
    receipt = ack["structuredContent"]["receipt"]
    answer = tool(service, "lambo_stats", session, receipt=receipt, wait_ms=20_000)
    assert answer["structuredContent"]["receipt"]["state"] == "applied", answer


def derive(service: Service, content: str, scope: str | None = None, **extra: Any) -> Any:
    concept = {"content": content, "concept_type": "logic", **extra}
    return tool(service, "lambo_derive", concepts=[concept], **({"scope": scope} if scope else {}))


@pytest.fixture
def stocked(service: Service) -> Service:
    """general holds the ruling, lambo the project fact; both applied, and both in their
    session's vector index (a loaded box can outlast a recall's bounded wait for them, whose
    warning the tests here do not expect)."""
    applied(service, derive(service, RULING, "general"))
    applied(service, derive(service, PROJECT))
    workspace = service._workspace
    assert workspace is not None
    assert workspace.settle_vectors(["general", "lambo"], CONCEPTS, 60.0) == 0
    return service


def heads(service: Service) -> tuple[int, int]:
    workspace = service.settings.workspace
    return head(workspace, "lambo"), head(workspace, "general")


def test_m_lay_005_018_a_scoped_write_is_applied_by_the_layers_stream(stocked: Service) -> None:
    """Also M-DER-014: `scope` names the session the write goes to. Also OQ-02: the write
    tools accept `scope`, as "Writing to a layer" documents it."""
    workspace = stocked.settings.workspace
    general = [e for e in session_events(workspace, "general") if e.topic == ACCEPTED]
    lambo = [e for e in session_events(workspace, "lambo") if e.topic == ACCEPTED]
    assert len(general) == 1
    assert len(lambo) == 1
    assert general[0].payload["agent_id"] == AGENT


@pytest.mark.parametrize(
    ("name", "params", "said"),
    [
        ("lambo_derive", {"scope": "rustydocs"}, "scope must name this session or one of its"),
        ("lambo_derive", {"scope": ""}, "scope must name this session or one of its layers"),
        ("lambo_derive", {"scope": "general", "content": "README.md"}, "is a relative path"),
        (
            "lambo_derive",
            {"scope": "general", "content": "docs", "parent": "src/main.rs:12"},
            "parent_of[0].parent: 'src/main.rs:12' is a relative path, refused in scope"
            ' "general"',
        ),
        (
            "lambo_derive",
            {"depends_on": RULING},
            f'reference refused: concepts[0].depends_on[0] "{RULING}" is in scope "general";'
            " cross-session citations are not recorded; nothing was written",
        ),
        (
            "lambo_derive",
            {"scope": "general", "depends_on": PROJECT},
            'is in scope "lambo"; cross-session citations are not recorded',
        ),
        (
            "lambo_derive",
            {"against": RULING},
            'is in scope "general"; cross-session contradictions are not recorded',
        ),
        (
            "lambo_record_action",
            {"scope": "general", "depends_on": PROJECT},
            f'reference refused: depends_on[0] "{PROJECT}" is in scope "lambo";'
            " cross-session citations are not recorded; nothing was written",
        ),
        (
            "lambo_record_action",
            {"scope": "general", "action": "./run.sh"},
            "action: './run.sh' is a relative path, refused in scope \"general\"",
        ),
        (
            "lambo_record_action",
            {"scope": "general", "modifies": "Cargo.toml#L12"},
            "modifies[0]: 'Cargo.toml#L12' is a relative path",
        ),
    ],
)
def test_m_lay_003_008_009_010_011_013_014_each_refusal_writes_nothing_in_any_session(
    stocked: Service, name: str, params: dict[str, Any], said: str
) -> None:
    """Also M-DER-034/063, M-REC-146: a citation or contradiction of a concept only another
    session holds is refused, naming its scope; M-ACT-029: an action scoped to the layer whose
    depends_on text names a concept of the caller's own session is refused as cross-session."""
    before = heads(stocked)
    if name == "lambo_derive":
        concept: dict[str, Any] = {"content": params.get("content", "tags are signed")}
        concept["concept_type"] = "logic"
        for key in ("depends_on", "against"):
            if key in params:
                concept[key] = [params[key]]
        args: dict[str, Any] = {"concepts": [concept]}
        if "parent" in params:
            args["parent_of"] = [{"parent": params["parent"], "child": "tags"}]
    else:
        args = {"action": params.get("action", "merged PR #52")}
        for key in ("depends_on", "modifies"):
            if key in params:
                args[key] = [params[key]]
    if "scope" in params:
        args["scope"] = params["scope"]
    message = refused(stocked, name, **args)
    assert said in message, message
    assert heads(stocked) == before


def test_m_act_028_a_hyphenated_id_of_another_session_is_refused_not_created(
    stocked: Service,
) -> None:
    found = tool(stocked, "lambo_recall", query="worktree", scope="general")
    ruling = found["structuredContent"]["hits"][0]["node_id"]
    before = heads(stocked)
    message = refused(stocked, "lambo_record_action", action="rebased", depends_on=[ruling])
    assert 'is in scope "general"; cross-session citations are not recorded' in message
    assert heads(stocked) == before


def test_m_rec_240_242_243_244_the_merged_recall_and_the_unlayered_one(stocked: Service) -> None:
    applied(stocked, derive(stocked, PROJECT, "general"))  # the same memory in both
    merged = tool(stocked, "lambo_recall", query="release notes worktree branches")
    hits = merged["structuredContent"]["hits"]
    # merged by relevance (the default [serve] layer_merge): the higher score first
    assert sorted((h["session"], h["content"]) for h in hits) == [
        ("general", RULING),
        ("lambo", PROJECT),
    ]
    assert hits[0]["score"] >= hits[1]["score"]
    general_copy = tool(stocked, "lambo_recall", query="release notes", scope="general")
    copy_id = next(
        h["node_id"] for h in general_copy["structuredContent"]["hits"] if h["content"] == PROJECT
    )
    assert f"also {copy_id[:8]} in general)" in merged["text"]
    assert "from general)" in merged["text"]
    # general's own address is unlayered: no session on its hits, and no layer read
    direct = tool(stocked, "lambo_recall", "general", [], query="release notes worktree")
    assert all("session" not in h for h in direct["structuredContent"]["hits"])
    assert "from " not in direct["text"]


def test_m_rec_246_247_248_249_257_scoped_reads(stocked: Service) -> None:
    own = tool(stocked, "lambo_recall", query="release notes worktree", scope="lambo")
    assert [h["session"] for h in own["structuredContent"]["hits"]] == ["lambo"]
    assert own["structuredContent"]["warnings"] == []
    layer = tool(stocked, "lambo_recall", query="release notes worktree", scope="general")
    assert [h["session"] for h in layer["structuredContent"]["hits"]] == ["general"]
    assert "from general" not in layer["text"]
    assert layer["structuredContent"]["warnings"] == [
        "recall: these hits are from layer general, and their ids belong to it; pass scope ="
        ' "general" to lambo_inspect to inspect one'
    ]
    # a read of general does not redirect the next write
    ack = derive(stocked, "tags are signed")
    assert "session" not in ack["structuredContent"]
    applied(stocked, ack)
    workspace = stocked.settings.workspace
    assert len([e for e in session_events(workspace, "lambo") if e.topic == ACCEPTED]) == 2


def test_m_rec_252_a_layer_that_cannot_be_served_leaves_the_sessions_hits_and_one_warning(
    stocked: Service,
) -> None:
    workspace = stocked._workspace
    assert workspace is not None
    sessions = workspace.memory_sessions
    sessions._services.pop(GroupId("general")).stop_jobs()  # as if it were not open ...
    sessions._limit = len(sessions._services)  # ... and could not be opened now
    answer = tool(stocked, "lambo_recall", query="release notes worktree")
    assert [h["session"] for h in answer["structuredContent"]["hits"]] == ["lambo"]
    assert answer["structuredContent"]["warnings"] == [
        "recall: layer general is unavailable; results are from lambo only"
    ]


def test_m_lay_020_021_030_receipts_only_through_the_session_written_through(
    service: Service,
) -> None:
    """Also M-STA-090: answered at the session written through, `forbidden` anywhere else."""
    ack = derive(service, RULING, "general")
    receipt = ack["structuredContent"]["receipt"]
    at_general = tool(service, "lambo_stats", "general", [], receipt=receipt, wait_ms=20_000)
    assert at_general["structuredContent"]["receipt"]["state"] == "forbidden"
    other = tool(service, "lambo_stats", "rustydocs", ["general"], receipt=receipt)
    assert other["structuredContent"]["receipt"]["state"] == "forbidden"
    # not piggybacked there either; here, on the next response
    assert "write_receipts" not in at_general["structuredContent"]
    answer = tool(service, "lambo_stats", receipt=receipt, wait_ms=20_000)
    assert answer["structuredContent"]["receipt"]["state"] == "applied"


def test_m_lay_020_the_outcome_of_a_scoped_write_is_piggybacked_here(service: Service) -> None:
    ack = derive(service, RULING, "general")
    receipt = ack["structuredContent"]["receipt"]
    delivered: list[Any] = []
    for _ in range(400):  # the write settles within seconds; each response may carry it
        at_general = tool(service, "lambo_saints", "general", [])
        assert "write_receipts" not in at_general["structuredContent"]  # never there
        delivered = tool(service, "lambo_saints")["structuredContent"].get("write_receipts", [])
        if delivered:
            break
        time.sleep(0.05)
    assert [item["id"] for item in delivered] == [receipt]
    assert delivered[0]["state"] == "applied"


def test_m_res_006_007_m_ins_005_reserve_and_inspect_in_a_layer(stocked: Service) -> None:
    found = tool(stocked, "lambo_recall", query="worktree", scope="general")
    ruling = found["structuredContent"]["hits"][0]["node_id"]
    inspected = tool(stocked, "lambo_inspect", focus=ruling, scope="general")
    assert RULING in inspected["text"]
    message = refused(stocked, "lambo_inspect", focus=ruling)  # its id is general's
    assert "matches no concept of session 'lambo'" in message
    lock = tool(stocked, "lambo_reserve", node_id=ruling, scope="general")
    assert "reserved node" in lock["text"]
    message = refused(stocked, "lambo_reserve", node_id=ruling)
    assert "names no node of session 'lambo'" in message
    # the lock is general's: another agent contends for the node there
    message = refused(stocked, "lambo_reserve", agent_id="other", node_id=ruling, scope="general")
    assert message.startswith(f'conflict: node {ruling} is reserved by agent_id "{AGENT}"')


def test_m_snt_m_stl_saints_and_stale_take_the_scope(stocked: Service) -> None:
    """M-SNT-005, M-STL-020: `scope` lists a layer instead, and is refused as recall's is."""
    saints = tool(stocked, "lambo_saints", scope="general")
    assert "in session 'general'" in saints["text"]
    stale = tool(stocked, "lambo_stale", scope="general")
    assert "in session 'general'" in stale["text"]
    message = refused(stocked, "lambo_stale", scope="team")
    assert message == "scope must name this session or one of its layers: lambo, general"
    assert refused(stocked, "lambo_saints", scope="team") == message
    assert refused(stocked, "lambo_recall", scope="team", query="x") == message


def test_m_lay_029_an_unlayered_call_answers_as_before(stocked: Service) -> None:
    message = refused(
        stocked, "lambo_recall", session="lambo", layers=[], scope="general", query="x"
    )
    assert message == "scope must name this session or one of its layers: lambo"
    plain = tool(stocked, "lambo_recall", "lambo", [], query="release notes worktree")
    assert all("session" not in h for h in plain["structuredContent"]["hits"])


def test_m_lay_019_a_scoped_contradictions_receipt_reports_the_layers_stale_citations(
    service: Service,
) -> None:
    """The receipt of a write scoped to general with `against` has the usual format, and
    its stale report reads general, where the contradiction was written."""
    applied(service, derive(service, RULING, "general"))
    applied(service, derive(service, "rebases never lose commits", "general", depends_on=[RULING]))
    ack = derive(service, "worktree branches are merged, not rebased", "general", against=[RULING])
    receipt = ack["structuredContent"]["receipt"]
    answer = tool(service, "lambo_stats", receipt=receipt, wait_ms=20_000)
    settled = answer["structuredContent"]["receipt"]
    assert settled["state"] == "applied"
    assert settled["stale_report"]["total"] == 1
    assert settled["stale_report"]["rows"][0]["content"] == "rebases never lose commits"


def test_m_rec_253_m_lay_024_a_scope_naming_a_layer_not_serving_is_refused_retryably(
    stocked: Service,
) -> None:
    workspace = stocked._workspace
    assert workspace is not None
    sessions = workspace.memory_sessions
    sessions._services.pop(GroupId("general")).stop_jobs()  # as if it were not open ...
    sessions._limit = len(sessions._services)  # ... and could not be opened now
    before = heads(stocked)
    for name, params in (
        ("lambo_recall", {"query": "worktree"}),
        ("lambo_inspect", {"focus": "worktree"}),
        ("lambo_derive", {"concepts": [{"content": "tags are signed", "concept_type": "logic"}]}),
    ):
        with pytest.raises(RpcError) as error:
            tool(stocked, name, scope="general", **params)
        assert error.value.message.startswith("scope: layer general is not serving right now (")
        assert error.value.message.endswith(
            "nothing was read or written in it; retry shortly, or call without scope to act on"
            " lambo"
        )
        assert (error.value.data or {}).get("kind") == "conflict"
    assert heads(stocked) == before


def test_m_sta_089_while_a_layer_is_down_an_unknown_receipt_is_pending(stocked: Service) -> None:
    """While general is not serving, a receipt no serving pipeline knows (well formed, from
    a process epoch neither lambo's book nor the log holds) may be the down layer's: asked
    through lambo it answers pending, with a detail saying the layer is down and to ask
    again."""
    workspace = stocked._workspace
    assert workspace is not None
    sessions = workspace.memory_sessions
    sessions._services.pop(GroupId("general")).stop_jobs()  # as if it were not open ...
    sessions._limit = len(sessions._services)  # ... and could not be opened now
    own = derive(stocked, "tags are signed before release")["structuredContent"]["receipt"]
    prefix, epoch, issued, seq = own.split(".")
    unknown = ".".join((prefix, format(int(epoch, 16) ^ 1, f"0{len(epoch)}x"), issued, seq))
    answer = tool(stocked, "lambo_stats", receipt=unknown)["structuredContent"]["receipt"]
    assert answer["state"] == "pending", answer
    assert "general" in answer["detail"]
    assert "down" in answer["detail"]
    assert "ask again" in answer["detail"]


REPO = "github.com/acme/widgets"


def test_m_rsc_050_051_repo_scope_lets_a_resource_path_into_a_layer_not_a_logic_one(
    stocked: Service,
) -> None:
    """A write into general: with repo_scope, a resource concept's path and a parent_of end
    pass (they no longer name a different file in each project); a relative path in a concept
    that is not a resource is still refused, writing nothing."""
    ack = tool(
        stocked,
        "lambo_derive",
        scope="general",
        repo_scope=REPO,
        concepts=[{"content": "README.md", "concept_type": "resource"}],
        parent_of=[{"parent": "docs/", "child": "docs/guide.md"}],
    )
    applied(stocked, ack)
    before = heads(stocked)
    message = refused(
        stocked,
        "lambo_derive",
        scope="general",
        repo_scope=REPO,
        concepts=[{"content": "src/main.rs", "concept_type": "logic"}],
    )
    assert "concepts[0].content: 'src/main.rs' is a relative path" in message, message
    assert heads(stocked) == before


def test_m_rsc_052_an_action_text_in_a_layer_is_covered_by_repo_scope_like_its_targets(
    stocked: Service,
) -> None:
    """Also M-ACT-009/016/037: into a layer a bare relative path as the action text is refused,
    and with `repo_scope` it and its targets take the scoped key and are written."""
    before = heads(stocked)
    assert "is a relative path" in refused(
        stocked, "lambo_record_action", scope="general", action="./run.sh"
    )
    assert heads(stocked) == before
    ack = tool(
        stocked,
        "lambo_record_action",
        scope="general",
        repo_scope=REPO,
        action="./run.sh",
        modifies=["Cargo.toml#L12"],
    )
    applied(stocked, ack)


def test_m_rec_202_203_204_a_layers_skipped_repeats_follow_its_merged_copy(
    tmp_path: Path,
) -> None:
    """With skip_redundant on, each session skips inside its own hits; general's copy of the
    project's memory merges into the project's, and what general skipped for that copy is
    named after it and carried as also_skipped_redundant (absent on every other hit). Also
    OQ-15 (those fields): an also_skipped_redundant element is an object of `session`, the
    full `node_id` and `signal`; a hit's `session` is the session's name."""
    tuning = QUIET.with_values(selection__skip_redundant=True)
    settings = Settings(workspace=tmp_path, session="lambo", layers=("general",), tuning=tuning)
    served = Service(settings, command="pytest")
    assert served.start() == "healthy", served.reason
    try:
        for kind in ("logic", "observation"):  # the same text: a repeat, not a merge
            concept = {"content": PROJECT, "concept_type": kind}
            applied(served, tool(served, "lambo_derive", concepts=[concept], scope="general"))
        applied(served, derive(served, RULING, "general"))
        layer = tool(served, "lambo_recall", query="release notes drafted tag", scope="general")
        copy = next(h for h in layer["structuredContent"]["hits"] if h["content"] == PROJECT)
        (skipped,) = copy["skipped_redundant"]
        kind = copy["concept_type"].lower()  # the project holds the copy general keeps
        applied(served, derive(served, PROJECT, concept_type=kind))
        line: dict[str, Any] = {}  # what a --ledger recall line is built from
        bound = RECALL_DETAIL.set(line)
        try:
            merged = tool(served, "lambo_recall", query="release notes drafted tag")
        finally:
            RECALL_DETAIL.reset(bound)
        hits = merged["structuredContent"]["hits"]
        own = hits[0]
        assert line["hits"][0]["also_skipped_redundant"] == own["also_skipped_redundant"]
        assert (own["session"], own["content"]) == ("lambo", PROJECT)
        assert "skipped_redundant" not in own  # general's repeat is not the project's
        assert own["also_skipped_redundant"] == [
            {"session": "general", "node_id": skipped["node_id"], "signal": skipped["signal"]}
        ]
        assert all("also_skipped_redundant" not in h for h in hits[1:])
        label = f"also {copy['node_id'][:8]} in general, {skipped['node_id'][:8]} in general)"
        assert label in merged["text"]
        assert [h["content"] for h in hits if h["session"] == "general"] == [RULING]
    finally:
        served.close()


def test_m_rec_240_the_layers_recalled_beside_the_session_embed_the_query_once(
    stocked: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layer's recall runs on the search pool beside the session's (ADR 0088 addendum):
    the query is embedded once for both, and the answer is the one read in turn."""
    app = stocked.app
    assert app is not None
    workspace = app.workspace
    embedded: list[str] = []
    embed = workspace.embedder.embed_queries  # the workspace embeds a question as a query

    def counting(texts: list[str]) -> Any:
        embedded.extend(texts)
        return embed(texts)

    monkeypatch.setattr(workspace.embedder, "embed_queries", counting)
    query = "release notes worktree branches"
    workspace.forget_query_embeddings()
    beside = tool(stocked, "lambo_recall", query=query)
    assert embedded.count(query) == 1
    workspace.forget_query_embeddings()
    monkeypatch.setattr(workspace, "_pool", None)  # no pool: each session in turn
    in_turn = tool(stocked, "lambo_recall", query=query)
    assert embedded.count(query) == 2
    assert beside["structuredContent"] == in_turn["structuredContent"]
    assert beside["text"] == in_turn["text"]
    assert sorted(h["session"] for h in beside["structuredContent"]["hits"]) == [
        "general",
        "lambo",
    ]


def test_oq_42_a_layer_addressed_at_its_own_endpoint_takes_relative_paths(
    service: Service,
) -> None:
    """A write into general as lambo's layer refuses a relative path (M-LAY-015); the same
    write to general addressed directly (its own endpoint, unlayered there) is taken."""
    before = heads(service)
    assert "is a relative path" in refused(
        service, "lambo_derive", concepts=[{"content": "README.md", "concept_type": "resource"}],
        scope="general",
    )  # fmt: skip
    assert heads(service) == before
    ack = tool(
        service,
        "lambo_derive",
        "general",
        [],
        concepts=[{"content": "README.md", "concept_type": "resource"}],
    )
    applied(service, ack, "general")
    assert heads(service)[1] > before[1]
