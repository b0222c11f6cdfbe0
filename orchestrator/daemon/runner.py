"""The daemon's main loop: leadership, heartbeats, the scheduler, signals and shutdown.

The main thread only keeps the leadership and the heartbeat (every ``lease_renew`` as
leader, every few seconds as stand-by); the scheduler's worker threads do the work, and
only while this process leads. SIGTERM / SIGINT: no new step starts, running steps get
up to SHUTDOWN_GRACE_S to finish, the leadership is released, exit 0. Nothing running
under an executor is stopped: the next leader adopts it by its cluster name.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from gpuopt.core.backoff import Backoff
from gpuopt.orchestrator.daemon.health import DaemonHealth
from gpuopt.orchestrator.daemon.tasks import Clock, DaemonTasks, utc_now

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.daemon.leadership import Leadership
    from gpuopt.orchestrator.store.daemon_state import NodeInfo
    from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.daemon")
SHUTDOWN_GRACE_S = 8.0  # running steps may finish; the process is gone within 10 s
STANDBY_RETRY = timedelta(seconds=5)
# Waiting for an unreachable PostgreSQL at start: 1 s, 2 s, 4 s, ... at most 30 s.
DB_UNREACHABLE_BACKOFF = Backoff(first=timedelta(seconds=1), factor=2,
                                 cap=timedelta(seconds=30))
FORGET_NODES_AFTER = timedelta(days=7)


class Daemon:
    def __init__(self, settings: Settings, url: str, store: Store, leadership: Leadership,
                 node: NodeInfo, clock: Clock = utc_now) -> None:
        self.settings = settings
        self.url = url
        self.store = store
        self.leadership = leadership
        self.node = node
        self.clock = clock
        self.stop = threading.Event()
        self.runtime = DaemonHealth(node.node_id)
        self.scheduler: BaseScheduler | None = None
        self._leader_since: datetime | None = None
        self._confirmed_at = 0.0  # monotonic time of the last confirmed leadership
        self.tasks = DaemonTasks(store, settings, self.runtime, self.is_leader, clock)

    # -- leadership -----------------------------------------------------------------------

    def is_leader(self) -> bool:
        """May a step start now? Leader, confirmed within lease_ttl, not stopping."""
        ttl = self.settings.daemon.lease_ttl.total_seconds()
        return (self._leader_since is not None and not self.stop.is_set()
                and time.monotonic() - self._confirmed_at < ttl)

    def _become_leader(self, now: datetime) -> None:
        from gpuopt.orchestrator.daemon.schedule import make_scheduler, register_jobs

        self._leader_since, self._confirmed_at = now, time.monotonic()
        self.runtime.set_role("leader", now)
        clouds = self.settings.clouds.poll_clouds()
        scheduler = make_scheduler(len(clouds) + 4)
        ids = register_jobs(scheduler, self.tasks, self.settings, clouds, now)
        scheduler.start()
        self.scheduler = scheduler
        log.info("leader since %s (%s); jobs: %s", now.isoformat(), self.leadership.kind,
                 ", ".join(ids))
        self._safe(lambda: self._forget_old_nodes(now), "forgetting old daemon nodes")

    def _step_down(self, reason: str) -> None:
        log.warning("leadership lost (%s): stopping work", reason)
        self._stop_scheduler(SHUTDOWN_GRACE_S)
        self.leadership.release()
        self._leader_since = None
        self.runtime.set_role("standby", None)

    def _stop_scheduler(self, grace_s: float) -> bool:
        if self.scheduler is None:
            return True
        self.scheduler.shutdown(wait=False)  # no new runs; running steps continue
        self.scheduler = None
        idle = self.runtime.wait_idle(grace_s)
        if not idle:
            log.warning("steps still running after %.0fs", grace_s)
        return idle

    # -- the loop -------------------------------------------------------------------------

    def loop(self) -> None:
        d = self.settings.daemon
        while not self.stop.is_set():
            now = self.clock()
            if self._leader_since is None:
                if self.leadership.try_acquire():
                    self._become_leader(now)
                elif self.runtime.role != "standby":
                    self.runtime.set_role("standby", None)
                    log.info("stand-by: another daemon leads; retrying every %ss",
                             self._standby_retry().total_seconds())
            elif self.leadership.confirm():
                self._confirmed_at = time.monotonic()
            else:
                self._step_down("the leadership check failed")
            self._safe(self._heartbeat, "heartbeat")
            self.runtime.beat()
            wait = d.lease_renew if self._leader_since is not None else self._standby_retry()
            self.stop.wait(wait.total_seconds())

    def _standby_retry(self) -> timedelta:
        return min(STANDBY_RETRY, self.settings.daemon.lease_renew)

    def _heartbeat(self, role: str | None = None) -> None:
        from gpuopt.orchestrator.store.daemon_state import heartbeat

        role = role or ("leader" if self._leader_since is not None else "standby")
        heartbeat(self.store, self.node, role=role, leader_since=self._leader_since,
                  at=self.clock())

    def _forget_old_nodes(self, now: datetime) -> None:
        from gpuopt.orchestrator.store.daemon_state import prune_nodes

        prune_nodes(self.store, now - FORGET_NODES_AFTER)

    def shutdown(self) -> bool:
        """Finish running steps (bounded), release the leadership; True when clean."""
        self.runtime.set_role("stopping", self._leader_since)
        idle = self._stop_scheduler(SHUTDOWN_GRACE_S)
        self.leadership.release()
        self._leader_since = None
        self._safe(lambda: self._heartbeat("stopped"), "final heartbeat")
        return idle

    @staticmethod
    def _safe(fn: Callable[[], object], what: str) -> None:
        try:
            fn()
        except Exception as err:  # the store may be briefly unreachable: keep going
            log.warning("%s failed: %s", what, err)


def _open_when_reachable(url: str, dialect: str, stop: threading.Event) -> Store | None:
    """The store; on PostgreSQL, wait for an unreachable server (a daemon started before
    its database, e.g. at boot) instead of exiting. None if stopped while waiting."""
    from gpuopt.orchestrator.store import open_store

    if dialect != "postgresql":
        return open_store(url)
    import psycopg

    from gpuopt.orchestrator.daemon.leadership import libpq_url

    failures = 0
    while not stop.is_set():
        try:
            with psycopg.connect(libpq_url(url), connect_timeout=10):
                pass  # reachable (open_store turns an unreachable server into an exit)
            return open_store(url)  # the schema upgrade is serialised by open_store
        except psycopg.OperationalError as err:
            failures += 1
            delay = DB_UNREACHABLE_BACKOFF.delay(failures).total_seconds()
            log.warning("PostgreSQL not reachable (%s); retrying in %.0fs", err, delay)
        stop.wait(delay)
    return None


def run_daemon(settings: Settings, *, log_format: str | None = None,
               clock: Clock = utc_now) -> int:
    """Run until SIGTERM / SIGINT; returns the exit code (0)."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.daemon.leadership import SqliteFileLock, leadership_for
    from gpuopt.orchestrator.daemon.logs import setup_logging
    from gpuopt.orchestrator.daemon.metrics import MetricsServer
    from gpuopt.orchestrator.store.daemon_state import NodeInfo
    from gpuopt.orchestrator.store.url import resolve_url, sqlite_file

    setup_logging(log_format or settings.daemon.log_format.value)
    url = resolve_url(settings.database.url)
    dialect = "postgresql" if url.startswith("postgres") else "sqlite"
    leadership = leadership_for(url, dialect)
    if isinstance(leadership, SqliteFileLock):
        from gpuopt.orchestrator.paths import ensure_private_dir

        file = sqlite_file(url)
        if file is not None:
            ensure_private_dir(file.parent)
        leadership.acquire_or_refuse()  # a second daemon on this file stops here, exit 2
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_a: stop.set())
                for sig in (signal.SIGTERM, signal.SIGINT)}
    store = _open_when_reachable(url, dialect, stop)
    if store is None:
        return 0
    started = clock()
    node = NodeInfo(
        node_id=f"{socket.gethostname()}:{os.getpid()}:{int(started.timestamp())}",
        hostname=socket.gethostname(), pid=os.getpid(), started_at=started, role="standby",
        leader_since=None, heartbeat_at=started, metrics_address=settings.daemon.metrics_address,
    )
    daemon = Daemon(settings, url, store, leadership, node, clock)
    daemon.stop = stop
    try:
        metrics = MetricsServer(settings.daemon.metrics_address, store, daemon.runtime)
    except OSError as err:
        leadership.release()
        raise UserError(
            f"cannot serve metrics on {settings.daemon.metrics_address}: {err.strerror}; set "
            "[daemon] metrics_address (GPUOPT_DAEMON_METRICS_ADDRESS) to a free HOST:PORT",
            exit_code=2,
        ) from None
    metrics.start()
    log.info("gpuopt daemon %s started on %s (metrics and /healthz on http://%s)",
             node.node_id, store.url, metrics.address)
    try:
        daemon.loop()
    finally:
        log.info("stopping: finishing running steps, leaving running jobs running")
        clean = daemon.shutdown()
        metrics.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if not clean:
        # A step is stuck (e.g. a cloud API call): its transaction rolls back when the
        # process ends, and the next leader redoes it. Exit now rather than hang.
        log.warning("exiting with steps still running; they are redone by the next leader")
        logging.shutdown()
        os._exit(0)
    store.close()
    log.info("stopped")
    return 0


