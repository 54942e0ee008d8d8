"""The session's memory jobs on a schedule (ADR 0031): the canonization cycle and the daemon
tick on apscheduler's thread pool, each run's outcome logged only when it did something
(ADR 0054)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from apscheduler.schedulers.background import BackgroundScheduler  # type: ignore[import-untyped]

from lcg.commands.memory_jobs import MemoryJobs
from lcg.domain.memory.canonization import Transition
from lcg.domain.memory.gc import Sweep

log = logging.getLogger(__name__)

T = TypeVar("T")


def start_jobs(jobs: MemoryJobs, session: str, tick: timedelta) -> BackgroundScheduler:
    """Start the canonization cycle (every `eval_interval`, the first one interval after
    start) and the daemon tick: one instance of each at a time, missed runs coalesced into
    one (ENGINEERING-NOTES: Scheduler). The caller shuts the scheduler down."""
    scheduler = BackgroundScheduler(
        job_defaults={"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
    )
    scheduler.add_job(
        _logged(
            lambda: jobs.run_cycle() if jobs.held() else (),  # one node's, on a shared log
            "canonization cycle",
            lambda hops: _cycle_outcome(session, hops),
        ),
        "interval",
        seconds=jobs.knobs.eval_interval.total_seconds(),
        id="canonization",
    )
    scheduler.add_job(
        _logged(
            lambda: jobs.tick() if jobs.held() else None,
            "daemon tick",
            lambda sweep: _sweep_outcome(session, sweep),
        ),
        "interval",
        seconds=tick.total_seconds(),
        id="tick",
    )
    scheduler.start()
    return scheduler


def _cycle_outcome(session: str, hops: tuple[Transition, ...]) -> str | None:
    """The line a cycle that moved concepts logs (one that moved none logs nothing)."""
    if not hops:
        return None
    moves = Counter(f"{hop.from_status.value} -> {hop.to_status.value}" for hop in hops)
    moved = ", ".join(f"{count} {move}" for move, count in sorted(moves.items()))
    return f"canonization cycle of session {session!r}: {len(hops)} concept(s) moved ({moved})"


def _sweep_outcome(session: str, sweep: Sweep | None) -> str | None:
    """The line a sweep that collected logs (a tick that swept nothing logs nothing)."""
    if sweep is None or not sweep.collected:
        return None
    return (
        f"gc sweep of session {session!r} ({sweep.trigger}): {len(sweep.collected)} "
        f"collected, {len(sweep.deferred)} deferred"
    )


def _logged(
    job: Callable[[], T], name: str, outcome: Callable[[T], str | None]
) -> Callable[[], None]:
    """A job for the scheduler: what a run did is logged at info when it did something (a
    tick that changed nothing says nothing: ADR 0054); a failure is logged once per distinct
    message and the next run tries again (the cycle counts it in canonization_failures)."""
    last: list[str] = []

    def run() -> None:
        try:
            line = outcome(job())
            if line is not None:
                log.info("%s", line)
        except Exception as error:
            text = f"{type(error).__name__}: {error}"
            if last != [text]:
                log.exception("the %s failed", name)
                last[:] = [text]

    return run
