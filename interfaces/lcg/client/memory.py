"""`Memory`: a workspace's tools as Python methods, in this process or through a running service.

Every method is one call (two for a write that waits for its receipt) of a tool of the
operation table, reached as the `lcg` commands reach it (lcg.interfaces.cli_caller): the
results are the tools' own, turned into small dataclasses where that is cheap, and every
refusal is a `ToolError` whichever way the call went.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, overload

from lcg.commands.graph_file import ForeignProjections
from lcg.domain.errors import DomainError
from lcg.interfaces.attribute_rows import attributes_object
from lcg.interfaces.cli_caller import LocalCaller, ServiceError, open_caller, service_at
from lcg.interfaces.config import Settings, session_name
from lcg.interfaces.jsonrpc import INVALID_PARAMS, UNAVAILABLE, RpcError, error_from_exception
from lcg.interfaces.workspace import WorkspaceClosed
from lcg.projections.damage import DamagedFile
from lcg.projections.faults import FAULTS
from lcg.projections.runner import ProjectionError
from lcg.projections.wal.lease import WorkspaceBusy

if TYPE_CHECKING:
    from lcg.interfaces.cli_caller import Caller

DEFAULT_AGENT = "lcg-python"  # the agent id of the lambo_* calls unless `agent_id` says
DEFAULT_GROUP = "liminis"
WAIT_MS = 20_000  # how long derive waits for its write to be applied by default
SETTLE_SECONDS = 60.0
SETTLE_POLL_SECONDS = 0.02  # through a service: how often to ask knowledge_status

What = Literal["passages", "entities", "facts"]


class ToolError(Exception):
    """A tool refused or failed: `message` names the field and the rule; `kind` is the error's
    kind (invalid_params, not_found, conflict, refused, method_not_found, unavailable,
    storage_failure, ...), `field` the parameter at fault when there is one, `code` the
    JSON-RPC error code the socket service answers with."""

    def __init__(
        self, tool: str, message: str, *, kind: str, code: int, field: str | None = None
    ) -> None:
        super().__init__(f"{tool}: {message}")
        self.tool = tool
        self.message = message
        self.kind = kind
        self.code = code
        self.field = field

    @classmethod
    def from_rpc(cls, tool: str, error: RpcError) -> ToolError:
        data = error.data if isinstance(error.data, dict) else {}
        default = "unavailable" if error.code == UNAVAILABLE else "error"
        field = data.get("field")
        return cls(
            tool,
            error.message,
            kind=str(data.get("kind", default)),
            code=error.code,
            field=None if field is None else str(field),
        )


@dataclass(frozen=True, slots=True)
class Passage:
    """A hit of `search(what="passages")`: a part of an episode's content."""

    episode_uuid: str
    name: str
    group_id: str
    content: str
    score: float


@dataclass(frozen=True, slots=True)
class Entity:
    """A hit of `search(what="entities")`."""

    uuid: str
    name: str
    group_id: str
    summary: str
    labels: tuple[str, ...]
    score: float
    attributes: dict[str, Any] = dataclasses.field(default_factory=dict)  # as written


@dataclass(frozen=True, slots=True)
class Fact:
    """A hit of `search(what="facts")`: an edge between two entities and its fact."""

    uuid: str
    fact: str
    predicate: str
    group_id: str
    source_uuid: str
    target_uuid: str
    score: float
    attributes: dict[str, Any] = dataclasses.field(default_factory=dict)  # as written


@dataclass(frozen=True, slots=True)
class Recalled:
    """What `recall` answers: the context block an agent reads, and its hits as the tool
    returns them (node_id, content, concept_type, score, ...)."""

    context: str
    hits: list[dict[str, Any]]
    warnings: list[str]


class Memory:
    """The tools of one workspace. Open one with `Memory.open` or `Memory.connect`, use it as a
    context manager (or call `close`)."""

    def __init__(
        self,
        caller: Caller,
        stack: ExitStack,
        *,
        agent_id: str,
        via: str,
        session: str | None = None,
    ) -> None:
        self._caller = caller
        self._stack = stack
        self.agent_id = agent_id
        self.via = via  # "process" or "socket": where the calls run
        # the lambo_* calls name the session asked for: a service serving another refuses them
        self._scope = {} if session is None else {"scope": session}
        self._written: dict[str, int] = {}  # each group's last seq this Memory's writes made
        self._last_written: dict[str, int] = {}  # the last call's
        self._applied: set[str] = set()  # sessions whose applied outcomes `written` must cover

    @property
    def written(self) -> dict[str, int]:
        """`{group: seq}`: the last seq each group's log took from a write made through this
        Memory (for a lambo_* write that waited and was applied, the log's head once it was,
        so its outcome is covered; for one that did not wait, its intent's). Pass it as
        `min_seq` to a read through another Memory on another node of the same store to read
        these writes there."""
        if self._applied:  # asked here, once, rather than after every write that waited
            heads = self.call("knowledge_status")["wal_groups"]
            for group in self._applied:
                seq = int(heads[group]["max_seq"]) if group in heads else 0
                self._written[group] = max(seq, self._written.get(group, 0))
            self._applied.clear()
        return dict(self._written)

    @classmethod
    def open(
        cls,
        workspace: str | os.PathLike[str] | None = None,
        *,
        session: str | None = None,
        agent_id: str = DEFAULT_AGENT,
    ) -> Memory:
        """Open the workspace at `workspace` (default: LCG_WORKSPACE or the current
        directory; created if it does not exist) in this process, serving `session` to the
        lambo_* tools (default: LCG_SESSION or liminis). When `lcg serve` holds it, the calls
        go through its socket instead (`via` says which), and a `session` other than the
        service's is refused by the memory calls."""
        stack = ExitStack()
        try:
            with _tool_errors("open"):
                settings = _settings(workspace, session)
                opened = open_caller(settings, "lcg.client", read_only=False, say=_quiet)
                caller = stack.enter_context(opened)
        except BaseException:
            stack.close()
            raise
        via = "process" if isinstance(caller, LocalCaller) else "socket"
        return cls(caller, stack, agent_id=agent_id, via=via, session=session)

    @classmethod
    def connect(
        cls,
        socket: str | os.PathLike[str] | None = None,
        *,
        workspace: str | os.PathLike[str] | None = None,
        agent_id: str = DEFAULT_AGENT,
    ) -> Memory:
        """Talk to the `lcg serve` socket service at `socket`, or at `workspace`'s
        `.lcg/service.sock` (default: LCG_WORKSPACE or the current directory). The session is
        the service's. Raises ToolError (kind "unavailable") when no healthy service answers."""
        with _tool_errors("connect"):
            path = Path(socket) if socket else _settings(workspace, None).socket_path
        remote = service_at(path, healthy_only=True)
        if remote is None:
            raise ToolError(
                "connect",
                f"no healthy lcg service answers at {path}: start one with `lcg serve`",
                kind="unavailable",
                code=UNAVAILABLE,
            )
        stack = ExitStack()
        stack.callback(remote.close)
        return cls(remote, stack, agent_id=agent_id, via="socket")

    def close(self) -> None:
        """Close the workspace (or the connection); the Memory cannot be used afterwards."""
        self._stack.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def call(self, tool: str, /, **params: Any) -> dict[str, Any]:
        """Run any tool of the table (`lcg tools` lists them) with its parameters; its result."""
        return self._run(tool, params, None)

    def _run(
        self, tool: str, params: dict[str, Any], min_seq: Mapping[str, int] | None
    ) -> dict[str, Any]:
        """One call: a read waits for `min_seq` first; a write's seqs are noted in `written`."""
        wanted = None if min_seq is None else dict(min_seq)
        self._last_written = {}
        with _tool_errors(tool):
            result = self._caller.call(tool, params, min_seq=wanted, written=self._last_written)
        for group, seq in self._last_written.items():
            self._written[group] = max(seq, self._written.get(group, 0))
        return result

    def add(
        self,
        name: str,
        body: str,
        *,
        group: str = DEFAULT_GROUP,
        source: Literal["text", "message", "json"] = "text",
        source_description: str = "",
        reference_time: str | None = None,
    ) -> str:
        """Store `body` as an episode (knowledge_add_episode); its uuid."""
        result = self.call(
            "knowledge_add_episode",
            name=name,
            episode_body=body,
            source=source,
            source_description=source_description,
            reference_time=reference_time,
            group_id=group,
        )
        return str(result["episode_uuid"])

    def add_entity(
        self,
        name: str,
        *,
        summary: str | None = None,
        labels: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
        group: str = DEFAULT_GROUP,
    ) -> str:
        """Create or replace an entity (knowledge_assert_entity: what you leave out of an
        existing one is cleared); its uuid."""
        result = self.call(
            "knowledge_assert_entity",
            name=name,
            summary=summary,
            labels=None if labels is None else list(labels),
            attributes=None if attributes is None else dict(attributes),
            group_id=group,
        )
        return str(result["entity_uuid"])

    def add_fact(
        self,
        source: str,
        predicate: str,
        target: str,
        *,
        fact: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        group: str = DEFAULT_GROUP,
    ) -> str:
        """Create or replace the edge SOURCE PREDICATE TARGET between two entities of `group`
        (knowledge_assert_relationship: what you leave out of an existing one is reset); its
        uuid."""
        result = self.call(
            "knowledge_assert_relationship",
            source_name=source,
            predicate=predicate,
            target_name=target,
            fact=fact,
            attributes=None if attributes is None else dict(attributes),
            group_id=group,
        )
        return str(result["edge_uuid"])

    @overload
    def search(
        self,
        query: str,
        *,
        what: Literal["passages"] = ...,
        groups: Iterable[str] | None = ...,
        limit: int = ...,
        min_score: float | None = ...,
        min_seq: Mapping[str, int] | None = ...,
    ) -> list[Passage]: ...
    @overload
    def search(
        self,
        query: str,
        *,
        what: Literal["entities"],
        groups: Iterable[str] | None = ...,
        limit: int = ...,
        min_seq: Mapping[str, int] | None = ...,
    ) -> list[Entity]: ...
    @overload
    def search(
        self,
        query: str,
        *,
        what: Literal["facts"],
        groups: Iterable[str] | None = ...,
        limit: int = ...,
        min_seq: Mapping[str, int] | None = ...,
    ) -> list[Fact]: ...
    def search(
        self,
        query: str,
        *,
        what: What = "passages",
        groups: Iterable[str] | None = None,
        limit: int = 10,
        min_score: float | None = None,
        min_seq: Mapping[str, int] | None = None,
    ) -> list[Passage] | list[Entity] | list[Fact]:
        """Search by meaning and by words: episode passages (knowledge_search_passages;
        `min_score` is its floor on the best score, default 0.3), entities
        (knowledge_find_entities) or facts (knowledge_find_relationships), best first, only
        relevant hits; `groups` None: every group. `min_seq` ({group: seq}, such as another
        Memory's `written`): first wait until this node has applied each group that far."""
        group_ids = None if groups is None else list(groups)
        common = {"query": query, "group_ids": group_ids, "num_results": limit}
        if what == "passages":
            floor = {} if min_score is None else {"min_score": min_score}
            found = self._run("knowledge_search_passages", {**common, **floor}, min_seq)
            return [
                Passage(p["episode_uuid"], p["name"], p["group_id"], p["content"], p["score"])
                for p in found["passages"]
            ]
        if min_score is not None:
            raise _invalid("search", "min_score", "applies to what='passages' only")
        if what == "entities":
            nodes = self._run("knowledge_find_entities", common, min_seq)["nodes"]
            return [
                Entity(
                    n["uuid"],
                    n["name"],
                    n["group_id"],
                    n["summary"],
                    tuple(n["labels"]),
                    n["score"],
                    attributes_object(n.get("attributes")),
                )
                for n in nodes
            ]
        if what == "facts":
            edges = self._run("knowledge_find_relationships", common, min_seq)["edges"]
            return [
                Fact(
                    e["uuid"],
                    e["fact"],
                    e["name"],
                    e["group_id"],
                    e["source_node_uuid"],
                    e["target_node_uuid"],
                    e["score"],
                    attributes_object(e.get("attributes")),
                )
                for e in edges
            ]
        raise _invalid("search", "what", f"must be passages, entities or facts, got {what!r}")

    def recall(
        self,
        query: str | None = None,
        *,
        query_vector: Mapping[str, Any] | None = None,
        top_k: int = 5,
        max_tokens: int = 500,
        min_seq: Mapping[str, int] | None = None,
    ) -> Recalled:
        """Recall memory for a task (lambo_recall): the context block and its hits, by the
        task's words, or by `query_vector` {values, contract} (a vector you computed under
        the session's embedding_contract; needs client vectors on). `min_seq` waits as
        `search`'s does."""
        params: dict[str, Any] = {"agent_id": self.agent_id, "top_k": top_k}
        if query is not None:
            params["query"] = query
        if query_vector is not None:
            params["query_vector"] = dict(query_vector)
        params |= {"max_tokens": max_tokens, **self._scope}
        result = self._run("lambo_recall", params, min_seq)
        content = result["structuredContent"]
        return Recalled(result["text"], list(content["hits"]), list(content["warnings"]))

    def derive(
        self,
        *contents: str,
        concept_type: str = "logic",
        depends_on: Sequence[str] = (),
        against: Sequence[str] = (),
        repo_scope: str | None = None,
        wait_ms: int = WAIT_MS,
    ) -> dict[str, Any]:
        """Store concepts, one per content (lambo_derive), each of `concept_type` (entity,
        logic, constraint, resource or observation), citing `depends_on` and contradicting
        `against` (short ids, node ids or exact contents). `repo_scope` names the repository
        a path-like resource belongs to (`README.md` in two repositories is two concepts).
        Waits up to `wait_ms` for the write to be applied (0: only the acknowledgement). The
        acknowledgement (receipt, receipt_state, ...) and, when it waited, `outcome`: the
        receipt's state and detail."""
        concept: dict[str, Any] = {"concept_type": concept_type}
        if depends_on:
            concept["depends_on"] = list(depends_on)
        if against:
            concept["against"] = list(against)
        params: dict[str, Any] = {
            "concepts": [{"content": content, **concept} for content in contents]
        }
        return self._write("lambo_derive", params, repo_scope, wait_ms)

    def derive_image(
        self,
        caption: str,
        *,
        vector: Mapping[str, Any],
        concept_type: str = "resource",
        image_id: str | None = None,
        wait_ms: int = WAIT_MS,
    ) -> dict[str, Any]:
        """Store an image as a concept (lambo_derive_image): its `caption` and `vector`
        {values, contract}, which you computed under the session's embedding_contract
        (lambo_stats); the server must accept client vectors (`[embedder]
        accept_client_vectors = true`). Its content is `caption [image:<image_id>]` (the id
        defaults to a digest of the vector). Waits and answers as `derive` does."""
        params: dict[str, Any] = {"caption": caption, "concept_type": concept_type}
        params["vector"] = dict(vector)
        if image_id is not None:
            params["image_id"] = image_id
        return self._write("lambo_derive_image", params, None, wait_ms)

    def record_action(
        self,
        action: str,
        *,
        produces: Sequence[str] = (),
        modifies: Sequence[str] = (),
        depends_on: Sequence[str] = (),
        against: Sequence[str] = (),
        repo_scope: str | None = None,
        wait_ms: int = WAIT_MS,
    ) -> dict[str, Any]:
        """Record something the agent did (lambo_record_action), with what it `produces`,
        `modifies` and `depends_on` (ids, or text naming a concept, created if new) and what
        it shows to be wrong (`against`). `repo_scope` names the repository its file paths
        belong to. Waits and answers as `derive` does."""
        params: dict[str, Any] = {"action": action}
        for name, values in (
            ("produces", produces),
            ("modifies", modifies),
            ("depends_on", depends_on),
            ("against", against),
        ):
            if values:
                params[name] = list(values)
        return self._write("lambo_record_action", params, repo_scope, wait_ms)

    def _write(
        self, tool: str, params: dict[str, Any], repo_scope: str | None, wait_ms: int
    ) -> dict[str, Any]:
        """One write tool's call: its ack, and when it waited, the receipt's outcome."""
        if repo_scope is not None:
            params["repo_scope"] = repo_scope
        ack = self.call(tool, agent_id=self.agent_id, **params, **self._scope)["structuredContent"]
        if wait_ms <= 0 or ack["receipt_state"] == "dropped":
            return dict(ack)
        sessions = list(self._last_written)  # the session's stream took the write's intent
        settled = self.call(
            "lambo_stats", agent_id=self.agent_id, receipt=ack["receipt"], wait_ms=wait_ms
        )
        outcome = settled["structuredContent"]["receipt"]
        if outcome.get("state") in ("applied", "applied_after_restart"):
            # Its outcome is in the log now: `written` covers it, so a read on another node
            # after `written` sees the applied write, not only its intent.
            self._applied.update(sessions)
        return {**ack, "outcome": outcome}

    def replay(self, group: str = DEFAULT_GROUP, *, to_seq: int | None = None) -> dict[str, Any]:
        """Rebuild `group`'s projections from its WAL (knowledge_rebuild_from_wal,
        force_clear): to `to_seq`, which pins the group there (writes refused), or, with
        None, to the end, which releases it. The tool's result (mutations_replayed,
        pinned_to, ...)."""
        return self.call(
            "knowledge_rebuild_from_wal", group_id=group, to_seq=to_seq, force_clear=True
        )

    def settle(self, timeout: float = SETTLE_SECONDS) -> bool:
        """Wait, at most `timeout` seconds, until the vector indexes hold every acknowledged
        write, so a search by meaning sees them all (a search waits briefly on its own,
        LCG_VECTOR_READ_WAIT_MS). False: some were still pending at the deadline."""
        if isinstance(self._caller, LocalCaller):
            return self._caller.app.workspace.settle(timeout)
        deadline = time.monotonic() + timeout
        while self.call("knowledge_status")["vector_pending"]:
            if time.monotonic() > deadline:
                return False
            time.sleep(SETTLE_POLL_SECONDS)
        return True

    def head(self, group: str = DEFAULT_GROUP) -> int:
        """The seq of `group`'s last event in the WAL (0: none yet)."""
        groups = self.call("knowledge_status")["wal_groups"]
        return int(groups[group]["max_seq"]) if group in groups else 0


def _settings(workspace: str | os.PathLike[str] | None, session: str | None) -> Settings:
    settings = Settings.load(os.environ, Path.cwd(), None if workspace is None else Path(workspace))
    if session is None:
        return settings
    return dataclasses.replace(settings, session=session_name(session, "session"))


def _invalid(tool: str, field: str, rule: str) -> ToolError:
    """A refusal of the API's own arguments, shaped as a tool's invalid_params."""
    return ToolError(
        tool, f"{field}: {rule}", kind="invalid_params", code=INVALID_PARAMS, field=field
    )


# What the tools raise on purpose; anything else is a bug and propagates as it is.
KNOWN_ERRORS = (
    DomainError,
    ProjectionError,
    WorkspaceBusy,
    WorkspaceClosed,
    DamagedFile,
    ForeignProjections,
    *FAULTS,
)


@contextmanager
def _tool_errors(tool: str) -> Iterator[None]:
    """A refusal as ToolError, the same from this process as from the socket service."""
    try:
        yield
    except ServiceError as error:
        raise ToolError.from_rpc(tool, error.error) from None
    except KNOWN_ERRORS as error:
        raise ToolError.from_rpc(tool, error_from_exception(error)) from error


def _quiet(_: str) -> None:
    """open_caller's notes are for a person at a terminal; `Memory.via` says the same."""
