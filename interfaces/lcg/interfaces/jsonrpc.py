"""JSON-RPC 2.0 frames and error codes shared by the socket service, MCP and attached mode.

One line per frame (P-001). Failures of a method become `{code, message, data}` once, here,
whichever surface carried the call (P-002, P-003, P-009).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from lcg.domain.errors import Conflict, DomainError, ExtractorFailed, InvalidParams, NotFound
from lcg.interfaces.request_lines import MAX_REQUEST_BYTES, RequestId
from lcg.projections.damage import DamagedFile
from lcg.projections.faults import (
    CorruptEvent,
    Fenced,
    GroupBehind,
    LogBehindProjections,
    StorageFailure,
    VectorReadRefused,
)
from lcg.projections.wal.lease import WorkspaceBusy

if TYPE_CHECKING:
    from lcg.interfaces.workspace import WorkspaceClosed

# Fast start (ADR 0053): a client of the socket (`lcg call` beside `lcg serve`) needs the
# frames, not the failures of the workspace and the table, which import every layer; those are
# imported where a failure is turned into an error.

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602  # MCP: every invalid argument (P-010, ADR 0050); the socket: P-002
SERVER_ERROR = -32000  # every failure of a method, validation included (P-002)
UNAVAILABLE = -32001  # the workspace is not open: degraded or closed (P-003)
STORAGE_ERROR = -32002  # a file of the workspace cannot be used: the message names it (ADR 0019)
VECTOR_READ_REFUSED = (
    "store error: the vector read was refused because the query's vector no longer fits the"
    " index (the embedding contract changed, or the vector width differs); re-check the"
    " embedding contract (knowledge_status's embedding) and retry"
)
REQUEST_TOO_LARGE = "request too large (over 4 MiB)"  # seed 001 (M-TRN-063), ADR 0050

JsonObject = dict[str, Any]

log = logging.getLogger("lcg.jsonrpc")


class RpcError(Exception):
    """A JSON-RPC error object: what every surface reports for a failed call."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> JsonObject:
        error: JsonObject = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_json(cls, error: Any) -> RpcError:
        """Rebuild an error received over the socket; a malformed one is still an error."""
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            return cls(error["code"], str(error.get("message", "")), error.get("data"))
        return cls(SERVER_ERROR, f"malformed error from the service: {error!r}")


def request_too_large(size: int) -> RpcError:
    """The answer to a request line over the limit; logged at WARN with its size, never its
    content (M-TRN-062/063), by every transport that refuses one."""
    log.warning(
        "a request line of %d bytes is over the %d-byte (4 MiB) limit: discarded unread "
        "past the limit, answered -32600",
        size,
        MAX_REQUEST_BYTES,
    )
    return RpcError(
        INVALID_REQUEST,
        REQUEST_TOO_LARGE,
        {"kind": "request_too_large", "limit_bytes": MAX_REQUEST_BYTES},
    )


# What a client is told when another process holds the workspace's writer lease: nothing of
# the holder (pid, host, command), no path and no socket (M-ERR-002); the operator's log has
# them. Nothing is damaged, so no recovery is asked for.
HELD_ELSEWHERE = (
    "another process is writing this workspace, and only one may at a time: nothing was "
    "written, and nothing needs recovering; retry once that process has stopped, or reach "
    "the workspace through its socket service (--connect); the detail was logged"
)


# What a caller is told when this server lost its single-writer lease (another holder took
# it over): the class and that the detail was logged, never the lease's holder, epoch or
# expiry, which are not model-facing (M-ERR-020/021); the log has them.
LEASE_LOST = (
    "conflict: this server lost its single-writer lease, so nothing was written; the detail"
    " was logged"
)


def unavailable(reason: str, *, recovery: bool = True) -> RpcError:
    """P-003's -32001; `recovery` False when the workspace is only held by another writer."""
    prefix = "DB unavailable, recovery required" if recovery else "DB unavailable"
    return RpcError(UNAVAILABLE, f"{prefix}: {reason}", {"reason": reason})


def error_from_exception(error: BaseException) -> RpcError:
    """The JSON-RPC error of a failed call; the message names the field and the rule."""
    from lcg.interfaces.operations import UnknownMethod  # noqa: PLC0415 (ADR 0053)
    from lcg.interfaces.workspace import WorkspaceClosed  # noqa: PLC0415 (ADR 0053)
    from lcg.projections.runner import ProjectionError  # noqa: PLC0415 (ADR 0053)

    known = (
        error
        if isinstance(error, RpcError)
        else _storage_error(error) or _lease_lost(error) or _vector_refused(error)
    )
    if known is not None:
        return known
    if isinstance(error, UnknownMethod):
        return RpcError(
            SERVER_ERROR,
            f"IPC error: Method not found: {error.method}",
            {"kind": "method_not_found", "method": error.method},
        )
    if isinstance(error, DomainError):
        data: JsonObject = {"kind": _kind(error)}
        if error.field is not None:
            data["field"] = error.field
        if error.rule is not None:
            data["rule"] = error.rule
        return RpcError(SERVER_ERROR, error.message, data)
    if isinstance(error, ProjectionError):
        return RpcError(SERVER_ERROR, f"projection error: {error}", {"kind": "projection_error"})
    if isinstance(error, WorkspaceBusy | WorkspaceClosed | DamagedFile):
        return _not_open(error)
    log.error("unexpected failure", exc_info=error)
    return RpcError(
        SERVER_ERROR, f"internal error: {type(error).__name__}: {error}", {"kind": "internal"}
    )


def _not_open(error: WorkspaceBusy | WorkspaceClosed | DamagedFile) -> RpcError:
    if isinstance(error, WorkspaceBusy):
        log.warning("%s", error)  # the holder, for the operator only (M-ERR-002)
        return unavailable(HELD_ELSEWHERE, recovery=False)
    return unavailable(str(error))


def _lease_lost(error: BaseException) -> RpcError | None:
    if not isinstance(error, Fenced):
        return None
    log.warning("the writer lease was lost: %s", error)
    return RpcError(SERVER_ERROR, LEASE_LOST, {"kind": "conflict"})


def _vector_refused(error: BaseException) -> RpcError | None:
    if not isinstance(error, VectorReadRefused):
        return None
    log.warning("%s", error)  # the widths, for the operator only (M-ERR-023)
    return RpcError(SERVER_ERROR, VECTOR_READ_REFUSED, {"kind": "vector_read_refused"})


def _storage_error(error: BaseException) -> RpcError | None:
    """A file that cannot be used, with what names it: file, group, seq."""
    from lcg.commands.graph_file import ForeignProjections  # noqa: PLC0415 (ADR 0053)

    data: JsonObject
    if isinstance(error, StorageFailure):
        data = {"kind": "storage_failure", "file": str(error.path), "reason": error.reason}
    elif isinstance(error, CorruptEvent):
        data = {
            "kind": "corrupt_event",
            "file": str(error.path),
            "group_id": error.group_id,
            "seq": error.seq,
        }
    elif isinstance(error, GroupBehind):
        data = {"kind": "group_behind", "group_id": error.group_id}
    elif isinstance(error, LogBehindProjections):
        data = {"kind": "log_behind", "file": str(error.wal)}
    elif isinstance(error, ForeignProjections):
        data = {"kind": "foreign_projections"}
    else:
        return None
    return RpcError(STORAGE_ERROR, f"storage error: {error}", data)


def _kind(error: DomainError) -> str:
    if isinstance(error, InvalidParams):
        return "invalid_params"
    if isinstance(error, NotFound):
        return "not_found"
    if isinstance(error, Conflict):
        return "conflict"
    if isinstance(error, ExtractorFailed):
        return "extractor_failed"
    return "refused"


def valid_id(value: Any) -> bool:
    """JSON-RPC 2.0: an id is a string, an integer or null (not an object, a boolean or 1.5)."""
    return value is None or (isinstance(value, str | int) and not isinstance(value, bool))


def request_problem(request: Any) -> str | None:
    """Why a decoded line is not a JSON-RPC 2.0 request (answered -32600, nothing runs)."""
    if not isinstance(request, dict):
        return "Invalid Request: expected a JSON-RPC 2.0 object"
    if request.get("jsonrpc") != "2.0":
        return 'Invalid Request: "jsonrpc" must be "2.0"'
    if not isinstance(request.get("method"), str):
        return 'Invalid Request: "method" must be a string'
    if not valid_id(request.get("id")):
        return 'Invalid Request: "id" must be a string, an integer or null'
    return None


def encode(frame: Mapping[str, Any]) -> bytes:
    """One frame as one line."""
    return orjson.dumps(frame) + b"\n"


# A write's `{group: last seq}` travels beside its result (ADR 0086): the socket's response
# frame member, and the MCP result's `_meta` key. A client passes it as `min_seq` to read
# its writes on another node.
WRITTEN_FIELD = "written"
# A request's own min_seq {group: seq}, beside its params (ADR 0086; lcg.interfaces.read_after).
MIN_SEQ_FIELD = "min_seq"
WRITTEN_META = "lcg/written"


def result_frame(request_id: RequestId, result: Any) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_frame(request_id: RequestId, error: RpcError) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_json()}


def request_frame(request_id: RequestId, method: str, params: Mapping[str, Any]) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}


def progress_frame(method: str, processed: int, total: int) -> JsonObject:
    """A socket progress line (P-007): not a JSON-RPC response, no id, result or error."""
    return {
        "type": "progress",
        "phase": method,
        "processed": processed,
        "total": total,
        "message": f"{method}: {processed} of {total}",
    }


def is_progress(frame: Any) -> bool:
    return isinstance(frame, dict) and frame.get("type") == "progress"
