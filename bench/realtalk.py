"""Load the REALTALK conversations, their turns and their questions' normalised evidence."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.search_common import BENCH, require
from lcg.domain.ids import GroupId

DATA = BENCH.parent.parent / "shared" / "data" / "realtalk"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "inference"}


@dataclass(frozen=True, slots=True)
class Turn:
    group: GroupId
    dia_id: str
    speaker: str
    text: str
    caption: str | None
    time: datetime

    @property
    def plain(self) -> str:
        """The data README's text of a turn: `speaker: clean_text`."""
        return f"{self.speaker}: {self.text}"

    @property
    def body(self) -> str:
        """What is stored as the episode body: the plain text and the shared image's caption."""
        return self.plain if not self.caption else f"{self.plain}\n[image: {self.caption}]"


@dataclass(frozen=True, slots=True)
class Question:
    group: GroupId
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    group: GroupId
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass
class EvidenceStats:
    questions: int = 0
    strings: int = 0
    malformed: int = 0
    unmatched: int = 0  # normalised ids that name no turn (dropped)
    skipped: int = 0  # questions left without evidence


_CLEAN_ID = re.compile(r"D\d+:\d+")
_SEMICOLON_ID = re.compile(r"D(\d+);(\d+)")  # "D17;39": a semicolon typed for the colon
_SPACED_D = re.compile(r"D\s+(?=\d)")  # "D 2:18"
# An id with an optional D ("23:29"), optionally a range to a second id ("D12:3-D12:5").
_ID_OR_RANGE = re.compile(r"D?(\d+):(\d+)(?:\s*-\s*D?(\d+):(\d+))?")


def normalise_evidence(raw: str) -> list[str]:
    """Evidence ids from one evidence string, as the data README asks.

    Handles ranges within a session ("D12:3-D12:5"), lists ("D5:12;D5:16", "D13:4. D14:4",
    "D13:45:D20:19"), a missing D ("23:29"), "D 2:18", "D17;39" and trailing dots. Strings with
    no session:turn pair ("D58", "D:56", "") give nothing.
    """
    text = raw.strip()
    semicolon = _SEMICOLON_ID.fullmatch(text)
    if semicolon:
        return [f"D{int(semicolon[1])}:{int(semicolon[2])}"]
    text = _SPACED_D.sub("D", text)
    ids: list[str] = []
    for match in _ID_OR_RANGE.finditer(text):
        session, turn = int(match[1]), int(match[2])
        if match[3] is None:
            ids.append(f"D{session}:{turn}")
        elif int(match[3]) == session and int(match[4]) >= turn:
            ids.extend(f"D{session}:{t}" for t in range(turn, int(match[4]) + 1))
        else:  # a range across sessions: keep its ends
            ids.extend((f"D{session}:{turn}", f"D{int(match[3])}:{int(match[4])}"))
    return list(dict.fromkeys(ids))


def group_of(path: Path) -> GroupId:
    return GroupId(f"realtalk-{path.stem.lower()}")  # e.g. realtalk-chat_1_emi_elise


def load_realtalk(directory: Path) -> tuple[list[Conversation], EvidenceStats]:
    """Every conversation (turns in time order) with its questions that keep some evidence."""
    stats = EvidenceStats()
    conversations: list[Conversation] = []
    files = sorted(directory.glob("Chat_*.json"), key=lambda p: int(re.findall(r"\d+", p.name)[0]))
    require(bool(files), f"no Chat_*.json under {directory}")
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        group = group_of(path)
        turns: list[Turn] = []
        for key, value in data.items():
            if not re.fullmatch(r"session_\d+", key):
                continue
            for raw in value:
                turns.append(
                    Turn(
                        group=group,
                        dia_id=raw["dia_id"],
                        speaker=raw["speaker"],
                        text=raw["clean_text"],
                        caption=raw.get("blip_caption") or None,
                        time=datetime.strptime(raw["date_time"], "%d.%m.%Y, %H:%M:%S").replace(
                            tzinfo=UTC
                        ),
                    )
                )

        def position(turn: Turn) -> tuple[datetime, int, int]:
            session, number = turn.dia_id[1:].split(":")
            return turn.time, int(session), int(number)

        turns.sort(key=position)
        known = {turn.dia_id for turn in turns}
        questions: list[Question] = []
        for qa in data["qa"]:
            stats.questions += 1
            ids: list[str] = []
            for raw_id in qa["evidence"]:
                stats.strings += 1
                stats.malformed += _CLEAN_ID.fullmatch(raw_id) is None
                ids.extend(normalise_evidence(raw_id))
            ids = list(dict.fromkeys(ids))
            kept = tuple(i for i in ids if i in known)
            stats.unmatched += len(ids) - len(kept)
            if not kept:
                stats.skipped += 1
                continue
            questions.append(Question(group, qa["question"], int(qa["category"]), kept))
        conversations.append(Conversation(group, tuple(turns), tuple(questions)))
    return conversations, stats
