"""What each scheduled job does. Every step is a plain function of the store and the clock
that commits its own state; this module adds the daemon's concerns around them:
leadership (a job does nothing unless this daemon leads), outcome bookkeeping for
/metrics, and never letting an exception escape into the scheduler.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from gpuopt.core.errors import GpuoptError
from gpuopt.orchestrator.daemon.health import DaemonHealth, TaskOutcome

if TYPE_CHECKING:
    from gpuopt.jobs.executors.host import HostIdentity
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.reconcile.step import StepReport
    from gpuopt.orchestrator.report.sender import ReportSender
    from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.daemon")
job_log = logging.getLogger("gpuopt.jobs")
Clock = Callable[[], datetime]


class StepFailed(GpuoptError):
    """A step that did not do its work, already explained (logged without a traceback)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class DaemonTasks:
    def __init__(
        self,
        store: Store,
        settings: Settings,
        runtime: DaemonHealth,
        is_leader: Callable[[], bool],
        clock: Clock = utc_now,
        host: HostIdentity | None = None,
    ) -> None:
        self.host = host  # the local executor's host (None: this one)
        self.store = store
        self.settings = settings
        self.runtime = runtime
        self.is_leader = is_leader
        self.clock = clock
        self._sender: ReportSender | None = None
        self._sender_lock = threading.Lock()
        self._executors: Any = None
        # Attempts this daemon launched or has already watched: any other open attempt it
        # watches was launched by an earlier daemon, and is logged once as adopted.
        self._known: set[str] = set()

    # -- the jobs -------------------------------------------------------------------------

    def poll(self, cloud: str) -> None:
        self._run(f"poll-{cloud}", lambda: self._poll(cloud))

    def poll_eviction(self) -> None:
        from gpuopt.orchestrator.daemon.schedule import EVICTION_JOB

        self._run(EVICTION_JOB, self._poll_eviction)

    def poll_catalog(self) -> None:
        from gpuopt.orchestrator.daemon.schedule import CATALOG_JOB

        self._run(CATALOG_JOB, self._poll_catalog)

    def reconcile(self) -> None:
        self._run("reconcile", self._reconcile)

    def report_tick(self) -> None:
        self._run("report", self._report_tick)

    def report_retry(self) -> None:
        self._run("report-retry", self._report_retry)

    def compact(self) -> None:
        self._run("compaction", self._compact)

    # -- around every job -----------------------------------------------------------------

    def _run(self, name: str, step: Callable[[], object]) -> None:
        if not self.is_leader():
            log.debug("%s skipped: not the leader", name)
            return
        self.runtime.task_started()
        started, at = time.monotonic(), self.clock()
        error: str | None = None
        try:
            step()
        except StepFailed as err:
            error = str(err)
            log.warning("%s failed: %s", name, error)
        except Exception as err:  # a failed step is logged and retried on its next run
            error = f"{type(err).__name__}: {err}"
            log.exception("%s failed: %s", name, error)
        finally:
            self.runtime.task_finished(
                name, TaskOutcome(at, error is None, time.monotonic() - started, error))

    # -- the steps ------------------------------------------------------------------------

    def _poll(self, cloud: str) -> None:
        from gpuopt.orchestrator.prices.poll import load_providers, poll_prices
        from gpuopt.orchestrator.store.daemon_state import record_poll

        now = self.clock()
        providers = load_providers([cloud])
        result = poll_prices(self.store, providers, now,
                             {cloud: self.settings.clouds.regions_for(cloud)})[cloud]
        record_poll(self.store, cloud, status=result.status, error=result.error,
                    at=self.clock())
        from gpuopt.orchestrator.daemon.logs import log_folded_retries

        # urllib3 cannot say which cloud's fetch a retry belonged to: the hosts say it
        log_folded_retries(log, "price polls")
        if result.status == "error":  # counted in gpuopt_daemon_task_failures_total
            raise StepFailed(f"price poll {cloud}: {result.error}")
        if result.status == "skipped":
            log.info("price poll %s: skipped: %s", cloud, result.error)
            return
        log.info("price poll %s: ok (%d new, %d changed, %d unchanged, %d rejected)",
                 cloud, result.new, result.changed, result.unchanged, result.rejected)

    def _poll_eviction(self) -> None:
        """The clouds' spot eviction rates (Azure's) into the availability history."""
        from gpuopt.orchestrator.prices.eviction_poll import poll_eviction_rates

        results = poll_eviction_rates(self.store, self.clock())
        for cloud, result in results.items():
            if result.status == "skipped":
                log.info("%s eviction rates: skipped: %s", cloud, result.error)
        failed = [f"{cloud}: {r.error}" for cloud, r in results.items() if r.status == "error"]
        if failed:
            raise StepFailed("eviction rates " + "; ".join(failed))

    def _poll_catalog(self) -> None:
        """SkyPilot's catalog files ([prices] catalog_dir, else the installed SkyPilot's),
        the enabled clouds' only; a file gpuopt cannot read fails the step, naming it."""
        from gpuopt.core.errors import UserError
        from gpuopt.orchestrator.prices.catalog_poll import catalog_dir, poll_catalog

        enabled = self.settings.clouds.enabled
        try:  # no SkyPilot and no catalog_dir, or no such directory: said, no traceback
            root = catalog_dir(self.settings.prices.catalog_dir)
            results, notes = poll_catalog(self.store, root, self.clock(),
                                          tuple(enabled) if enabled is not None else None)
        except UserError as err:
            raise StepFailed(f"price poll skypilot-catalog: {err}") from None
        for note in notes:
            log.info("price poll skypilot-catalog: %s", note)
        failed = [f"{c}: {r.error}" for c, r in results.items() if r.status == "error"]
        for cloud, r in results.items():
            if r.status == "ok":
                log.info("price poll skypilot-catalog %s: ok (%d new, %d changed, "
                         "%d unchanged, %d rejected)", cloud, r.new, r.changed, r.unchanged,
                         r.rejected)
        if failed:
            raise StepFailed("price poll skypilot-catalog: " + "; ".join(failed))

    def _reconcile(self) -> None:
        from gpuopt.orchestrator.reconcile.step import reconcile_once

        if self._executors is None:
            from gpuopt.orchestrator.reconcile.attempts import ExecutorCache

            # One executor per kind for the life of the daemon (the local executor's
            # watchers live in it); running attempts are adopted by cluster name.
            self._executors = ExecutorCache(
                telemetry_interval=self.settings.telemetry.interval_seconds, host=self.host)
        report = reconcile_once(self.store, self._executors, self.settings, self.clock(),
                                keep_going=self.is_leader)
        self.log_step(report)
        if report.failed_steps:  # logged (once per kind) by reconcile; counted here
            self.runtime.job_steps_failed([kind for _job, kind in report.failed_steps])
        self.runtime.saw_stop_failed(report.stop_failed)  # /healthz shows them

    def close(self) -> None:
        """Report what the executors started (a local SkyPilot API server runs on: it
        carries launches in flight, which the next daemon adopts)."""
        if self._executors is not None:
            for said in self._executors.close(stop=False):
                log.info("%s", said)

    def log_step(self, report: StepReport) -> None:
        """One log line per job event of a reconcile step (JSON: event, job_id, attempt)."""
        ended = {cluster for cluster, _reason in report.ended}
        for job_id, attempt, cluster in report.watched:
            if cluster not in self._known:
                self._known.add(cluster)
                job_log.info("job %s attempt %d adopted: launched by an earlier daemon, %s",
                             job_id, attempt, "it has ended" if cluster in ended
                             else "still running", extra=_fields("adopted", job_id, attempt))
        self._known.update(report.launched)
        self._known.difference_update(ended)
        for e in report.events:
            where = f"job {e.job_id}" + (f" attempt {e.attempt}" if e.attempt else "")
            level = logging.WARNING if e.kind == "failed" else logging.INFO
            job_log.log(level, "%s %s: %s", where, e.kind, e.detail,
                        extra=_fields(e.kind, e.job_id, e.attempt))
        for job_id, message in report.errors:
            # Every tick's error at debug: orchestrator.reconcile.step_failures logs each kind once
            # (with the traceback) as a warning, and fails the job after a few in a row.
            job_log.debug("job %s: reconcile error: %s", job_id, message,
                          extra=_fields("error", job_id, None))
        for job_id, why in report.waiting:
            job_log.debug("job %s waiting: %s", job_id, why)

    def sender(self) -> ReportSender:
        with self._sender_lock:
            if self._sender is None:
                self._sender = build_sender(self.store, self.settings)
            return self._sender

    def _report_tick(self) -> None:
        for outcome in self.sender().tick(self.clock()):
            if outcome.status not in ("sent", "already-sent"):
                log.info("weekly report %s %s: %s", outcome.week, outcome.scope, outcome.status)

    def _report_retry(self) -> None:
        from gpuopt.orchestrator.store.report_sends import pending_retries

        now = self.clock()
        if any(at <= now for _w, _s, at in pending_retries(self.store)):
            self._report_tick()

    def _compact(self) -> None:
        from gpuopt.orchestrator.store.availability import compact_availability
        from gpuopt.orchestrator.store.compaction import compact_price_history

        d = self.settings.daemon
        now = self.clock()
        compact_price_history(self.store, now=now, after=d.compaction_after,
                              resolution=d.compaction_resolution)
        compact_availability(self.store, now=now, after=d.compaction_after,
                             resolution=d.compaction_resolution)
        from gpuopt.orchestrator.api.uploads_sweep import sweep_uploads

        removed = sweep_uploads(self.store, now)
        if removed:
            log.info("removed %d upload directory(ies) of ended or never-stored jobs",
                     removed)


def _fields(event: str, job_id: str, attempt: int | None) -> dict[str, object]:
    return {"event": event, "job_id": job_id, "attempt": attempt}


def build_sender(store: Store, settings: Settings) -> ReportSender:
    """The weekly-report sender with its sent weeks in the store (table report_sends)."""
    from gpuopt.orchestrator.report.from_config import report_sender
    from gpuopt.orchestrator.store.report_sends import StoreSentWeeks

    return report_sender(settings, StoreSentWeeks(store))
