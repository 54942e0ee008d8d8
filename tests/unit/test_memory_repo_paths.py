"""Repository-scoped paths, the pure rules (seed 001 "Repository-scoped paths", ADR 0082):
what is a path, the key, the argument's refusals, and the intent's wire version."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from lcg.domain.events import EventCodec, MemoryWriteAccepted, UnknownEventType
from lcg.domain.memory.identity import canonical_key
from lcg.domain.memory.records import ActionRequest
from lcg.domain.memory.references import Resolved
from lcg.domain.memory.repo_paths import (
    check_repo_scope,
    is_path,
    path_key,
    reads_as_file,
    repo_of_key,
    repository_subject,
)
from lcg.domain.memory.text import MemoryArgumentError

ACME = "github.com/acme/widgets"
PATHS = [
    "README.md", "Makefile", ".env", "src/main.rs", "docs/reference", "./run.sh", "/etc/hosts",
    "C:\\work\\a.rs", "~/.config/x", "src/main.rs:12", "src/main.rs:12:5", "src/main.rs#L12",
    "./my notes.txt", "docs/reference/",
]  # fmt: skip
NOT_PATHS = [
    "https://example.com/a.rs", "git@github.com:acme/widgets.git", "github.com/x/a.rs",
    "Node.js", "crates.io", "socket.io", "the build is green", "TCP/IP", "CI/CD", "I/O",
    "and/or", "/ note", "~ 5 minutes", "merged PR #52", "deadbeef",
]  # fmt: skip


@pytest.mark.parametrize("text", PATHS)
def test_m_rsc_023_027_these_are_paths(text: str) -> None:
    assert is_path(text)


@pytest.mark.parametrize("text", NOT_PATHS)
def test_m_rsc_026_027_these_are_not(text: str) -> None:
    assert not is_path(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("README.md", True), ("src/main.rs", True), (".env", True), ("Makefile", True),
        ("docs/reference/", True), ("./scripts/build", True), ("scripts/build/", True),
        ("docs/reference", False), ("scripts/build", False), ("TCP/IP", False), ("and/or", False),
    ],
)  # fmt: skip
def test_m_rsc_033_034_what_an_inferred_position_reads_as_a_file(text: str, expected: bool) -> None:
    assert reads_as_file(text) is expected


def test_m_rsc_024_040_042_043_the_key() -> None:
    """Also OQ-07: the key is the trimmed, NFC-normalised text with its line reference and a
    trailing separator dropped, and nothing else (case and `./` count)."""
    assert path_key(ACME, "src/main.rs:12") == path_key(ACME, "src/main.rs#L12")
    assert path_key(ACME, "src/main.rs") == path_key(f" {ACME} ", " src/main.rs ")
    assert path_key(ACME, "docs/") == path_key(ACME, "docs")
    assert path_key(ACME, "src/Main.rs") != path_key(ACME, "src/main.rs")
    assert path_key(ACME, "./src/main.rs") != path_key(ACME, "src/main.rs")
    assert path_key(ACME, "cafe\u0301.md") == path_key(ACME, "caf\u00e9.md")  # NFC
    assert path_key(ACME, "README.md") != path_key("github.com/acme/gadgets", "README.md")
    assert repo_of_key(path_key(ACME, "README.md")) == ACME
    assert repo_of_key(canonical_key("README.md")) is None
    assert "\t" not in canonical_key("repo\tgithub.com\tREADME.md")  # never a scoped key


def test_m_rsc_009_the_scope_is_taken_as_given() -> None:
    assert check_repo_scope(" github.com/Acme/Widgets.git ") == "github.com/Acme/Widgets.git"
    assert check_repo_scope(None) is None


@pytest.mark.parametrize(
    "sent",
    ["", " \t ", "a" * 513, "a b", "a\u00a0b", "a\u200db", "a\u200bb", "a\u0007b", "a\u2028b"],
)
def test_m_rsc_005_006_007_008_refusals_name_the_field(sent: str) -> None:
    with pytest.raises(MemoryArgumentError) as caught:
        check_repo_scope(sent)
    assert caught.value.field == "repo_scope"


def test_m_rec_103_104_which_repository_a_question_means() -> None:
    two = [("11111111-aaaa", ACME), ("22222222-bbbb", "github.com/acme/gadgets")]
    chosen, warning = repository_subject("what depends on README.md", "README.md", two)
    assert chosen is None
    assert warning == (
        'recall: "README.md" names 2 concepts in different repositories: 11111111 README.md '
        f'(repo "{ACME}"); 22222222 README.md (repo "github.com/acme/gadgets"); name the '
        "repository in the question to ask about one."
    )
    asked = f"what depends on README.md in {ACME}?"
    assert repository_subject(asked, "README.md", two) == ("11111111-aaaa", None)
    assert repository_subject("what depends on x", "x", [("n", None), ("m", None)]) == ("n", None)


def _intent(scope: str | None) -> MemoryWriteAccepted:
    request = ActionRequest("edited", (), (Resolved("README.md", None, "path"),), (), (), scope)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    return MemoryWriteAccepted(at, "lwr1.x", "agent-a", "lambo_record_action", request, None)


@dataclasses.dataclass(frozen=True, slots=True)
class _OlderBuildsIntent(MemoryWriteAccepted):
    version: ClassVar[int] = 1


def test_m_rsc_048_071_an_unscoped_intent_is_written_as_before_a_scoped_one_at_version_2() -> None:
    codec = EventCodec()
    unscoped = codec.encode(_intent(None))
    assert unscoped["_v"] == 1
    assert "repo_scope" not in unscoped["request"]
    scoped = codec.encode(_intent(ACME))
    assert scoped["_v"] == 2
    assert scoped["request"]["repo_scope"] == ACME
    assert codec.decode("memory_write_accepted", dict(scoped)) == _intent(ACME)
    assert codec.decode("memory_write_accepted", dict(unscoped)) == _intent(None)
    older = EventCodec(types=(_OlderBuildsIntent,), upcasters={})
    decoded = older.decode("memory_write_accepted", codec.encode(_intent(None)))
    assert isinstance(decoded, MemoryWriteAccepted)
    assert decoded.request.scope() is None
    with pytest.raises(UnknownEventType, match="newer than this build"):
        older.decode("memory_write_accepted", codec.encode(_intent(ACME)))
