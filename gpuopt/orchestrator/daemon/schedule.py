"""Every scheduled job of the daemon, registered in one function: :func:`register_jobs`.

All jobs: ``max_instances=1`` (a slow run is never overlapped by the next), ``coalesce=True``
(runs missed while busy collapse into one), jitter (several daemons / clouds do not fire
in lock-step), and a misfire grace chosen per job:

=================  ==============================  ===========================================
job id             trigger                         misfire grace (late start still runs if)
=================  ==============================  ===========================================
poll-<cloud>       every poll_interval, one job    half the interval: later than that, the
                   per enabled cloud ([prices]     next regular poll is nearly due anyway
                   sources has "sdk")
poll-azure-        every [spot]                    half the interval, as the cloud polls
eviction           eviction_poll_interval, when
                   Azure is polled and it is > 0
poll-skypilot-     every poll_interval, when       half the interval, as the cloud polls
catalog            [prices] sources has
                   "skypilot-catalog"
reconcile          every reconcile_interval,       one interval: coalesced, the next tick
                   first run at start (adoption)   reads the same state
report             cron weekday HH:MM in the       1 h; a tick is idempotent (store-backed
                   report time zone                sent weeks), so a late one is harmless
report-catchup     once, at start                  unbounded: the report missed while the
                                                   daemon was down goes out once, now
report-retry       every 5 min                     2.5 min; acts only on a failed send whose
                                                   backoff has passed
compaction         every compaction_interval,      1 h; first run a few minutes after start
                   first run shortly after start   so restarts never starve it
=================  ==============================  ===========================================
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Protocol
from zoneinfo import ZoneInfo

from gpuopt.providers.clouds import eviction_rate_clouds

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

    from gpuopt.orchestrator.config.model import Settings

REPORT_RETRY_EVERY = timedelta(minutes=5)
COMPACTION_FIRST_DELAY = timedelta(minutes=5)
POLL_STAGGER = timedelta(seconds=2)
CATALOG_JOB = "poll-skypilot-catalog"
EVICTION_JOB = "poll-azure-eviction"
WEEKDAY_CRON = {"monday": "mon", "tuesday": "tue", "wednesday": "wed", "thursday": "thu",
                "friday": "fri", "saturday": "sat", "sunday": "sun"}


class Tasks(Protocol):
    def poll(self, cloud: str) -> None: ...

    def poll_catalog(self) -> None: ...

    def poll_eviction(self) -> None: ...

    def reconcile(self) -> None: ...

    def report_tick(self) -> None: ...

    def report_retry(self) -> None: ...

    def compact(self) -> None: ...


def _jitter(interval: timedelta, fraction: float, cap_s: int) -> int:
    return max(0, min(cap_s, int(interval.total_seconds() * fraction)))


def _secs(d: timedelta) -> int:
    return max(1, int(d.total_seconds()))


def register_jobs(
    scheduler: BaseScheduler,
    tasks: Tasks,
    settings: Settings,
    clouds: Sequence[str],
    now: datetime,
) -> list[str]:
    """Add every daemon job to ``scheduler``; returns their ids."""
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.date import DateTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    d = settings.daemon
    common = {"max_instances": 1, "coalesce": True, "replace_existing": True}
    ids: list[str] = []

    def add(job_id: str, func: object, trigger: object, grace: int | None, **kw: object) -> None:
        scheduler.add_job(func, trigger, id=job_id, name=job_id, misfire_grace_time=grace,
                          **common, **kw)
        ids.append(job_id)

    poll = d.poll_interval
    polled = clouds if settings.prices.from_sdk else ()
    for i, cloud in enumerate(polled):
        add(f"poll-{cloud}", tasks.poll,
            IntervalTrigger(seconds=_secs(poll), jitter=_jitter(poll, 0.1, 30)),
            _secs(poll / 2), args=(cloud,), next_run_time=now + POLL_STAGGER * i)
    evict = settings.spot.eviction_poll_interval
    if evict > timedelta(0) and any(c.name in polled for c in eviction_rate_clouds()):
        add(EVICTION_JOB, tasks.poll_eviction,
            IntervalTrigger(seconds=_secs(evict), jitter=_jitter(evict, 0.1, 300)),
            _secs(evict / 2), next_run_time=now + POLL_STAGGER * (len(polled) + 1))
    if settings.prices.from_catalog:
        add(CATALOG_JOB, tasks.poll_catalog,
            IntervalTrigger(seconds=_secs(poll), jitter=_jitter(poll, 0.1, 30)),
            _secs(poll / 2), next_run_time=now + POLL_STAGGER * len(polled))
    rec = d.reconcile_interval
    add("reconcile", tasks.reconcile,
        IntervalTrigger(seconds=_secs(rec), jitter=_jitter(rec, 0.1, 2)),
        _secs(rec), next_run_time=now)
    hh, mm = (int(x) for x in settings.report.time.split(":"))
    add("report", tasks.report_tick,
        CronTrigger(day_of_week=WEEKDAY_CRON[settings.report.weekday], hour=hh, minute=mm,
                    timezone=ZoneInfo(settings.report.timezone), jitter=60),
        3600)
    add("report-catchup", tasks.report_tick, DateTrigger(run_date=now), None)
    add("report-retry", tasks.report_retry,
        IntervalTrigger(seconds=_secs(REPORT_RETRY_EVERY), jitter=30),
        _secs(REPORT_RETRY_EVERY / 2), next_run_time=now + REPORT_RETRY_EVERY)
    comp = d.compaction_interval
    add("compaction", tasks.compact,
        IntervalTrigger(seconds=_secs(comp), jitter=_jitter(comp, 0.1, 600)),
        3600, next_run_time=now + min(comp, COMPACTION_FIRST_DELAY))
    return ids


def make_scheduler(workers: int) -> BaseScheduler:
    """A background scheduler in UTC with one worker thread per job (so a slow cloud's
    poll never waits for another's)."""
    from datetime import UTC

    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.background import BackgroundScheduler

    return BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(max_workers=max(1, workers))},
        job_defaults={"max_instances": 1, "coalesce": True},
        timezone=UTC,
    )
