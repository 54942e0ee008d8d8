"""Rebuild jobs (A-12, P-104; ADR 0037): every knowledge_rebuild_from_wal that replays is a job
with a `job_id`, and `knowledge_rebuild_status {job_id}` reads its record, in flight or done.

A call blocks and returns its result with the job_id added (the checklist's resolution of
A-12), unless it asks for `background: true`: then it answers `{success, job_id, status:
"running"}` as soon as the rebuild has passed its checks and taken the writer, and the replay
goes on on a thread of its own; a second background rebuild while one runs answers that job's
id (upstream's behaviour). Records live in this process (a restart forgets them, as a job's
thread does not survive it); the newest MAX_KEPT are kept.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, NotRequired, TypedDict

from lcg.commands.admin import RebuildResult
from lcg.domain.errors import DomainError
from lcg.projections.faults import StorageFailure

log = logging.getLogger(__name__)

MAX_KEPT = 100  # job records kept per process, newest first out last
JOIN_TIMEOUT_S = 600.0  # how long close waits for a background rebuild to finish

JobStatus = Literal["running", "completed", "failed"]


class RebuildStatus(TypedDict):
    job_id: str
    status: JobStatus | Literal["not_found"]
    group_id: NotRequired[str]
    mutations_replayed: NotRequired[int]
    mutations_total: NotRequired[int]
    wal_files_processed: NotRequired[int]
    wal_files_total: NotRequired[int]
    start_time: NotRequired[str]
    elapsed_seconds: NotRequired[float]
    error: NotRequired[str | None]
    result: NotRequired[RebuildResult | None]


class Started(TypedDict):
    success: bool
    job_id: str
    status: Literal["running"]


@dataclass
class RebuildJob:
    job_id: str
    group_id: str
    start_time: datetime
    status: JobStatus = "running"
    replayed: int = 0
    total: int = 0
    finished_at: datetime | None = None
    error: str | None = None
    result: RebuildResult | None = None
    thread: threading.Thread | None = field(default=None, repr=False)


class RebuildJobs:
    """The rebuild jobs of this process."""

    def __init__(self, clock: Callable[[], datetime], new_id: Callable[[], str] | None = None):
        self._clock = clock
        self._new_id = new_id or (lambda: str(uuid.uuid4()))
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, RebuildJob] = OrderedDict()

    def start(self, group_id: str) -> RebuildJob:
        job = RebuildJob(self._new_id(), group_id, self._clock())
        with self._lock:
            self._jobs[job.job_id] = job
            while len(self._jobs) > MAX_KEPT:
                oldest = next(iter(self._jobs.values()))
                if oldest.status == "running":
                    break
                self._jobs.popitem(last=False)
        return job

    def running_in_background(self) -> RebuildJob | None:
        with self._lock:
            return next(
                (j for j in self._jobs.values() if j.status == "running" and j.thread), None
            )

    def progress(
        self, job: RebuildJob, forward: Callable[[int, int], None] | None
    ) -> Callable[[int, int], None]:
        """A progress callback that records the job's counts, then passes them on."""

        def report(done: int, total: int) -> None:
            job.replayed, job.total = done, total
            if forward is not None:
                forward(done, total)

        return report

    def completed(self, job: RebuildJob, result: RebuildResult) -> None:
        job.result, job.replayed = result.copy(), result["mutations_replayed"]
        job.finished_at, job.status = self._clock(), "completed"

    def failed(self, job: RebuildJob, error: BaseException) -> None:
        if isinstance(error, DomainError | StorageFailure):  # they name the field or file
            job.error = str(error)
        else:  # as the surfaces answer it: no internal detail to the client, all of it logged
            log.error("rebuild job %s failed", job.job_id, exc_info=error)
            job.error = "internal error (the server log has the details)"
        job.finished_at, job.status = self._clock(), "failed"

    def status(self, job_id: str) -> RebuildStatus:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            return RebuildStatus(job_id=job_id, status="not_found")
        end = job.finished_at or self._clock()
        done = job.status != "running"
        return RebuildStatus(
            job_id=job.job_id,
            status=job.status,
            group_id=job.group_id,
            mutations_replayed=job.replayed,
            mutations_total=max(job.total, job.replayed),
            wal_files_processed=1 if done else 0,
            wal_files_total=1,
            start_time=job.start_time.isoformat().replace("+00:00", "Z"),
            elapsed_seconds=round((end - job.start_time).total_seconds(), 3),
            error=job.error,
            result=job.result,
        )

    def run_in_background(
        self,
        job: RebuildJob,
        rebuild: Callable[[Callable[[], None]], RebuildResult],
    ) -> Started:
        """Run `rebuild(started)` on a thread; answer once it called `started()` (its checks
        passed and the replay begins). A refusal before that is raised here, as a blocking
        call would raise it, and leaves the job failed."""
        began = threading.Event()
        refused: list[BaseException] = []

        def run() -> None:
            try:
                self.completed(job, rebuild(began.set))
            except BaseException as error:  # noqa: BLE001 (recorded for rebuild_status)
                self.failed(job, error)
                if not began.is_set():
                    refused.append(error)
            finally:
                began.set()

        job.thread = threading.Thread(target=run, name=f"lcg-rebuild-{job.job_id[:8]}")
        job.thread.start()
        began.wait()
        if refused:
            job.thread.join()
            raise refused[0]
        return Started(success=True, job_id=job.job_id, status="running")

    def join(self, timeout: float = JOIN_TIMEOUT_S) -> None:
        """Wait for background rebuilds (at close, before the writer goes)."""
        with self._lock:
            threads = [j.thread for j in self._jobs.values() if j.thread is not None]
        for thread in threads:
            thread.join(timeout)
