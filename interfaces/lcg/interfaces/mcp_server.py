"""MCP over stdio: every visible operation of the table as a tool (the only `mcp` import).

Built on the SDK's low-level `Server`, its documented way of serving explicit JSON schemas:
each tool's schema is its pydantic model's, with the real bounds. A call goes to a Backend:
this process's Service (standalone) or the socket service (attached). Results carry
`structuredContent` and the same JSON as text (P-009); failures are `isError` results
carrying `{code, message, data}`; an unadvertised tool is METHOD_NOT_FOUND (P-011).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from importlib import metadata
from typing import Any

import anyio
import mcp_types as types
import orjson
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from lcg.commands.writer import recording_writes
from lcg.domain.errors import DomainError, ExtractorFailed
from lcg.domain.ids import DEFAULT_GROUP
from lcg.interfaces.attached import ProgressSink
from lcg.interfaces.backends import Backend
from lcg.interfaces.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    WRITTEN_META,
    JsonObject,
    RpcError,
    error_from_exception,
    request_too_large,
    valid_id,
)
from lcg.interfaces.operations import AnyOperation, Scope
from lcg.interfaces.read_after import MIN_SEQ_META, reading_after, request_min_seq
from lcg.interfaces.request_lines import Oversized, RequestId, request_id_of_line
from lcg.interfaces.scopes import CLOSE, Visibility
from lcg.interfaces.stdio_pipe import read_lines, write_all
from lcg.projections.extraction.sampling import (
    CURRENT_SAMPLER,
    Answered,
    InputNeeded,
    SampledAnswer,
    SamplingRequest,
)
from lcg.projections.extraction.sampling import (
    NAME as SAMPLING,
)

NAME = "liminis-context-graph"
INSTRUCTIONS = (
    "lcg is an event-sourced knowledge graph: assert entities and relationships, add "
    "episodes, read them back by group, and rebuild a group from its write-ahead log."
)
MEMORY_INSTRUCTIONS = (  # seed 001, "How the server introduces itself" (M-INSTR-003)
    "Lambo agentic graph memory for session '{session}'. Call lambo_recall before acting on a "
    "task\nto load relevant prior memory, lambo_derive and lambo_record_action to write what "
    "you\nlearned and did, lambo_reserve before editing a shared concept, and lambo_inspect /"
    "\nlambo_saints / lambo_stats to look around. A concept is one fact, stated atomically "
    "and\nshort, such as a decision with its reason; it is not a log line or a paragraph, and"
    "\nactivity goes to lambo_record_action. When a write rests on a ruling or decision "
    "recall\nshowed you, cite it by its id (the 8 hex characters recall shows) in depends_on:"
    "\nlambo_record_action's, or the concept's on lambo_derive. When a write shows an existing"
    "\nconcept to be wrong, name it the same way in against. Every tool takes your agent_id:"
    "\nuse one stable id for as long as you run, never one per call, task or topic: your "
    "model or client id\n(<your-model-id>), with a stable instance suffix if several of you "
    "run at once. It is\ncaller-asserted and unverified. Work is recorded under it, so a "
    "stable id keeps\nattribution whole. Soft locks are held under it: distinct ids contend "
    "for a node, and\ncallers sharing an id share its locks and can release each other's, "
    "so concurrent agents\nthat must keep out of each other's edits need distinct stable "
    "ids. created_at is\nserver-stamped: do not send a client flush timestamp. lambo_derive "
    "and lambo_record_action\nmay take optional RFC3339 event_time for historical "
    "about-time, such as a commit or\ndocument date; omit it for a live fact, which is about "
    "now. Ordering is yours to manage,\nand writes are applied in the BACKGROUND: "
    "lambo_derive and lambo_record_action return once\nyour input is validated and ordered, "
    "and their ack carries a receipt id. Their outcome\narrives on your next tool response. "
    "If you need a write visible to the very next read,\ncall lambo_stats with that receipt "
    "and a wait_ms first; otherwise carry on — writes you\nsend one after another are "
    "applied in that order (two you fire at once have no order to\nkeep)."
)
LAYERED_INSTRUCTIONS = (  # seed 001: the paragraph a layered session appends (M-INSTR-014..020)
    "lambo_recall in session '{session}' also searches its shared layers: {layers}. Every recall"
    " hit\nnames the session it is from (structuredContent hits[].session, and 'from <session>'"
    " in a\nlayer hit's block), and its id belongs to that session: pass the same scope (scope ="
    '\n"{layer}") to lambo_inspect to inspect a hit from that layer. Pass scope = "{layer}" to'
    '\nlambo_recall to read that layer alone, or scope = "{session}" for this session alone.'
    " Writes\ngo to session '{session}' unless you pass scope: write a ruling or preference that"
    ' applies in\nevery project with scope = "{layer}", and project facts, file actions and'
    " decisions without\na scope. A write's depends_on must name concepts in the session it"
    " writes to, and a write\ninto a layer refuses relative file paths. Writes to different"
    " sessions have no ordering\nbetween them. lambo_reserve and lambo_saints take the same"
    " scope, and lambo_stats finds a\nreceipt from any of them."
)
DRAIN_SECONDS = 30.0  # at end of input, how long calls in flight may still finish

log = logging.getLogger("lcg.mcp")


def tool_of(operation: AnyOperation) -> types.Tool:
    """The MCP tool of one operation: the seed's name, the model's schema, read-only hint."""
    return types.Tool(
        name=operation.name,
        description=operation.description,
        input_schema=operation.input_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=operation.read_only,
            destructive_hint=False if operation.read_only else None,
        ),
    )


def _requested_min_seq(meta: Any) -> dict[str, int] | None:
    """The request's `_meta["lcg/min_seq"]`, checked (ADR 0086); None when not given."""
    value = None if meta is None else dict(meta).get(MIN_SEQ_META)
    if value is None:
        return None
    try:
        return request_min_seq(value)
    except DomainError as error:
        raise error_from_exception(error) from error


def _result(payload: JsonObject, *, is_error: bool = False) -> types.CallToolResult:
    text = orjson.dumps(payload).decode()
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=orjson.loads(text),
        is_error=is_error,
    )


def _tool_error(error: RpcError) -> types.CallToolResult:
    """A knowledge tool's failure as an isError result (P-009). Every invalid argument,
    missing (P-010), of the wrong type, out of range or refused by a rule, carries -32602
    over MCP; the socket reports the same refusal as -32000 (P-002, ADR 0050)."""
    payload = error.to_json()
    if (error.data or {}).get("kind") == "invalid_params":
        payload["code"] = INVALID_PARAMS
    return _result(payload, is_error=True)


def _memory_result(payload: JsonObject) -> types.CallToolResult:
    """A lambo tool's answer as the seed shows it: the text first, the structured content;
    a write dropped at a bound is an answer, not an error (M-DER-094)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(payload["text"]))],
        structured_content=payload["structuredContent"],
        is_error=False,
    )


def _memory_error(error: RpcError) -> types.CallToolResult:
    """A lambo tool's refusal: a short reason, never internal detail (M-ERR-001..003)."""
    kind = (error.data or {}).get("kind")
    if kind == "internal":
        text = (
            "internal error: the call had no effect beyond anything already written; the "
            "detail was logged"
        )
    elif kind == "storage_failure":
        text = "store error: the store refused the write; the detail was logged"
    elif kind == "vector_read_refused":
        text = (
            "store error: the vector read was refused because the query's vector no longer"
            " fits the index (the embedding contract changed, or the vector width differs);"
            " re-check the session's embedding contract (lambo_stats) and retry"
        )
    else:
        text = error.message
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def instructions_for(visibility: Visibility, session: str, layers: tuple[str, ...] = ()) -> str:
    """What the server tells the model at initialize: the seed 001 text naming the session
    when the memory tools are served (alone, exactly that text: M-INSTR-003), with the layered
    paragraph when the session has layers (M-INSTR-014), followed by the knowledge graph's
    sentence when knowledge tools are served too."""
    tools = visibility.tools()
    parts = []
    if any(op.scope is Scope.MEMORY for op in tools):
        parts.append(MEMORY_INSTRUCTIONS.format(session=session))
        if layers:
            parts.append(
                LAYERED_INSTRUCTIONS.format(
                    session=session, layers=", ".join(layers), layer=layers[0]
                )
            )
    if not parts or any(op.scope is not Scope.MEMORY for op in tools):
        parts.append(INSTRUCTIONS)
    return "\n\n".join(parts)


class LcgMcpServer:
    """The tools of one MCP server process and what each call does."""

    def __init__(
        self,
        backend: Backend,
        visibility: Visibility,
        *,
        exit_on_close: bool = False,
        session: str = DEFAULT_GROUP,
        name: str | None = None,
        layers: tuple[str, ...] = (),
    ) -> None:
        self.backend = backend
        self.visibility = visibility
        self.exit_on_close = exit_on_close  # standalone: a successful close ends the process
        self.close_request_id: types.RequestId | None = None
        operations = visibility.tools()
        self._operations = {operation.name: operation for operation in operations}
        self._tools = [tool_of(operation) for operation in operations]
        self._required = {
            tool.name: list(tool.input_schema.get("required", [])) for tool in self._tools
        }
        self.server: Server[Any] = Server(
            name or NAME,  # serverInfo's name: lcg's, or the one `lambo serve` goes by
            version=_version(),
            instructions=instructions_for(visibility, session, layers),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        name = params.name
        if name not in self._operations:  # outside the scopes, or close when attached (P-011)
            raise MCPError(code=types.METHOD_NOT_FOUND, message=f"Unknown tool: '{name}'")
        arguments = dict(params.arguments or {})
        memory = self._operations[name].scope is Scope.MEMORY
        missing = [field for field in self._required[name] if arguments.get(field) is None]
        if missing:  # P-010
            error = RpcError(
                INVALID_PARAMS,
                f"Missing required argument(s) for '{name}': {', '.join(missing)}",
                {"kind": "invalid_params", "field": missing[0], "rule": "is required"},
            )
            return _memory_error(error) if memory else _tool_error(error)
        token = (params.meta or {}).get("progress_token")
        sink = None if token is None else _progress_sink(ctx)
        arguments.update({k: v for k, v in _chosen(params).items() if k not in arguments})
        bound = CURRENT_SAMPLER.set(_ClientSampler(ctx, params.input_responses))
        written: dict[str, int] = {}
        try:
            wanted = _requested_min_seq(params.meta)
            # the worker thread's context is copied from here: it notes the writes in
            # `written` and waits for `wanted` before a read (ADR 0086)
            with recording_writes(written), reading_after(wanted):
                payload = await self.backend.call(name, arguments, sink)
        except RpcError as error:
            needed = error.__cause__
            if isinstance(needed, InputNeeded):  # the 2026-07-28 protocol: ask, then retry
                return _input_required(needed)
            return _memory_error(error) if memory else _tool_error(error)
        finally:
            CURRENT_SAMPLER.reset(bound)
        if name == CLOSE and self.exit_on_close:
            self.close_request_id = ctx.request_id
        answer = _memory_result(payload) if memory else _result(payload)
        if written:  # beside the result, never in it (ADR 0086): {group: last seq}
            answer.meta = {WRITTEN_META: written}
        return answer

    async def serve_stdio(self, wire_in: int, wire_out: int) -> None:
        """Serve over the claimed stdio fds (stdio_pipe.claimed_stdio) until end of input, or
        until a close was answered."""
        exchange = _Exchange()
        async with anyio.create_task_group() as tasks:
            to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](
                16
            )
            to_client, from_server = anyio.create_memory_object_stream[SessionMessage](16)
            tasks.start_soon(_read_messages, wire_in, to_server, to_client.clone(), exchange)
            tasks.start_soon(
                self._write_messages, wire_out, from_server, exchange, tasks.cancel_scope
            )
            await self.server.run(
                from_client, to_client, self.server.create_initialization_options()
            )

    async def _write_messages(
        self,
        wire_out: int,
        messages: ObjectReceiveStream[SessionMessage],
        exchange: _Exchange,
        scope: anyio.CancelScope,
    ) -> None:
        gone = False  # the client closed its end: answers are dropped, calls still settle
        async with messages:
            async for item in messages:
                message = item.message
                if not gone:
                    data = message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    try:
                        await write_all(wire_out, data.encode())
                    except (BrokenPipeError, ConnectionResetError):
                        gone = True
                        log.info(
                            "the client closed its end of the pipe: its answers are dropped; "
                            "the calls it sent still finish, and what they wrote is kept"
                        )
                exchange.answered(message)
                closed = self.close_request_id
                if (
                    closed is not None
                    and isinstance(message, types.JSONRPCResponse)
                    and message.id == closed
                ):
                    scope.cancel()  # the close was answered: end the serve loop (P-016)
                    return


class _Exchange:
    """The client's requests that still await a response, so that end of input lets them
    finish (a write the client asked for is answered, not cancelled)."""

    def __init__(self) -> None:
        self._pending: set[types.RequestId] = set()
        self._settled = anyio.Event()
        self._settled.set()

    def received(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            if not self._pending:
                self._settled = anyio.Event()
            self._pending.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and (
            message.method == "notifications/cancelled"
        ):
            self._forget((message.params or {}).get("requestId"))

    def answered(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._forget(message.id)

    def _forget(self, request_id: Any) -> None:
        self._pending.discard(request_id)
        if not self._pending:
            self._settled.set()

    async def settle(self) -> None:
        """Wait until every request read so far was answered (bounded by the caller)."""
        while self._pending:
            await self._settled.wait()


class _ClientSampler:
    """The MCP client's model for one tools/call (`[extraction] extractor = "sampling"`,
    ADR 0044); called from the call's worker thread. On a handshake protocol each request is
    sent to the client in the middle of the call; on the 2026-07-28 protocol the answers are
    those the client's retry carries, and the requests without one raise InputNeeded, which
    the call answers as input_required."""

    def __init__(
        self, ctx: ServerRequestContext[Any], responses: types.InputResponses | None
    ) -> None:
        self.ctx = ctx
        self.responses = responses or {}

    def __call__(
        self, requests: Sequence[SamplingRequest], answered: Answered
    ) -> list[SampledAnswer]:
        session = self.ctx.session
        if not session.check_client_capability(
            types.ClientCapabilities(sampling=types.SamplingCapability())
        ):
            raise DomainError(
                'extraction.extractor: "sampling" asks the MCP client\'s own model, and this'
                " client did not declare the sampling capability; nothing was written",
                field="extraction.extractor",
                rule="sampling needs a client that declares the sampling capability",
            )
        if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return self._carried(requests, answered)
        answers = []
        for request in requests:
            answers.append(anyio.from_thread.run(self._ask, request))
            answered(len(answers))
        return answers

    def _carried(
        self, requests: Sequence[SamplingRequest], answered: Answered
    ) -> list[SampledAnswer]:
        missing = [r for r in requests if r.key not in self.responses]
        if missing:
            raise InputNeeded(missing)
        answers = [_answer(self.responses[r.key]) for r in requests]
        answered(len(answers))
        return answers

    async def _ask(self, request: SamplingRequest) -> SampledAnswer:
        try:
            with warnings.catch_warnings():  # deprecated as of 2026-07-28 (SEP-2577)
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self.ctx.session.create_message(
                    **_sampling_params(request), related_request_id=self.ctx.request_id
                )
        except MCPError as error:
            raise ExtractorFailed(
                SAMPLING, f"the client refused sampling/createMessage: {error}"
            ) from None
        return _answer(result)


def _sampling_params(request: SamplingRequest) -> dict[str, Any]:
    return {
        "messages": [
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=request.user_prompt)
            )
        ],
        "system_prompt": request.system_prompt,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "include_context": "none",
    }


def _answer(result: types.InputResponse) -> SampledAnswer:
    content = getattr(result, "content", None)
    if isinstance(result, types.CreateMessageResult) and isinstance(content, types.TextContent):
        return SampledAnswer(content.text, result.model)
    raise ExtractorFailed(SAMPLING, "the client's model answered no text")


def _input_required(needed: InputNeeded) -> types.InputRequiredResult:
    """The requests as input_required, with the defaults the round chose as request_state."""
    return types.InputRequiredResult(
        input_requests={
            r.key: types.CreateMessageRequest(
                params=types.CreateMessageRequestParams(**_sampling_params(r))
            )
            for r in needed.requests
        },
        request_state=orjson.dumps({"chosen": needed.chosen}).decode(),
    )


def _chosen(params: types.CallToolRequestParams) -> dict[str, str]:
    """The argument defaults an earlier round chose (its request_state), so that a retry asks
    the same questions; anything else in the state is ignored."""
    if params.request_state is None:  # a first round (every call but a retry)
        return {}
    try:
        state = orjson.loads(params.request_state)
    except orjson.JSONDecodeError:
        return {}
    chosen = state.get("chosen") if isinstance(state, dict) else None
    if not isinstance(chosen, dict):
        return {}
    return {k: v for k, v in chosen.items() if isinstance(k, str) and isinstance(v, str)}


def _progress_sink(ctx: ServerRequestContext[Any]) -> ProgressSink:
    """Socket-style progress frames as MCP progress notifications (K-PRG-002, P-008): one
    notification per frame, whose `progress` counts the frames (1, 2, ...), never the
    frame's `processed`; `total` and `message` are the frame's when it has them."""
    count = 0

    async def sink(frame: JsonObject) -> None:
        nonlocal count
        count += 1
        total = frame.get("total")
        message = frame.get("message")
        await ctx.session.report_progress(
            count,
            total if isinstance(total, int | float) and not isinstance(total, bool) else None,
            message if isinstance(message, str) else None,
        )

    return sink


async def _read_messages(
    wire_in: int,
    messages: ObjectSendStream[SessionMessage | Exception],
    replies: ObjectSendStream[SessionMessage],
    exchange: _Exchange,
) -> None:
    """JSON-RPC lines from the client; at end of input, the requests in flight are answered
    before the server sees the end (bounded by DRAIN_SECONDS). A line over 4 MiB, or one
    that is not UTF-8, not JSON or not a JSON-RPC message, is answered with an error carrying
    the request's id when it can be read (else null), so that the client never waits for an
    answer that would not come (M-TRN-061..066, ADR 0050)."""
    async with messages, replies:
        async for line in read_lines(wire_in):
            if isinstance(line, Oversized):
                refusal = request_too_large(line.size)
                await replies.send(SessionMessage(_error_message(line.request_id, refusal)))
                continue
            if not line.strip():
                continue
            try:
                _refuse_bad_id(line)
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception as error:  # noqa: BLE001 (answered below, never raised)
                await replies.send(SessionMessage(_malformed(line, error)))
                continue
            exchange.received(message)
            await messages.send(SessionMessage(message))
        with anyio.move_on_after(DRAIN_SECONDS):
            await exchange.settle()


def _refuse_bad_id(line: bytes) -> None:
    """The SDK reads a request whose id is an object as a notification and never answers it."""
    frame = orjson.loads(line)
    if isinstance(frame, dict) and "id" in frame and not valid_id(frame["id"]):
        raise ValueError('"id" must be a string, an integer or null')


def _malformed(line: bytes, error: Exception) -> types.JSONRPCError:
    """-32700 for bytes that are not JSON the server reads (not UTF-8, a lone surrogate, NaN,
    1e400, nesting deeper than the SDK's parser goes), -32600 for JSON that is not a message;
    with the request's id whenever it can be read from the line (issue 24)."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError as not_json:
        refusal = RpcError(PARSE_ERROR, f"Parse error: {not_json}")
    else:
        refusal = _sdk_refusal(error)
    return _error_message(request_id_of_line(line), refusal)


def _sdk_refusal(error: Exception) -> RpcError:
    """What the SDK's message model refused in a line that is JSON."""
    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        if first["type"] == "json_invalid":  # e.g. its parser's nesting limit
            return RpcError(PARSE_ERROR, f"Parse error: {first['msg']}")
        field = ".".join(str(part) for part in first["loc"][1:])  # [0] names the union member
        where = f"{field}: " if field else ""
        return RpcError(INVALID_REQUEST, f"Invalid Request: {where}{first['msg']}")
    return RpcError(INVALID_REQUEST, f"Invalid Request: {str(error).splitlines()[0]}")


def _error_message(request_id: RequestId, error: RpcError) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData.model_validate(error.to_json())
    )


def _version() -> str:
    try:
        return metadata.version(NAME)
    except metadata.PackageNotFoundError:
        return "0"
