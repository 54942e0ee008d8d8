"""Faults around the stdio serves that forward to the holder of their store (issue 27, "Bad
input and faults"; ADR 0066, 0091): a forwarding serve that goes away with a write in flight,
the holder's own client gone mid-call, a write in flight when the holder is SIGKILLed and the
next serve started then, `lcg serve --mcp-stdio` holding and forwarding as `lambo serve`
does, and an HTTP serve holding the store for stdio serves and the CLI. Real processes (each
test starts two to four serves: the subject is the process boundary); the SDK's stdio and
HTTP clients, and raw pipes where a client must vanish mid-call."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.helpers.forwarding import (
    SESSION,
    bare_holder,
    derive,
    lease_record,
    published,
    refuses_oversized_then_serves,
    requests_waiting,
    runtime_dir,
    serve_env,
    settled,
)
from tests.helpers.http_serve import HttpServe, http_client
from tests.helpers.mcp_session import CONSOLE_SCRIPTS, mcp_client, text_of
from tests.helpers.memory_log import concepts_and_writes
from tests.helpers.raw_stdio import RawStdio, line, tool_call
from tests.helpers.service_process import DEADLINE, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss"),
]

LAMBO = ("serve", "--session", SESSION)
LCG_STDIO = ("serve", "--mcp-stdio", "--session", SESSION)


def lambo(env: dict[str, str]) -> AbstractAsyncContextManager[Client]:
    return mcp_client(*LAMBO, command="lambo", env=env)


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    """The process stopped (SIGSTOP): what is written to its sockets waits there unread."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):  # killed meanwhile
            os.kill(pid, signal.SIGCONT)


async def recalled(client: Client, query: str) -> str:
    found = await client.call_tool("lambo_recall", {"agent_id": "reader", "query": query})
    assert not found.is_error, found
    return text_of(found)


async def eventually_recalled(client: Client, content: str) -> None:
    with anyio.fail_after(DEADLINE):
        while content not in await recalled(client, content):
            await anyio.sleep(0.05)


def test_m_trn_033_a_forwarding_serve_killed_mid_call_still_has_its_write_applied_once(
    tmp_path: Path,
) -> None:
    """A forwarding serve writes a derive to the (stopped) holder and is SIGKILLed before any
    answer: the holder, let go, reads the request from the closed connection, admits and
    applies it, and its answer to nobody harms nothing. The write is there exactly once, every
    write of the session applied, and the holder serves on."""
    content = "written by a client that vanished mid-call"
    with runtime_dir() as runtime:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "holder.log") as holder:
            forward = published(tmp_path, holder.pid)["forward"]
            argv = [str(CONSOLE_SCRIPTS / "lambo"), *LAMBO]
            with RawStdio(tmp_path / "forwarder", argv, env) as gone:
                gone.initialize()
                gone.send(line(tool_call(1, "lambo_stats", {"agent_id": "gone"})) + b"\n")
                assert "result" in gone.read(), gone.log  # a pooled connection to the holder
                arguments = {
                    "agent_id": "gone",
                    "concepts": [{"content": content, "concept_type": "entity"}],
                }
                with stopped(holder.pid):
                    gone.send(line(tool_call(2, "lambo_derive", arguments)) + b"\n")
                    wait_until(lambda: requests_waiting(forward) >= 1, "the derive to be sent")
                    gone.proc.kill()
                    gone.proc.wait(DEADLINE)

            async def check() -> None:
                async with lambo(env) as reader:
                    await eventually_recalled(reader, content)
                    receipt = await derive(reader, "reader", "the holder serves on")
                    assert (await settled(reader, "reader", receipt))["receipt"][
                        "state"
                    ] == "applied"

            anyio.run(check)
        assert holder.returncode == 0, (tmp_path / "holder.log").read_text()
    found, states = concepts_and_writes(tmp_path, SESSION, content)
    assert found == 1
    assert states
    assert set(states) == {"applied"}, states


def test_m_trn_037_a_write_in_flight_at_the_holders_death_is_not_written_and_a_new_serve_holds(
    tmp_path: Path,
) -> None:
    """The holder is SIGKILLed with a forwarded derive unread in its socket: the derive gets
    the tool error saying nothing was read or written, and nothing is. The next serve started
    (not the forwarder) becomes the holder; the forwarder, never restarted, forwards to it,
    and the receipt it was acked before the crash resolves there."""
    lost = "a derive the dead holder never read"

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "first.log") as first:
            forward = published(tmp_path, first.pid)["forward"]
            async with lambo(env) as forwarder:
                acked = await derive(forwarder, "b", "acked before the crash")
                answers = []

                async def in_flight() -> None:
                    arguments = {
                        "agent_id": "b",
                        "concepts": [{"content": lost, "concept_type": "entity"}],
                    }
                    answers.append(await forwarder.call_tool("lambo_derive", arguments))

                with stopped(first.pid):
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(in_flight)
                        while requests_waiting(forward) < 1:
                            await anyio.sleep(0.01)
                        first.kill()
                (answer,) = answers
                assert answer.is_error, answer
                assert "nothing was read or written" in text_of(answer)
                first.wait(DEADLINE)
                with bare_holder(tmp_path, env, tmp_path / "second.log") as second:
                    state = (await settled(forwarder, "b", acked))["receipt"]["state"]
                    assert state in ("applied", "applied_after_restart"), state
                    assert "acked before the crash" in await recalled(forwarder, "crash")
                    assert lost not in await recalled(forwarder, lost)
                    assert lease_record(tmp_path)["pid"] == second.pid  # it did not take over
        assert first.returncode == -signal.SIGKILL

    with runtime_dir() as runtime:
        anyio.run(main, runtime)
    assert concepts_and_writes(tmp_path, SESSION, lost)[0] == 0


def test_m_trn_030_032_033_lcg_serve_mcp_stdio_holds_and_forwards_as_lambo_serve_does(
    tmp_path: Path,
) -> None:
    """Two `lcg serve --mcp-stdio` of one store: the first holds and publishes, the second
    forwards (its writes read back through either), and the operator's `lcg canon run` and
    `lcg call` go through the holder's `.lcg/service.sock`."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        async with (
            mcp_client(*LCG_STDIO, command="lcg", env=env) as first,
            mcp_client(*LCG_STDIO, command="lcg", env=env) as second,
        ):
            record = published(tmp_path)
            assert record["command"].startswith("lcg serve --mcp-stdio"), record
            receipt = await derive(second, "b", "forwarded by lcg serve")
            assert (await settled(second, "b", receipt))["receipt"]["state"] == "applied"
            assert "forwarded by lcg serve" in await recalled(first, "forwarded")
            for command in (
                ("canon", "run", "--session", SESSION, "--json"),
                (
                    "call",
                    "knowledge_add_episode",
                    '{"name": "n", "episode_body": "b", "group_id": "g"}',
                ),
            ):
                done = await anyio.run_process(
                    [str(CONSOLE_SCRIPTS / "lcg"), *command], env=env, check=False
                )
                stderr = done.stderr.decode()
                assert done.returncode == 0, (command, stderr)
                assert "goes through" in stderr, (command, stderr)
            assert lease_record(tmp_path)["pid"] == record["pid"]

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_trn_032_038_068_an_http_serve_holding_the_store_publishes_for_stdio_and_the_cli(
    tmp_path: Path,
) -> None:
    """`lcg serve --http` holds the store and publishes as a stdio holder does (ADR 0091): a
    `lambo serve` started beside it forwards every call to it (forwarding stays a stdio
    serve's), what it writes is read over HTTP, `lcg canon run` goes through the holder's
    `.lcg/service.sock`, its socket applies the 4 MiB line rule, and a clean stop removes both
    sockets."""
    workspace = tmp_path / "ws"

    async def main(runtime: Path, url: str) -> None:
        async with lambo(serve_env(workspace, runtime)) as stdio:
            receipt = await derive(stdio, "b", "forwarded to the HTTP holder")
            assert (await settled(stdio, "b", receipt))["receipt"]["state"] == "applied"
        async with http_client(url) as client:
            assert "forwarded to the HTTP holder" in await recalled(client, "forwarded")
        done = await anyio.run_process(
            [str(CONSOLE_SCRIPTS / "lcg"), "canon", "run", "--session", SESSION, "--json"],
            env=serve_env(workspace, runtime),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "goes through" in done.stderr.decode()

    with runtime_dir() as runtime:
        serve = HttpServe(
            workspace,
            "serve",
            "--http",
            "--session",
            SESSION,
            env={"XDG_RUNTIME_DIR": str(runtime)},
        )
        try:
            forward = Path(published(workspace, serve.proc.pid)["forward"])
            assert forward.parent == runtime / "lambo"
            anyio.run(main, runtime, serve.url)
            refuses_oversized_then_serves(str(forward))
        finally:
            assert serve.stop() == 0, serve.log
        assert not forward.exists()
        assert not (workspace / ".lcg" / "service.sock").exists()


def test_m_trn_033_037_the_holders_own_client_gone_mid_call_its_write_settles_then_a_takeover(
    tmp_path: Path,
) -> None:
    """The holder's own stdio client sends a derive and closes both pipes without reading
    the answer: the holder finishes the call, drops its answer, and exits cleanly (0, no
    traceback) handing the write on; the forwarder beside it, never restarted, takes the
    store over on its next calls and recalls the write, applied exactly once."""
    content = "sent by the holder's client just before it vanished"
    arguments = {"agent_id": "a", "concepts": [{"content": content, "concept_type": "entity"}]}

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        argv = [str(CONSOLE_SCRIPTS / "lambo"), *LAMBO]
        with RawStdio(tmp_path / "holder", argv, env) as holder:
            holder.initialize()
            published(tmp_path, holder.proc.pid)
            async with lambo(env) as forwarder:
                await recalled(forwarder, "anything")  # forwarded to the holder
                holder.send(line(tool_call(1, "lambo_derive", arguments)) + b"\n")
                assert holder.proc.stdin is not None
                assert holder.proc.stdout is not None
                holder.proc.stdin.close()
                holder.proc.stdout.close()
                assert holder.proc.wait(DEADLINE) == 0, holder.log
                assert "the client closed its end of the pipe" in holder.log
                with anyio.fail_after(DEADLINE):
                    while True:  # a call may meet the holder's going: the tool error, then on
                        found = await forwarder.call_tool(
                            "lambo_recall", {"agent_id": "b", "query": content}
                        )
                        if not found.is_error and content in text_of(found):
                            break
                        await anyio.sleep(0.05)
                assert lease_record(tmp_path)["pid"] != holder.proc.pid

    with runtime_dir() as runtime:
        anyio.run(main, runtime)
    found, states = concepts_and_writes(tmp_path, SESSION, content)
    assert found == 1
    assert set(states) == {"applied"}, states
