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

from gpuopt.orchestrator.daemon.health import DaemonHealth, TaskOutcome

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.report.sender import ReportSender
    from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.daemon")
Clock = Callable[[], datetime]


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
    ) -> None:
        self.store = store
        self.settings = settings
        self.runtime = runtime
        self.is_leader = is_leader
        self.clock = clock
        self._sender: ReportSender | None = None
        self._sender_lock = threading.Lock()
        self._executors: Any = None

    # -- the jobs -------------------------------------------------------------------------

    def poll(self, cloud: str) -> None:
        self._run(f"poll-{cloud}", lambda: self._poll(cloud))

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
        log.info("price poll %s: %s (%d new, %d changed, %d unchanged, %d rejected)%s",
                 cloud, result.status, result.new, result.changed, result.unchanged,
                 result.rejected, f": {result.error}" if result.error else "")

    def _reconcile(self) -> None:
        from gpuopt.orchestrator.reconcile import reconcile_once

        if self._executors is None:
            from gpuopt.orchestrator.attempts import ExecutorCache

            # One executor per kind for the life of the daemon (the local executor's
            # watchers live in it); running attempts are adopted by cluster name.
            self._executors = ExecutorCache()
        reconcile_once(self.store, self._executors, self.settings, self.clock(),
                       keep_going=self.is_leader)

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
        from gpuopt.orchestrator.store.compaction import compact_price_history

        d = self.settings.daemon
        compact_price_history(self.store, now=self.clock(), after=d.compaction_after,
                              resolution=d.compaction_resolution)


def build_sender(store: Store, settings: Settings) -> ReportSender:
    """The weekly-report sender with its sent weeks in the store (table report_sends)."""
    from gpuopt.orchestrator.report.from_config import report_sender
    from gpuopt.orchestrator.store.report_sends import StoreSentWeeks

    return report_sender(settings, StoreSentWeeks(store))
