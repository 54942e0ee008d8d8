"""In-memory BM25 over the FTS5 tables: FTS5's own scores, without scoring in SQLite.

FTS5 computes `bm25()` for every row an OR query matches before it can sort; on chat text,
where a question's words (speaker names, "like", "s") occur in a third of all passages, that
was 72% of search time at 100k passages (docs/adr/0016-in-memory-bm25.md). This module keeps,
per FTS5 table, the postings the formula needs (term -> documents and column-weighted term
frequencies, document lengths, row and token totals) in numpy-ready arrays and evaluates the
same formula as FTS5's `bm25()` (k1 1.2, b 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) floored
at 1e-6, N and n over the whole table) over the postings of the query's terms only.

FTS5 stays the index of record: the text projection writes a change row (`text_changes`) in
the same transaction as every FTS5 row it inserts, replaces or deletes; this scorer follows
that log after each commit, checkpoints itself to `.lcg/text-scorer.npz` (temp file +
rename) with the last change it applied, prunes the log up to there, and at start loads the
file and applies the tail. A missing, corrupt or foreign file (another `generation` of the
graph database) is rebuilt from the FTS5 tables; the file carries a sha256 (`checksummed`), and
one whose bytes changed is set aside, reported and rebuilt (ADR 0020).
"""

from __future__ import annotations

import io
import logging
import math
import sqlite3
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from lcg.projections import checksummed
from lcg.projections.damage import Repair, report, set_aside
from lcg.projections.text.postings import Postings, compact, copy, pack, take, unpack
from lcg.projections.text.tables import TextTable
from lcg.projections.text.tokens import Tokenizer
from lcg.projections.wal.store import RecordedEvent

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
BUILD_BATCH = 2_000
FORMAT = "2"  # of the checkpoint file; another format is rebuilt
REBUILD = "set aside; the scorer is rebuilt from the FTS5 tables"

Scores = npt.NDArray[np.float64]  # one BM25 score per postings slot


class TextScorer:
    """BM25 of FTS5 queries of single-term phrases, from postings kept in memory."""

    def __init__(
        self,
        path: Path,
        tokenizer: str,
        tables: Sequence[TextTable],
        checkpoint_every: int = 10_000,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.path = path
        self.clock = clock
        self.repairs: list[Repair] = []  # a damaged file found at open, set aside and rebuilt
        self.tokenizer = Tokenizer(tokenizer)
        self.tables = {table.kind: table for table in tables}
        self.checkpoint_every = checkpoint_every
        self.generation = ""
        self.applied = 0  # the last text_changes row reflected here
        self.loaded_from_file = False
        self._groups: dict[str, int] = {}
        self._postings = {kind: Postings() for kind in self.tables}
        self._lock = threading.RLock()
        self._changes = 0
        self._mutations = 0  # counts every change of the postings: the memo below is of one
        # The last query's scores, by (kind, phrases, mutations): a layered recall asks the
        # same phrases once per session it reads, and the scores do not depend on the groups.
        self._memo: tuple[tuple[str, tuple[str, ...], int], Scores] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def open(self, conn: sqlite3.Connection) -> None:
        """Load the checkpoint (or build from the FTS5 tables) and apply the change log."""
        with self._lock:
            self.generation = generation(conn)
            self.loaded_from_file = self._load()
            if not self.loaded_from_file:
                self._build(conn)
            self.catch_up(conn)

    def checkpoint(self, conn: sqlite3.Connection | None = None) -> None:
        """Write the file (temp + rename), then prune the change log up to what it holds.

        Nothing is written when nothing changed since the file was written or loaded."""
        with self._lock:
            if self._changes == 0 and self.path.exists():
                return
            arrays: dict[str, Any] = {
                "meta": np.array([self.generation, str(self.applied), FORMAT]),
                "groups": np.array(sorted(self._groups, key=self._groups.__getitem__) or [""]),
            }
            for kind, postings in self._postings.items():
                arrays.update(pack(kind, postings))
            buffer = io.BytesIO()
            np.savez(buffer, **arrays)
            checksummed.write(self.path, self.generation, buffer.getbuffer())
            self._changes = 0
            if conn is not None:
                conn.execute("DELETE FROM text_changes WHERE change_id <= ?", (self.applied,))

    # -- following the projection -----------------------------------------------------------

    def committed(self, conn: sqlite3.Connection, recorded: Sequence[RecordedEvent]) -> None:
        self.catch_up(conn)

    def rebuilt(self, conn: sqlite3.Connection, groups: Iterable[str] | None) -> None:
        self.catch_up(conn)

    def catch_up(self, conn: sqlite3.Connection) -> None:
        """Apply every change row after `applied`, in order (markers flush pending docs).

        `applied` moves only when every row was applied: re-applying rows is harmless (a
        document is re-read from the tables, a purge drops what is already gone), so a failure
        half-way (reported by the Writer as a listener failure) is repaired by the next call."""
        with self._lock:
            rows = conn.execute(
                "SELECT change_id, kind, doc_id, group_id FROM text_changes WHERE change_id > ?"
                " ORDER BY change_id",
                (self.applied,),
            ).fetchall()
            pending: dict[str, set[int]] = {}
            for _, kind, doc_id, group_id in rows:
                if doc_id is not None:
                    pending.setdefault(kind, set()).add(int(doc_id))
                else:
                    self._reload(conn, pending)
                    pending = {}
                    self._drop(group_id)
            self._reload(conn, pending)
            if rows:
                self.applied = int(rows[-1][0])
            self._changes += len(rows)
            if self._changes >= self.checkpoint_every:
                self.checkpoint(conn)

    # -- search ---------------------------------------------------------------------------

    def search(
        self, kind: str, phrases: Sequence[str], groups: Sequence[str] | None, limit: int
    ) -> list[tuple[int, float]]:
        """(doc_id, score) best first: FTS5's bm25 of `"t1" OR "t2" ...`, negated (higher is
        better). `phrases` are single terms as the tokenizer gives them; repeats count again,
        as repeated phrases do in FTS5."""
        with self._lock:
            scored = self._matching(kind, phrases)
            if scored is None:
                return []
            scores, found = scored
            if groups is not None:
                codes = [self._groups[g] for g in groups if g in self._groups]
                if not codes:
                    return []
                postings = self._postings[kind]
                found = found[np.isin(take(postings.slot_group, np.int32, found), codes)]
            return self._best(kind, scores, found, limit)

    def search_each(
        self, kind: str, phrases: Sequence[str], groups: Sequence[str], limit: int
    ) -> dict[str, list[tuple[int, float]]]:
        """`search` of each group alone, from one pass over the postings: the query scored
        and its matching live documents found once, then split by group (a layered recall's
        keyword leg, ADR 0097)."""
        with self._lock:
            scored = self._matching(kind, phrases)
            if scored is None:
                return {group: [] for group in groups}
            scores, found = scored
            of_group = take(self._postings[kind].slot_group, np.int32, found)
            return {
                group: []
                if group not in self._groups
                else self._best(kind, scores, found[of_group == self._groups[group]], limit)
                for group in groups
            }

    def _matching(self, kind: str, phrases: Sequence[str]) -> tuple[Scores, np.ndarray] | None:
        """Every slot's score for the phrases and the live slots that match (None: none can)."""
        postings = self._postings[kind]
        live = postings.live
        if live == 0 or not phrases:
            return None
        key = (kind, tuple(phrases), self._mutations)
        if self._memo is not None and self._memo[0] == key:
            scores = self._memo[1]
        else:
            scores = _scores(postings, phrases, live)
            self._memo = (key, scores)
        found = np.flatnonzero(scores)
        return scores, found[take(postings.slot_alive, np.uint8, found) == 1]

    def _best(
        self, kind: str, scores: Scores, found: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        """The `limit` best of the slots `found`, best first."""
        if len(found) > limit:
            found = found[np.argpartition(-scores[found], limit - 1)[:limit]]
        found = found[np.argsort(-scores[found], kind="stable")]
        docs = take(self._postings[kind].slot_doc, np.int64, found)
        return [(int(doc), float(score)) for doc, score in zip(docs, scores[found], strict=True)]

    def coverage(self, kind: str, phrases: Sequence[str], docs: Sequence[int]) -> dict[int, float]:
        """Each of `docs`'s share of the phrases' weight (`reader.coverage`): the summed
        `coverage_weight` of the phrases it holds over that of all of them; documents gone
        since are left out."""
        with self._lock:
            postings = self._postings[kind]
            present = [doc for doc in docs if doc in postings.doc_slot]
            doc_slots = np.array([postings.doc_slot[doc] for doc in present], dtype=np.int32)
            matched = np.zeros(len(present), dtype=np.float64)
            total = 0.0
            for phrase in phrases:
                term = postings.term_ids.get(phrase)
                slots = np.zeros(0, dtype=np.int32)
                if term is not None:
                    slots = copy(postings.slots[term], np.int32)
                    slots = slots[take(postings.slot_alive, np.uint8, slots) == 1]
                weight = coverage_weight(postings.live, len(slots))
                total += weight
                matched[np.isin(doc_slots, slots)] += weight
            share = matched / total if total > 0.0 else matched
            return {doc: float(value) for doc, value in zip(present, share, strict=True)}

    def count(self, kind: str) -> int:
        with self._lock:
            return self._postings[kind].live

    # -- changes --------------------------------------------------------------------------

    def _reload(self, conn: sqlite3.Connection, pending: dict[str, set[int]]) -> None:
        """Re-read the documents from the FTS5 tables: present ones are (re)indexed."""
        for kind, docs in pending.items():
            text_table = self.tables.get(kind)
            if text_table is None:
                continue
            ordered = sorted(docs)
            for start in range(0, len(ordered), BUILD_BATCH):
                chunk = ordered[start : start + BUILD_BATCH]
                rows = _rows(conn, text_table, f"d.doc_id IN ({','.join('?' * len(chunk))})", chunk)
                for doc in chunk:
                    self._remove(kind, doc)
                self._add(text_table, rows)

    def _drop(self, group: str | None) -> None:
        """A purge marker: every document of the group (None: of every group) is gone."""
        self._mutations += 1
        for kind, postings in self._postings.items():
            if group is None:
                self._postings[kind] = Postings()
                continue
            code = self._groups.get(group)
            if code is None:
                continue
            doomed = [doc for doc, s in postings.doc_slot.items() if postings.slot_group[s] == code]
            for doc in doomed:
                self._remove(kind, doc)
        if group is None:
            self._groups.clear()

    def _add(self, text_table: TextTable, rows: Sequence[tuple[int, str, str, str]]) -> None:
        self._mutations += 1
        postings = self._postings[text_table.kind]
        slots: dict[int, int] = {}
        lengths: dict[int, int] = {}
        for doc, group, *_ in rows:
            slot = slots[doc] = len(postings.slot_doc)
            postings.slot_doc.append(doc)
            postings.slot_group.append(self._group_code(group))
            postings.slot_len.append(0.0)
            postings.slot_alive.append(1)
            postings.doc_slot[doc] = slot
            lengths[doc] = 0
        counted = self.tokenizer.weighted([(row[0], row[2:]) for row in rows], text_table.weights)
        for doc, term, freq, count in counted:
            term_id = postings.term_ids.get(term)
            if term_id is None:
                term_id = postings.term_ids[term] = len(postings.slots)
                postings.slots.append(array("i"))
                postings.freqs.append(array("f"))
            postings.slots[term_id].append(slots[doc])
            postings.freqs[term_id].append(freq)
            lengths[doc] += count
        for doc, length in lengths.items():
            postings.slot_len[slots[doc]] = float(length)
            postings.total_tokens += length
        if len(postings.slot_doc) > 2 * max(postings.live, 5_000):
            self._postings[text_table.kind] = compact(postings)

    def _remove(self, kind: str, doc: int) -> None:
        self._mutations += 1
        postings = self._postings[kind]
        slot = postings.doc_slot.pop(doc, None)
        if slot is None:
            return
        postings.slot_alive[slot] = 0
        postings.total_tokens -= postings.slot_len[slot]

    def _group_code(self, group: str) -> int:
        code = self._groups.get(group)
        if code is None:
            code = self._groups[group] = len(self._groups)
        return code

    # -- building and loading -------------------------------------------------------------

    def _build(self, conn: sqlite3.Connection) -> None:
        """Index every document of every table; the change log up to now is then applied."""
        row = conn.execute("SELECT max(change_id) FROM text_changes").fetchone()
        self.applied = int(row[0] or 0)
        self._groups = {}
        self._postings = {kind: Postings() for kind in self.tables}
        self._mutations += 1
        for text_table in self.tables.values():
            last = 0
            while True:
                rows = _rows(
                    conn, text_table, "d.doc_id > ? ORDER BY d.doc_id LIMIT ?", [last, BUILD_BATCH]
                )
                if not rows:
                    break
                self._add(text_table, rows)
                last = rows[-1][0]
        self._changes = self.checkpoint_every  # write the file at the next catch-up

    def _load(self) -> bool:
        if not self.path.exists():
            return False
        try:
            source: io.BytesIO | Path = io.BytesIO(checksummed.read(self.path).payload)
        except checksummed.NotChecksummed:
            source = self.path  # written before checksums: the zip's CRC-32s still guard it
        except (checksummed.ChecksumMismatch, OSError) as error:
            self._set_aside("checksum mismatch" if _mismatch(error) else str(error))
            return False
        try:
            with np.load(source, allow_pickle=False) as data:
                meta = [str(value) for value in data["meta"]]
                if meta[2:] != [FORMAT]:
                    log.info("text scorer file of another format: rebuilding")
                    return False
                if meta[0] != self.generation:
                    log.info("text scorer file is of another graph database: rebuilding")
                    return False
                groups = [str(name) for name in data["groups"]]
                postings = {kind: unpack(kind, data) for kind in self.tables}
        except Exception as error:  # noqa: BLE001 (any unreadable file is rebuilt)
            self._set_aside(f"unreadable: {error}")
            return False
        self.applied = int(meta[1])
        self._groups = {name: code for code, name in enumerate(groups) if name}
        self._postings = postings
        self._mutations += 1
        return True

    def _set_aside(self, problem: str) -> None:
        aside = set_aside(self.path, self.clock())
        self.repairs.append(report(self.path, problem, REBUILD, aside))


def _scores(postings: Postings, phrases: Sequence[str], live: int) -> Scores:
    """Each slot's BM25 score for the phrases (0 where none occurs)."""
    average = postings.total_tokens / live
    scores = np.zeros(len(postings.slot_doc), dtype=np.float64)
    for phrase in phrases:
        term = postings.term_ids.get(phrase)
        if term is None:
            continue
        slots = copy(postings.slots[term], np.int32)
        hits = int(np.count_nonzero(take(postings.slot_alive, np.uint8, slots)))
        if hits == 0:
            continue
        idf = math.log((live - hits + 0.5) / (hits + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        freq = copy(postings.freqs[term], np.float32).astype(np.float64)
        norm = K1 * (1.0 - B + B * take(postings.slot_len, np.float64, slots) / average)
        scores[slots] += idf * freq * (K1 + 1.0) / (freq + norm)
    return scores


def coverage_weight(rows: int, hits: int) -> float:
    """A phrase's weight in a query's coverage: bm25's idf in its always-positive form,
    ln(1 + (N - n + 0.5) / (n + 0.5)). FTS5's own idf floors a phrase most documents hold at
    1e-6, so in a small table (two documents) every word would weigh nothing; this one keeps
    the order (rarer weighs more; a phrase no document holds weighs most) without the zero."""
    return math.log(1.0 + (rows - hits + 0.5) / (hits + 0.5))


def _mismatch(error: BaseException) -> bool:
    return isinstance(error, checksummed.ChecksumMismatch)


def generation(conn: sqlite3.Connection) -> str:
    row = conn.execute("SELECT value FROM text_meta WHERE key='generation'").fetchone()
    return str(row[0])


def _rows(
    conn: sqlite3.Connection, text_table: TextTable, where: str, params: Sequence[object]
) -> list[tuple[int, str, str, str]]:
    first, second = text_table.columns
    return [
        (int(row[0]), str(row[1]), str(row[2] or ""), str(row[3] or ""))
        for row in conn.execute(
            f"SELECT d.doc_id, d.group_id, f.{first}, f.{second} FROM text_docs d"
            f" JOIN {text_table.name} f ON f.rowid = d.doc_id WHERE d.kind = ? AND {where}",
            [text_table.kind, *params],
        )
    ]
