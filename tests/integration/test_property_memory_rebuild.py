"""Issue 11, done-when: the hypothesis rebuild property covers the memory events.

Hypothesis mixes knowledge writes (tests/integration/test_property_rebuild.py's commands) with
agent-memory writes to the session g1: lambo_derive with concepts of every type, depends_on and
against citing earlier concepts by short id, node id or content, parent_of pairs; and
lambo_record_action with produces / modifies / depends_on / against. Refusals (a reference
that matches nothing or an interaction, a loop, cited and contradicted) write nothing. Some
writes come in a burst while the intent processor is paused, so intents and outcomes
interleave in the stream, and a purge between an intent and its outcome makes it fail (it
cited a purged concept) or apply to the emptied session.

Then, per group: (a) the kept per-concept rows (`memory_concept_stats`, ADR 0040) are the
nodes' fields and the plain count of the edges, and a full `knowledge_rebuild_from_wal`
(force_clear) leaves every projection table equal to the incrementally built state; (b) one to
a random `to_seq` (often an intent's seq, so the write shows as pending) equals a graph that
only ever received the events up to that seq, built from a WAL holding just those; while the
group is pinned the intent processor applies nothing in it, and releasing the pin brings back
the live state. What the property found is kept as plain tests below: a pinned session's
pending intent held up every later write of the intent processor, a purge dropped the intents
still owed an outcome, and an intent read in the moment after its commit was taken for an
earlier process's.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lcg.commands.graph_file import open_graph
from lcg.domain.errors import DomainError
from lcg.domain.events import EventCodec, MemoryWriteAccepted
from lcg.domain.ids import GroupId
from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.settings_file import Tuning
from lcg.interfaces.workspace import Workspace
from lcg.projections.canonization.projection import TABLES as CANON_TABLES
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.port import Embedder
from lcg.projections.memory.projection import TABLES as MEMORY_TABLES
from lcg.projections.text import reader
from lcg.projections.wal.store import EventLog
from tests.conftest import SteppingClock, make_call, make_workspace
from tests.helpers.memory_concept_stats import (
    expected_concept_stats,
    expected_session_stats,
    kept_concept_stats,
    kept_session_stats,
)
from tests.helpers.projection_state import assert_scorer_agrees_with_fts5, dump
from tests.integration.test_property_rebuild import command as knowledge_command
from tests.integration.test_property_rebuild import run as run_knowledge

# Small sessions promote and collect: no peer floor, no age floor, no survival needed twice.
JOBS_MOVE = Tuning().with_values(
    canonization__min_peer_count=1,
    canonization__edge_min_age_secs=0,
    daemon__gc_interval=1,
    daemon__gc_idle_floor=0,
)
# Every example ends with jobs, so that each has their events (and a year for the GC bars).
FINALLY: tuple[tuple[str, dict[str, Any]], ...] = (
    ("gc_sweep", {}),
    ("canon_cycle", {}),
    ("later", {"days": 400}),
    ("gc_sweep", {}),
)
SESSION = GroupId("g1")  # also one of the knowledge commands' groups: the streams interleave
AGENT = "agent-a"
WAIT_MS = 10_000
CONTENTS = (
    "the cache is warm",
    "The cache is  warm",  # the same canonical key
    "lease TTL is 45s",
    "deploys go through staging",
    "port is 8080",
    "auth",
)
TYPES = ("entity", "logic", "constraint", "resource", "observation")
ACTIONS = ("wrote a.txt", "ran the build", "auth")
TARGETS = ("a.txt", "b.txt", "wrote a.txt")

# A reference is resolved when the write is sent, against the session as it is then: the
# n-th concept's short id or node id, the n-th interaction's id (refused), or a text.
reference = st.one_of(
    st.tuples(st.sampled_from(["short_id", "node_id", "interaction"]), st.integers(0, 7)),
    st.tuples(st.just("content"), st.sampled_from(CONTENTS)),
)
target = st.one_of(reference, st.tuples(st.just("text"), st.sampled_from(TARGETS)))


def some(strategy: st.SearchStrategy[Any], most: int) -> st.SearchStrategy[list[Any]]:
    """Mostly none (a reference to nothing is refused), else one to `most`."""
    return st.one_of(st.just([]), st.just([]), st.lists(strategy, min_size=1, max_size=most))


concept = st.fixed_dictionaries(
    {
        "content": st.sampled_from(CONTENTS),
        "concept_type": st.sampled_from(TYPES),
        "depends_on": some(reference, 2),
        "against": some(reference, 1),
    }
)
derive = st.builds(
    lambda concepts, pairs: ("lambo_derive", {"concepts": concepts, "parent_of": pairs}),
    st.lists(concept, min_size=1, max_size=3),
    some(st.tuples(st.sampled_from(CONTENTS), st.sampled_from(CONTENTS)), 2),
)
# The first write cites nothing, so that later references often name a concept.
first_derive = st.builds(
    lambda contents: (
        "lambo_derive",
        {
            "concepts": [
                {"content": c, "concept_type": t, "depends_on": [], "against": []}
                for c, t in contents
            ],
            "parent_of": [],
        },
    ),
    st.lists(st.tuples(st.sampled_from(CONTENTS), st.sampled_from(TYPES)), min_size=1, max_size=3),
)
record_action = st.builds(
    lambda action, lists: ("lambo_record_action", {"action": action, **lists}),
    st.sampled_from(ACTIONS),
    st.fixed_dictionaries(
        {
            "produces": some(target, 2),
            "modifies": some(target, 2),
            "depends_on": some(target, 2),
            "against": some(reference, 1),
        }
    ),
)
memory_write = st.one_of(derive, record_action)
single = st.one_of(memory_write, memory_write, knowledge_command)
# Several writes while the intent processor is paused: their intents come before their
# outcomes, and a knowledge command between them (a purge of g1) can make an apply fail.
burst = st.builds(lambda ops: ("burst", {"ops": ops}), st.lists(single, min_size=2, max_size=4))


def citing(content: str, kind: str, cited: str) -> tuple[str, dict[str, Any]]:
    concept = {"content": content, "concept_type": kind, "depends_on": [("content", cited)]}
    return ("lambo_derive", {"concepts": [concept | {"against": []}], "parent_of": []})


# Bursts whose later apply fails: two citations accepted apart that close a loop once both
# apply, or a citation whose concept a purge removes before it applies.
loop = st.builds(
    lambda a, b, kind: ("burst", {"ops": [citing(a, kind, b), citing(b, kind, a)]}),
    st.sampled_from(CONTENTS),
    st.sampled_from(CONTENTS),
    st.sampled_from(TYPES),
)
purge = st.builds(
    lambda a, b, kind, more: (
        "burst",
        {
            "ops": [
                citing(a, kind, b),
                *more,
                ("knowledge_delete_by_group", {"group_ids": [SESSION], "confirm": True}),
            ]
        },
    ),
    st.sampled_from(CONTENTS),
    st.sampled_from(CONTENTS),
    st.sampled_from(TYPES),
    st.lists(memory_write, max_size=1),
)
# Issue 13: the scheduled jobs' events interleave with the writes (a cycle, a sweep, and time
# passing so that sweeps collect under-bar concepts and the cooldown and age floors pass).
job: st.SearchStrategy[tuple[str, dict[str, Any]]] = st.one_of(
    st.just(("canon_cycle", {})),
    st.just(("gc_sweep", {})),
    st.builds(lambda days: ("later", {"days": days}), st.sampled_from([1, 30, 400])),
    # A recall's access counts (MemoryAccessed) move the rows a cycle scores (ADR 0040).
    st.builds(lambda query: ("recall", {"query": query}), st.sampled_from(CONTENTS)),
)
operation = st.one_of(single, single, burst, loop, purge, job, job)


CONCEPT_TEXTS = (
    "SELECT d.group_id, d.kind, d.owner_uuid, d.part, c.content, c.context FROM text_docs d"
    " JOIN fts_concepts c ON c.rowid = d.doc_id WHERE d.kind = 'concept'"
)


def dump_all(conn: Any) -> dict[str, list[tuple[Any, ...]]]:
    """Every projection table the knowledge property compares, the concepts' text documents
    and the memory tables."""
    tables = dump(conn)
    tables["concept_texts"] = sorted(tuple(row) for row in conn.execute(CONCEPT_TEXTS))
    for table in (*MEMORY_TABLES, *CANON_TABLES):
        tables[table] = sorted(tuple(row) for row in conn.execute(f"SELECT * FROM {table}"))
    return tables


def assert_concept_scorer_agrees_with_fts5(ws: Workspace) -> None:
    """The in-memory BM25 scorer finds the session's concepts as FTS5 does (ADR 0016)."""
    conn = ws.reader()
    for query in ("cache warm", "lease", "port 8080", "auth", "wrote a.txt"):
        fts5 = reader.search(conn, "concept", query, [SESSION], 100)
        memory = reader.search(conn, "concept", query, [SESSION], 100, ws.text_scorer)
        assert {(h.owner_uuid, h.part): round(h.score, 9) for h in memory} == {
            (h.owner_uuid, h.part): round(h.score, 9) for h in fts5
        }


class Session:
    """Sends the generated operations to a real workspace and waits for every receipt."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.app = App(ws)
        self.call = make_call(self.app)
        self.receipts: list[str] = []

    def nodes(self, kind: str) -> list[str]:
        rows = self.ws.reader().execute(
            "SELECT uuid FROM memory_nodes WHERE group_id=? AND node_kind=?"
            " ORDER BY seq, content, concept_type, uuid",
            (SESSION, kind),
        )
        return [str(row[0]) for row in rows]

    def ref(self, spec: tuple[str, Any]) -> str:
        form, value = spec
        if form in ("content", "text"):
            return str(value)
        found = self.nodes("interaction" if form == "interaction" else "concept")
        index = int(value)
        if not found:
            return CONTENTS[index % len(CONTENTS)]
        uuid = found[index % len(found)]
        return uuid[:8] if form == "short_id" else uuid

    def params(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        if name == "lambo_derive":
            concepts = [
                {
                    "content": c["content"],
                    "concept_type": c["concept_type"],
                    **{key: [self.ref(r) for r in c[key]] for key in ("depends_on", "against")},
                }
                for c in spec["concepts"]
            ]
            pairs = [{"parent": p, "child": c} for p, c in spec["parent_of"]]
            return {"concepts": concepts, **({"parent_of": pairs} if pairs else {})}
        return {
            "action": spec["action"],
            **{
                key: [self.ref(r) for r in refs]
                for key, refs in spec.items()
                if key != "action" and refs
            },
        }

    def write(self, name: str, spec: dict[str, Any]) -> None:
        before = self.ws.log.head(SESSION)
        try:
            ack = self.call(name, agent_id=AGENT, **self.params(name, spec))
        except DomainError:
            assert self.ws.log.head(SESSION) == before, "a refused write wrote nothing"
            event("a memory write was refused")
            return
        receipt = ack["structuredContent"]
        assert receipt["receipt_state"] == "pending"
        self.receipts.append(receipt["receipt"])

    def run(self, name: str, spec: dict[str, Any]) -> None:
        if name == "burst":
            with self.ws.memory.processor.paused():
                for inner, inner_spec in spec["ops"]:
                    self.run(inner, inner_spec)
        elif name == "canon_cycle":
            hops = self.ws.memory.jobs_or_fail().run_cycle()
            event(f"a cycle moved {min(len(hops), 2)}{'+' if len(hops) >= 2 else ''} concepts")
        elif name == "gc_sweep":
            self.settle()  # a sweep decides on applied writes only
            sweep = self.ws.memory.jobs_or_fail().sweep()
            event(f"a sweep collected {'some' if sweep.collected else 'none'}")
        elif name == "recall":
            self.settle()
            self.call("lambo_recall", agent_id=AGENT, query=spec["query"])
            self.ws.memory.flush_accesses(min_age=0)
        elif name == "later":
            clock = self.ws.clock
            assert isinstance(clock, SteppingClock)
            clock.now += timedelta(days=spec["days"])
        elif name.startswith("lambo_"):
            self.write(name, spec)
        else:
            run_knowledge(self.call, name, spec)

    def settle(self) -> None:
        """Wait for every receipt (applied, or failed on apply), and for the vector indexes."""
        for receipt in self.receipts:
            answer = self.call("lambo_stats", agent_id=AGENT, receipt=receipt, wait_ms=WAIT_MS)
            settled = answer["structuredContent"]["receipt"]["state"]
            assert settled in ("applied", "failed")
            event(f"a memory write {settled}")
        self.receipts.clear()
        self.ws.settle()


@contextlib.contextmanager
def graph_of(ws: Workspace, group: GroupId, to_seq: int) -> Iterator[Any]:
    """The projections of a new workspace whose WAL holds every other group's events and
    `group`'s up to `to_seq`: what the graph was at that seq, no processor ever run on it."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Settings(workspace=Path(tmp), session=SESSION)
        fresh.state_dir.mkdir()
        log = EventLog(fresh.wal_path, EventCodec())
        try:
            for other in ws.log.groups():
                for page in ws.log.read(other, upto=to_seq if other == group else None):
                    log.append(page)
            graph = open_graph(fresh.files, log, SteppingClock(), read_only=False)
            try:
                yield graph.runner.conn
            finally:
                graph.runner.conn.close()
        finally:
            log.close()


def without_pins(tables: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """projection_positions without its pinned_to column (a fresh graph is pinned nowhere),
    and without positions at 0 (a graph that never received a group has no row for it)."""
    return tables | {
        "projection_positions": [row[:3] for row in tables["projection_positions"] if row[2]],
    }


def check_bounded(session: Session, group: GroupId, to_seq: int) -> None:
    """The group rebuilt to `to_seq` shows it as it was then, and stays as it is while pinned."""
    ws, call = session.ws, session.call
    head = ws.log.head(group)
    live_writes = {
        row[0]: (row[1], row[2])
        for row in ws.reader().execute(
            "SELECT receipt, intent_seq, outcome_seq FROM memory_writes WHERE group_id=?",
            (group,),
        )
    }
    result = call("knowledge_rebuild_from_wal", group_id=group, to_seq=to_seq, force_clear=True)
    assert result["pinned_to"] == to_seq
    bounded = dump_all(ws.reader())
    with graph_of(ws, group, to_seq) as conn:
        assert without_pins(bounded) == without_pins(dump_all(conn))
    assert {row[3] for row in bounded["projection_positions"] if row[1] == group} == {to_seq}
    pending = {
        receipt
        for receipt, (intent, outcome) in live_writes.items()
        if intent <= to_seq and (outcome is None or outcome > to_seq)
    }
    shown = {row[0]: row for row in bounded["memory_writes"]}
    if pending:
        event("to_seq falls between an intent and its outcome")
    for receipt in pending:  # between its intent and its outcome: pending, no outcome yet
        assert shown[receipt][4] == "pending"
        assert shown[receipt][6] is None
    if group == SESSION:
        with pytest.raises(DomainError, match="pinned at seq"):
            call(
                "lambo_derive", agent_id=AGENT, concepts=[{"content": "x", "concept_type": "logic"}]
            )
    assert ws.log.head(group) == head, "nothing is applied in a pinned group"
    assert dump_all(ws.reader()) == bounded
    assert ws.memory.processor.failure is None
    assert call("lambo_stats", agent_id=AGENT)["structuredContent"]["degraded"] is False


@pytest.mark.slow  # a property test of seconds: `pytest -m "not slow"` skips it
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=first_derive, operations_=st.lists(operation, max_size=11), data=st.data())
def test_i11_rebuild_equals_incremental_and_a_random_to_seq_shows_the_session_as_it_was(
    first: tuple[str, dict[str, Any]],
    operations_: list[tuple[str, dict[str, Any]]],
    data: st.DataObject,
) -> None:
    with (
        tempfile.TemporaryDirectory() as tmp,
        make_workspace(
            Settings(
                workspace=Path(tmp),
                session=SESSION,
                tuning=JOBS_MOVE.with_values(
                    __promotion_policy=data.draw(st.sampled_from(["Swarm", "Solo"]), "policy")
                ),
            ),
            HashingEmbedder(),
        ) as ws,
    ):
        session = Session(ws)
        for name, spec in [first, *operations_, *FINALLY]:
            session.run(name, spec)
            session.settle()
        call = session.call
        live = dump_all(ws.reader())
        # The kept rows (ADR 0040) are the nodes' fields and the plain count of the edges
        # and interactions, after cycles, sweeps, recalls and purges interleaved with the
        # writes; the rebuilds below reproduce them.
        conn = ws.reader()
        assert kept_concept_stats(conn, SESSION) == expected_concept_stats(conn, SESSION)
        assert kept_session_stats(conn, SESSION) == expected_session_stats(conn, SESSION)
        vectors = ws.vectors.count()
        model_calls = ws.embedder.calls
        for group in ws.log.groups():
            head = ws.log.head(group)
            call("knowledge_rebuild_from_wal", group_id=group, force_clear=True)
            assert dump_all(ws.reader()) == live
            intents = sorted(
                row[0]
                for row in ws.reader().execute(
                    "SELECT intent_seq FROM memory_writes WHERE group_id=?", (group,)
                )
            )
            seqs = st.integers(0, head)
            to_seq = data.draw(
                st.one_of(st.sampled_from(intents), seqs) if intents else seqs,
                label=f"to_seq for {group}",
            )
            check_bounded(session, group, to_seq)
            if data.draw(st.booleans(), label="release by resuming"):
                call("knowledge_rebuild_from_wal", group_id=group, from_seq=to_seq + 1)
            else:
                call("knowledge_rebuild_from_wal", group_id=group, force_clear=True)
            ws.settle()
            assert dump_all(ws.reader()) == live
        assert_scorer_agrees_with_fts5(ws)
        assert_concept_scorer_agrees_with_fts5(ws)
        assert ws.vectors.count() == vectors
        assert ws.embedder.calls == model_calls  # rebuilds embed from the cache only
        assert ws.memory.processor.failure is None


def _derive(app: App, content: str) -> str:
    ack = operations.dispatch(
        app,
        "lambo_derive",
        {"agent_id": AGENT, "concepts": [{"content": content, "concept_type": "logic"}]},
    )
    receipt: str = ack["structuredContent"]["receipt"]
    return receipt


def _state(app: App, receipt: str, wait_ms: int) -> str:
    answer = operations.dispatch(
        app, "lambo_stats", {"agent_id": AGENT, "receipt": receipt, "wait_ms": wait_ms}
    )
    state: str = answer["structuredContent"]["receipt"]["state"]
    return state


def test_i11_rebuild_to_seq_a_pinned_sessions_pending_intent_stays_pending_and_holds_up_no_other(
    tmp_path: Path, hashing: Embedder
) -> None:
    """A session rebuilt to an intent's seq shows that write pending; the intent processor
    leaves it so (the group is pinned) and goes on applying another session's writes, which
    sort after it, without reporting a failure."""
    pinned, other = GroupId("g1"), GroupId("g2")
    with make_workspace(Settings(workspace=tmp_path, session=pinned), hashing) as ws:
        app = App(ws)
        assert _state(app, _derive(app, "first fact"), WAIT_MS) == "applied"
        owed = _derive(app, "second fact")
        assert _state(app, owed, WAIT_MS) == "applied"
        intent = ws.log.head(pinned) - 1  # seqs: intent 1, outcome 2, intent 3, outcome 4
        operations.dispatch(
            app,
            "knowledge_rebuild_from_wal",
            {"group_id": pinned, "to_seq": intent, "force_clear": True},
        )
    with make_workspace(Settings(workspace=tmp_path, session=other), hashing) as ws:
        app = App(ws)
        # g2's intents at seq 1 and 3 (its first outcome at 2): the processor takes pending
        # intents by (intent_seq, group), so the second sorts after g1's pending one at 3.
        assert _state(app, _derive(app, "another session's fact"), WAIT_MS) == "applied"
        assert _state(app, _derive(app, "and its next one"), WAIT_MS) == "applied"
        row = (
            ws.reader()
            .execute(
                "SELECT state, outcome_seq FROM memory_writes WHERE intent_seq=? AND group_id=?",
                (intent, pinned),
            )
            .fetchone()
        )
        assert tuple(row) == ("pending", None)
        # The processor's idle poll looks at the pending intents again, about once a second;
        # a pass ends with its periodic work. The second pass counted began after this point.
        passes = threading.Semaphore(0)
        ws.memory.processor.periodic.append(passes.release)
        assert passes.acquire(timeout=10), ws.memory.processor.failure
        assert passes.acquire(timeout=10), ws.memory.processor.failure
        assert ws.memory.processor.failure is None
        assert ws.log.head(pinned) == intent + 1
        stats = operations.dispatch(app, "lambo_stats", {"agent_id": AGENT})["structuredContent"]
        assert stats["degraded"] is False
        operations.dispatch(  # released: the write's outcome, already in the log, is replayed
            app, "knowledge_rebuild_from_wal", {"group_id": pinned, "from_seq": intent + 1}
        )
        row = (
            ws.reader()
            .execute(
                "SELECT state, outcome_seq FROM memory_writes WHERE intent_seq=? AND group_id=?",
                (intent, pinned),
            )
            .fetchone()
        )
        assert tuple(row) == ("applied", intent + 1)
        assert ws.log.head(pinned) == intent + 1  # never applied a second time


def test_i11_an_intent_acked_before_its_session_is_purged_still_settles(
    tmp_path: Path, hashing: Embedder
) -> None:
    """Found by the property: a purge of the session between a write's intent and its outcome
    used to drop the intent's row, so the receipt stayed pending and its lane slot was never
    freed. The intent survives the purge and is applied after it, in stream order; a rebuild
    agrees."""
    with make_workspace(Settings(workspace=tmp_path, session=SESSION), hashing) as ws:
        app = App(ws)
        cited = _derive(app, "the cache is warm")
        assert _state(app, cited, WAIT_MS) == "applied"
        with ws.memory.processor.paused():
            fresh = _derive(app, "lease TTL is 45s")
            citing = operations.dispatch(
                app,
                "lambo_derive",
                {
                    "agent_id": AGENT,
                    "concepts": [
                        {
                            "content": "the build is green",
                            "concept_type": "observation",
                            "depends_on": ["the cache is warm"],
                        }
                    ],
                },
            )["structuredContent"]["receipt"]
            operations.dispatch(
                app, "knowledge_delete_by_group", {"group_ids": [SESSION], "confirm": True}
            )
        assert _state(app, fresh, WAIT_MS) == "applied"
        assert _state(app, citing, WAIT_MS) == "failed"  # what it cited was purged
        deadline = time.monotonic() + 5  # the processor frees the lane just after settling
        while ws.memory.processor.outstanding(AGENT) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ws.memory.processor.outstanding(AGENT) == 0
        stats = operations.dispatch(app, "lambo_stats", {"agent_id": AGENT})["structuredContent"]
        assert stats["concept_count"] == 1
        live = dump_all(ws.reader())
        operations.dispatch(
            app, "knowledge_rebuild_from_wal", {"group_id": SESSION, "force_clear": True}
        )
        assert dump_all(ws.reader()) == live


class _OutstandingAtCommit:
    """A commit listener: how many writes the processor counted as this process's when an
    intent committed (the moment its thread can first read it)."""

    def __init__(self, ws: Workspace) -> None:
        self.processor = ws.memory.processor
        self.seen: list[int] = []

    def committed(self, conn: Any, recorded: Any) -> None:
        for r in recorded:
            if isinstance(r.event, MemoryWriteAccepted):
                self.seen.append(self.processor.outstanding(AGENT))

    def rebuilt(self, conn: Any, groups: Any) -> None:
        pass


def test_i11_a_write_is_counted_as_this_processs_before_its_intent_can_be_read(
    tmp_path: Path, hashing: Embedder
) -> None:
    """Found by the property (a flaky lane count): the processor could read an intent in the
    moment between its commit and its admission being counted, take it for an earlier
    process's (recorded `after_restart`, replayed) and never free its lane slot. The write is
    counted before its intent commits, and withdrawn when it is refused."""
    with make_workspace(Settings(workspace=tmp_path, session=SESSION), hashing) as ws:
        app = App(ws)
        listener = _OutstandingAtCommit(ws)
        ws.writer.listeners.append(listener)
        receipt = _derive(app, "the cache is warm")
        assert listener.seen == [1]
        assert _state(app, receipt, WAIT_MS) == "applied"
        (after_restart,) = (
            ws.reader()
            .execute("SELECT after_restart FROM memory_writes WHERE receipt=?", (receipt,))
            .fetchone()
        )
        assert after_restart == 0
        with pytest.raises(DomainError, match="matches nothing"):
            _derive_citing(app, "a ruling", "nothing by that name")
        deadline = time.monotonic() + 5
        while ws.memory.processor.outstanding(AGENT) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ws.memory.processor.outstanding(AGENT) == 0
        assert ws.memory.processor.counters.accepted == 1
        assert ws.memory.processor.counters.replayed == 0


def _derive_citing(app: App, content: str, cited: str) -> str:
    ack = operations.dispatch(
        app,
        "lambo_derive",
        {
            "agent_id": AGENT,
            "concepts": [{"content": content, "concept_type": "logic", "depends_on": [cited]}],
        },
    )
    receipt: str = ack["structuredContent"]["receipt"]
    return receipt
