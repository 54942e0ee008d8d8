"""Several stdio serves of one session: the first holds the store and publishes a socket, the
later ones forward every call to it, and one of them takes over when it dies (seed 001, "More
than one client on one machine"; ADR 0066). Real processes, the SDK's stdio client."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from lcg.interfaces.forward_place import socket_name
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
from tests.helpers.mcp_session import CONSOLE_SCRIPTS, mcp_client, structured, text_of
from tests.helpers.service_process import DEADLINE, ServiceProcess, wait_until

pytestmark = pytest.mark.slow

SERVE = ("serve", "--session", SESSION)


def lambo(env: dict[str, str], *args: str) -> AbstractAsyncContextManager[Client]:
    """An SDK client of `lambo serve --session demo ARGS` (a context manager)."""
    return mcp_client(*SERVE, *args, command="lambo", env=env)


async def recall(client: Client, agent_id: str, query: str) -> str:
    found = await client.call_tool("lambo_recall", {"agent_id": agent_id, "query": query})
    assert not found.is_error, found
    return text_of(found)


async def stats(client: Client, agent_id: str) -> dict[str, object]:
    answer = await client.call_tool("lambo_stats", {"agent_id": agent_id})
    assert not answer.is_error, answer
    return structured(answer)


async def off_yet_serving(env: dict[str, str], reason: str) -> None:
    """With forwarding off for `reason`, the first serve still serves its own client (and
    its lease record says why), while a later serve's calls are refused saying it."""
    async with lambo(env) as first:
        assert reason in lease_record(Path(env["LCG_WORKSPACE"]))["forward_off"]
        receipt = await derive(first, "a", "own client")
        assert (await settled(first, "a", receipt))["receipt"]["state"] == "applied"
        async with lambo(env) as second:
            refused = await second.call_tool("lambo_recall", {"agent_id": "b", "query": "x"})
            assert refused.is_error
            assert reason in text_of(refused)


def test_m_trn_030_031_032_033_034_035_036_three_serves_of_one_session_share_one_memory(
    tmp_path: Path,
) -> None:
    """The first serve holds the store; two later ones start (no flag, no config) and forward
    every call: each writes, each reads what the others wrote once its receipt settled, and
    lambo_stats through a forwarder reports the holder's process (its receipt epoch)."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        async with lambo(env) as first, lambo(env) as second, lambo(env) as third:
            record = lease_record(tmp_path)
            assert record["session"] == SESSION
            assert Path(record["forward"]).parent == runtime / "lambo"
            receipts = []
            for client, name in ((first, "a"), (second, "b"), (third, "c")):
                receipts.append((client, name, await derive(client, name, f"schema of {name}")))
            for client, name, receipt in receipts:
                assert (await settled(client, name, receipt))["receipt"]["state"] == "applied"
            for client in (first, second, third):
                found = await recall(client, "reader", "schema")
                assert all(f"schema of {name}" in found for name in "abc"), found
            epochs = {(await stats(client, "reader"))["epoch"] for client in (first, second, third)}
            assert len(epochs) == 1  # one process applied and reports them all
            assert all(receipt.split(".")[1] in epochs for *_, receipt in receipts)

    with runtime_dir() as runtime:
        anyio.run(main, runtime)
    assert lease_record(tmp_path) == {}  # the last serve out released the lease


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss")
def test_m_trn_037_sigkill_of_the_holder_tells_calls_in_flight_then_a_forwarder_takes_over(
    tmp_path: Path,
) -> None:
    """Two forwarders have calls in flight when the holder is SIGKILLed: each call gets the
    tool error saying nothing was read or written; the next call of each works again, one of
    them now the holder (under its own --agent), and every receipt acked before resolves."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "holder.log") as holder:
            async with lambo(env, "--agent", "hub-b") as b, lambo(env, "--agent", "hub-c") as c:
                acked = [
                    (b, "b", await derive(b, "b", "before b")),
                    (c, "c", await derive(c, "c", "before c")),
                ]
                os.kill(holder.pid, signal.SIGSTOP)  # the calls below reach it and wait
                errors: list[str] = []

                async def in_flight(client: Client, agent: str) -> None:
                    answer = await client.call_tool(
                        "lambo_recall", {"agent_id": agent, "query": "before"}
                    )
                    assert answer.is_error, answer
                    errors.append(text_of(answer))

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(in_flight, b, "b")
                    tasks.start_soon(in_flight, c, "c")
                    forward = lease_record(tmp_path)["forward"]
                    while requests_waiting(forward) < 2:  # both written to the stopped holder
                        await anyio.sleep(0.01)
                    holder.kill()
                assert len(errors) == 2
                for error in errors:
                    assert "nothing was read or written" in error, error
                    assert "memory returns once a `lambo serve` holds the session" in error
                acked.append((b, "b", await derive(b, "b", "after b")))
                acked.append((c, "c", await derive(c, "c", "after c")))
                record = lease_record(tmp_path)
                assert record["command"].endswith(("--agent hub-b", "--agent hub-c")), record
                for client, agent, receipt in acked:
                    state = (await settled(client, agent, receipt))["receipt"]["state"]
                    assert state in ("applied", "applied_after_restart"), state
                found = await recall(c, "reader", "before after")
                assert all(text in found for text in ("before b", "after c")), found
        assert holder.returncode == -signal.SIGKILL

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_trn_031_two_serves_racing_to_hold_exactly_one_holds(tmp_path: Path) -> None:
    """Three serves started at once: one holds (the lease names it), the others forward."""
    with runtime_dir() as runtime:
        env = serve_env(tmp_path, runtime)
        logs = [tmp_path / f"serve{i}.log" for i in range(3)]
        procs = []
        for log in logs:
            with log.open("wb") as err:
                procs.append(
                    subprocess.Popen(
                        [str(CONSOLE_SCRIPTS / "lambo"), *SERVE],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        env=env,
                    )
                )
        try:
            record = published(tmp_path)
            holders = [p for p in procs if p.pid == record["pid"]]
            assert len(holders) == 1
            forwarding = "forwarding every call to"
            wait_until(
                lambda: sum(forwarding in log.read_text() for log in logs) == 2,
                "the two others to forward",
            )
            held = [log for log in logs if "holding " in log.read_text()]
            assert len(held) == 1
        finally:
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.close()
            for proc in procs:
                assert proc.wait(DEADLINE) == 0


def test_m_trn_001_lcg_canon_run_and_the_other_commands_go_through_a_lambo_serve_holding_it(
    tmp_path: Path,
) -> None:
    """The operator's CLI beside a stdio holder (issue 27 item 1): `lcg canon run`, `lcg gc
    run`, `lcg replay` and a write by `lcg call` go through the holder's `.lcg/service.sock`
    instead of being refused."""
    commands = [
        ("canon", "run", "--session", SESSION, "--json"),
        ("gc", "run", "--session", SESSION, "--dry-run", "--json"),
        ("call", "knowledge_add_episode", '{"name": "n", "episode_body": "b", "group_id": "g"}'),
        ("replay", "--group", "g", "--force-clear", "--json"),
    ]
    with runtime_dir() as runtime:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "holder.log"):
            for command in commands:
                done = subprocess.run(
                    [str(CONSOLE_SCRIPTS / "lcg"), *command],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=DEADLINE,
                    check=False,
                )
                assert done.returncode == 0, (command, done.stderr)
                assert "goes through" in done.stderr, (command, done.stderr)
                assert done.stdout.startswith("{"), (command, done.stdout)


def test_m_trn_043_044_a_socket_directory_not_0700_is_refused_and_the_holder_serves_on(
    tmp_path: Path,
) -> None:
    """A socket directory of mode 755: the holder binds nothing there (and says why in its
    lease record and log) yet serves its own client; a later serve's calls are refused
    naming the mode. A missing directory is created 0700."""

    with runtime_dir() as runtime:
        (runtime / "lambo").mkdir(mode=0o755)
        os.chmod(runtime / "lambo", 0o755)  # noqa: S103 (the mode refused)
        anyio.run(off_yet_serving, serve_env(tmp_path, runtime), "has mode 755, not 700")
        assert not list((runtime / "lambo").iterdir())
    with (
        runtime_dir() as runtime,
        bare_holder(tmp_path, serve_env(tmp_path, runtime), tmp_path / "h.log"),
    ):
        assert (runtime / "lambo").stat().st_mode & 0o777 == 0o700


def test_m_trn_045_a_serve_refuses_to_forward_into_a_directory_that_became_open(
    tmp_path: Path,
) -> None:
    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "holder.log"):
            os.chmod(runtime / "lambo", 0o755)  # noqa: S103 (the mode refused)
            async with lambo(env) as second:
                refused = await second.call_tool("lambo_recall", {"agent_id": "b", "query": "x"})
                assert refused.is_error
                assert "refusing to forward" in text_of(refused)
                assert "has mode 755, not 700" in text_of(refused)

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory away needs root")
def test_m_trn_044_a_socket_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    with runtime_dir() as runtime:
        (runtime / "lambo").mkdir(mode=0o700)
        os.chown(runtime / "lambo", 4321, 4321)
        with bare_holder(tmp_path, serve_env(tmp_path, runtime), tmp_path / "holder.log"):
            off = lease_record(tmp_path)["forward_off"]
            assert "is owned by uid 4321, not by this user" in off
            assert "is owned by uid 4321" in (tmp_path / "holder.log").read_text()


def test_m_trn_051_a_stale_socket_file_is_cleared_by_the_next_holder(tmp_path: Path) -> None:
    """A crashed holder's socket files (the forwarding one and `.lcg/service.sock`) left in
    place: the next holder starts, clears them under the lease, and a forwarder reaches it."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "first.log") as first:
            path = Path(published(tmp_path, first.pid)["forward"])
            first.kill()
            first.wait(DEADLINE)
        assert path.exists()
        assert (tmp_path / ".lcg" / "service.sock").exists()
        async with lambo(env) as holder, lambo(env) as forwarder:
            assert lease_record(tmp_path)["forward"] == str(path)
            receipt = await derive(forwarder, "b", "after the crash")
            assert (await settled(forwarder, "b", receipt))["receipt"]["state"] == "applied"
            assert "after the crash" in await recall(holder, "a", "crash")

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_trn_046_a_socket_path_over_104_bytes_turns_forwarding_off_only(tmp_path: Path) -> None:
    with runtime_dir() as base:
        runtime = base / ("r" * (104 - len(str(base))))
        runtime.mkdir()
        env = serve_env(tmp_path, runtime)
        anyio.run(off_yet_serving, env, "over the 104-byte limit")
        with bare_holder(tmp_path, env, tmp_path / "holder.log"):  # and its log says why
            logged = (tmp_path / "holder.log").read_text()
            assert "forwarding is off (this serve still serves its own client)" in logged
            assert "over the 104-byte limit" in logged


def test_m_trn_041_042_048_049_without_xdg_the_holder_publishes_in_tmp_lambo_uid_and_is_found(
    tmp_path: Path,
) -> None:
    """A holder without XDG_RUNTIME_DIR (TMPDIR set, and ignored) publishes in
    /tmp/lambo-<uid>; a serve whose XDG_RUNTIME_DIR points elsewhere still forwards to it,
    since the name (session and store) is the same. Also OQ-41: the forwarding serve finds
    the holder through the socket path the holder published in its lease record."""

    async def main(runtime: Path) -> None:
        holder_env = serve_env(tmp_path, None, TMPDIR=str(runtime))
        with bare_holder(tmp_path, holder_env, tmp_path / "holder.log") as holder:
            forward = Path(published(tmp_path, holder.pid)["forward"])
            assert forward.parent == Path("/tmp") / f"lambo-{os.geteuid()}"  # noqa: S108
            assert forward.parent.stat().st_mode & 0o777 == 0o700
            async with lambo(serve_env(tmp_path, runtime)) as forwarder:
                receipt = await derive(forwarder, "b", "across directories")
                assert (await settled(forwarder, "b", receipt))["receipt"]["state"] == "applied"
            assert not (runtime / "lambo").exists()

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_trn_032_a_serve_of_another_session_forwards_to_the_holder_of_its_store(
    tmp_path: Path,
) -> None:
    """The store's holder serves every session of it (ADR 0067): a serve of session "other"
    on a store held by a serve of "demo" forwards its calls naming "other"; each session
    sees its own writes only."""

    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        async with (
            lambo(env) as demo,
            mcp_client("serve", "--session", "other", command="lambo", env=env) as other,
        ):
            assert lease_record(tmp_path)["session"] == SESSION
            assert "session 'other'" in (other.instructions or "")
            receipt = await derive(other, "b", "only in other")
            assert (await settled(other, "b", receipt))["receipt"]["state"] == "applied"
            assert (await stats(other, "b"))["session"] == "other"
            assert "only in other" in await recall(other, "b", "only in other")
            assert "only in other" not in await recall(demo, "a", "only in other")

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_trn_050_deleting_the_socket_cuts_forwarders_off_and_the_holder_serves_on(
    tmp_path: Path,
) -> None:
    async def main(runtime: Path) -> None:
        env = serve_env(tmp_path, runtime)
        async with lambo(env) as holder:
            Path(lease_record(tmp_path)["forward"]).unlink()
            async with lambo(env) as forwarder:
                cut = await forwarder.call_tool("lambo_recall", {"agent_id": "b", "query": "x"})
                assert cut.is_error
                assert "nothing was read or written" in text_of(cut)
            receipt = await derive(holder, "a", "still here")
            assert (await settled(holder, "a", receipt))["receipt"]["state"] == "applied"

    with runtime_dir() as runtime:
        anyio.run(main, runtime)


def test_m_trn_068_the_forwarding_endpoint_refuses_a_request_over_4_mib_and_goes_on(
    tmp_path: Path,
) -> None:
    """The socket a forwarder speaks to applies the stdio rule: the line is discarded unread,
    answered -32600 with its id, and the connection serves the next request."""
    with runtime_dir() as runtime:
        env = serve_env(tmp_path, runtime)
        with bare_holder(tmp_path, env, tmp_path / "holder.log") as holder:
            refuses_oversized_then_serves(published(tmp_path, holder.pid)["forward"])


def test_m_trn_049_a_serve_refuses_to_forward_to_a_socket_named_for_another_store(
    tmp_path: Path,
) -> None:
    """A lease record naming a socket whose name is not this store's (for the holder's
    session): the serve forwards nothing there and its calls say why."""
    workspace = tmp_path / "ws"

    async def main(runtime: Path) -> None:
        async with lambo(serve_env(workspace, runtime)) as client:
            refused = await client.call_tool("lambo_recall", {"agent_id": "b", "query": "x"})
            assert refused.is_error
            assert "so it serves another store" in text_of(refused)

    with runtime_dir() as runtime:
        directory = runtime / "lambo"
        directory.mkdir(mode=0o700)
        elsewhere = directory / socket_name(tmp_path / "another-store", SESSION)
        (workspace / ".lcg").mkdir(parents=True, mode=0o700)
        with (workspace / ".lcg" / "writer.lock").open("w", encoding="utf-8") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            record = {"pid": os.getpid(), "host": "h", "command": "pytest", "since": "now"}
            lock.write(json.dumps({**record, "session": SESSION, "forward": str(elsewhere)}))
            lock.flush()
            anyio.run(main, runtime)


def test_m_trn_032_a_lambo_serve_beside_the_socket_service_forwards_to_it(
    tmp_path: Path,
) -> None:
    """`lcg serve` (the socket service) holding the store publishes the forwarding socket
    too, so a stdio serve started beside it forwards instead of failing every call."""
    workspace = tmp_path / "ws"

    async def main(runtime: Path) -> None:
        async with lambo(serve_env(workspace, runtime)) as client:
            receipt = await derive(client, "b", "beside the socket service")
            assert (await settled(client, "b", receipt))["receipt"]["state"] == "applied"

    with runtime_dir() as runtime:
        service = ServiceProcess(
            workspace, env={"XDG_RUNTIME_DIR": str(runtime)}, args=("--session", SESSION)
        )
        try:
            service.wait_ready()
            forward = Path(published(workspace, service.proc.pid)["forward"])
            assert forward.parent == runtime / "lambo"
            anyio.run(main, runtime)
        finally:
            assert service.stop() == 0, service.own_log
        assert not forward.exists()
