"""Attached mode's client (lcg.interfaces.attached) against scripted and real socket services.

Checklist: K-DBM-009..022, K-PRG-010, K-CFG-001, P-013, P-014, P-015.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from lcg.interfaces.attached import (
    AttachedClient,
    AttachedUnavailable,
    Connection,
    unix_dialer,
)
from lcg.interfaces.config import attached_call_timeout_ms
from lcg.interfaces.jsonrpc import JsonObject, RpcError
from tests.helpers.fake_service import FakeConnection, FakeService, Frame
from tests.helpers.service_process import ServiceProcess

EPISODE = {"name": "once", "episode_body": "must not be applied twice", "group_id": "g"}


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)


def answer_status(request: Frame, connection: FakeConnection) -> None:
    connection.answer(request, {"connected": True})


def test_timeout_env_parsing_defaults_to_30000_ms() -> None:
    """K-DBM-008, K-CFG-001, P-015: missing, unparsable, 0 or negative mean 30000.
    Also A-15: the "30s" default of a variable named `_MS` is the number 30000 (ms)."""
    for raw in (None, "", "abc", "0", "-5", "1.5"):
        env = {} if raw is None else {"LCG_ATTACHED_CALL_TIMEOUT_MS": raw}
        assert attached_call_timeout_ms(env) == 30_000, raw
    assert attached_call_timeout_ms({"LCG_ATTACHED_CALL_TIMEOUT_MS": " 250 "}) == 250


def test_no_listener_at_start_up_is_a_clear_error(tmp_path: Path) -> None:
    """P-013, K-DBM-021: dialling once at start-up fails at once with the seed's message."""
    path = tmp_path / "service.sock"

    async def main() -> None:
        with pytest.raises(AttachedUnavailable) as failed:
            await AttachedClient(path, 30_000).start()
        assert str(failed.value).startswith(f"failed to connect to attached service at '{path}'")
        assert "Ensure a liminis-context-graph socket service is running at this path" in str(
            failed.value
        )

    run(main)


def test_a_silent_service_times_out_the_call_and_the_next_call_reconnects(
    tmp_path: Path,
) -> None:
    """K-DBM-012/013/019: only real silence trips the per-line timeout; the call fails
    cleanly (never blocks) and the next call dials a fresh connection."""

    def silent_status(request: Frame, connection: FakeConnection) -> None:
        if request["params"].get("silent"):
            return
        connection.answer(request, {"ok": True})

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", silent_status) as fake:
            client = AttachedClient(fake.path, 1000)
            await client.start()
            started = time.monotonic()
            with pytest.raises(RpcError) as failed:
                await client.call("knowledge_status", {"silent": True})
            assert "timed out after 1000ms with no response" in failed.value.message
            assert time.monotonic() - started < 10
            assert await client.call("knowledge_status", {}) == {"ok": True}
            assert len(fake.connections) == 2
            await client.aclose()

    run(main)


def test_progress_lines_rearm_the_idle_timer(tmp_path: Path) -> None:
    """K-DBM-010/011, K-PRG-010: a call that streams a progress line every 100 ms for 1.2 s
    succeeds under a 500 ms idle timeout, and every line reaches the progress sink."""

    def streaming(request: Frame, connection: FakeConnection) -> None:
        for done in range(1, 13):
            time.sleep(0.1)  # the service being slow, not test synchronisation
            connection.send({"type": "progress", "processed": done, "total": 12})
        connection.answer(request, {"success": True})

    async def main() -> None:
        seen: list[JsonObject] = []

        async def sink(frame: JsonObject) -> None:
            seen.append(frame)

        with FakeService(tmp_path / "s.sock", streaming) as fake:
            client = AttachedClient(fake.path, 500)
            await client.start()
            started = time.monotonic()
            assert await client.call("knowledge_rebuild_from_wal", {}, sink) == {"success": True}
            assert time.monotonic() - started > 1.0  # twice the timeout, never silent for 0.5 s
            assert [frame["processed"] for frame in seen] == list(range(1, 13))
            assert fake.wait_for_request("knowledge_rebuild_from_wal")["params"] == {
                "_progress_token": True
            }
            await client.aclose()

    run(main)


def test_a_stale_reply_is_discarded(tmp_path: Path) -> None:
    """P-013: a terminal line whose id is not the current call's is skipped."""

    def stale_first(request: Frame, connection: FakeConnection) -> None:
        connection.send({"jsonrpc": "2.0", "id": -1, "result": {"stale": True}})
        connection.answer(request, {"fresh": True})

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", stale_first) as fake:
            client = AttachedClient(fake.path, 5_000)
            await client.start()
            assert await client.call("knowledge_status", {}) == {"fresh": True}
            await client.aclose()

    run(main)


def test_service_errors_come_back_as_the_same_error_object(tmp_path: Path) -> None:
    """P-009: a JSON-RPC error from the service is raised with its code, message and data."""

    def refuse(request: Frame, connection: FakeConnection) -> None:
        error = {"code": -32000, "message": "name: is required", "data": {"field": "name"}}
        connection.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", refuse) as fake:
            client = AttachedClient(fake.path, 5_000)
            await client.start()
            with pytest.raises(RpcError) as failed:
                await client.call("knowledge_assert_entity", {})
            assert failed.value.to_json() == {
                "code": -32000,
                "message": "name: is required",
                "data": {"field": "name"},
            }
            await client.aclose()

    run(main)


class _BrokenOnce:
    """A dialer whose first `failures` connections fail every write (a dead peer)."""

    def __init__(self, path: Path, failures: int) -> None:
        self.dial_real = unix_dialer(path)
        self.failures = failures
        self.dials = 0

    async def __call__(self) -> Connection:
        self.dials += 1
        connection = await self.dial_real()
        if self.dials <= self.failures:
            return _FailingWrites(connection)
        return connection


class _FailingWrites:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    async def send(self, data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    async def receive(self) -> bytes:
        return await self.connection.receive()

    async def aclose(self) -> None:
        await self.connection.aclose()


def test_a_failed_write_is_retried_once_on_a_fresh_connection(tmp_path: Path) -> None:
    """K-DBM-014/015: the service dropped the idle connection, so writing the next request
    fails (a broken pipe); the client re-dials and writes it once more; the service
    receives it exactly once and the call succeeds."""

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", answer_status) as fake:
            client = AttachedClient(fake.path, 5_000)
            await client.start()
            fake.connections[0].drop()
            assert await client.call("knowledge_status", {}) == {"connected": True}
            assert fake.methods().count("knowledge_status") == 1
            assert len(fake.connections) == 2
            await client.aclose()

    run(main)


def test_the_write_retry_happens_exactly_once(tmp_path: Path) -> None:
    """K-DBM-016, P-014: when the retried write fails too, the call fails with both causes
    and no third connection is dialled."""

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", answer_status) as fake:
            dialer = _BrokenOnce(fake.path, failures=10)
            client = AttachedClient(fake.path, 5_000, dial=dialer)
            with pytest.raises(RpcError) as failed:
                await client.call("knowledge_status", {})
            assert "attached socket write failed (" in failed.value.message
            assert "reconnected but retry write also failed" in failed.value.message
            assert dialer.dials == 2
            assert "knowledge_status" not in fake.methods()

    run(main)


def test_a_break_after_the_write_is_not_retried_and_reaches_the_service_once(
    tmp_path: Path,
) -> None:
    """K-DBM-017/018/019/020: the service takes the write and then drops the connection;
    the call fails with "connection lost mid-call", is never re-sent, and the next call
    reconnects."""

    def crash_on_write(request: Frame, connection: FakeConnection) -> None:
        if request["method"] == "knowledge_add_episode":
            connection.drop()
        else:
            connection.answer(request, {"ok": True})

    async def main() -> None:
        with FakeService(tmp_path / "s.sock", crash_on_write) as fake:
            client = AttachedClient(fake.path, 5_000)
            await client.start()
            with pytest.raises(RpcError) as failed:
                await client.call("knowledge_add_episode", EPISODE)
            assert "connection lost mid-call" in failed.value.message
            assert await client.call("knowledge_status", {}) == {"ok": True}
            assert fake.methods().count("knowledge_add_episode") == 1
            assert len(fake.connections) == 2
            await client.aclose()

    run(main)


def test_a_failed_reconnect_is_a_clear_error_and_a_later_call_reconnects(
    tmp_path: Path,
) -> None:
    """K-DBM-021/022: with no listener the call fails at once (never hangs); once a service
    listens at the path again, calls succeed without restarting the client."""
    path = tmp_path / "s.sock"

    async def main() -> None:
        fake = FakeService(path, answer_status)
        client = AttachedClient(path, 5_000)
        await client.start()
        fake.close()
        with pytest.raises(RpcError) as failed:
            await client.call("knowledge_status", {})
        assert "Ensure a liminis-context-graph socket service is running" in failed.value.message
        with pytest.raises(RpcError):
            await client.call("knowledge_status", {})
        with FakeService(path, answer_status):
            assert await client.call("knowledge_status", {}) == {"connected": True}
        await client.aclose()

    run(main)


@pytest.mark.slow
def test_killing_the_real_service_mid_call_fails_the_call_and_never_double_applies(
    tmp_path: Path,
) -> None:
    """K-DBM-017/018/019/020/022 against `lcg serve`: the service is stopped, the request is
    written, the service is killed; the call fails with "connection lost mid-call". After a
    restart the next call reconnects, and the lost write was not applied twice."""
    workspace = tmp_path / "ws"
    first = ServiceProcess(workspace)
    first.wait_ready()
    written = anyio.Event()

    class SignalWrites:
        def __init__(self, connection: Connection) -> None:
            self.connection = connection

        async def send(self, data: bytes) -> None:
            await self.connection.send(data)
            if b"knowledge_add_episode" in data:
                written.set()

        async def receive(self) -> bytes:
            return await self.connection.receive()

        async def aclose(self) -> None:
            await self.connection.aclose()

    dial_real = unix_dialer(first.socket_path)

    async def dial() -> Connection:
        return SignalWrites(await dial_real())

    async def main() -> None:
        client = AttachedClient(first.socket_path, 30_000, dial=dial)
        await client.start()
        os.kill(first.proc.pid, signal.SIGSTOP)
        outcome: list[BaseException] = []

        async def lose() -> None:
            try:
                await client.call("knowledge_add_episode", EPISODE)
            except RpcError as error:
                outcome.append(error)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lose)
            with anyio.fail_after(30):
                await written.wait()
            first.kill()  # SIGKILL works on a stopped process
        assert len(outcome) == 1
        assert "connection lost mid-call" in str(outcome[0])
        second = ServiceProcess(workspace)
        try:
            second.wait_ready()
            episodes = await client.call("knowledge_get_episodes", {"group_id": "g"})
            assert episodes["count"] <= 1  # never applied twice (here: never read at all)
        finally:
            await client.aclose()
            second.stop()

    run(main)
