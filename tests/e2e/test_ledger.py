"""`lambo serve --ledger FILE` over a real MCP stdio pipe (issue 29, seed 001 `--ledger`,
ADR 0079): a line per call with the seed's fields, a recall line with fusion ranks,
annotations and session_hits, completion lines with the receipt's counts, heartbeat lines,
refusals that never repeat their payload, and drops counted (never waited for) when the writer
cannot keep up: a FIFO nobody reads parks it.

Checklist: M-CFG-008, M-REC-028, M-REC-144, M-REC-145, M-REC-282, M-IMG-058, M-STA-043,
M-STA-084, M-STA-160..166. (M-REC-258: each hit names its session and the line counts
session_hits, for the one session a recall reads here; layered recall is not built.)
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.helpers.forwarding import bare_holder, runtime_dir, serve_env
from tests.helpers.http_serve import HttpServe, http_client
from tests.helpers.images import png
from tests.helpers.mcp_session import CONSOLE_SCRIPTS, mcp_client, structured
from tests.helpers.service_process import clean_env, wait_until

SESSION = "ledgered"
AGENT = "agent-ledger"
OTHER = "agent-other"
LEDGER_KEYS = {
    "ledger_path",
    "ledger_written_lines",
    "ledger_dropped_lines",
    "ledger_dropped_channel_full",
    "ledger_dropped_write_failed",
    "ledger_queued_lines",
}


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


async def derive_and_settle(
    client: Client, *concepts: dict[str, Any], agent: str = AGENT
) -> dict[str, Any]:
    ack = await client.call_tool("lambo_derive", {"agent_id": agent, "concepts": list(concepts)})
    receipt = structured(ack)["receipt"]
    stats = await client.call_tool(
        "lambo_stats", {"agent_id": agent, "receipt": receipt, "wait_ms": 30_000}
    )
    settled = structured(stats)
    assert settled["receipt"]["state"] == "applied", settled["receipt"]
    return settled


TUNED = {
    "LCG_SERVE_LEDGER_HEARTBEAT_SECS": "0.2",
    "LCG_DAEMON_TICK_INTERVAL_SECS": "0.05",
    "LCG_CANONIZATION_EDGE_MIN_AGE_SECS": "0",
}


def serve(workspace: Path, ledger: Path, **env: str) -> Any:
    return mcp_client(
        "serve",
        "--session",
        SESSION,
        "--ledger",
        str(ledger),
        command="lambo",
        env={"LCG_WORKSPACE": str(workspace), **env},
    )


def test_m_cfg_008_every_call_writes_one_line_with_the_seeds_fields(tmp_path: Path) -> None:
    ledger = tmp_path / "calls.jsonl"
    # a real PNG (its shape passes, so the refusal is the configuration error), secret tail
    image = base64.b64encode(png(2, 2) + b"-secret-bytes-").decode()

    async def main() -> tuple[dict[str, Any], str]:
        async with serve(tmp_path / "ws", ledger, **TUNED) as c:
            first = await derive_and_settle(
                c, {"content": "the billing service uses postgres", "concept_type": "logic"}
            )
            old = first["receipt"]["created"][0]
            await derive_and_settle(
                c,
                {
                    "content": "the billing service moved off postgres to sqlite",
                    "concept_type": "logic",
                    "against": [old[:8]],
                },
                agent=OTHER,
            )
            # the Contradicted line follows the daemon's list, from its next tick (M-REC-121)
            for _ in range(200):
                shown = await c.call_tool(
                    "lambo_recall", {"agent_id": AGENT, "query": "billing service postgres"}
                )
                if any(w.startswith("⚠ Contradicted") for w in structured(shown)["warnings"]):
                    break
                await anyio.sleep(0.05)
            refused = await c.call_tool(
                "lambo_recall",
                {"agent_id": AGENT, "image": {"mime": "image/png", "data": image}},
            )
            assert refused.is_error
            bad = await c.call_tool(
                "lambo_derive",
                {"agent_id": AGENT, "concepts": [{"content": "x" * 9000, "concept_type": "nope"}]},
            )
            assert bad.is_error
            wait_until(
                lambda: any(line["kind"] == "heartbeat" for line in lines_of(ledger)),
                "a heartbeat line",
            )
            stats = await c.call_tool("lambo_stats", {"agent_id": AGENT})
            return structured(stats), old

    stats, old = anyio.run(main)
    assert stat.S_IMODE(ledger.stat().st_mode) == 0o600
    lines = lines_of(ledger)
    calls = [line for line in lines if line["kind"] in ("call", "recall")]
    tools = [line["tool"] for line in calls]
    # every call, in order (a lambo_stats's own line is appended before its keys are read)
    recalls = tools.count("lambo_recall")
    assert tools[:4] == ["lambo_derive", "lambo_stats", "lambo_derive", "lambo_stats"]
    assert tools[4 : 4 + recalls] == ["lambo_recall"] * recalls
    assert tools[4 + recalls] == "lambo_derive"
    for line in calls:
        assert line["session"] == SESSION
        assert line["agent_id"] in (AGENT, OTHER)
        assert isinstance(line["ms"], float)
    derive_line = calls[0]
    assert derive_line["ok"] is True
    assert derive_line["receipt"].startswith("lwr1.")

    completions = [line for line in lines if line["kind"] == "completion"]
    assert [c["receipt"] for c in completions][:1] == [derive_line["receipt"]]
    assert completions[0]["state"] == "applied"
    assert completions[0]["created_count"] == 1
    assert {"matched_count", "semantic_merged", "reinforced", "edges", "embedded"} <= set(
        completions[0]
    )

    recall = calls[4 + recalls - 2]  # the last answered recall (then the image one)
    assert recall["kind"] == "recall"
    assert recall["by"] == "query"
    assert recall["query"] == "billing service postgres"
    assert recall["session_hits"] == {SESSION: len(recall["hits"])}
    hits = {hit["node_id"]: hit for hit in recall["hits"]}
    assert old in hits
    fusion = hits[old]["fusion"]
    assert fusion["bm25_rank"] >= 1
    assert set(fusion) >= {"bm25_rank", "max", "rrf"}
    kinds = {note["kind"] for hit in recall["hits"] for note in hit["annotations"]}
    assert "contradiction" in {n["kind"] for n in hits[old]["annotations"]}
    assert "contradicts" in kinds
    assert recall["contradiction_warning"] is True

    refused_recall = calls[4 + recalls - 1]
    assert refused_recall["ok"] is False
    assert refused_recall["by"] == "image"
    assert refused_recall["error"]["field"] == "image"
    assert "hits" not in refused_recall
    refused_derive = calls[4 + recalls]
    assert refused_derive["ok"] is False
    text = ledger.read_text()
    assert image not in text
    assert "secret" not in text
    assert "x" * 100 not in text  # the refused concept's text is not repeated

    heartbeat = next(line for line in lines if line["kind"] == "heartbeat")
    assert heartbeat["session"] == SESSION
    assert heartbeat["promotion_policy"] == "Swarm"
    assert set(heartbeat) >= LEDGER_KEYS

    assert set(stats) >= LEDGER_KEYS
    assert stats["ledger_path"] == str(ledger)
    assert stats["ledger_written_lines"] >= 9
    assert stats["ledger_dropped_lines"] == 0
    assert (
        stats["ledger_dropped_channel_full"] + stats["ledger_dropped_write_failed"]
        == stats["ledger_dropped_lines"]
    )


def test_m_sta_161_without_ledger_the_six_keys_are_absent(tmp_path: Path) -> None:
    async def main() -> dict[str, Any]:
        async with mcp_client(
            "serve",
            "--session",
            SESSION,
            command="lambo",
            env={"LCG_WORKSPACE": str(tmp_path)},
        ) as client:
            return structured(await client.call_tool("lambo_stats", {"agent_id": AGENT}))

    assert not LEDGER_KEYS & set(anyio.run(main))


WRITE_QUEUE_KEYS = {
    "write_queue_bound",
    "write_queue_lane_bound",
    "write_queue_measured",
    "write_queue_bound_source",
    "write_queue_items_per_sec",
    "write_queue_serial_items_per_sec",
    "write_queue_probe_serial_items_per_sec",
    "write_queue_probe_optimism",
    "write_queue_apply_samples",
    "write_queue_apply_ms_p50",
    "write_queue_apply_ms_p90",
    "write_queue_apply_ms_max",
    "write_queue_outstanding",
    "write_queue_accepted",
    "write_queue_applied",
    "write_queue_failed",
    "write_queue_abandoned",
    "write_queue_deferred",
    "write_queue_replayed",
    "write_queue_replay_owed",
    "write_queue_dropped",
    "write_queue_dropped_closed",
    "receipts_retained",
}


def test_m_sta_167_the_write_queue_keys_are_there_with_and_without_a_ledger(
    tmp_path: Path,
) -> None:
    """Unlike the ledger's six keys, the write queue's have no switch: a serve with
    `--ledger` and one without both carry every one of them (the keyword-only mode,
    match_strategy = "canonical", is refused at start-up, so it has no payload to check)."""

    async def main() -> list[dict[str, Any]]:
        async with serve(tmp_path / "ws", tmp_path / "calls.jsonl") as ledgered:
            with_ledger = structured(await ledgered.call_tool("lambo_stats", {"agent_id": AGENT}))
        async with mcp_client(
            "serve",
            "--session",
            SESSION,
            command="lambo",
            env={"LCG_WORKSPACE": str(tmp_path / "plain")},
        ) as plain:
            without = structured(await plain.call_tool("lambo_stats", {"agent_id": AGENT}))
        return [with_ledger, without]

    with_ledger, without = anyio.run(main)
    assert set(with_ledger) >= LEDGER_KEYS
    assert not LEDGER_KEYS & set(without)
    for payload in (with_ledger, without):
        assert set(payload) >= WRITE_QUEUE_KEYS, WRITE_QUEUE_KEYS - set(payload)


def test_m_sta_164_165_a_parked_writer_drops_and_counts_never_delaying_a_call(
    tmp_path: Path,
) -> None:
    """A FIFO nobody reads: the writer parks in its open, the queue (2 lines here) fills,
    and every further line is dropped as channel_full while the calls keep being answered."""
    fifo = tmp_path / "ledger.fifo"
    os.mkfifo(fifo, 0o600)

    async def main() -> list[dict[str, Any]]:
        async with serve(tmp_path / "ws", fifo, LCG_SERVE_LEDGER_QUEUE="2") as client:
            answers = []
            for _ in range(6):
                result = await client.call_tool("lambo_stats", {"agent_id": AGENT})
                assert result.is_error is False
                answers.append(structured(result))
            return answers

    answers = anyio.run(main)
    last = answers[-1]
    assert last["ledger_written_lines"] == 0
    # the six calls' lines (a lambo_stats's own is appended before its keys are read): the
    # queue's two waiting (the parked writer holds none), the other four dropped
    assert last["ledger_queued_lines"] == 2
    assert last["ledger_dropped_channel_full"] == 4
    assert last["ledger_dropped_write_failed"] == 0
    assert last["ledger_dropped_lines"] == 4


def test_a_ledger_path_that_cannot_be_opened_refuses_start_up(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir" / "calls.jsonl"
    done = subprocess.run(
        [str(CONSOLE_SCRIPTS / "lambo"), "serve", "--session", "s", "--ledger", str(missing)],
        capture_output=True,
        text=True,
        env=clean_env(LCG_WORKSPACE=str(tmp_path / "ws")),
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert "--ledger" in done.stderr
    assert str(missing) in done.stderr
    assert not (tmp_path / "ws" / ".lcg").exists()


def test_m_sta_166_an_http_serve_of_two_sessions_counts_each_sessions_lines(
    tmp_path: Path,
) -> None:
    """`lcg serve --http --ledger`: calls at /mcp and /mcp/s/other land in one file; each
    session's lambo_stats counts only its own lines once the serve holds two sessions."""
    ledger = tmp_path / "http.jsonl"
    served = HttpServe(
        tmp_path / "ws",
        "serve",
        "--http",
        "--session",
        SESSION,
        "--ledger",
        str(ledger),
        env={},
    )

    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        async with http_client(served.url) as own, http_client(f"{served.url}/s/other") as other:
            for _ in range(3):
                await own.call_tool("lambo_stats", {"agent_id": AGENT})
            await other.call_tool("lambo_recall", {"agent_id": AGENT, "query": "anything"})
            mine = structured(await own.call_tool("lambo_stats", {"agent_id": AGENT}))
            theirs = structured(await other.call_tool("lambo_stats", {"agent_id": AGENT}))
            return mine, theirs

    try:
        mine, theirs = anyio.run(main)
    finally:
        served.stop()
    wait_until(lambda: len(lines_of(ledger)) >= 6, "the six lines on disk")
    sessions = [line["session"] for line in lines_of(ledger) if line["kind"] != "heartbeat"]
    assert sessions.count(SESSION) == 4
    assert sessions.count("other") == 2
    # each payload counts its session's lines appended so far, its own call's included
    own_total = mine["ledger_written_lines"] + mine["ledger_queued_lines"]
    assert own_total == 4
    assert theirs["ledger_written_lines"] + theirs["ledger_queued_lines"] == 2


def test_forwarded_calls_are_written_by_the_holders_ledger(tmp_path: Path) -> None:
    """A second `lambo serve` of the same workspace forwards to the holder (ADR 0066): its
    calls are in the holder's ledger, and its lambo_stats reports the holder's counts."""
    workspace = tmp_path / "ws"
    ledger = tmp_path / "holder.jsonl"
    with runtime_dir() as runtime:
        env = serve_env(workspace, runtime)
        with bare_holder(workspace, env, tmp_path / "holder.log", "--ledger", str(ledger)):

            async def main() -> dict[str, Any]:
                async with mcp_client(
                    "serve", "--session", "demo", command="lambo", env=env
                ) as client:
                    await client.call_tool("lambo_recall", {"agent_id": OTHER, "query": "x"})
                    stats = await client.call_tool("lambo_stats", {"agent_id": OTHER})
                    return structured(stats)

            stats = anyio.run(main)
    lines = [line for line in lines_of(ledger) if line["kind"] != "heartbeat"]
    assert [line["tool"] for line in lines] == ["lambo_recall", "lambo_stats"]
    assert all(line["agent_id"] == OTHER for line in lines)
    assert stats["ledger_path"] == str(ledger)


def test_serve_ledger_setting_names_the_file_under_the_workspace(tmp_path: Path) -> None:
    """`[serve] ledger` (here LCG_SERVE_LEDGER) without the flag: a relative path is under the
    workspace directory."""
    workspace = tmp_path / "ws"

    async def main() -> dict[str, Any]:
        async with mcp_client(
            "serve",
            "--session",
            SESSION,
            command="lambo",
            env={"LCG_WORKSPACE": str(workspace), "LCG_SERVE_LEDGER": "calls.jsonl"},
        ) as client:
            return structured(await client.call_tool("lambo_stats", {"agent_id": AGENT}))

    stats = anyio.run(main)
    assert stats["ledger_path"] == str(workspace / "calls.jsonl")
    assert [line["tool"] for line in lines_of(workspace / "calls.jsonl")] == ["lambo_stats"]
