"""lambo_recall's composition (seed 001): the context block an agent reads before a task, and
its hits, from a validated request (ADR 0060).

A dependency question ("what depends on X", ...) naming a concept with dependents is answered
by graph traversal (lcg.domain.memory.questions); any other query by the retrieval core
(lcg.queries.recall: keyword, vector and recent legs, fused, expanded through the graph). A
contradicted hit gets its ⚠ line and the contradicting concept beside it, a hit citing a
contradicted concept its rests-on lines (lcg.domain.memory.evidence). The block is rendered by
lcg.domain.memory.context within max_tokens. With [selection] skip_redundant a hit repeating one
already taken gives its slot to the next distinct hit (lcg.domain.memory.redundancy, #181).
Counting the returned concepts as accessed is a write: the tool does it (ADR 0027).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from lcg.domain.memory import context, evidence, questions, redundancy
from lcg.domain.memory.context import AlsoItem, HitView, RestsOn
from lcg.domain.memory.identity import MINILM_MERGE_THRESHOLD
from lcg.domain.memory.questions import NameCandidate
from lcg.domain.memory.repo_paths import repo_of_key, repository_subject
from lcg.domain.memory.text import ConceptType
from lcg.projections.canonization import state as canon
from lcg.projections.memory import evidence as memory_evidence
from lcg.projections.memory import state
from lcg.projections.memory.state import Node
from lcg.projections.text import reader as text_reader
from lcg.projections.vectors.follower import CONCEPTS
from lcg.queries import recall, recall_marks
from lcg.queries.memory_reads import SessionJobs, display_type
from lcg.queries.reads import ReadHandle, search_context
from lcg.queries.recall import RecallHit
from lcg.queries.recall_annotations import Annotation, annotations_of
from lcg.queries.redundancy import pair_facts
from lcg.queries.search import vectors_pending

NAME_CANDIDATES = 200  # concepts the keyword index proposes as a question's names


@dataclass(frozen=True, slots=True)
class RecallRequest:
    """A recall's validated arguments: the query is within its bounds, and not blank unless
    the recall is by a vector. `by_vector` is a checked, unit-length client vector (M-REC-272)
    the vector leg searches by instead of the query's embedding; it is held for this call only,
    never stored or cached (M-REC-281)."""

    session: str
    agent_id: str
    query: str
    top_k: int
    max_tokens: int
    traversal_depth: int
    by_vector: tuple[float, ...] | None = None
    # a layer's recall inside a merged one: a contradicting concept is added beside its hit
    # only if its own relevance passes the layer's floor (M-REC-149, ADR 0105)
    layer_floor: bool = False


@dataclass(frozen=True, slots=True)
class RecalledHit:
    """One hit as it is answered. `ranks` is None on the dependency question's traversal;
    `companion_of` names the contradicted hits a concept kept past top_k stands beside;
    `skipped_redundant` the repeats it replaced (skip_redundant)."""

    node_id: str
    content: str
    concept_type: str
    score: float
    is_canonical: bool
    blast_radius: int | None  # shown on Canonical hits only (context.shown_blast_radius)
    ranks: dict[str, int] | None
    companion_of: tuple[str, ...] = ()
    skipped_redundant: tuple[redundancy.Skipped, ...] = ()
    possibly_superseded_by: str | None = None  # #198: a newer concept may replace it
    truncated_in_context: bool = False  # its block is the one cut at max_tokens
    repo_scope: str | None = None  # the repository of a scoped path (M-RSC-060)
    fused: dict[str, float] | None = None  # both fused values of a leg hit (the ledger's)
    annotations: tuple[Annotation, ...] = ()  # its lines as kinds (recall_annotations)
    session: str | None = None  # a layered session's hit: the session it is from (M-REC-243)
    # what a layer skipped for its copy merged into this hit: (that layer, the skip) (M-REC-204)
    also_skipped_redundant: tuple[tuple[str, redundancy.Skipped], ...] = ()
    scores: dict[str, float] | None = None  # each query leg's own score (the portal's)


@dataclass(frozen=True, slots=True)
class Recalled:
    """The context block, the hits in rank order, and the warnings (the block's lines)."""

    context: str
    hits: tuple[RecalledHit, ...]
    warnings: tuple[str, ...]
    views: tuple[HitView, ...] = ()  # the hits' blocks as rendered (a layered recall merges them)
    header: str | None = None  # a dependency answer's traversal line
    anchor: str | None = None  # a dependency answer's anchor text (a layer's must match)


@dataclass(frozen=True, slots=True)
class _Shown:
    """What the hits of an ordinary recall carry beside their block."""

    ranks: dict[str, int]
    companion_of: tuple[str, ...]
    skipped: tuple[redundancy.Skipped, ...]
    possibly_superseded_by: str | None = None
    fused: dict[str, float] | None = None
    annotations: tuple[Annotation, ...] = ()
    scores: dict[str, float] | None = None


def recall_memory(reads: ReadHandle, jobs: SessionJobs | None, request: RecallRequest) -> Recalled:
    """The recall of `request.query` in its session: a dependency question's traversal, or
    the fused hits with their warning lines and marks. `jobs`: the session's daemon, whose
    contradiction list the Contradicted lines follow (None: evaluated on this recall). A
    recall by vector is always the blended recall: traversal would ignore the vector
    (M-REC-102)."""
    blended = request.by_vector is not None
    anchor = None if blended else _anchor(reads, request.session, request.query)
    if anchor is not None:
        return _traversal(reads, anchor, request)
    late = await_concepts(reads, request.session)
    found = retrieve(reads, request, [request.session])[request.session]
    return recall_found(reads, jobs, request, late, found)


# -- dependency questions ----------------------------------------------------------------------


def _anchor(reads: ReadHandle, session: str, query: str) -> questions.Anchor | None:
    if not questions.is_dependency_question(query):
        return None
    conn = reads.reader()
    hits = text_reader.search(conn, "concept", query, [session], NAME_CANDIDATES, reads.text_scorer)
    nodes = state.nodes_by_uuid(conn, list(dict.fromkeys(hit.owner_uuid for hit in hits)))
    radii = state.blast_radii(conn, list(nodes))
    candidates = [
        NameCandidate(node.content, ConceptType(node.concept_type or "entity"), radii[uuid], uuid)
        for uuid, node in nodes.items()
        if node.node_kind == "concept"
    ]
    return questions.find_anchor(query, candidates)


def _traversal(reads: ReadHandle, anchor: questions.Anchor, request: RecallRequest) -> Recalled:
    """X's direct dependents, best connected first; the context says where it came from."""
    conn = reads.reader()
    subject = anchor.concept
    same = state.nodes_by_uuid(conn, [c.node_id for c in anchor.concepts])
    chosen, ambiguous = repository_subject(
        request.query,
        subject.text,
        [(c.node_id, repo_of_key(same[c.node_id].canonical_key)) for c in anchor.concepts],
    )
    if ambiguous is not None:  # a path of several repositories: answered for none
        return Recalled(ambiguous, (), (ambiguous,))
    subject = next(c for c in anchor.concepts if c.node_id == chosen)
    edges = state.edges_of(conn, request.session, subject.node_id)
    dependents = list(
        dict.fromkeys(
            [s for kind, s, t in edges if kind == "depends_on" and t == subject.node_id]
            + [t for kind, s, t in edges if kind == "parent_of" and s == subject.node_id]
        )
    )
    nodes = state.nodes_by_uuid(conn, dependents)
    radii = state.blast_radii(conn, dependents)
    ordered = sorted(
        (nodes[uuid] for uuid in dependents if uuid in nodes),
        key=lambda node: (-radii[node.uuid], node.uuid),
    )[: request.top_k]
    views = recall_marks.canonized(
        conn,
        request.session,
        [
            HitView(
                n.uuid,
                n.content,
                display_type(n.concept_type),
                1.0,
                repo_scope=repo_of_key(n.canonical_key),
            )
            for n in ordered
        ],
    )
    header = context.traversal_line(subject.text, subject.node_id, len(dependents))
    rendered = context.render_context(views, request.max_tokens, header=header)
    warning = (
        f"recall: dependency question answered by graph traversal ({len(dependents)} dependents)"
    )
    return replace(_recalled(views, rendered, [warning], None), header=header, anchor=subject.text)


# -- ordinary recall -------------------------------------------------------------------------


def await_concepts(reads: ReadHandle, session: str) -> list[str]:
    """Wait, bounded, for the session's concepts applied just before to be in the vector
    index, so recall finds them by meaning too; a warning when some were not (ADR 0047)."""
    started = time.perf_counter()
    wait_ms = reads.settings.vector_read_wait_ms
    pending = reads.settle_vectors([session], CONCEPTS, wait_ms / 1000)
    if not pending:
        return []
    waited_ms = round((time.perf_counter() - started) * 1000)
    return [f"recall: {vectors_pending(pending, waited_ms)['message']}"]


def retrieve(
    reads: ReadHandle, request: RecallRequest, sessions: Sequence[str]
) -> dict[str, recall.Candidates]:
    """Each of `sessions`' candidates for `request`, from one retrieval
    (lcg.queries.recall.candidates), each as that session's own recall reads them."""
    ctx = search_context(reads)
    if request.by_vector is not None:  # a recall by vector reads one session (M-REC-260)
        vector = np.asarray(request.by_vector, dtype=np.float32)
        ctx = replace(ctx, embed_query=lambda _text: vector)
    return recall.candidates(ctx, sessions, request.query, request.top_k)


def recall_found(
    reads: ReadHandle,
    jobs: SessionJobs | None,
    request: RecallRequest,
    late: list[str],
    candidates: recall.Candidates,
    *,
    render: bool = True,
) -> Recalled:
    """The ordinary recall of `request.session` from its retrieved candidates: ranked, then
    its contradiction, rests-on, dedupe and floor rules, lines and marks. `late`: the
    warning that some concept vectors were not indexed yet. `render` False: no context
    block (empty, no hit truncated), for a layered recall, which renders the merged hits."""
    found = recall.ranked(
        search_context(reads),
        request.session,
        request.query,
        candidates,
        request.top_k,
        request.traversal_depth,
        "rrf" if reads.settings.search_fusion == "rrf" else "max",
        # read past top_k: skipped hits give their slots to later ones, and a contradicted
        # Canonical or Venerable hit is kept past top_k (M-REC-131)
        take=request.top_k + redundancy.checked_count(request.top_k),
    )
    return _ordinary(reads, jobs, request, [*late, *candidates.warnings], found, render)


def _ordinary(
    reads: ReadHandle,
    jobs: SessionJobs | None,
    request: RecallRequest,
    late: list[str],
    found: list[RecallHit],
    render: bool = True,
) -> Recalled:
    conn = reads.reader()
    settings = reads.settings
    skip = settings.tuning.skip_redundant
    session = request.session
    nodes = state.nodes_by_uuid(conn, [hit.node_id for hit in found])
    candidates = [
        hit for hit in found if hit.node_id in nodes and nodes[hit.node_id].node_kind == "concept"
    ]
    ids = [hit.node_id for hit in candidates]
    cited = state.targets_each(conn, session, ids, ["depends_on"])
    asked = list(dict.fromkeys([*ids, *(c for targets in cited.values() for c in targets)]))
    live = _contradicted(conn, session, asked, reads.clock())
    listed = jobs.contradiction_list if jobs is not None else None
    # The Contradicted line follows the daemon's list (from its next tick after the write,
    # M-REC-121); rests-on lines read memory on every recall (seed: "Checked on every recall").
    contradicted = live if listed is None else {k: v for k, v in live.items() if k in listed}
    lines, sources, everything = _hit_lines(conn, ids, nodes, cited, asked, (contradicted, live))
    skipped: dict[str, tuple[redundancy.Skipped, ...]] = {}
    every = found
    if skip:
        found, skipped = _skip_redundant(
            reads, session, request.top_k, found, nodes, lines, sources
        )
    else:
        found = found[: request.top_k]
    found = [hit for hit in found if hit.node_id in lines]
    found += _held_past_top_k(conn, every, found, contradicted, lines)
    companions: dict[str, list[str]] = {}
    warnings: list[str] = []
    for hit in found:
        warnings.extend(lines[hit.node_id])
        if hit.node_id in sources:
            companions.setdefault(sources[hit.node_id], []).append(hit.node_id)
    # The contradicting concept beside each contradicted hit (M-REC-130..135): right after it,
    # past top_k when it did not rank in on its own (then with companion_of), and its own
    # "Contradicts" line either way. In a merged recall a layer's contradicting concept must
    # itself rank within what the layer reads (`every`): floored, it is named only on the
    # hit's line (M-REC-149).
    ranked = {hit.node_id for hit in found}
    order: list[tuple[Node, float, dict[str, int]]] = []
    legged = {hit.node_id: hit for hit in every}
    added: dict[str, list[str]] = {}
    for hit in found:
        order.append((nodes[hit.node_id], hit.score, hit.ranks))
        for companion, of in companions.items():
            floored = request.layer_floor and companion not in legged
            if hit.node_id in of and not floored and companion not in ranked | added.keys():
                added[companion] = of
                order.append((everything[companion], 0.0, {}))
    views: list[HitView] = []
    shown: dict[str, _Shown] = {}
    for node, score, ranks in order:
        contradicts = [
            context.contradicts_line(everything[target].content, target)
            for target in companions.get(node.uuid, [])
            if target in everything
        ]
        warnings.extend(contradicts)
        # a companion kept only to stand beside what it contradicts shows just that line:
        # its own conditions are not checked (M-REC-140)
        block = (*contradicts, *([] if node.uuid in added else lines.get(node.uuid, [])))
        repeats = skipped.get(node.uuid, ())
        views.append(
            HitView(
                node.uuid,
                node.content,
                display_type(node.concept_type),
                score,
                warning_lines=block,
                also=tuple(AlsoItem(item.node_id) for item in repeats),
                repo_scope=repo_of_key(node.canonical_key),
            )
        )
        shown[node.uuid] = _shown(
            ranks, tuple(added.get(node.uuid, ())), repeats, legged.get(node.uuid)
        )
    # Possibly superseded, not declared (#198): the structured field on the older hit. The line
    # is shown only under a contract whose trigger precision was measured (BGE-M3); the bundled
    # MiniLM's was not, so the pair is only in the field (M-REC-190..).
    replaced = state.possibly_superseded_by(conn, session, [v.node_id for v in views])
    if replaced and reads.settings.tuning.supersession_line == "on":  # M-CFG-027
        views = _with_supersession_lines(conn, views, replaced)
    views, marked = recall_marks.marked(
        conn, recall_marks.canonized(conn, session, views), reads.clock(), request.agent_id
    )
    views, rendered = _rendered(
        settings.tuning.stages.budget_pack if render else None, views, request, set(added)
    )
    for older, newer in replaced.items():
        shown[older] = replace(shown[older], possibly_superseded_by=newer)
    shown = _annotated(
        conn, session, shown, (contradicted, live), lines, companions, cited, skipped, replaced
    )
    return _recalled(views, rendered, [*marked, *warnings, *late], shown)


def _rendered(
    pack: bool | None, views: list[HitView], request: RecallRequest, companions: set[str]
) -> tuple[list[HitView], context.RenderedContext]:
    """The hits in their final rank order and the context block of them. With [retrieval]
    budget_pack (`pack`), a hit whose block does not fit what max_tokens leaves moves after
    those that fit, each companion with the hit it stands beside (ADR 0103). `pack` None: a
    session of a merged recall, no block (the merge packs and renders the merged hits)."""
    if pack is None:
        return views, context.EMPTY
    if pack:
        views = context.pack_for_budget(views, request.max_tokens, followers=frozenset(companions))
    return views, context.render_context(views, request.max_tokens)


def _with_supersession_lines(
    conn: sqlite3.Connection, views: list[HitView], replaced: dict[str, str]
) -> list[HitView]:
    """[embedder] suspected_supersession_line = "on": the possibly-superseded line on each
    older hit's block, after its other lines (M-REC-211), when the newer concept is in the
    same result (M-REC-216)."""
    newer = state.nodes_by_uuid(conn, list(replaced.values()))
    in_result = {view.node_id for view in views}
    out: list[HitView] = []
    for view in views:
        by = replaced.get(view.node_id)
        if by is None or by not in newer or by not in in_result:
            out.append(view)
            continue
        line = context.possibly_superseded_line(newer[by].content, by)
        out.append(replace(view, warning_lines=(*view.warning_lines, line)))
    return out


def _annotated(
    conn: sqlite3.Connection,
    session: str,
    shown: dict[str, _Shown],
    rules: tuple[
        dict[evidence.ConceptId, evidence.Contradiction],
        dict[evidence.ConceptId, evidence.Contradiction],
    ],
    lines: dict[str, list[str]],
    companions: dict[str, list[str]],
    cited: dict[str, list[str]],
    skipped: dict[str, tuple[redundancy.Skipped, ...]],
    replaced: dict[str, str],
) -> dict[str, _Shown]:
    """Each hit with its annotations (lcg.queries.recall_annotations): the kinds of the
    lines its block shows. `rules` as in _hit_lines."""
    contradicted, live = rules
    rests = {
        uuid: [
            (target, live[evidence.ConceptId(target)].source)
            for target in cited.get(uuid, [])
            if evidence.ConceptId(target) in live
            and live[evidence.ConceptId(target)].source != uuid
        ]
        for uuid in shown
    }
    with_line = {k: v for k, v in contradicted.items() if k in lines}  # a ⚠ line each
    notes = annotations_of(
        conn, session, list(shown), with_line, companions, rests, skipped, replaced
    )
    return {uuid: replace(extra, annotations=notes[uuid]) for uuid, extra in shown.items()}


def _contradicted(
    conn: sqlite3.Connection, session: str, asked: list[str], now: datetime
) -> dict[evidence.ConceptId, evidence.Contradiction]:
    """The hits and cited concepts a contradiction fires on now, each with the one recall
    shows (the rule of lcg.domain.memory.evidence, evaluated on this recall)."""
    known = memory_evidence.load(conn, session, asked)
    found = [known.concepts[u] for u in asked if u in known.concepts]
    return evidence.current_contradictions(found, known.contradictions, known.support, now)


def _held_past_top_k(
    conn: sqlite3.Connection,
    ranked: list[RecallHit],
    chosen: list[RecallHit],
    contradicted: dict[evidence.ConceptId, evidence.Contradiction],
    lines: dict[str, list[str]],
) -> list[RecallHit]:
    """Contradicted Canonical and Venerable concepts ranked past the chosen hits, kept after
    them in rank order (M-REC-131; the concept beside each is added with it)."""
    if not contradicted:
        return []
    taken = {hit.node_id for hit in chosen}
    later = [
        hit
        for hit in ranked
        if hit.node_id not in taken
        and hit.node_id in lines
        and evidence.ConceptId(hit.node_id) in contradicted
    ]
    held = canon.statuses(conn, [hit.node_id for hit in later])
    return [hit for hit in later if held[hit.node_id] in ("Canonical", "Venerable")]


def _hit_lines(
    conn: sqlite3.Connection,
    ids: list[str],
    nodes: dict[str, Node],
    cited: dict[str, list[str]],
    asked: list[str],
    rules: tuple[
        dict[evidence.ConceptId, evidence.Contradiction],
        dict[evidence.ConceptId, evidence.Contradiction],
    ],
) -> tuple[dict[str, list[str]], dict[str, str], dict[str, Node]]:
    """Each hit's own warning lines (its Contradicted line, then its rests-on lines), each
    contradicted hit's contradicting concept still in memory, and every node read, hits,
    contradicting and cited concepts alike. `rules` is (the contradictions the Contradicted
    lines show: the daemon's, those the rests-on lines read: this recall's own)."""
    contradicted, live = rules
    lines: dict[str, list[str]] = {uuid: [] for uuid in ids}
    extra_nodes = state.nodes_by_uuid(  # contradicting concepts and cited ones not among hits
        conn,
        [uuid for uuid in (*(c.source for c in live.values()), *asked) if uuid not in nodes],
    )
    everything = {**nodes, **extra_nodes}
    sources: dict[str, str] = {}  # contradicted hit -> the concept beside it (still in memory)
    for uuid in ids:
        hit_lines = lines[uuid]
        contradiction = contradicted.get(evidence.ConceptId(uuid))
        if contradiction is not None:
            source = everything.get(contradiction.source)
            hit_lines.append(
                context.contradicted_line(
                    contradiction.dated,
                    contradiction.agent_id,
                    None if source is None else source.content,
                    contradiction.source,
                )
            )
            if source is not None:
                sources[uuid] = contradiction.source
        rests = [
            RestsOn(
                target,
                everything[target].content if target in everything else "",
                live[evidence.ConceptId(target)].source,
                _content(everything, live[evidence.ConceptId(target)].source),
            )
            for target in cited[uuid]
            if evidence.ConceptId(target) in live
            and live[evidence.ConceptId(target)].source != uuid
        ]
        hit_lines.extend(context.rests_on_lines(rests))
    return lines, sources, everything


def _skip_redundant(
    reads: ReadHandle,
    session: str,
    top_k: int,
    found: list[RecallHit],
    nodes: dict[str, Node],
    lines: dict[str, list[str]],
    sources: dict[str, str],
) -> tuple[list[RecallHit], dict[str, tuple[redundancy.Skipped, ...]]]:
    """[selection] skip_redundant (#181, M-REC-181..200): the first top_k ranked hits that do
    not repeat one kept before them, and what each kept hit replaced.

    Never skipped: a hit with a warning line of its own, and a concept that would be shown
    beside a contradicted hit among those ranked (it gets the Contradicts line, and it is the
    hit kept past top_k for that warning); a hit that is not a concept in memory keeps its
    slot, as without the setting, and is dropped afterwards."""
    settings = reads.settings
    checked = found[: redundancy.checked_count(top_k)]
    beside = {sources[hit.node_id] for hit in found if hit.node_id in sources}
    ranked = [
        redundancy.Candidate(
            hit.node_id,
            nodes[hit.node_id].content if hit.node_id in lines else None,
            protected=bool(lines.get(hit.node_id)) or hit.node_id in beside,
        )
        for hit in found
    ]
    facts = pair_facts(
        reads.reader(),
        reads.vectors,
        session,
        [hit.node_id for hit in checked if hit.node_id in lines],
        similar_signals=settings.tuning.similar_signals,
        threshold=MINILM_MERGE_THRESHOLD,
    )
    selection = redundancy.select(
        ranked, top_k, facts, similar_signals=settings.tuning.similar_signals
    )
    kept = set(selection.kept)
    return [hit for hit in found if hit.node_id in kept], dict(selection.skipped)


def _content(nodes: dict[str, Node], uuid: str) -> str | None:
    node = nodes.get(uuid)
    return None if node is None else node.content


def _shown(
    ranks: dict[str, int],
    companion_of: tuple[str, ...],
    skipped: tuple[redundancy.Skipped, ...],
    leg_hit: RecallHit | None,
) -> _Shown:
    """What a hit carries beside its block; its fused values and leg scores when a query
    leg found it."""
    if leg_hit is None:
        return _Shown(ranks, companion_of, skipped)
    return _Shown(
        ranks, companion_of, skipped, fused=leg_hit.fused or None, scores=leg_hit.scores or None
    )


def _recalled(
    views: list[HitView],
    rendered: context.RenderedContext,
    warnings: list[str],
    shown: dict[str, _Shown] | None,
) -> Recalled:
    hits: list[RecalledHit] = []
    for view in views:
        extra = None if shown is None else shown[view.node_id]
        hits.append(
            RecalledHit(
                view.node_id,
                view.content,
                view.concept_type,
                view.score,
                view.is_canonical,
                context.shown_blast_radius(view),
                None if extra is None else extra.ranks,
                () if extra is None else extra.companion_of,
                () if extra is None else extra.skipped,
                None if extra is None else extra.possibly_superseded_by,
                rendered.truncated == view.node_id,
                view.repo_scope,
                None if extra is None else extra.fused,
                () if extra is None else extra.annotations,
                scores=None if extra is None else extra.scores,
            )
        )
    return Recalled(rendered.text, tuple(hits), tuple(warnings), tuple(views))
