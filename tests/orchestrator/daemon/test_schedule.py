"""Every daemon job is registered in one place, with its trigger and overlap rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from gpuopt.orchestrator.config import load_config
from gpuopt.orchestrator.daemon.schedule import make_scheduler, register_jobs

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


class FakeTasks:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []

    def poll(self, cloud: str) -> None:
        self.calls.append(("poll", (cloud,)))

    def poll_catalog(self) -> None:
        self.calls.append(("poll-catalog", ()))

    def poll_eviction(self) -> None:
        self.calls.append(("poll-eviction", ()))

    def reconcile(self) -> None:
        self.calls.append(("reconcile", ()))

    def report_tick(self) -> None:
        self.calls.append(("report", ()))

    def report_retry(self) -> None:
        self.calls.append(("report-retry", ()))

    def compact(self) -> None:
        self.calls.append(("compaction", ()))


@pytest.fixture
def registered():  # type: ignore[no-untyped-def]
    settings = load_config(env={
        "GPUOPT_DAEMON_POLL_INTERVAL": "10m", "GPUOPT_DAEMON_RECONCILE_INTERVAL": "20s",
        "GPUOPT_REPORT_TIMEZONE": "Europe/Paris", "GPUOPT_REPORT_WEEKDAY": "tuesday",
        "GPUOPT_REPORT_TIME": "07:30",
    })
    scheduler = make_scheduler(8)
    tasks = FakeTasks()
    ids = register_jobs(scheduler, tasks, settings, ("aws", "gcp", "azure"), NOW)
    scheduler.start(paused=True)  # computes next run times; runs nothing
    yield scheduler, tasks, ids
    scheduler.shutdown(wait=False)


def test_every_job_is_registered_once_with_overlap_rules(registered) -> None:  # type: ignore[no-untyped-def]
    scheduler, _tasks, ids = registered
    assert ids == ["poll-aws", "poll-gcp", "poll-azure", "poll-azure-eviction", "reconcile",
                   "report",
                   "report-catchup", "report-retry", "compaction"]
    jobs = {j.id: j for j in scheduler.get_jobs()}
    assert set(jobs) == set(ids)
    for job in jobs.values():
        assert job.max_instances == 1, job.id
        assert job.coalesce is True, job.id
    # Misfire grace chosen per job; only the start-up catch-up runs however late it is.
    assert jobs["poll-aws"].misfire_grace_time == 300
    assert jobs["reconcile"].misfire_grace_time == 20
    assert jobs["report"].misfire_grace_time == 3600
    assert jobs["report-catchup"].misfire_grace_time is None


def test_azure_eviction_rates_are_polled_once_a_day_by_default(registered) -> None:  # type: ignore[no-untyped-def]
    scheduler, tasks, _ids = registered
    from apscheduler.triggers.interval import IntervalTrigger

    job = scheduler.get_job("poll-azure-eviction")
    assert isinstance(job.trigger, IntervalTrigger)
    assert job.trigger.interval == timedelta(days=1)
    assert job.misfire_grace_time == 12 * 3600
    job.func(*job.args)
    assert tasks.calls == [("poll-eviction", ())]


@pytest.mark.parametrize(("clouds", "env"), [
    (("aws", "gcp"), {}),  # Azure not polled
    (("azure",), {"GPUOPT_SPOT_EVICTION_POLL_INTERVAL": "0s"}),  # switched off
])
def test_no_eviction_poll_without_azure_or_when_switched_off(
        clouds: tuple[str, ...], env: dict[str, str]) -> None:
    scheduler = make_scheduler(2)
    ids = register_jobs(scheduler, FakeTasks(), load_config(env=env), clouds, NOW)
    assert "poll-azure-eviction" not in ids


def test_one_poll_job_per_cloud_each_with_its_own_argument(registered) -> None:  # type: ignore[no-untyped-def]
    scheduler, tasks, _ids = registered
    from apscheduler.triggers.interval import IntervalTrigger

    for cloud in ("aws", "gcp", "azure"):
        job = scheduler.get_job(f"poll-{cloud}")
        assert isinstance(job.trigger, IntervalTrigger)
        assert job.trigger.interval == timedelta(minutes=10)
        assert 0 < job.trigger.jitter <= 30
        job.func(*job.args)
    assert tasks.calls == [("poll", ("aws",)), ("poll", ("gcp",)), ("poll", ("azure",))]
    firsts = sorted(scheduler.get_job(f"poll-{c}").next_run_time for c in ("aws", "gcp", "azure"))
    assert firsts[0] == NOW and len(set(firsts)) == 3  # staggered, not in lock-step


def test_reconcile_and_catchup_run_at_start(registered) -> None:  # type: ignore[no-untyped-def]
    scheduler, _t, _i = registered
    from apscheduler.triggers.date import DateTrigger

    rec = scheduler.get_job("reconcile")
    assert rec.trigger.interval == timedelta(seconds=20) and rec.next_run_time == NOW
    catchup = scheduler.get_job("report-catchup")
    assert isinstance(catchup.trigger, DateTrigger) and catchup.next_run_time == NOW
    comp = scheduler.get_job("compaction")
    assert comp.trigger.interval == timedelta(days=1)
    assert NOW < comp.next_run_time <= NOW + timedelta(minutes=5)


def test_report_cron_follows_the_configured_zone_weekday_and_time(registered) -> None:  # type: ignore[no-untyped-def]
    scheduler, _t, _i = registered
    from apscheduler.triggers.cron import CronTrigger

    job = scheduler.get_job("report")
    assert isinstance(job.trigger, CronTrigger)
    trigger = CronTrigger(**{  # the same trigger without jitter, for an exact next time
        f.name: str(f) for f in job.trigger.fields if not f.is_default
    }, timezone=job.trigger.timezone)
    nxt = trigger.get_next_fire_time(None, NOW)
    assert nxt == datetime(2026, 12, 1, 7, 30, tzinfo=ZoneInfo("Europe/Paris"))
    assert job.trigger.jitter == 60
