"""Memory writes (seed 001), the applying half (ADR 0026): an intent's outcome.

`apply_write` runs in the intent processor's batch: it checks the references fixed at
acceptance again, matches concepts by canonical key, merges by similarity (the vectors were
embedded and searched before the batch, `Prepared`), adds the edges and appends
`MemoryWriteApplied` with every decision (and the replacement candidates and suspected
supersessions a receipt reports), or `MemoryWriteFailed` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from lcg.commands import memory_apply_image
from lcg.commands.writer import WriteContext
from lcg.domain.errors import DomainError
from lcg.domain.events import MemoryWriteApplied, MemoryWriteFailed
from lcg.domain.ids import GroupId
from lcg.domain.memory.context import quote
from lcg.domain.memory.identity import (
    canonical_key,
    digit_words_differ,
    matches_by_key,
    one_value_differs,
)
from lcg.domain.memory.intents import (
    CAUSAL,
    END_TYPE,
    TARGET_TYPE,
    call_paths,
    reaches,
    scoped_path,
)
from lcg.domain.memory.records import (
    ActionRequest,
    Candidate,
    Candidates,
    DerivedConcept,
    DeriveRequest,
    ImageRequest,
    MemoryRequest,
    OutcomeEdge,
    OutcomeNode,
    Supersession,
    WriteOutcome,
)
from lcg.domain.memory.references import (
    ACTION_CYCLE,
    HIERARCHY_CYCLE,
    CycleRefused,
    ReferenceRefused,
    Resolved,
    still_names,
)
from lcg.domain.memory.repo_paths import is_path, is_scoped_key, path_key
from lcg.domain.memory.scoped_refs import end_is_path
from lcg.domain.memory.text import call_text
from lcg.domain.memory.text import embedding_text as framed
from lcg.projections.memory import state
from lcg.projections.memory.state import SessionLookup, WriteRow


@dataclass(frozen=True, slots=True)
class Similar:
    """A stored concept close to a text the write may create."""

    uuid: str
    cosine: float


@dataclass
class Prepared:
    """What the processor computed before the batch: the framed text each item that may be
    created is embedded as, and the stored concepts closest to it (by item text)."""

    embedding_texts: dict[str, str] = field(default_factory=dict)
    similar: dict[str, list[Similar]] = field(default_factory=dict)
    embedder_failure: str | None = None
    replay_owed: bool = False  # the embedder failed at the first attempt (ADR 0108)


def texts_to_embed(row: WriteRow) -> dict[str, str]:
    """item text -> framed text, for every item the write might create (M-DER-140..148)."""
    request = row.request
    if isinstance(request, DeriveRequest):
        contents = [c.content for c in request.concepts]
        whole = call_text(contents)
        items = contents + [e for p in request.parent_of for e in (p.parent, p.child)]
        return {item: framed(item, whole) for item in items}
    if isinstance(request, ImageRequest):  # only its parent_of ends (M-IMG-033)
        return memory_apply_image.texts_to_embed(request)
    assert isinstance(request, ActionRequest)
    action = request.action
    targets = [
        entry.ref
        for entry in (*request.produces, *request.modifies, *request.depends_on)
        if entry.node is None
    ]
    return {action: framed(action, action)} | {t: framed(t, action) for t in targets}


class Outcome:
    """The nodes, edges and counts an apply decides, as the outcome's records."""

    def __init__(self, ctx: WriteContext, row: WriteRow, new_id: Callable[[], str]) -> None:
        self.ctx = ctx
        self.session = GroupId(row.group_id)
        self.new_id = new_id
        self.nodes: list[OutcomeNode] = []
        self.by_key: dict[str, str] = {}  # keys created or matched by this write
        self.reinforced: list[str] = []
        self.edges: list[OutcomeEdge] = []
        self.edge_keys: set[tuple[str, str, str]] = set()
        self.created: list[str] = []
        self.matched: list[str] = []
        self.semantic_merged = 0
        self.embedded = 0
        self.reinforcements = 0
        self.candidates: list[Candidate] = []
        self.superseded: list[Supersession] = []  # possibly superseded, not declared

    def node(self, text: str, concept_type: str, prepared: Prepared, against: set[str]) -> str:
        """The node this text names: matched by key, merged by similarity, or created."""
        uuid, _ = self.resolve(text, concept_type, prepared, against)
        return uuid

    def resolve(
        self, text: str, concept_type: str, prepared: Prepared, against: set[str]
    ) -> tuple[str, str]:
        """(node, how): how is `key` (matched), `semantic` (merged) or `created`."""
        content = text.strip()
        key = canonical_key(content) if matches_by_key(concept_type) else None
        if key:
            if key in self.by_key:
                return self.by_key[key], "key"
            found = state.concepts_with_key(self.ctx.conn, self.session, key)
            if found:
                self.by_key[key] = found[0].uuid
                self.reinforce(found[0].uuid)
                self.matched.append(found[0].uuid)
                return found[0].uuid, "key"
        similar = prepared.similar.get(text, [])
        images = state.images_among(self.ctx.conn, self.session, [n.uuid for n in similar])
        for near in similar:
            stored = state.node(self.ctx.conn, self.session, near.uuid)
            if (
                near.uuid not in images  # no text concept merges into an image (ADR 0095)
                and stored is not None
                and stored.node_kind == "concept"
                and stored.concept_type == concept_type
                and stored.uuid not in against
                and _mergeable(content, stored)
            ):
                self.semantic_merged += 1
                self.reinforce(stored.uuid)
                self.matched.append(stored.uuid)
                if key:
                    self.by_key[key] = stored.uuid
                return stored.uuid, "semantic"
        uuid = self.new_id()
        embedding_text = prepared.embedding_texts.get(text)
        self.nodes.append(OutcomeNode(uuid, "concept", text, concept_type, key, embedding_text))
        if embedding_text:
            self.embedded += 1
        if key:
            self.by_key[key] = uuid
        self.created.append(uuid)
        return uuid, "created"

    def scoped(self, text: str, scope: str, prepared: Prepared) -> tuple[str, str]:
        """(node, how) of a repository-scoped path (ADR 0082): matched by its scoped key, or
        created; never merged by similarity. Its content keeps its first spelling."""
        key = path_key(scope, text)
        if key in self.by_key:
            return self.by_key[key], "key"
        found = state.concepts_with_key(self.ctx.conn, self.session, key)
        if found:
            self.by_key[key] = found[0].uuid
            self.reinforce(found[0].uuid)
            self.matched.append(found[0].uuid)
            return found[0].uuid, "key"
        uuid = self.new_id()
        embedding_text = prepared.embedding_texts.get(text)
        self.nodes.append(OutcomeNode(uuid, "concept", text, TARGET_TYPE, key, embedding_text))
        if embedding_text:
            self.embedded += 1
        self.by_key[key] = uuid
        self.created.append(uuid)
        return uuid, "created"

    def reinforce(self, uuid: str) -> None:
        self.reinforced.append(uuid)
        self.reinforcements += 1

    def edge(self, kind: str, source: str, target: str) -> bool:
        """Add an edge; an existing one is reinforced. Returns whether it was new."""
        if (kind, source, target) in self.edge_keys:
            return False
        self.edge_keys.add((kind, source, target))
        existing = state.edge_uuid(self.ctx.conn, self.session, kind, source, target)
        if existing is not None:
            self.reinforcements += 1
        self.edges.append(OutcomeEdge(existing or self.new_id(), kind, source, target))
        return existing is None


class ApplyRefused(DomainError):
    """Why a write cannot be applied now (its receipt says failed)."""


def apply_write(
    ctx: WriteContext,
    row: WriteRow,
    prepared: Prepared,
    new_id: Callable[[], str],
    now: datetime,
    *,
    after_restart: bool,
) -> tuple[str, WriteOutcome | str]:
    """Apply one intent: append its outcome (or its failure). Returns ("applied", the
    outcome) or ("failed", the reason)."""
    session = GroupId(row.group_id)
    try:
        if prepared.embedder_failure is not None:
            raise ApplyRefused(prepared.embedder_failure)
        outcome = _decide(ctx, row, prepared, new_id, now)
    except DomainError as refused:
        owed = prepared.replay_owed  # set only with embedder_failure (ADR 0108)
        failed = MemoryWriteFailed(
            now, row.receipt, row.intent_seq, refused.message, after_restart, replay_owed=owed
        )
        ctx.append(session, [failed])
        return "failed", refused.message
    ctx.append(
        session, [MemoryWriteApplied(now, row.receipt, row.intent_seq, outcome, after_restart)]
    )
    return "applied", outcome


def _check_fixed(lookup: SessionLookup, field_: str, resolved: Resolved) -> None:
    why = still_names(resolved, lookup)
    if why is not None:
        raise ReferenceRefused(field_, resolved.ref, why)


def _about_time(row: WriteRow) -> str:
    """A write's about-time: its event_time, never later than when it was accepted."""
    if row.event_time is None or row.event_time > row.accepted_at:
        return row.accepted_at
    return row.event_time


def _decide(
    ctx: WriteContext,
    row: WriteRow,
    prepared: Prepared,
    new_id: Callable[[], str],
    now: datetime,
) -> WriteOutcome:
    session = GroupId(row.group_id)
    request = row.request
    scope = request.scope()
    if scope is not None and not scope.strip():
        raise ApplyRefused(
            "store error: the stored write's repo_scope is empty, so its paths cannot be"
            " replayed under a repository; nothing was written"
        )
    out = Outcome(ctx, row, new_id)
    interaction = new_id()
    if isinstance(request, DeriveRequest):
        text = call_text([c.content for c in request.concepts])
    elif isinstance(request, ImageRequest):
        text = request.content
    else:
        assert isinstance(request, ActionRequest)
        text = request.action
    out.nodes.append(OutcomeNode(interaction, "interaction", text, None, None, None))
    previous = state.latest_interaction(ctx.conn, session)
    if previous is not None:
        out.edge("precedes", previous, interaction)
    action_node: str | None = None
    if isinstance(request, DeriveRequest):
        citations, contradictions = _apply_derive(
            out, request, prepared, interaction, _about_time(row)
        )
    elif isinstance(request, ImageRequest):
        memory_apply_image.apply_image(out, request, prepared, interaction)
        citations = contradictions = 0
    else:
        action_node, citations, contradictions = _apply_action(out, request, prepared, interaction)
    created = list(out.created)
    matched = list(dict.fromkeys(out.matched))
    summary = _summary(request, len(created), len(matched), out.embedded)
    if citations:
        summary += f"; {citations} citation(s) recorded"
    if contradictions:
        summary += f"; {contradictions} contradiction(s) recorded"
    if out.superseded:
        summary += f"; {len(out.superseded)} possible undeclared supersession(s) flagged"
    candidates = out.candidates
    if candidates:
        summary += (
            f"; {len(candidates)} replacement candidate(s): existing concepts this write may"
            " replace (nothing recorded; cite one in against on a later call only if it really"
            " is replaced)"
        )
    return WriteOutcome(
        agent_id=row.agent_id,
        about_time=_about_time(row),
        interaction=interaction,
        nodes=tuple(out.nodes),
        reinforced_nodes=tuple(out.reinforced),
        edges=tuple(out.edges),
        created=tuple(created),
        matched=tuple(matched),
        created_count=len(created),
        matched_count=len(matched),
        semantic_merged=out.semantic_merged,
        reinforced=out.reinforcements,
        edges_count=sum(1 for e in out.edges if e.kind != "precedes"),
        embedded=out.embedded,
        summary=summary,
        action_node=action_node,
        possibly_superseded=tuple(out.superseded),
        replacement_candidates=Candidates(_bounded(candidates), len(candidates))
        if candidates
        else None,
        candidate_lines=tuple(_candidate_line(c) for c in candidates),
    )


REPLACEABLE = ("logic", "constraint", "observation")  # M-DER-103
CANDIDATES_PER_CONCEPT = 3  # M-DER-112
CANDIDATE_BYTES = 2048  # M-DER-122: rows per receipt, counted as serialized JSON


def _near(
    out: Outcome, concept: DerivedConcept, uuid: str, prepared: Prepared, refs: set[str]
) -> list[tuple[Similar, state.Node]]:
    """The stored concepts of this concept's type at or above the merge threshold (read once
    for candidates and suspected supersessions), with no reference of this concept to them
    and no citation or contradiction between the two."""
    found: list[tuple[Similar, state.Node]] = []
    similar = prepared.similar.get(concept.content, [])
    images = state.images_among(out.ctx.conn, out.session, [n.uuid for n in similar])
    for near in similar:
        stored = state.node(out.ctx.conn, out.session, near.uuid)
        if (
            near.uuid not in images  # never an image concept (M-DER-107)
            and stored is not None
            and stored.node_kind == "concept"
            and stored.concept_type == concept.concept_type
            and stored.uuid not in refs
            and not _linked(out, uuid, stored.uuid)
        ):
            found.append((near, stored))
    return found


def _candidates(
    out: Outcome, near: list[tuple[Similar, state.Node]], uuid: str, about: str, content: str
) -> list[Candidate]:
    """The existing concepts this concept may replace (M-DER-100..116): the near ones not
    written by this call; the one it merged with, and any other it could have merged with at
    the same cosine (a tie, M-DER-109), is marked merged, one dated after it newer. Nothing
    is recorded."""
    written = {*out.created, *out.matched} - {uuid}
    merged_at = next((similar.cosine for similar, stored in near if stored.uuid == uuid), None)
    found: list[Candidate] = []
    for similar, stored in near:
        if stored.uuid in written:
            continue
        tied = similar.cosine == merged_at and _mergeable(content, stored)
        found.append(
            Candidate(
                stored.uuid[:8],
                stored.uuid,
                quote(stored.content),
                round(similar.cosine, 4),
                uuid[:8],
                merged=stored.uuid == uuid or tied,
                newer=stored.about_time > about,
            )
        )
    found.sort(key=lambda row: -float(row.cosine))
    return found[:CANDIDATES_PER_CONCEPT]


def _suspected(
    content: str, near: list[tuple[Similar, state.Node]], uuid: str, about: str
) -> list[Supersession]:
    """Possibly superseded, not declared (#198): a near concept whose merge the identifier
    guard refused, differing in one value after an identical prefix. The later by about-time
    is the possible replacement, so a backfilled write dated before the stored concept is the
    older one (M-REC-214); equal dates are never flagged."""
    return [
        Supersession(stored.uuid, uuid)
        if stored.about_time < about
        else Supersession(uuid, stored.uuid)
        for _, stored in near
        if stored.about_time != about
        and digit_words_differ(content, stored.content)
        and one_value_differs(stored.content, content)
    ]


def _mergeable(content: str, stored: state.Node) -> bool:
    """Whether a near concept of the type may take this text by similarity: not a scoped
    path, into which nothing merges (ADR 0082), and no identifier of the two differs (ADR
    0025's guard)."""
    return not is_scoped_key(stored.canonical_key) and not digit_words_differ(
        content, stored.content
    )


def _linked(out: Outcome, first: str, second: str) -> bool:
    return any(
        state.edge_uuid(out.ctx.conn, out.session, kind, a, b) is not None
        for kind in ("depends_on", "contradicts")
        for a, b in ((first, second), (second, first))
    )


def _bounded(rows: list[Candidate]) -> tuple[Candidate, ...]:
    """As many rows as fit in CANDIDATE_BYTES of serialized JSON (the total stays true)."""
    kept: list[Candidate] = []
    used = 0
    for row in rows:
        size = len(json.dumps(row.to_wire(), ensure_ascii=False).encode("utf-8"))
        if used + size > CANDIDATE_BYTES:
            break
        kept.append(row)
        used += size
    return tuple(kept)


def _candidate_line(row: Candidate) -> str:
    """`  - 5e6f7a8b "excerpt" (cosine 0.8684, for 1a2b3c4d)` and its ending (M-DER-108/114)."""
    line = f'  - {row.id} "{row.excerpt}" (cosine {row.cosine:.4f}, for {row.new_id})'
    if row.merged:
        line += "; merged with this write, may be replaced"
    if row.newer:
        line += (
            "; newer: dated after this write, so it may replace this write, not the other way"
            " round; do not cite it in against."
        )
    return line


def _apply_derive(
    out: Outcome, request: DeriveRequest, prepared: Prepared, interaction: str, about: str
) -> tuple[int, int]:
    """Concepts, their citations and contradictions, then parent_of. (citations, contradictions)"""
    conn, session = out.ctx.conn, out.session
    lookup = SessionLookup(conn, session)
    citations = contradictions = 0
    for i, concept in enumerate(request.concepts):
        cited, against = concept.depends_on, concept.against
        for j, ref in enumerate(cited):
            _check_fixed(lookup, f"concepts[{i}].depends_on[{j}]", ref)
        for j, ref in enumerate(against):
            _check_fixed(lookup, f"concepts[{i}].against[{j}]", ref)
        against_nodes = {a.node for a in against if a.node}
        uuid, how = _concept_node(out, request.repo_scope, concept, prepared, against_nodes)
        out.edge("semantic" if how == "semantic" else "derives", interaction, uuid)
        if how != "key" and concept.concept_type in REPLACEABLE:
            refs = {r.node for r in (*cited, *against) if r.node}
            near = _near(out, concept, uuid, prepared, refs)
            out.candidates.extend(_candidates(out, near, uuid, about, concept.content))
            if how == "created":
                out.superseded.extend(_suspected(concept.content, near, uuid, about))
        for j, ref in enumerate(cited):
            assert ref.node is not None
            if ref.node == uuid:  # merged into what it cites: the merge already ties them
                out.reinforcements += 1
                continue
            if state.reaches(conn, session, ref.node, uuid, ("depends_on",)):
                raise ReferenceRefused(
                    f"concepts[{i}].depends_on[{j}]", ref.ref, "would close a dependency loop"
                )
            out.edge("depends_on", uuid, ref.node)
            citations += 1
        for ref in against:
            assert ref.node is not None
            out.edge("contradicts", uuid, ref.node)
            contradictions += 1
    extra: dict[str, set[str]] = {}
    scope = request.repo_scope
    paths = call_paths(scope, [(c.content, c.concept_type) for c in request.concepts])
    for pair in request.parent_of:
        parent = _end(out, lookup, prepared, scope, pair.parent, pair.child, paths, up=True)
        child = _end(out, lookup, prepared, scope, pair.child, pair.parent, paths, up=False)
        if parent == child or reaches(lookup, extra, child, parent, ("parent_of",)):
            raise CycleRefused(HIERARCHY_CYCLE, field="parent_of", rule="must stay acyclic")
        extra.setdefault(parent, set()).add(child)
        out.edge("parent_of", parent, child)
    return citations, contradictions


def _concept_node(
    out: Outcome,
    scope: str | None,
    concept: DerivedConcept,
    prepared: Prepared,
    against: set[str],
) -> tuple[str, str]:
    """(node, how) of a derived concept: a scoped path under repo_scope (ADR 0082), else
    matched by key, merged by similarity or created."""
    if scope is not None and scoped_path(scope, concept.content, concept.concept_type):
        return out.scoped(concept.content, scope, prepared)
    return out.resolve(concept.content, concept.concept_type, prepared, against)


def _end(
    out: Outcome,
    lookup: SessionLookup,
    prepared: Prepared,
    scope: str | None,
    end: str,
    other: str,
    paths: list[str],
    *,
    up: bool,
) -> str:
    """A parent_of end's node: a scoped path under repo_scope when it names one (ADR 0082),
    else matched or created as an entity."""
    if scope is not None and end_is_path(lookup, scope, end, other, paths, parent=up):
        return out.scoped(end, scope, prepared)[0]
    return out.node(end, END_TYPE, prepared, set())


def _apply_action(
    out: Outcome, request: ActionRequest, prepared: Prepared, interaction: str
) -> tuple[str, int, int]:
    """The action's concept, its targets and contradictions. (node, citations, contradictions)"""
    conn, session = out.ctx.conn, out.session
    lookup = SessionLookup(conn, session)
    citations = contradictions = 0
    scope = request.repo_scope
    if scope is not None and is_path(request.action):
        action_node = out.scoped(request.action, scope, prepared)[0]
    else:
        action_node = out.node(request.action, TARGET_TYPE, prepared, set())
    out.edge("derives", interaction, action_node)
    for kind, refs in (
        ("produces", request.produces),
        ("modifies", request.modifies),
        ("depends_on", request.depends_on),
    ):
        for j, ref in enumerate(refs):
            _check_fixed(lookup, f"{kind}[{j}]", ref)
            if ref.node is not None:
                target = ref.node
            elif ref.by == "path" and scope is not None:
                target = out.scoped(ref.ref, scope, prepared)[0]
            else:
                target = out.node(ref.ref, TARGET_TYPE, prepared, set())
            if target == action_node or reaches(lookup, {}, target, action_node, CAUSAL):
                raise CycleRefused(ACTION_CYCLE, field=kind, rule="must stay acyclic")
            out.edge(kind, action_node, target)
            if kind == "depends_on":
                citations += 1
    for j, ref in enumerate(request.against):
        _check_fixed(lookup, f"against[{j}]", ref)
        assert ref.node is not None
        out.edge("contradicts", action_node, ref.node)
        contradictions += 1
    return action_node, citations, contradictions


def _summary(request: MemoryRequest, created: int, matched: int, embedded: int) -> str:
    """The receipt's detail: `receipt <id>: applied — <this>` (M-DER-096)."""
    if isinstance(request, DeriveRequest):
        count = len(request.concepts)
        return (
            f"derived {count} concept(s): {created} created ({embedded} embedded),"
            f" {matched} matched existing"
        )
    if isinstance(request, ImageRequest):
        return f"derived 1 image concept: {created} created, {matched} matched existing"
    assert isinstance(request, ActionRequest)
    return (
        f"recorded action '{_one_line(request.action)}': {created} created"
        f" ({embedded} embedded), {matched} matched existing"
    )


def _one_line(text: str) -> str:
    """An action quoted in a one-line summary: its line breaks escaped."""
    return text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
