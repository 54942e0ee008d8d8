"""lambo_recall's context block (seed 001, M-REC 4.3-4.10): hit blocks, their lines, the budget.

Pure rendering. The caller has already ranked the hits and worked out which lines each one
carries (contradictions, rests-on, supersession, conflicts); this module turns them into the
exact text models read, keeps whole blocks in rank order within ``max_tokens``, and cuts a first
block that is over budget. Every line's wording is the seed's; where the seed is silent the
choice is named in the function's docstring with the open question it answers (OQ-nn of
spec/memory-checklist.md).

A block is::

    <content> [<Type>(, canonical)(, repo "<repo>")] (score <s>, id <short>(, blast radius <n>)
        (, from <session>)(, also <short>( in <session>), ...))
    ⚑ Load-bearing pillar — <n> nodes depend on this. Modify with caution.   (Canonical only)
    <the hit's warning lines, in the order given>

Blocks are joined by one blank line; the context has no trailing newline.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from lcg.domain.memory.identity import short_id
from lcg.domain.memory.locks import require_utc

BYTES_PER_TOKEN: Final = 3.5
QUOTE_CHARS: Final = 80
MAX_REST_ON_LINES: Final = 3
MAX_ALSO_IDS: Final = 3
ELLIPSIS: Final = "…"
BLOCK_SEPARATOR: Final = "\n\n"

# Line breaks inside a quoted text would split a warning line in two, so a quote shows each of
# them as a space (tab and newline are the only controls a concept may hold, M-ARG).
_QUOTE_BREAKS: Final = str.maketrans({"\n": " ", "\t": " ", "\u2028": " ", "\u2029": " "})

NodeRef = str | uuid.UUID


# --- hits and the result ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlsoItem:
    """An id the label names after ``also``: a skipped duplicate (#181), or the layer's copy of
    the same memory (``also 9f8e7d6c in general``). ``session`` is set for the second kind and
    for a duplicate a layer skipped."""

    node_id: str
    session: str | None = None


@dataclass(frozen=True, slots=True)
class HitView:
    """What one recall hit needs for its block.

    ``node_id`` is the full hyphenated uuid (the label shows its short id); ``concept_type`` is
    the display name (``Entity``); ``blast_radius`` is shown, with the ⚑ line, on Canonical
    hits only (canonization.md §11, OQ-16/OQ-22). ``warning_lines`` are the block's lines after
    the ⚑ line, already worded (see the ``*_line`` functions) and in the order they are shown;
    the order the retrieval core should use is conflict, high-risk, contradicted or contradicts,
    rests-on, possibly superseded, superseded. ``from_session`` names the layer a hit of a
    merged recall comes from; ``repo_scope`` the repository of a scoped path (M-RSC-061).
    """

    node_id: str
    content: str
    concept_type: str
    score: float
    is_canonical: bool = False
    blast_radius: int | None = None
    warning_lines: tuple[str, ...] = ()
    also: tuple[AlsoItem, ...] = ()
    from_session: str | None = None
    repo_scope: str | None = None


@dataclass(frozen=True, slots=True)
class RenderedContext:
    """The context text, the node ids of the hits whose block is in it (a prefix of the hits,
    in rank order), and the node id of the hit that carries ``truncated_in_context``."""

    text: str
    included: tuple[str, ...] = ()
    truncated: str | None = None


EMPTY: Final = RenderedContext("")


# --- tokens -----------------------------------------------------------------------------------


def estimate_tokens(text: str) -> int:
    """ceil(UTF-8 bytes / 3.5) (M-REC-062, OQ-31 answered by canonization.md §11)."""
    return byte_tokens(len(text.encode("utf-8")))


def byte_tokens(size: int) -> int:
    """Tokens of ``size`` UTF-8 bytes: ceil(size / 3.5), in integers (ceil(2·size / 7))."""
    return -(-2 * size // 7)


def budget_bytes(max_tokens: int) -> int:
    """The most UTF-8 bytes ``max_tokens`` tokens hold: floor(3.5 · max_tokens)."""
    return max(0, 7 * max_tokens // 2)


# --- quoting, ids and times -------------------------------------------------------------------


def quote(text: str) -> str:
    """A concept's text as a line quotes it: its first 80 characters, ``…`` when cut.

    The seed fixes 80 characters for the Contradicted line (M-REC-111); the same rule serves the
    Contradicts, Rests-on, Possibly-superseded and Superseded lines, which the seed leaves open
    (OQ-25), so no line can grow with a long concept. Line breaks and tabs show as spaces.
    """
    one_line = text.translate(_QUOTE_BREAKS)
    if len(one_line) <= QUOTE_CHARS:
        return one_line
    return one_line[:QUOTE_CHARS] + ELLIPSIS


def _short(node: NodeRef) -> str:
    return short_id(node)


def _time(moment: datetime) -> str:
    """RFC 3339 UTC to the second, sub-seconds dropped: a past moment is never shown later."""
    return require_utc(moment, "moment").strftime("%Y-%m-%dT%H:%M:%SZ")


def _named(content: str | None, node: NodeRef) -> str:
    """``"<quote>" (id xxxxxxxx)``, or ``a removed concept (id xxxxxxxx)`` when it is gone."""
    if content is None:
        return f"a removed concept (id {_short(node)})"
    return f'"{quote(content)}" (id {_short(node)})'


# --- lines ------------------------------------------------------------------------------------


def load_bearing_line(blast_radius: int) -> str:
    """The ⚑ line (M-REC-048), byte for byte; only the count varies."""
    return f"⚑ Load-bearing pillar — {blast_radius} nodes depend on this. Modify with caution."


def shown_blast_radius(hit: HitView) -> int | None:
    """The blast radius a hit's label shows, with the ⚑ line, or None when it shows neither.

    Canonical hits only (canonization.md §11 answers OQ-16 and OQ-22), and only with a blast
    radius of at least 1: a Canonical concept whose dependents were all removed is not shown as
    a pillar that ``0 nodes`` depend on.
    """
    if hit.is_canonical and hit.blast_radius is not None and hit.blast_radius > 0:
        return hit.blast_radius
    return None


def contradicted_line(
    at: datetime, agent_id: str, contradicting_content: str | None, contradicting_id: NodeRef
) -> str:
    """``⚠ Contradicted at <RFC 3339> by <agent>: "<first 80 characters>" (id xxxxxxxx)``
    (M-REC-111). ``at`` is the contradiction's about-time. A contradicting concept that was
    removed is named by id alone (M-REC-130, OQ-27): ``...: a removed concept (id xxxxxxxx)``.
    """
    named = _named(contradicting_content, contradicting_id)
    return f"⚠ Contradicted at {_time(at)} by {agent_id}: {named}"


def contradicts_line(contradicted_content: str, contradicted_id: NodeRef) -> str:
    """``⚠ Contradicts "<content>" (id xxxxxxxx)`` on the concept beside the hit (M-REC-112)."""
    return f"⚠ Contradicts {_named(contradicted_content, contradicted_id)}"


@dataclass(frozen=True, slots=True)
class RestsOn:
    """A concept the hit cites in ``depends_on`` that is contradicted, and what contradicts it."""

    cited_id: str
    cited_content: str
    contradicting_id: str
    contradicting_content: str | None


def rests_on_line(rest: RestsOn) -> str:
    """``⚠ Rests on a contradicted concept: "<cited>" (id …), contradicted by "<c>" (id …)``
    (M-REC-160)."""
    cited = _named(rest.cited_content, rest.cited_id)
    contradicting = _named(rest.contradicting_content, rest.contradicting_id)
    return f"⚠ Rests on a contradicted concept: {cited}, contradicted by {contradicting}"


def rests_on_more_line(count: int) -> str:
    """``⚠ Rests on <n> more contradicted concepts`` (M-REC-167).

    The seed's example continues ``; lambo_inspect on the hit shows its neighbourhood, its
    citations included.``: read as the document's explanation, not the line (OQ-26), because it
    speaks of "the hit" from outside it. One more is ``1 more contradicted concept``.
    """
    noun = "concept" if count == 1 else "concepts"
    return f"⚠ Rests on {count} more contradicted {noun}"


def rests_on_lines(rests: Sequence[RestsOn]) -> tuple[str, ...]:
    """A hit's rests-on lines: one per cited concept in the order of the cited ids, at most 3,
    then one line counting the rest (M-REC-166, M-REC-167)."""
    ordered = sorted(rests, key=lambda rest: rest.cited_id.lower())
    lines = tuple(rests_on_line(rest) for rest in ordered[:MAX_REST_ON_LINES])
    if len(ordered) > MAX_REST_ON_LINES:
        return (*lines, rests_on_more_line(len(ordered) - MAX_REST_ON_LINES))
    return lines


def possibly_superseded_line(newer_content: str, newer_id: NodeRef) -> str:
    """``⚠ Possibly superseded by "<newer>" (id xxxxxxxx), not declared`` (M-REC-211)."""
    return f"⚠ Possibly superseded by {_named(newer_content, newer_id)}, not declared"


def superseded_line(at: datetime, superseding_content: str | None, superseding_id: NodeRef) -> str:
    """``⤓ Superseded at <RFC 3339> by "<content>" (id xxxxxxxx)`` (M-REC-230). The quote is
    left out once the superseding concept is gone; the id names it either way (M-REC-233)."""
    return f"⤓ Superseded at {_time(at)} by {_named(superseding_content, superseding_id)}"


def agent_display(agent_id: str) -> str:
    """The conflict line's name for an agent: ``agent-`` dropped, first letter upper-cased."""
    rest = agent_id.removeprefix("agent-")
    return rest[:1].upper() + rest[1:]


def conflict_line(writer_agent_id: str, seconds_ago: int) -> str:
    """``Agent <X> wrote to it <n> seconds ago`` (canonization.md §7, upstream's wording, OQ-23).

    ``seconds`` whatever the count, as upstream writes it.
    """
    return f"Agent {agent_display(writer_agent_id)} wrote to it {seconds_ago} seconds ago"


def high_risk_line(content: str, status: str, blast_radius: int | None = None) -> str:
    """``High-risk modification: high-value node <c> (<Status>[, blast radius n]) modified within
    30s`` (canonization.md §7, OQ-23). ``<c>`` is the concept's text, cut like a quote (without
    quotation marks, as upstream prints it); ``status`` its display name (``Canonical``)."""
    radius = "" if blast_radius is None else f", blast radius {blast_radius}"
    return (
        f"High-risk modification: high-value node {quote(content)} ({status}{radius})"
        " modified within 30s"
    )


def layer_line(session: str, line: str) -> str:
    """A layer's line in a merged recall starts with the layer's name: ``[general] ...``
    (M-REC-150, M-REC-173, M-REC-255)."""
    return f"[{session}] {line}"


def traversal_line(anchor_content: str, anchor_id: NodeRef, dependents: int) -> str:
    """The first line of a dependency question's context, saying the answer came from graph
    traversal (M-REC-082; the wording is ours, OQ-21):
    ``Answered by graph traversal: 3 concepts depend on "<X>" (id xxxxxxxx).``"""
    noun, verb = ("concept", "depends") if dependents == 1 else ("concepts", "depend")
    anchor = _named(anchor_content, anchor_id)
    return f"Answered by graph traversal: {dependents} {noun} {verb} on {anchor}."


def truncation_marker(tokens_left_out: int, node_id: NodeRef, scope: str | None = None) -> str:
    """``[truncated: <N> tokens left out; lambo_inspect <id> for the full concept]``
    (M-REC-065); a layer hit's reads ``lambo_inspect <id> (scope <layer>)`` (M-REC-074, OQ-29)."""
    where = "" if scope is None else f" (scope {scope})"
    return (
        f"[truncated: {tokens_left_out} tokens left out;"
        f" lambo_inspect {_short(node_id)}{where} for the full concept]"
    )


# --- labels and blocks ------------------------------------------------------------------------


def _also(items: Sequence[AlsoItem]) -> str:
    names = [
        _short(item.node_id) + ("" if item.session is None else f" in {item.session}")
        for item in items[:MAX_ALSO_IDS]
    ]
    if len(items) > MAX_ALSO_IDS:
        names.append(f"+{len(items) - MAX_ALSO_IDS} more")
    return "also " + ", ".join(names)


def label_suffix(hit: HitView) -> str:
    """Everything of the label line after the content: `` [Type…] (score …, id ……)``.

    Score to two decimals (M-REC-044), then the short id, the blast radius on Canonical hits
    (M-REC-047), ``from <session>`` on a layer hit (M-REC-241), then the ``also`` ids: at most
    three, then ``+N more`` (M-REC-195). The seed writes neither the order of ``from`` and
    ``also`` together (OQ-28: "the also items follow from <session>", read as coming after it)
    nor how several ids are joined: ``also a, b, c, +2 more``.
    """
    kind = hit.concept_type
    if hit.is_canonical:
        kind += ", canonical"
    if hit.repo_scope is not None:
        kind += f', repo "{hit.repo_scope}"'
    parts = [f"score {hit.score:.2f}", f"id {_short(hit.node_id)}"]
    radius = shown_blast_radius(hit)
    if radius is not None:
        parts.append(f"blast radius {radius}")
    if hit.from_session is not None:
        parts.append(f"from {hit.from_session}")
    if hit.also:
        parts.append(_also(hit.also))
    return f" [{kind}] ({', '.join(parts)})"


def label_line(hit: HitView) -> str:
    """The block's first line: the content, then :func:`label_suffix`."""
    return hit.content + label_suffix(hit)


def block_lines(hit: HitView) -> tuple[str, ...]:
    """The lines after the label: the ⚑ line when it shows, then the hit's warning lines."""
    radius = shown_blast_radius(hit)
    if radius is None:
        return hit.warning_lines
    return (load_bearing_line(radius), *hit.warning_lines)


def render_block(hit: HitView) -> str:
    """One hit's whole block."""
    return "\n".join((label_line(hit), *block_lines(hit)))


# --- the context ------------------------------------------------------------------------------


def render_context(
    hits: Sequence[HitView], max_tokens: int, *, header: str | None = None
) -> RenderedContext:
    """The context block of ``hits`` (in rank order) within ``max_tokens`` (M-REC-060..073).

    Whole blocks in rank order while the whole text fits, and nothing after the first block that
    does not. When the first block alone is over budget it is cut (see :func:`_cut_block`), and
    that hit carries ``truncated_in_context``; when even the cut does not fit, the context is
    empty. ``header`` (the :func:`traversal_line` of a dependency answer) comes first, followed
    by a blank line, and counts toward the budget like a block; a context without any hit block
    is empty, header included.
    """
    lead = () if header is None else (header,)
    blocks: list[str] = []
    included: list[str] = []
    used = len(BLOCK_SEPARATOR.join(lead).encode("utf-8"))
    for hit in hits:
        block = render_block(hit)
        grown = used + len(block.encode("utf-8")) + (len(BLOCK_SEPARATOR) if lead or blocks else 0)
        if byte_tokens(grown) <= max_tokens:
            blocks.append(block)
            included.append(hit.node_id)
            used = grown
            continue
        if not blocks:
            prefix = "".join(part + BLOCK_SEPARATOR for part in lead)
            cut = _cut_block(hit, budget_bytes(max_tokens) - len(prefix.encode("utf-8")))
            if cut is None:
                return EMPTY
            return RenderedContext(prefix + cut, (hit.node_id,), hit.node_id)
        break
    if not blocks:
        return EMPTY
    return RenderedContext(BLOCK_SEPARATOR.join((*lead, *blocks)), tuple(included))


@dataclass(frozen=True, slots=True)
class _CutLevel:
    """What a cut block keeps besides the cut text: the label's suffix and the lines."""

    suffix: str
    lines: tuple[str, ...]


def _cut_block(hit: HitView, room: int) -> str | None:
    """The first block cut to ``room`` UTF-8 bytes, marker included, or None if nothing fits.

    Tried in the seed's order (M-REC-063, 064, 068, 069): the label and every line kept; the
    label without the lines; the text and the marker alone. Each level needs at least one
    character of the concept's text, so a budget that holds the marker (22 or 23 tokens) but not
    a character with it gives an empty context (M-REC-073).
    """
    full_bytes = len(render_block(hit).encode("utf-8"))
    suffix = label_suffix(hit)
    lines = block_lines(hit)
    for level in (_CutLevel(suffix, lines), _CutLevel(suffix, ()), _CutLevel("", ())):
        text = _cut_at_level(hit, level, full_bytes, room)
        if text is not None:
            return text
    return None


def _cut_at_level(hit: HitView, level: _CutLevel, full_bytes: int, room: int) -> str | None:
    content = hit.content
    whole = _cut_text(hit, level, content, full_bytes)
    if len(whole.encode("utf-8")) <= room:
        return whole
    # With the ellipsis, the size grows with the characters kept (one more character is at
    # least one byte; the marker's count can only lose a digit), so the longest fit is found by
    # bisection.
    low, high = 0, len(content) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if len(_cut_text(hit, level, content[:middle], full_bytes).encode("utf-8")) <= room:
            low = middle
        else:
            high = middle - 1
    if low == 0:
        return None
    # Trailing spaces before the ellipsis are dropped ("and…", never "and …"); that only
    # shrinks the text, and the marker's count grows by fewer digits than the bytes dropped.
    shown = content[:low].rstrip() or content[:low]
    return _cut_text(hit, level, shown, full_bytes)


def _cut_text(hit: HitView, level: _CutLevel, shown: str, full_bytes: int) -> str:
    """The cut block: ``shown`` (with ``…`` when it is not the whole text), the level's label
    suffix and lines, and the marker counting the tokens of the block left out (M-REC-066)."""
    cut = len(shown) < len(hit.content)
    first = shown + (ELLIPSIS if cut else "") + level.suffix
    kept = "\n".join((shown + level.suffix, *level.lines))
    left_out = full_bytes - len(kept.encode("utf-8"))
    marker = truncation_marker(byte_tokens(left_out), hit.node_id, hit.from_session)
    return "\n".join((first, *level.lines, marker))


# --- ranking for the budget ([retrieval] budget_pack, ADR 0103) --------------------------------


def pack_for_budget(
    hits: Sequence[HitView],
    max_tokens: int,
    *,
    header: str | None = None,
    followers: frozenset[str] = frozenset(),
) -> list[HitView]:
    """The hits in :func:`budget_order`."""
    return [hits[index] for index in budget_order(hits, max_tokens, header, followers)]


def budget_order(
    hits: Sequence[HitView],
    max_tokens: int,
    header: str | None = None,
    followers: frozenset[str] = frozenset(),
) -> list[int]:
    """The positions of ``hits`` in the order that lets more whole blocks into ``max_tokens``:
    each unit (a hit, with the ``followers`` right after it: the companions kept only to stand
    beside it, which move with it) goes first, in rank order, while its blocks fit what the
    units before it left; one that does not fit moves after the units that do, in its order.

    What the seed says a budget shows keeps holding: the first unit never moves, so a top hit
    over the budget is still the block cut at max_tokens with nothing after it (M-REC-063,
    M-REC-070); and a unit that carries a line (⚑, a warning, a companion's Contradicts line)
    and does not fit stops the packing, it and every unit after it keeping their order.
    Unchanged when every block fits. :func:`render_context` still fills whole blocks in rank
    order and stops at the first that does not fit (M-REC-060, M-REC-061): this only decides
    that rank order, and since the room left only shrinks, the first moved block is the one
    it stops at.
    """
    units: list[list[int]] = []
    for index, hit in enumerate(hits):
        if units and hit.node_id in followers:
            units[-1].append(index)
        else:
            units.append([index])
    used = len(header.encode("utf-8")) if header is not None else 0
    fitted: list[list[int]] = []
    moved: list[list[int]] = []
    for place, unit in enumerate(units):
        size = sum(len(render_block(hits[index]).encode("utf-8")) for index in unit)
        joins = len(unit) - 1 + (1 if header is not None or fitted else 0)
        size += len(BLOCK_SEPARATOR) * joins
        if byte_tokens(used + size) <= max_tokens:
            fitted.append(unit)
            used += size
            continue
        if place == 0 or any(block_lines(hits[index]) for index in unit):
            moved.extend(units[place:])  # the top hit, or a block with a line, stays
            break
        moved.append(unit)
    if not fitted or not moved:
        return list(range(len(hits)))
    return [index for unit in (*fitted, *moved) for index in unit]
