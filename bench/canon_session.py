"""bench_canon's synthetic sessions: `MemoryWriteAccepted` + `MemoryWriteApplied` pairs shaped
like the ones `lcg.commands.memory_apply` writes for a lambo_derive, appended through the
writer (so every projection folds them as it folds real writes), without the model.

Per write: one interaction node (its content the call's text), ~10 concept nodes of mixed
types (canonical keys for every type but observation, as `matches_by_key` says), a `precedes`
edge from the session's previous interaction, a `derives` edge from the interaction to each
concept, `depends_on` edges from the new concepts to concepts of earlier writes (skewed: ~1%
of concepts are hubs that draw a third of all citations, most concepts are cited 0-2 times),
now and then a `parent_of` edge from an earlier entity (matched by its key, so reinforced) to
an entity of this write, and now and then a `contradicts` edge to an earlier concept of the
same type. Writes are spread evenly over `span`, ending `end`; `occurred_at` (write time) and
`about_time` are the same instant, as for a derive without `event_time`.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from lcg.commands.writer import WriteContext, Writer
from lcg.domain.events import MemoryWriteAccepted, MemoryWriteApplied
from lcg.domain.ids import GroupId
from lcg.domain.memory.calls import DERIVE
from lcg.domain.memory.identity import canonical_key, matches_by_key
from lcg.domain.memory.records import MemoryRequest, WriteOutcome
from lcg.domain.memory.text import call_text, embedding_text

TYPES = ("entity", "logic", "constraint", "resource", "observation")
TYPE_WEIGHTS = (30, 20, 10, 15, 25)
CITES = (0, 0, 0, 1, 1, 1, 2, 2, 3, 4)  # depends_on edges per new concept: mean 1.4
HUB_SHARE = 0.35  # of citations go to hubs
HUB_RATE = 0.01  # of concepts are hubs
PARENT_RATE = 0.5  # writes with a parent_of edge (when they have an entity)
CONTRADICT_RATE = 0.1  # writes with one contradicts edge
WRITES_PER_BATCH = 100  # writes per writer batch (one WAL commit)

_ADJ = (
    "billing",
    "accounts",
    "search",
    "payment",
    "ledger",
    "session",
    "token",
    "schema",
    "cache",
    "audit",
    "export",
    "import",
    "nightly",
    "retry",
    "primary",
    "replica",
    "legacy",
    "staging",
    "shared",
    "internal",
    "public",
    "mobile",
    "admin",
    "user",
    "partner",
    "invoice",
    "refund",
    "pricing",
    "tenant",
    "queue",
    "stream",
    "batch",
    "report",
    "metrics",
    "alert",
    "backup",
)
_NOUN = (
    "service",
    "table",
    "worker",
    "endpoint",
    "index",
    "job",
    "pipeline",
    "bucket",
    "topic",
    "config",
    "migration",
    "client",
    "gateway",
    "cluster",
    "database",
    "view",
    "policy",
    "rule",
    "limit",
    "quota",
    "key",
    "secret",
    "role",
    "team",
    "dashboard",
    "handler",
    "schedule",
    "model",
    "record",
    "field",
    "column",
    "release",
    "branch",
    "build",
    "deploy",
    "region",
)
_VERB = (
    "reads",
    "writes",
    "owns",
    "calls",
    "depends",
    "on",
    "feeds",
    "locks",
    "replaces",
    "validates",
    "caches",
    "exports",
    "blocks",
    "triggers",
    "retries",
    "logs",
    "guards",
    "renames",
    "splits",
    "merges",
    "throttles",
    "signs",
)


def sentence(rng: random.Random, number: int) -> str:
    """A concept's text: `<adj> <noun> <verb> <adj> <noun> in step <n>`, ~50 characters."""
    return (
        f"{rng.choice(_ADJ)} {rng.choice(_NOUN)} {rng.choice(_VERB)} {rng.choice(_ADJ)} "
        f"{rng.choice(_NOUN)} in step {number}"
    )


def query(rng: random.Random) -> str:
    """A recall query in the same vocabulary (never a dependency question)."""
    return f"how does the {rng.choice(_ADJ)} {rng.choice(_NOUN)} use the {rng.choice(_NOUN)}"


@dataclass
class SessionBuilder:
    """Appends synthetic writes to one session; remembers what it wrote, to cite it later."""

    writer: Writer
    session: GroupId
    rng: random.Random
    vectors: bool = False  # include each concept's framed embedding text
    agents: Sequence[str] = ("agent-a", "agent-b", "agent-c", "agent-d")
    concepts: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    write_of: list[int] = field(default_factory=list)  # concept index -> write number
    entities: list[int] = field(default_factory=list)
    hubs: list[int] = field(default_factory=list)
    contents: list[str] = field(default_factory=list)
    last_interaction: str | None = None
    writes: int = 0
    edges: int = 0
    mutations: int = 0
    new_id: Callable[[], str] = field(default=lambda: str(uuid.uuid4()))

    def _earlier(self, before: int) -> int:
        """A concept of an earlier write: a hub (skewed to the first hubs), else uniform."""
        hubs = self.hubs  # all of earlier writes: a write's hubs are marked after it
        if hubs and self.rng.random() < HUB_SHARE:
            return hubs[int(len(hubs) * self.rng.random() ** 2)]
        return self.rng.randrange(before)

    def _write(
        self, at: datetime, per_write: int, limit: int
    ) -> tuple[MemoryWriteAccepted, dict[str, Any]]:
        rng = self.rng
        first = len(self.concepts)  # concepts before this write
        count = max(1, min(limit, per_write + rng.choice((-2, -1, 0, 0, 1, 2))))
        agent = self.agents[self.writes % len(self.agents)]
        kinds = rng.choices(TYPES, TYPE_WEIGHTS, k=count)
        texts = [sentence(rng, first + i) for i in range(count)]
        whole = call_text(texts)
        interaction = self.new_id()
        nodes: list[dict[str, Any]] = [
            {
                "uuid": interaction,
                "node_kind": "interaction",
                "content": whole,
                "concept_type": None,
                "canonical_key": None,
                "embedding_text": None,
            }
        ]
        edges: list[dict[str, str]] = []

        def edge(kind: str, source: str, target: str) -> None:
            edges.append({"uuid": self.new_id(), "kind": kind, "source": source, "target": target})

        if self.last_interaction is not None:
            edge("precedes", self.last_interaction, interaction)
        request: list[dict[str, Any]] = []
        created: list[str] = []
        for kind, text in zip(kinds, texts, strict=True):
            node = self.new_id()
            created.append(node)
            nodes.append(
                {
                    "uuid": node,
                    "node_kind": "concept",
                    "content": text,
                    "concept_type": kind,
                    "canonical_key": canonical_key(text) if matches_by_key(kind) else None,
                    "embedding_text": embedding_text(text, whole) if self.vectors else None,
                }
            )
            edge("derives", interaction, node)
            cited: set[int] = set()
            for _ in range(rng.choice(CITES) if first else 0):
                cited.add(self._earlier(first))
            for target in sorted(cited):
                edge("depends_on", node, self.concepts[target])
            request.append(
                {
                    "content": text,
                    "concept_type": kind,
                    "depends_on": [
                        {"ref": self.concepts[t], "node": self.concepts[t], "by": "id"}
                        for t in sorted(cited)
                    ],
                    "against": [],
                }
            )
        matched: list[str] = []
        pairs: list[dict[str, str]] = []
        mine = [i for i, kind in enumerate(kinds) if kind == "entity"]
        if first and mine and self.entities and rng.random() < PARENT_RATE:
            parent = self.entities[int(len(self.entities) * rng.random() ** 2)]
            child = created[rng.choice(mine)]
            edge("parent_of", self.concepts[parent], child)
            matched.append(self.concepts[parent])
            pairs.append({"parent": self.contents[parent], "child": texts[mine[0]]})
        if first and rng.random() < CONTRADICT_RATE:
            i = rng.randrange(count)
            target = rng.randrange(first)
            edge("contradicts", created[i], self.concepts[target])
            request[i]["against"].append(
                {"ref": self.concepts[target], "node": self.concepts[target], "by": "id"}
            )
        self._remember(first, kinds, texts, created, interaction)
        self.edges += len(edges)
        self.mutations += len(nodes) + len(edges)
        return self._events(at, agent, request, pairs, nodes, edges, created, matched)

    def _remember(
        self,
        first: int,
        kinds: Sequence[str],
        texts: Sequence[str],
        created: Sequence[str],
        interaction: str,
    ) -> None:
        for i, (kind, text, node) in enumerate(zip(kinds, texts, created, strict=True)):
            index = first + i
            self.concepts.append(node)
            self.types.append(kind)
            self.contents.append(text)
            self.write_of.append(self.writes)
            if kind == "entity":
                self.entities.append(index)
            if self.rng.random() < HUB_RATE:
                self.hubs.append(index)
        self.last_interaction = interaction
        self.writes += 1

    def _events(
        self,
        at: datetime,
        agent: str,
        request: list[dict[str, Any]],
        pairs: list[dict[str, str]],
        nodes: list[dict[str, Any]],
        edges: list[dict[str, str]],
        created: list[str],
        matched: list[str],
    ) -> tuple[MemoryWriteAccepted, dict[str, Any]]:
        receipt = self.new_id()
        intent = MemoryWriteAccepted(
            at,
            receipt,
            agent,
            DERIVE,
            MemoryRequest.from_wire({"concepts": request, "parent_of": pairs}),
            None,
        )
        outcome: dict[str, Any] = {
            "agent_id": agent,
            "about_time": at.isoformat(),
            "interaction": nodes[0]["uuid"],
            "nodes": nodes,
            "reinforced_nodes": matched,
            "edges": edges,
            "created": created,
            "matched": matched,
            "created_count": len(created),
            "matched_count": len(matched),
            "semantic_merged": 0,
            "reinforced": len(matched),
            "edges_count": sum(1 for e in edges if e["kind"] != "precedes"),
            "embedded": len(created) if self.vectors else 0,
            "summary": f"derived {len(request)} concept(s): {len(created)} created, "
            f"{len(matched)} matched existing",
        }
        return intent, outcome

    def add(self, concepts: int, start: datetime, end: datetime, per_write: int = 10) -> None:
        """Append writes until the session holds `concepts` more concepts, their times spread
        evenly from `start` to `end`."""
        target = len(self.concepts) + concepts
        planned = max(1, concepts // per_write)
        step = (end - start) / planned
        done = 0
        while len(self.concepts) < target:
            batch: list[tuple[MemoryWriteAccepted, dict[str, Any]]] = []
            while len(self.concepts) < target and len(batch) < WRITES_PER_BATCH:
                at = min(end, start + step * done)
                batch.append(self._write(at, per_write, target - len(self.concepts)))
                done += 1
            self.writer.execute(self._handler(batch))

    def _handler(
        self, batch: list[tuple[MemoryWriteAccepted, dict[str, Any]]]
    ) -> Callable[[WriteContext], None]:
        session = self.session

        def handler(ctx: WriteContext) -> None:
            for intent, outcome in batch:
                (recorded,) = ctx.append(session, [intent])
                applied = MemoryWriteApplied(
                    intent.occurred_at + timedelta(milliseconds=20),
                    intent.receipt,
                    recorded.seq,
                    WriteOutcome.from_wire(outcome),
                    False,
                )
                ctx.append(session, [applied])

        return handler
