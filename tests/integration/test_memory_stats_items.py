"""lambo_stats items no other test names (seed 001, M-STA): the tool's listing, the wait caps,
the flush figures, the canonization and GC figures, and the write-queue figures, on a real
workspace through the one dispatch (and over MCP in process for the listing)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from lcg.commands import memory_probe
from lcg.domain.errors import DomainError
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.port import Embedder
from lcg.projections.faults import StorageFailure
from lcg.projections.memory import state
from tests.conftest import make_workspace
from tests.helpers.mcp_session import mcp_in_process
from tests.integration.test_memory_writes import (
    AGENT,
    SESSION,
    call,
    concept,
    derive,
    head,
    node_by_content,
    settled,
)


def test_m_sta_001_003_004_lambo_stats_is_listed_with_an_optional_receipt_and_wait(
    tmp_path: Path,
) -> None:
    async def main() -> dict[str, Any]:
        async with mcp_in_process(tmp_path, session="liminis") as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    tools = anyio.run(main)
    schema = tools["lambo_stats"].input_schema
    assert "receipt" not in schema.get("required", [])
    assert "wait_ms" not in schema.get("required", [])
    assert schema["properties"]["receipt"]["type"] == "string"
    assert schema["properties"]["wait_ms"]["type"] == "integer"
    assert schema["properties"]["wait_ms"]["minimum"] == 0


def _stats(app: App, agent: str = AGENT, **params: Any) -> dict[str, Any]:
    answer: dict[str, Any] = call(app, "lambo_stats", agent_id=agent, **params)
    return answer


def test_oq_19_the_payload_keys_are_upstreams_and_the_text_ends_with_the_embedding_line(
    app: App,
) -> None:
    """canonization.md §5 answers OQ-19 with upstream's stats_json keys; the text summary
    carries the same figures a line each, `gc:` before the final `embedding:` line."""
    answer = _stats(app)
    upstream = {
        "session", "agent", "flush_lag_ms", "log_depth", "flush_depth", "dead_lettered",
        "degraded", "node_count", "edge_count", "concept_count", "canonical_count", "epoch",
        "daemon_cycles", "canonization_cycles", "canonization_failures", "promotion_policy",
        "gc",
    }  # fmt: skip
    assert upstream <= set(answer["structuredContent"])
    lines = answer["text"].split("\n")
    assert lines[0].startswith(f"session {SESSION}: 0 nodes (0 concepts, ")
    assert "log depth 0" in lines[1]
    assert (
        lines[2]
        == "degraded: no; promotion_policy: Swarm; canonical 0 after 0 canonization cycle(s)"
    )
    assert lines[-2].startswith("gc: ")
    assert lines[-1].startswith("embedding: ")


def test_oq_20_wait_ms_without_a_receipt_is_ignored_within_its_range(
    app: App, workspace: Workspace
) -> None:
    """Nothing to wait for: the figures come back with no receipt object, as without
    wait_ms, even while a write is pending; a wait_ms out of its range is still refused."""
    with workspace.memory.processor.paused():
        pending = derive(app, concept("the queue is paused"))
        answer = _stats(app, wait_ms=34_000)["structuredContent"]
        assert "receipt" not in answer
        assert answer["write_queue_accepted"] == 1
    assert settled(app, pending)["state"] == "applied"
    with pytest.raises(DomainError) as refused:
        _stats(app, wait_ms=-1)
    assert refused.value.field == "wait_ms"


def test_m_sta_003_a_record_action_receipt_is_answered_like_a_derive_receipt(app: App) -> None:
    ack = call(
        app,
        "lambo_record_action",
        agent_id=AGENT,
        action="ran the migration",
        produces=["schema v2"],
    )
    receipt = ack["structuredContent"]["receipt"]
    assert settled(app, receipt)["state"] == "applied"


def test_m_sta_008_009_waits_beyond_the_caps_answer_at_once(app: App, workspace: Workspace) -> None:
    """Eight waits of one agent fill its share; its ninth answers `pending` at once (the eight
    are still waiting, so it did not wait out the full 34 s they were given). Eight more of a
    second agent fill the server's sixteen; a third agent's wait also answers at once. Also
    M-LIM-039."""
    answers: list[str] = []
    waiters: list[threading.Thread] = []

    def wait(agent: str, receipt: str) -> None:
        body = _stats(app, agent, receipt=receipt, wait_ms=34_000)
        answers.append(body["structuredContent"]["receipt"]["state"])

    def start(agent: str, receipt: str) -> None:
        thread = threading.Thread(target=wait, args=(agent, receipt), daemon=True)
        thread.start()
        waiters.append(thread)

    memory = workspace.memory
    with memory.processor.paused():
        receipts = {a: derive(app, concept(f"{a} waits"), agent=a) for a in ("a", "b", "c")}
        for _ in range(8):
            start("a", receipts["a"])
        _until(lambda: memory._waits == 8)
        ninth = _stats(app, "a", receipt=receipts["a"], wait_ms=34_000)
        assert ninth["structuredContent"]["receipt"]["state"] == "pending"
        assert all(thread.is_alive() for thread in waiters)
        for _ in range(8):
            start("b", receipts["b"])
        _until(lambda: memory._waits == 16)
        seventeenth = _stats(app, "c", receipt=receipts["c"], wait_ms=34_000)
        assert seventeenth["structuredContent"]["receipt"]["state"] == "pending"
        assert all(thread.is_alive() for thread in waiters)
    for thread in waiters:
        thread.join(30)
    assert answers == ["applied"] * 16


def _until(condition: Any) -> None:
    for _ in range(2000):
        if condition():
            return
        time.sleep(0.005)
    pytest.fail("the waits never started")


def test_m_sta_020_021_022_023_the_figures_are_real_and_an_idle_lag_stays_under_100_ms(
    app: App,
) -> None:
    """Flush lag, log depth, queue depth, counts, canonization progress and `degraded` are
    reported as values (this tool reaches the writer); with nothing waiting to be written the
    lag stays under a tenth of a second however long the session idles."""
    settled(app, derive(app, concept("user schema", "entity"), concept("lease TTL is 45s")))
    time.sleep(0.3)  # idle
    payload = _stats(app)["structuredContent"]
    for key in ("flush_lag_ms", "log_depth", "write_queue_depth", "node_count", "edge_count"):
        assert isinstance(payload[key], int), key
    assert payload["concept_count"] == 2
    assert isinstance(payload["canonization_cycles"], int)
    assert isinstance(payload["canonical_count"], int)
    assert payload["degraded"] is False
    assert 0 <= payload["flush_lag_ms"] < 100


def test_m_sta_024_access_counts_waiting_for_the_log_grow_the_lag_until_flushed(
    app: App, workspace: Workspace
) -> None:
    memory = workspace.memory
    settled(app, derive(app, concept("the cache is content addressed")))
    workspace.settle()
    memory.processor.periodic.remove(memory.flush_accesses)  # flushed by hand below
    try:
        hits = call(app, "lambo_recall", agent_id=AGENT, query="content addressed cache")
        assert hits["structuredContent"]["hits"]
        time.sleep(0.15)
        waiting = _stats(app)["structuredContent"]
        assert waiting["flush_depth"] >= 1
        assert waiting["flush_lag_ms"] >= 150  # the age of the oldest count still waiting
        before = head(workspace)
        memory.flush_accesses(min_age=0.0)
        assert head(workspace) == before + 1  # one MemoryAccessed event
        flushed = _stats(app)["structuredContent"]
        assert (flushed["flush_depth"], flushed["flush_lag_ms"]) == (0, 0)
    finally:
        memory.processor.periodic.append(memory.flush_accesses)


@pytest.mark.parametrize("policy", ["Swarm", "Solo"])
def test_m_sta_029_030_cycles_count_under_either_policy_and_a_young_session_has_no_canonical(
    tmp_path: Path, embedder: Embedder, policy: str
) -> None:
    tuning = Tuning().with_values(__promotion_policy=policy)
    with make_workspace(Settings(workspace=tmp_path, tuning=tuning), embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept("user schema", "entity")))
        jobs = ws.memory.jobs_or_fail()
        for _ in range(3):
            jobs.run_cycle()
        payload = _stats(app)["structuredContent"]
        assert payload["promotion_policy"] == policy
        assert payload["canonization_cycles"] == 3
        assert payload["canonical_count"] == 0


def test_m_sta_042_the_text_summary_names_the_promotion_policy(app: App) -> None:
    answer = _stats(app)
    policy = answer["structuredContent"]["promotion_policy"]
    assert f"promotion_policy: {policy}" in answer["text"]


def test_m_sta_051_the_contract_model_is_the_whole_model_string(
    app: App, workspace: Workspace
) -> None:
    contract = _stats(app)["structuredContent"]["embedding_contract"]
    assert contract["model"] == workspace.embedder.contract.model
    assert contract["dim"] == workspace.embedder.contract.dim


def test_m_sta_063_the_gc_clock_survives_a_restart(tmp_path: Path, embedder: Embedder) -> None:
    settings = Settings(workspace=tmp_path)
    with make_workspace(settings, embedder) as ws:
        app = App(ws)
        settled(app, derive(app, concept("the tick starts the clock", "entity")))
        ws.memory.jobs_or_fail().tick()
        before = _stats(app)["structuredContent"]["gc"]
    assert before["last_gc_at"] is not None
    with make_workspace(settings, embedder) as ws:
        after = _stats(App(ws))["structuredContent"]["gc"]
    assert (after["last_gc_at"], after["last_gc_epoch"]) == (
        before["last_gc_at"],
        before["last_gc_epoch"],
    )
    assert after["last_sweep"] is None  # the sweep report is this process's


def test_m_sta_101_an_applied_write_is_recalled_and_its_ids_are_in_the_receipt(
    app: App, workspace: Workspace
) -> None:
    body = settled(app, derive(app, concept("flushes retry three times")))
    assert body["state"] == "applied"
    made = node_by_content(workspace, "flushes retry three times").uuid
    assert body["created"] == [made]
    workspace.settle()
    hits = call(app, "lambo_recall", agent_id=AGENT, query="flushes retry")
    assert made in [hit["node_id"] for hit in hits["structuredContent"]["hits"]]


def test_m_sta_123_125_the_bounds_stay_fixed_and_an_ack_is_an_intent_in_the_log(
    app: App, workspace: Workspace
) -> None:
    for n in range(3):
        settled(app, derive(app, concept(f"measured write {n}")))
    measured = _stats(app)["structuredContent"]
    assert measured["write_queue_measured"] is True
    assert (measured["write_queue_bound"], measured["write_queue_lane_bound"]) == (1024, 64)
    with workspace.memory.processor.paused():
        before = head(workspace)
        receipt = derive(app, concept("an intent before it is applied"))
        assert head(workspace) == before + 1  # the intent is in the log at the ack
        row = state.write(workspace.reader(), receipt)
        assert row is not None
        assert row.state == "pending"
        assert not state.concepts_with_content(
            workspace.reader(), SESSION, "an intent before it is applied"
        )
    assert settled(app, receipt)["state"] == "applied"


def test_m_sta_126_127_with_no_probe_and_no_write_nothing_is_measured(app: App) -> None:
    """A process that does not serve runs no startup probe (nor loads a model for one):
    before its first write nothing is measured, and every rate and apply time is null."""
    fresh = _stats(app)["structuredContent"]
    assert fresh["write_queue_measured"] is False
    assert fresh["write_queue_bound_source"] == "unmeasured"
    for key in ("items_per_sec", "serial_items_per_sec", "probe_serial_items_per_sec"):
        assert fresh[f"write_queue_{key}"] is None, key
    assert fresh["write_queue_probe_optimism"] is None
    for key in ("p50", "p90", "max"):
        assert fresh[f"write_queue_apply_ms_{key}"] is None, key


def test_m_sta_126_127_128_131_132_the_rates_and_apply_times_wait_for_a_measured_write(
    app: App, workspace: Workspace
) -> None:
    """Before any write only the startup probe has measured: source `probe`, apply times
    null, optimism null. Once a write is applied its time is observed: source `observed`, a
    serial rate in writes per second, p50 <= p90 <= max; the four-wide figure stays the
    probe's (nothing four-wide is observed), and the optimism is the probe's serial figure
    over the observed one."""
    assert workspace.memory.processor.probed(timeout=30.0)
    fresh = _stats(app)["structuredContent"]
    assert fresh["write_queue_measured"] is True
    assert fresh["write_queue_bound_source"] == "probe"
    assert fresh["write_queue_probe_optimism"] is None
    for key in ("p50", "p90", "max"):
        assert fresh[f"write_queue_apply_ms_{key}"] is None, key
    assert fresh["write_queue_apply_samples"] == 0
    for n in range(3):
        settled(app, derive(app, concept(f"timed write {n}")))
    timed = _stats(app)["structuredContent"]
    assert timed["write_queue_measured"] is True
    assert timed["write_queue_bound_source"] == "observed"
    observed = timed["write_queue_serial_items_per_sec"]
    assert observed > 0
    probe = timed["write_queue_probe_serial_items_per_sec"]
    assert probe == fresh["write_queue_probe_serial_items_per_sec"]  # kept, not overwritten
    assert timed["write_queue_items_per_sec"] == fresh["write_queue_items_per_sec"]
    assert timed["write_queue_probe_optimism"] == round(probe / observed, 3)
    assert timed["write_queue_apply_samples"] == 3
    p50, p90, top = (timed[f"write_queue_apply_ms_{k}"] for k in ("p50", "p90", "max"))
    assert 0 < p50 <= p90 <= top


def test_m_sta_129_130_a_startup_probe_measures_before_the_first_write(
    app: App, workspace: Workspace
) -> None:
    """Once the probe has finished, before any write, the payload carries its figures: its
    serial figure is the rate in force, and the four-wide one is measured (the hashing
    embedder finishes it well inside the probe's budget)."""
    workspace.start_memory_jobs()  # as a serving process does at start: the probe starts
    assert workspace.memory.processor.probed(timeout=30.0)
    fresh = _stats(app)["structuredContent"]
    assert fresh["write_queue_bound_source"] == "probe"
    assert fresh["write_queue_measured"] is True
    assert fresh["write_queue_probe_serial_items_per_sec"] > 0
    assert (
        fresh["write_queue_probe_serial_items_per_sec"]
        == (fresh["write_queue_serial_items_per_sec"])
    )
    assert fresh["write_queue_items_per_sec"] > 0
    assert fresh["write_queue_probe_optimism"] is None


def test_m_sta_130_the_probe_embeds_a_derive_of_two_concepts_and_writes_nothing(
    app: App, workspace: Workspace
) -> None:
    """The probe's texts are two concepts of about 340 bytes each framed as lambo_derive
    frames them: deriving those two concepts embeds exactly those texts. The probe itself
    put nothing in the embedding cache and nothing in the log, and counted no model call."""
    assert workspace.memory.processor.probed(timeout=30.0)
    first, second = memory_probe.probe_concepts()
    assert [len(first.encode()), len(second.encode())] == [340, 340]
    texts = memory_probe.probe_texts()
    cache = workspace._cache
    assert cache is not None
    assert cache.cached(texts) == {}  # the probe went around the cache
    assert head(workspace) == 0  # and appended nothing
    assert workspace.embedder.calls == 0  # nor counted as a model call
    assert settled(app, derive(app, concept(first), concept(second)))["state"] == "applied"
    assert sorted(cache.cached(texts)) == sorted(texts)  # what the derive embedded


def test_m_sta_130_a_serving_process_probes_at_start_a_one_shot_command_does_not(
    workspace: Workspace,
) -> None:
    """Opening the workspace starts no probe (a one-shot command loads no model for it);
    starting to serve does, with no call asking."""
    probe = workspace.memory.processor.probe
    assert probe is not None
    assert probe.wait(0.0) is False  # not started
    workspace.start_memory_jobs()
    assert probe.wait(30.0) is True
    assert probe.figures is not None


def test_m_sta_028_degraded_says_the_store_stopped_taking_the_sessions_writes(
    app: App, workspace: Workspace
) -> None:
    """SQLite's own SQLITE_FULL on the projection database: the write is refused naming the
    cause, nothing is acked, `degraded` reads true; once the store takes writes again a write
    is applied and `degraded` reads false. (SQLite had rolled the transaction back itself, so
    the writer's ROLLBACK failed and its "no transaction is active" hid the cause; and the
    batch then committed empty, which cleared the failure before anyone could read it.)"""
    settled(app, derive(app, concept("before the disk filled")))
    conn = workspace.runner.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages}")
    try:
        with pytest.raises(StorageFailure, match="database or disk is full"):
            _fill(app)
        assert _stats(app)["structuredContent"]["degraded"] is True
    finally:
        conn.execute(f"PRAGMA max_page_count={2**30}")
    assert settled(app, derive(app, concept("after the disk was freed")))["state"] == "applied"
    assert _stats(app)["structuredContent"]["degraded"] is False


def _fill(app: App) -> None:
    for n in range(50):
        derive(app, concept(f"a long fact number {n} " + "padding " * 500))


def test_m_sta_135_a_write_refused_while_the_session_closes_is_counted_apart(
    app: App, workspace: Workspace
) -> None:
    workspace.memory.close()
    ack = call(app, "lambo_derive", agent_id=AGENT, concepts=[concept("too late")])
    assert ack["structuredContent"]["receipt_state"] == "dropped"
    payload = _stats(app)["structuredContent"]
    assert (payload["write_queue_dropped"], payload["write_queue_dropped_closed"]) == (1, 1)
