"""A layered session's recall (seed 001 "Layered sessions", ADR 0080): the session and each
of its layers recalled by its own rules (its own dedupe, contradiction and floor rules), then
merged under one max_tokens budget (lcg.domain.memory.layers.merge) and rendered once. A layer
that cannot be read leaves the session's own hits and one warning.

One retrieval serves every session of the call (ADR 0097): the query scored once by the
keyword index and embedded once, each session's candidates cut from that pass as its own
recall would read them, the owners and catalog rows read in one query each; then each
session's ranking and rules in turn, on the calling thread. A dependency question is recalled
session by session, as a plain recall answers it (a layer's traversal joins only when its
anchor is the caller's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from lcg.domain.errors import DomainError
from lcg.domain.memory import context, layers, questions
from lcg.domain.memory.layers import SessionHits
from lcg.projections.faults import VectorReadRefused
from lcg.queries.memory_reads import SessionJobs
from lcg.queries.memory_recall import (
    Recalled,
    RecalledHit,
    RecallRequest,
    await_concepts,
    recall_found,
    recall_memory,
    retrieve,
)
from lcg.queries.reads import ReadHandle

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LayerRead:
    """A layer as the call may read it: its jobs, or why it is not serving (None: it is)."""

    session: str
    jobs: SessionJobs | None
    unavailable: str | None = None


def recall_layered(
    reads: ReadHandle,
    jobs: SessionJobs | None,
    request: RecallRequest,
    stack: Sequence[LayerRead],
) -> Recalled:
    """The merged recall of `request.session` and its layers `stack`; every hit names its
    session (M-REC-243). A layer not serving, or failing to answer, leaves one warning
    (M-REC-252) and the rest of the stack's hits."""
    dependency = questions.is_dependency_question(request.query)
    if dependency:  # session by session, as before
        own = recall_memory(reads, jobs, request)
        answers: list[Answer] = [
            None
            if layer.unavailable is not None
            else partial(recall_memory, reads, layer.jobs, _as_layer(request, layer.session))
            for layer in stack
        ]
    else:
        own, answers = _one_retrieval(reads, jobs, request, stack)
    parts: list[SessionHits] = []
    found: dict[tuple[str, str], RecalledHit] = {
        (request.session, hit.node_id): hit for hit in own.hits
    }
    down: list[str] = []
    for layer, answer in zip(stack, answers, strict=True):
        if answer is None:
            down.append(layer.session)
            continue
        try:
            got = answer()
        except (DomainError, VectorReadRefused):  # a refusal is the call's (M-ERR-023)
            raise
        except Exception:
            log.warning("layer %s could not be read", layer.session, exc_info=True)
            down.append(layer.session)
            continue
        if not layers.same_anchor(own.anchor, got.anchor):
            continue  # its traversal answers another concept than the caller's (M-REC-100)
        found.update({(layer.session, hit.node_id): hit for hit in got.hits})
        parts.append(_session_hits(layer.session, got))
    merged = layers.merge(
        _session_hits(request.session, own), parts, request.top_k, _order(reads, dependency)
    )
    views = [view for _, view in merged.hits]
    if reads.settings.tuning.stages.budget_pack and own.header is None:  # ADR 0103
        beside = frozenset(
            view.node_id for key, view in merged.hits if found[key, view.node_id].companion_of
        )
        order = context.budget_order(views, request.max_tokens, followers=beside)
        merged = replace(merged, hits=tuple(merged.hits[index] for index in order))
        views = [view for _, view in merged.hits]
    rendered = context.render_context(views, request.max_tokens, header=own.header)
    hits = tuple(
        replace(
            found[(session, view.node_id)],
            session=session,
            truncated_in_context=rendered.truncated == view.node_id,
            also_skipped_redundant=tuple(
                (layer, item)
                for layer, copy in merged.absorbed.get(view.node_id, ())
                for item in found[(layer, copy)].skipped_redundant
            )
            if session == request.session
            else (),
        )
        for session, view in merged.hits
    )
    unavailable = [
        layers.UNAVAILABLE_WARNING.format(layer=layer, session=request.session) for layer in down
    ]
    return Recalled(rendered.text, hits, (*merged.warnings, *unavailable), tuple(views), own.header)


def _order(reads: ReadHandle, dependency: bool) -> layers.LayerMerge:
    """[serve] layer_merge where the sessions' scores are comparable (ADR 0107): every
    session of the call is served by this process, so one text scorer (BM25 over every
    session's documents) and one embedder score them all, and by default a hit's score is the
    highest of its raw leg scores (M-REC-026). Under reciprocal rank fusion a score is a
    function of the hit's ranks within its own session, and a dependency question's hits are
    a traversal's, not the query's relevance: both merge rank by rank."""
    if dependency or reads.settings.search_fusion != "max":
        return "rank"
    return reads.settings.tuning.layer_merge


Answer = Callable[[], Recalled] | None  # a layer's recall, to run; None: it is not serving


def _one_retrieval(
    reads: ReadHandle, jobs: SessionJobs | None, request: RecallRequest, stack: Sequence[LayerRead]
) -> tuple[Recalled, list[Answer]]:
    """The session's recall from one retrieval over it and every serving layer (each
    session's vectors settled first, as its own recall settles them), and each layer's
    recall from the same retrieval, to run in turn on this thread."""
    late = {request.session: await_concepts(reads, request.session)}
    failed: dict[str, Answer] = {}
    for layer in stack:
        if layer.unavailable is None:
            try:
                late[layer.session] = await_concepts(reads, layer.session)
            except Exception as error:  # noqa: BLE001 (read as this layer's answer)
                failed[layer.session] = partial(_raise, error)
    retrieved = retrieve(reads, request, list(late))  # the session first, then its layers
    own = recall_found(
        reads, jobs, request, late[request.session], retrieved[request.session], render=False
    )
    answers = [
        None
        if layer.unavailable is not None
        else failed.get(layer.session)
        or partial(
            recall_found,
            reads,
            layer.jobs,
            _as_layer(request, layer.session),
            late[layer.session],
            retrieved[layer.session],
            render=False,
        )
        for layer in stack
    ]
    return own, answers


def _as_layer(request: RecallRequest, layer: str) -> RecallRequest:
    """The request a layer's own recall answers inside the merged one: the layer's floor
    holds for its contradicting concepts too (M-REC-149)."""
    return replace(request, session=layer, layer_floor=True)


def _raise(error: Exception) -> Recalled:
    raise error


def _session_hits(session: str, recalled: Recalled) -> SessionHits:
    companions = frozenset(hit.node_id for hit in recalled.hits if hit.companion_of)
    return SessionHits(session, recalled.views, companions, recalled.warnings)
