"""Shared fixtures: real SQLite workspaces in tmp dirs, a stepping clock, a `call` helper.

Workspaces embed with the hashing embedder (no model) unless a test is marked `minilm`: then
they get the real MiniLM model, loaded at most once per test session and only when asked for.
"""

from __future__ import annotations

import fcntl
import itertools
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest

from lcg.interfaces import operations
from lcg.interfaces.app import App
from lcg.interfaces.config import Settings
from lcg.interfaces.workspace import Workspace
from lcg.projections.embedding.hashing import HashingEmbedder
from lcg.projections.embedding.minilm import MiniLmEmbedder
from lcg.projections.embedding.port import Embedder
from tests.helpers.postgres import pg_database, pg_url

__all__ = ["pg_database", "pg_url"]  # fixtures of the tests marked `postgres`

Call = Callable[..., dict[str, Any]]
T = TypeVar("T")
EMBEDDER = "LCG_EMBEDDER"  # the one LCG_* setting a test passes on to what it starts


class SteppingClock:
    """A clock that moves one second per reading, so event times are distinct and replayable."""

    def __init__(self, start: datetime = datetime(2026, 1, 1, tzinfo=UTC)) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(workspace=tmp_path)


@pytest.fixture(scope="session")
def minilm() -> MiniLmEmbedder:
    """The real model, one for the whole session (loading costs ~0.5 s); lazy: a session whose
    tests never ask for it never loads it."""
    return MiniLmEmbedder()


@pytest.fixture(scope="session")
def hashing() -> HashingEmbedder:
    return HashingEmbedder()


@pytest.fixture(scope="session", autouse=True)
def _hashing_in_every_process() -> Iterator[None]:
    """LCG_EMBEDDER=hashing (ADR 0061) for what the tests start, from the first fixture on (a
    module's seeded service too): an in-process `lcg` command (typer's CliRunner) and the
    spawned `lcg`, `lcg serve` and MCP servers (`clean_env` passes it on) embed as the
    workspaces of the `embedder` fixture do."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(EMBEDDER, "hashing")
        yield


@pytest.fixture(autouse=True)
def _minilm_for_a_test_about_the_model(request: pytest.FixtureRequest) -> None:
    """A test marked `minilm` starts its processes with the real model, like its workspaces."""
    if request.node.get_closest_marker("minilm") is not None:
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv(EMBEDDER, "minilm")


@pytest.fixture
def embedder(request: pytest.FixtureRequest, hashing: HashingEmbedder) -> Embedder:
    """What workspaces embed with: the hashing embedder, or MiniLM for a test marked `minilm`
    (search quality and ranking by meaning, the model itself)."""
    if request.node.get_closest_marker("minilm") is not None:
        model: MiniLmEmbedder = request.getfixturevalue("minilm")
        return model
    return hashing


def make_workspace(settings: Settings, embedder: Embedder, **options: Any) -> Workspace:
    """A Workspace with the given embedder and a stepping clock unless told otherwise."""
    options.setdefault("clock", SteppingClock())
    options.setdefault("command", "pytest")
    return Workspace(settings, embedder=embedder, **options)


@pytest.fixture
def workspace(settings: Settings, embedder: Embedder) -> Iterator[Workspace]:
    with make_workspace(settings, embedder) as ws:
        yield ws


@pytest.fixture
def app(workspace: Workspace) -> App:
    return App(workspace)


def make_call(app: App, *, settle: bool = True) -> Call:
    """`call(NAME, **params)` through the one dispatch. With `settle`, a write is followed by
    waiting for the vector indexes (ADR 0022), so that a test's next search sees it by meaning
    as well as by words; tests of the follower itself pass settle=False."""

    def call(name: str, /, **params: Any) -> dict[str, Any]:
        result = operations.dispatch(app, name, params)
        if settle and not operations.BY_NAME[name].read_only:
            app.workspace.settle()
        return result

    return call


@pytest.fixture
def call(app: App) -> Call:
    return make_call(app)


def once_per_run(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str, name: str, make: Callable[[], T]
) -> T:
    """`make()` computed once per test run, whatever the xdist workers: the first worker to
    ask computes it and leaves it (JSON) in the directory all workers' temporary directories
    share, under a lock; the others read it."""
    if worker_id == "master":  # no xdist (-n 0)
        return make()
    shared = tmp_path_factory.getbasetemp().parent / f"{name}.json"
    with (shared.parent / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not shared.exists():
            shared.write_text(json.dumps(make()), encoding="utf-8")
        value: T = json.loads(shared.read_text(encoding="utf-8"))
        return value


@pytest.fixture(scope="session")
def example_results(
    tmp_path_factory: pytest.TempPathFactory, worker_id: str
) -> dict[str, dict[str, Any]]:
    """Every tool's documented example result, run once per test run (each in a fresh
    workspace: seconds of CPU), as JSON: what the tool pages are rendered from."""
    from lcg.interfaces import tool_docs

    return once_per_run(tmp_path_factory, worker_id, "example-results", tool_docs.example_results)


@pytest.fixture(scope="session")
def tool_pages(
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    example_results: dict[str, dict[str, Any]],
) -> dict[str, str]:
    """The tool pages (docs/tools/) as the generator writes them, rendered once per test run
    from the examples' results."""
    from lcg.interfaces import tool_docs

    return once_per_run(
        tmp_path_factory, worker_id, "tool-pages", lambda: tool_docs.render_pages(example_results)
    )


# The slowest tests of a full run, slowest first (bench/README.md, "The test suite's time").
# Under `--dist worksteal` each worker is handed one contiguous chunk of the collection, and
# a slow test that starts last ends the run alone: these start first, one at the head of each
# worker's chunk in turn; the rest keep their collection order. A stale entry costs nothing
# (test_suite_order checks that each still names a test).
START_FIRST = (
    "tests/e2e/test_memory_durability.py::test_sigkill_after_acks_every_receipt_resolves_",
    "tests/e2e/test_fast_start.py::test_a_call_through_a_running_socket_service_",
    "tests/e2e/test_cli_usability.py::test_issue_10_the_readme_recovery_commands_",
    "tests/e2e/test_cli_verbs.py::test_the_readme_everyday_commands_",
    "tests/integration/test_workspace_on_postgres.py::test_every_tool_answers_on_postgresql_",
    "tests/e2e/test_cli.py::test_write_and_read_commands_round_trip_through_the_console_",
    "tests/integration/test_property_memory_rebuild.py::test_i11_rebuild_equals_incremental_",
    "tests/e2e/test_cli_storage_errors.py::test_issue_24_a_nearly_full_disk_",
    "tests/e2e/test_fault_injection_wal.py::test_an_applied_event_damaged_on_disk_",
    "tests/integration/test_cli_table.py::test_named_commands_dispatch_their_operation_",
    "tests/e2e/test_private_files.py::test_f7_an_older_workspace_is_tightened_",
    "tests/e2e/test_portal_cli.py::test_the_http_serve_mounts_the_portal_",
    "tests/e2e/test_forwarding_faults.py::test_m_trn_033_a_forwarding_serve_killed_",
    "tests/e2e/test_read_only_workspace.py::test_issue9_read_only_wal_under_a_running_service_",
    "tests/e2e/test_http_faults.py::test_m_trn_010_a_client_gone_mid_call_",
    "tests/e2e/test_memory_load.py::test_eight_agents_derive_",
    "tests/e2e/test_process_durability.py::test_two_processes_writing_one_workspace_",
    "tests/e2e/test_fault_injection_wal.py::test_k_rec_001_",
)


def _rank(item: pytest.Item) -> int:
    return next(
        (rank for rank, prefix in enumerate(START_FIRST) if item.nodeid.startswith(prefix)),
        len(START_FIRST),
    )


def worksteal_chunks(count: int, workers: int) -> list[int]:
    """The sizes of the contiguous chunks `--dist worksteal` first hands `workers` workers out
    of `count` tests (xdist's WorkStealingScheduling.check_schedule)."""
    sizes: list[int] = []
    for index in range(workers):
        sizes.append((count - sum(sizes)) // (workers - index))
    return sizes


def deal_first(first: list[T], rest: list[T], workers: int) -> list[T]:
    """`first` dealt in turn to the heads of the worksteal chunks, `rest` filling them in its
    order: a permutation of first + rest."""
    chunks: list[list[T]] = [[] for _ in range(workers)]
    for index, item in enumerate(first):
        chunks[index % workers].append(item)
    remaining = iter(rest)
    for chunk, size in zip(chunks, worksteal_chunks(len(first) + len(rest), workers), strict=True):
        chunk.extend(itertools.islice(remaining, max(0, size - len(chunk))))
    chunks[-1].extend(remaining)
    return [item for chunk in chunks for item in chunk]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist sets a worker's own `--dist` to "no": tell it the run's."""
    node.workerinput["lcg_dist"] = node.config.getoption("dist")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the START_FIRST tests go first, slowest first; under worksteal dealt to the
    heads of the workers' chunks. Every worker computes the same order (xdist requires one
    collection); without xdist the order is the collection's."""
    workerinput = getattr(config, "workerinput", None)
    first = sorted((item for item in items if _rank(item) < len(START_FIRST)), key=_rank)
    if workerinput is None or not first:
        return
    rest = [item for item in items if _rank(item) == len(START_FIRST)]
    if workerinput.get("lcg_dist") != "worksteal":
        items[:] = first + rest
        return
    items[:] = deal_first(first, rest, int(workerinput["workercount"]))
