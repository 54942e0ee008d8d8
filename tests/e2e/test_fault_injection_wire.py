"""Fault and fuzz lines on the wire (issue 24, items 7 and 8), against real processes over real
pipes and a real socket: every request line a client sends is answered with its id whenever
the id can be read, an oversized line costs bounded memory and is refused with the seed's
error (M-TRN-060..067, M-LIM-027), and the session goes on serving (ADR 0050).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.raw_stdio import RawStdio, line, tool_call
from tests.helpers.service_process import Frame, ServiceProcess

pytestmark = pytest.mark.slow

FIVE_MIB = 5 * 1024 * 1024
TOO_LARGE = "request too large (over 4 MiB)"  # seed 001, M-TRN-063


@dataclass(frozen=True)
class Fuzz:
    """A request whose one argument no parser here accepts as it stands."""

    name: str
    value: bytes


FUZZ = (
    Fuzz("deep_nesting_200", b"[" * 200 + b"]" * 200),
    Fuzz("deep_nesting_2000", b"[" * 2000 + b"]" * 2000),
    Fuzz("lone_surrogate", b'"\\ud800"'),
    Fuzz("invalid_utf8", b'"\xff\xfe"'),
    Fuzz("nan", b"NaN"),
    Fuzz("overflow_1e400", b"1e400"),
)
CASES = [
    pytest.param(fuzz, where, id=f"{fuzz.name}-id-{where}")
    for fuzz in FUZZ
    for where in ("first", "last")
]


def _request_id(fuzz: Fuzz, where: str) -> str | int:
    """A string id when it comes first, an integer when it comes after params."""
    index = FUZZ.index(fuzz)
    return f"fuzz-{index}" if where == "first" else 1000 + index


def _fuzz_line(method: bytes, params: bytes, request_id: str | int, where: str) -> bytes:
    rid = b'"id":' + json.dumps(request_id).encode()
    body = b'"method":' + method + b',"params":' + params
    members = [rid, body] if where == "first" else [body, rid]
    return b'{"jsonrpc":"2.0",' + b",".join(members) + b"}"


def _mcp_line(fuzz: Fuzz, where: str) -> bytes:
    arguments = b'{"group_id":"fuzz","bad":' + fuzz.value + b"}"
    params = b'{"name":"knowledge_get_episodes","arguments":' + arguments + b"}"
    return _fuzz_line(b'"tools/call"', params, _request_id(fuzz, where), where)


def _socket_line(fuzz: Fuzz, where: str) -> bytes:
    params = b'{"group_id":"fuzz","bad":' + fuzz.value + b"}"
    return _fuzz_line(b'"knowledge_get_episodes"', params, _request_id(fuzz, where), where)


@pytest.fixture(scope="module")
def stdio_answers(tmp_path_factory: pytest.TempPathFactory) -> dict[object, Frame]:
    """One MCP stdio server sent every fuzz line, then end of input: its frames by id."""
    with RawStdio(tmp_path_factory.mktemp("fuzz") / "ws") as server:
        server.initialize()
        lines = [_mcp_line(fuzz, where) for fuzz in FUZZ for where in ("first", "last")]
        server.send(b"".join(one + b"\n" for one in lines))
        code, rest = server.finish()
        assert code == 0, server.log
    frames = [json.loads(one) for one in rest.splitlines()]
    answers: dict[object, Frame] = {}
    for frame in frames:
        answers.setdefault(frame.get("id"), frame)
    return answers


@pytest.fixture(scope="module")
def socket_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    process = ServiceProcess(tmp_path_factory.mktemp("fuzz-socket") / "ws")
    assert process.wait_ready()["healthy"] is True, process.log
    yield process
    process.stop()


@pytest.mark.parametrize(("fuzz", "where"), CASES)
def test_issue_24_a_malformed_mcp_request_is_answered_with_its_id(
    stdio_answers: dict[object, Frame], fuzz: Fuzz, where: str
) -> None:
    """Deep nesting, a lone surrogate, bytes that are not UTF-8, NaN or 1e400 inside the
    arguments: the error carries the request's id, read from the start or the end of the
    line, so the client is not left waiting for an answer that never comes."""
    request_id = _request_id(fuzz, where)
    assert request_id in stdio_answers, sorted(map(str, stdio_answers))
    error = stdio_answers[request_id]["error"]
    assert error["code"] in (-32700, -32600), error
    assert error["message"].startswith(("Parse error: ", "Invalid Request: ")), error


@pytest.mark.parametrize(("fuzz", "where"), CASES)
def test_issue_24_a_malformed_socket_request_is_answered_with_its_id(
    socket_service: ServiceProcess, fuzz: Fuzz, where: str
) -> None:
    """The same lines as socket methods: the answer (an error) carries the request's id, and
    the connection goes on serving."""
    with socket_service.connect() as client:
        client.send_line(_socket_line(fuzz, where))
        answer = client.read()
        assert answer["id"] == _request_id(fuzz, where), answer
        assert "error" in answer, answer
        assert client.result("health_check")["healthy"] is True


def _big_call(request_id: object, *, id_last: bool = False) -> bytes:
    """A knowledge_add_episode over 5 MiB, its id before or after params."""
    frame = tool_call(
        request_id,
        "knowledge_add_episode",
        {"name": "big", "episode_body": "q" * FIVE_MIB, "group_id": "big"},
    )
    if id_last:
        frame = {key: frame[key] for key in ("jsonrpc", "method", "params", "id")}
    return line(frame)


def test_m_trn_061_066_an_oversized_stdio_line_is_refused_with_its_id_and_serving_goes_on(
    tmp_path: Path,
) -> None:
    """M-TRN-061..064/066: a line over 4 MiB is discarded unread up to its newline, answered
    -32600 `request too large (over 4 MiB)` with its id, whether id comes before or after
    params; it was logged with its size, never its content; nothing was written, and the
    next request on the same pipe is served normally."""
    with RawStdio(tmp_path / "ws") as server:
        server.initialize()
        first = _big_call(5)
        server.send(first + b"\n")
        refused = server.read()
        assert refused == {
            "jsonrpc": "2.0",
            "id": 5,
            "error": {
                "code": -32600,
                "message": TOO_LARGE,
                "data": {"kind": "request_too_large", "limit_bytes": 4 * 1024 * 1024},
            },
        }
        server.send(_big_call("after-params", id_last=True) + b"\n")
        assert server.read()["id"] == "after-params"
        server.send(line(tool_call(7, "knowledge_get_episodes", {"group_id": "big"})) + b"\n")
        served = server.read()
        assert served["id"] == 7
        assert served["result"]["structuredContent"]["count"] == 0
        code, rest = server.finish()
        assert (code, rest) == (0, b"")
        assert f"a request line of {len(first)} bytes is over" in server.log
        assert "qqqqqqqq" not in server.log


def test_m_trn_065_an_oversized_line_whose_id_cannot_be_read_is_answered_with_id_null(
    tmp_path: Path,
) -> None:
    """M-TRN-065: an id that sits between two large values (neither end shows it), or a
    line that is no JSON at all, is answered with id null; serving goes on."""
    three_mib = "q" * (3 * 1024 * 1024)
    hidden = {"jsonrpc": "2.0", "method": "tools/call", "a": three_mib, "id": 8, "b": three_mib}
    with RawStdio(tmp_path / "ws") as server:
        server.initialize()
        server.send(line(hidden) + b"\n" + b"x" * FIVE_MIB + b"\n")
        for _ in range(2):
            refused = server.read()
            assert (refused["id"], refused["error"]["code"]) == (None, -32600)
            assert refused["error"]["message"] == TOO_LARGE
        server.send(line(tool_call(9, "knowledge_get_episodes", {})) + b"\n")
        assert server.read()["id"] == 9
        assert server.finish() == (0, b"")


def test_m_trn_067_an_oversized_line_cut_off_by_end_of_input_is_not_answered(
    tmp_path: Path,
) -> None:
    """M-TRN-067: a line over 4 MiB with no newline before the end of input gets no answer;
    the server exits cleanly (exit code 0)."""
    with RawStdio(tmp_path / "ws") as server:
        assert server.initialize()["id"] == "init"
        server.send(_big_call(11))
        code, rest = server.finish()
        assert (code, rest) == (0, b""), server.log


def test_m_trn_060_the_socket_refuses_an_oversized_line_the_same_way(
    socket_service: ServiceProcess,
) -> None:
    """M-TRN-060 on the socket (ADR 0050): the same limit, error and id as over stdio, and
    the connection goes on serving."""
    params = {"name": "big", "episode_body": "q" * FIVE_MIB, "group_id": "big"}
    request = {"jsonrpc": "2.0", "method": "knowledge_add_episode", "params": params, "id": "s"}
    with socket_service.connect() as client:
        client.send_line(json.dumps(request).encode())
        refused = client.read()
        assert (refused["id"], refused["error"]["message"]) == ("s", TOO_LARGE)
        assert client.result("knowledge_get_episodes", {"group_id": "big"})["count"] == 0
