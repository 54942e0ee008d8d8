"""Layered sessions over real MCP stdio, the layer held by another process (seed 001 "Layered
sessions", "Writing to a layer"; ADR 0080): `lambo serve --session general` holds the store,
`lambo serve --session lambo --layer general` forwards every call to it with its layers, and
the holder merges the session and the layer. Real processes, the SDK's stdio client; and the
same over Streamable HTTP, where `/mcp/s/general` is the layer's own unlayered endpoint."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.helpers.forwarding import (
    lease_record,
    published,
    requests_waiting,
    runtime_dir,
    serve_env,
)
from tests.helpers.http_serve import HttpServe, http_client
from tests.helpers.mcp_session import CONSOLE_SCRIPTS, mcp_client, structured, text_of
from tests.helpers.service_process import DEADLINE, terminate

pytestmark = pytest.mark.slow

AGENT = "gpt-6.1-sol"
RULING = "worktree branches are always rebased onto origin main first"
PROJECT = "release notes are drafted before the tag"


def project(env: dict[str, str], *args: str) -> AbstractAsyncContextManager[Client]:
    """An SDK client of `lambo serve --session lambo --layer general` (forwarding or holding)."""
    return mcp_client(
        "serve", "--session", "lambo", "--layer", "general", *args, command="lambo", env=env
    )


def general_holder(workspace: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """`lambo serve --session general` holding the store, with no client of its own."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [str(CONSOLE_SCRIPTS / "lambo"), "serve", "--session", "general"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
        )
    published(workspace, proc.pid)
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    if proc.poll() is None:
        try:
            proc.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            terminate(proc)


async def call(client: Client, name: str, **arguments: Any) -> Any:
    answer = await client.call_tool(name, {"agent_id": AGENT, **arguments})
    assert not answer.is_error, text_of(answer)
    return answer


async def applied(client: Client, receipt: str) -> None:
    stats = await call(client, "lambo_stats", receipt=receipt, wait_ms=20_000)
    assert structured(stats)["receipt"]["state"] == "applied", structured(stats)


def test_m_rec_240_243_m_lay_001_017_018_m_instr_014_a_layer_held_by_another_process(
    tmp_path: Path,
) -> None:
    """Through the forwarding serve: its instructions carry the layered paragraph; a write
    scoped to general is acked as written to general (line and session), and the write
    without scope stays in lambo; the merged recall names each hit's session, the layer hit
    `from general`, and scope = "general" reads the layer alone with its one warning."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        holder = general_holder(tmp_path, env, tmp_path / "holder.log")
        try:
            async with project(env) as client:
                assert lease_record(tmp_path)["pid"] == holder.pid  # the layer is held elsewhere
                instructions = client.instructions or ""
                assert instructions.startswith("Lambo agentic graph memory for session 'lambo'.")
                assert (
                    "lambo_recall in session 'lambo' also searches its shared layers: general."
                    in instructions
                )
                ruling = [{"content": RULING, "concept_type": "logic"}]
                ack = await call(client, "lambo_derive", concepts=ruling, scope="general")
                assert structured(ack)["session"] == "general"
                assert (
                    "written to session 'general'; writes to different sessions have no "
                    "ordering between them" in text_of(ack)
                )
                await applied(client, structured(ack)["receipt"])
                mine = [{"content": PROJECT, "concept_type": "logic"}]
                own = await call(client, "lambo_derive", concepts=mine)
                assert "session" not in structured(own)
                await applied(client, structured(own)["receipt"])

                merged = await call(client, "lambo_recall", query="release notes worktree branches")
                hits = structured(merged)["hits"]
                assert {(h["content"], h["session"]) for h in hits} == {
                    (RULING, "general"),
                    (PROJECT, "lambo"),
                }
                layer_hit = next(h for h in hits if h["session"] == "general")
                assert f"id {layer_hit['node_id'][:8]}, from general)" in text_of(merged)

                alone = await call(client, "lambo_recall", query="worktree", scope="general")
                assert [h["session"] for h in structured(alone)["hits"]] == ["general"]
                assert "from general" not in text_of(alone)
                assert structured(alone)["warnings"] == [
                    "recall: these hits are from layer general, and their ids belong to it; "
                    'pass scope = "general" to lambo_inspect to inspect one'
                ]
                inspected = await call(
                    client, "lambo_inspect", focus=layer_hit["node_id"], scope="general"
                )
                assert RULING in text_of(inspected)
        finally:
            stop(holder)

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss")
def test_m_rec_252_the_process_holding_the_layer_sigkilled_mid_call_no_hang(
    tmp_path: Path,
) -> None:
    """The process holding general (and so the store) is SIGKILLed while a merged recall is
    in flight through the project's serve: the call answers at once with the tool error that
    nothing was read or written (no hang), and the next call, the project's serve now
    holding the store, reads the session and the layer again (ADR 0080)."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        holder = general_holder(tmp_path, env, tmp_path / "holder.log")
        try:
            async with project(env, "--agent", "project") as client:
                ruling = [{"content": RULING, "concept_type": "logic"}]
                ack = await call(client, "lambo_derive", concepts=ruling, scope="general")
                await applied(client, structured(ack)["receipt"])
                os.kill(holder.pid, signal.SIGSTOP)  # the recall below reaches it and waits
                errors: list[str] = []

                async def in_flight() -> None:
                    answer = await client.call_tool(
                        "lambo_recall", {"agent_id": AGENT, "query": "worktree"}
                    )
                    assert answer.is_error, answer
                    errors.append(text_of(answer))

                with anyio.fail_after(DEADLINE):
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(in_flight)
                        forward = lease_record(tmp_path)["forward"]
                        while requests_waiting(forward) < 1:  # written to the stopped holder
                            await anyio.sleep(0.01)
                        holder.kill()
                assert len(errors) == 1
                assert "nothing was read or written" in errors[0], errors[0]
                again = await call(client, "lambo_recall", query="worktree")
                assert [h["session"] for h in structured(again)["hits"]] == ["general"]
                assert lease_record(tmp_path)["pid"] != holder.pid
        finally:
            holder.wait(DEADLINE)

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_rec_250_m_instr_021_over_http_the_serves_session_is_layered_general_s_path_is_not(
    tmp_path: Path,
) -> None:
    """`lambo serve --session lambo --transport http` with `[serve] layers = ["general"]` in
    lcg.toml: `/mcp` is layered (instructions, merged hits carrying session); `/mcp/s/general`
    is general's own unlayered endpoint, whose hits omit session. Also M-CFG-021: `[serve]
    layers` layers the session."""
    (tmp_path / "lcg.toml").write_text('[serve]\nlayers = ["general"]\n', encoding="utf-8")
    served = HttpServe(
        tmp_path, "serve", "--session", "lambo", "--transport", "http", command="lambo", env={}
    )

    async def main() -> None:
        async with http_client(served.url) as client:
            assert "also searches its shared layers: general." in (client.instructions or "")
            ruling = [{"content": RULING, "concept_type": "logic"}]
            ack = await call(client, "lambo_derive", concepts=ruling, scope="general")
            await applied(client, structured(ack)["receipt"])
            merged = await call(client, "lambo_recall", query="worktree branches")
            assert [h["session"] for h in structured(merged)["hits"]] == ["general"]
        async with http_client(f"{served.base}/mcp/s/general") as direct:
            assert "shared layers" not in (direct.instructions or "")
            plain = await call(direct, "lambo_recall", query="worktree branches")
            hits = structured(plain)["hits"]
            assert [h["content"] for h in hits] == [RULING]
            assert "session" not in hits[0]
            assert "from general" not in text_of(plain)

    try:
        anyio.run(main)
    finally:
        assert served.stop() == 0, served.log


def test_m_lay_023_024_m_rec_251_the_holders_layer_rate_through_a_forwarding_serve(
    tmp_path: Path,
) -> None:
    """The process holding general runs with per_session_rps 0.1 and a burst of 1; the
    project's serve forwards to it. One write scoped to general is applied, the next is a
    tool error saying general is over its rate (retry shortly), and merged recalls, which
    draw on no layer's rate, still read both sessions (ADR 0088)."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        limited = {**env, "LCG_SERVE_PER_SESSION_RPS": "0.1", "LCG_SERVE_BURST": "1"}
        holder = general_holder(tmp_path, limited, tmp_path / "holder.log")
        try:
            async with project(env) as client:
                assert lease_record(tmp_path)["pid"] == holder.pid
                ruling = [{"content": RULING, "concept_type": "logic"}]
                ack = await call(client, "lambo_derive", concepts=ruling, scope="general")
                await applied(client, structured(ack)["receipt"])
                again = await client.call_tool(
                    "lambo_derive",
                    {"agent_id": AGENT, "concepts": ruling, "scope": "general"},
                )
                assert again.is_error
                assert text_of(again).startswith(
                    "scope: layer general is not serving right now (it is over its rate:"
                    " per_session_rps 0.1 writes a second, burst 1;"
                ), text_of(again)
                mine = [{"content": PROJECT, "concept_type": "logic"}]
                own = await call(client, "lambo_derive", concepts=mine)
                await applied(client, structured(own)["receipt"])
                for _ in range(3):
                    merged = await call(client, "lambo_recall", query="release notes worktree")
                    sessions = {h["session"] for h in structured(merged)["hits"]}
                    assert sessions == {"lambo", "general"}
        finally:
            stop(holder)

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_lay_004_a_credential_that_does_not_reach_the_layer_is_refused_generically(
    tmp_path: Path,
) -> None:
    """`[serve] layers = ["general"]` and a credential whose `sessions` is `["lambo"]`: over
    `/mcp` its session is not layered for it (no layer paragraph, no layer hits), and a call
    scoped to general is refused as any scope outside its session is, writing nothing there;
    a credential reaching both reads and writes general as before."""
    tokens = {name: secrets.token_hex(16) for name in ("both", "project")}
    (tmp_path / "lcg.toml").write_text(
        f"""[serve]
layers = ["general"]

[[serve.credential]]
name = "both"
token = "{tokens["both"]}"
scopes = ["memory"]

[[serve.credential]]
name = "project"
token = "{tokens["project"]}"
scopes = ["memory"]
sessions = ["lambo"]
""",
        encoding="utf-8",
    )
    served = HttpServe(
        tmp_path, "serve", "--session", "lambo", "--transport", "http", command="lambo", env={}
    )
    ruling = [{"content": RULING, "concept_type": "logic"}]

    async def main() -> None:
        async with http_client(served.url, tokens["both"]) as both:
            ack = await call(both, "lambo_derive", concepts=ruling, scope="general")
            await applied(both, structured(ack)["receipt"])
        async with http_client(served.url, tokens["project"]) as project:
            assert "shared layers" not in (project.instructions or "")
            hits = structured(await call(project, "lambo_recall", query="worktree branches"))
            assert hits["hits"] == []
            for name, arguments in (
                ("lambo_derive", {"concepts": ruling, "scope": "general"}),
                ("lambo_recall", {"query": "worktree branches", "scope": "general"}),
                ("lambo_saints", {"scope": "general"}),
            ):
                answer = await project.call_tool(name, {"agent_id": AGENT, **arguments})
                assert answer.is_error
                assert text_of(answer).endswith(
                    "scope must name this session or one of its layers: lambo"
                ), text_of(answer)
        async with http_client(served.url, tokens["both"]) as both:
            merged = await call(both, "lambo_recall", query="worktree branches")
            assert [h["content"] for h in structured(merged)["hits"]] == [RULING]

    try:
        anyio.run(main)
    finally:
        assert served.stop() == 0, served.log
