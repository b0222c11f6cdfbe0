"""The daemon's main loop: leadership, heartbeats, the scheduler, signals and shutdown.

The main thread only keeps the leadership and the heartbeat (every ``lease_renew`` as
leader, every few seconds as stand-by); the scheduler's worker threads do the work, and
only while this process leads.

How soon a leader that lost its lock stops (PostgreSQL: its session was terminated, the
server restarted, the network cut). A stand-by retries every ``takeover = min(5 s,
lease_renew)``, so that is the time a stand-by needs to take over. The leader

- confirms its lock on the lock connection before every step and before each job of a
  reconcile tick (a terminated session fails that check at once), so it starts nothing
  after the loss;
- confirms it on a timer every ``takeover / 2`` in the main loop, and steps down (stops
  the scheduler, lets the job in flight finish, shows ``standby``) at the first failure:
  within ``takeover / 2`` of the loss, even while no step runs;
- when it becomes leader, waits ``takeover / 2`` before its first step, so an old leader
  that has not run a check since the loss has done so before the new one starts.

Only a single job's step already past its check (e.g. an executor launch) may still
finish after the loss; aborting it midway would leave an attempt whose fate is unknown.
A lock check that cannot reach the server is bounded by ``tcp_user_timeout``
(leadership.py); while it hangs no step starts.

SIGTERM / SIGINT: no new step starts, running steps get
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
from gpuopt.orchestrator.daemon.store_health import StoreHealth
from gpuopt.orchestrator.daemon.tasks import Clock, DaemonTasks, utc_now

if TYPE_CHECKING:
    from apscheduler.schedulers.base import BaseScheduler

    from gpuopt.jobs.executors.host import HostIdentity
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.daemon.leadership import Leadership, SqliteFileLock
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
                 node: NodeInfo, clock: Clock = utc_now, health: StoreHealth | None = None,
                 host: HostIdentity | None = None) -> None:
        from gpuopt.jobs.executors.host import current_host

        self.host = host or current_host(node.hostname)  # its local attempts' host
        self.settings = settings
        self.url = url
        self.store = store
        self.leadership = leadership
        self.node = node
        self.clock = clock
        self.health = health or StoreHealth()
        self.stop = threading.Event()
        self.runtime = DaemonHealth(node.node_id)
        self.scheduler: BaseScheduler | None = None
        self._leader_since: datetime | None = None
        self._lost: str | None = None  # why a worker's check failed; the loop steps down
        self._work_from = 0.0  # monotonic: no step starts before (the take-over grace)
        self._check = threading.Lock()
        self.tasks = DaemonTasks(store, settings, self.runtime, self.is_leader, clock,
                                 self.host)
        self.refusal: str | None = None  # why this node will not lead now (local_hosts)

    # -- leadership -----------------------------------------------------------------------

    @property
    def takeover_s(self) -> float:
        """The time a stand-by needs to take over: its retry interval."""
        return self._standby_retry().total_seconds()

    @property
    def check_every_s(self) -> float:
        return self.takeover_s / 2

    def is_leader(self) -> bool:
        """May a step (or the next job of a tick) start now? Leader with the lock confirmed
        just now, past the take-over grace, not stopping, with the store file in place."""
        early = self._work_from - time.monotonic()
        if early > 0:  # a step due inside the take-over grace waits for its end (a
            self.stop.wait(early)  # one-off step such as the report catch-up must run)
        if self._leader_since is None or self._lost is not None or self.stop.is_set():
            return False
        problem = self.health.file_problem()
        if problem is not None:
            self.health.problem()  # logs it (once)
            return False
        return self._confirm()

    def _confirm(self) -> bool:
        with self._check:
            if self._leader_since is None or self._lost is not None:
                return False
            if self.leadership.confirm():
                return True
            self._lost = "the leadership check failed"
            return False

    def _become_leader(self, now: datetime) -> None:
        from gpuopt.orchestrator.daemon.schedule import make_scheduler, register_jobs

        grace = timedelta(seconds=self.check_every_s)
        self._lost, self._work_from = None, time.monotonic() + grace.total_seconds()
        self._leader_since = now
        self.runtime.set_role("leader", now)
        clouds = self.settings.clouds.poll_clouds()
        scheduler = make_scheduler(len(clouds) + 4)
        ids = register_jobs(scheduler, self.tasks, self.settings, clouds, now + grace)
        scheduler.start()
        self.scheduler = scheduler
        log.info("leader since %s (%s); jobs: %s", now.isoformat(), self.leadership.kind,
                 ", ".join(ids))
        self._safe(lambda: self._forget_old_nodes(now), "forgetting old daemon nodes")

    def _step_down(self, reason: str) -> None:
        log.warning("leadership lost (%s): stopping work", reason)
        with self._check:
            self._leader_since = None  # from here on no step and no job starts
        self.runtime.set_role("standby", None)
        self._stop_scheduler(SHUTDOWN_GRACE_S)
        self.leadership.release()
        self._lost = None

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
        next_beat = 0.0
        while not self.stop.is_set():
            now = self.clock()
            leading = self._leader_since is not None
            if not leading:
                if self._refuses_to_lead(now):  # the host of the live local attempts leads
                    if self.runtime.role != "standby":
                        self.runtime.set_role("standby", None)
                elif self.leadership.try_acquire():
                    self._become_leader(now)
                elif self.runtime.role != "standby":
                    self.runtime.set_role("standby", None)
                    log.info("stand-by: another daemon leads; retrying every %ss",
                             self.takeover_s)
            elif not self._confirm():
                self._step_down(self._lost or "the leadership check failed")
            elif time.monotonic() >= next_beat and self._refuses_to_lead(now):
                self._step_down(self.refusal or "another host runs the local attempts")
            if leading != (self._leader_since is not None):
                next_beat = 0.0  # a new role is written at once
            if time.monotonic() >= next_beat:
                self._beat()
                beat_every = d.lease_renew if self._leader_since else self._standby_retry()
                next_beat = time.monotonic() + beat_every.total_seconds()
            self.health.problem()
            self.runtime.beat()
            self.stop.wait(self.check_every_s if self._leader_since is not None
                           else self.takeover_s)

    def _refuses_to_lead(self, now: datetime) -> bool:
        """Another host runs live local attempts and has a live daemon (local_hosts)."""
        from gpuopt.orchestrator.daemon.local_hosts import lead_refusal, local_hosts
        from gpuopt.orchestrator.daemon.status import alive_after

        try:
            why = lead_refusal(local_hosts(self.store, alive_after(self.settings, now)),
                               self.host.host_id)
        except Exception as err:  # the store is briefly unreachable: decide next time
            log.debug("checking the hosts of local attempts failed: %s", err)
            return False
        if why != self.refusal:
            if why is not None:
                log.warning("not leading: %s", why)
            elif self.refusal is not None:
                log.info("the other host's local attempts are over: may lead again")
        self.refusal = why
        self.runtime.set_refusal(why)
        return why is not None

    def _beat(self) -> None:
        try:
            self._heartbeat()
        except Exception as err:  # the store may be briefly unreachable: keep going
            from gpuopt.orchestrator.daemon.logs import redact

            cause = getattr(err, "orig", None) or err  # the driver's error, not SQLAlchemy's
            log.debug("heartbeat failed: %s", redact(str(err)))
            self.health.wrote(redact(f"{type(cause).__name__}: {cause}"))
        else:
            self.health.wrote(None)

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

    def start_chores(self) -> None:
        """At every start: publish this node's job-secrets key (jobs submitted from now on
        are sealed for it too) and sweep the secrets of jobs that ended."""
        from gpuopt.orchestrator.submit.job_secrets import publish_key, sweep

        def chores() -> None:
            key_id = publish_key(self.store, self.clock(), self.node.hostname)
            removed = sweep(self.store)
            log.info("job secrets: this node's key %s is published; %d secret(s) of "
                     "ended jobs removed", key_id[:8], removed)

        self._safe(chores, "publishing the job-secrets key and sweeping ended jobs' secrets")

    def shutdown(self) -> bool:
        """Finish running steps (bounded), release the leadership; True when clean."""
        self.runtime.set_role("stopping", self._leader_since)
        idle = self._stop_scheduler(SHUTDOWN_GRACE_S)
        self._safe(lambda: self.tasks.close(), "closing the executors")  # never blocks release
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
    from gpuopt.orchestrator.store.url import postgres_unreachable

    failures = 0
    while not stop.is_set():
        err = postgres_unreachable(url)
        if err is None:  # reachable (open_store turns an unreachable server into an exit)
            return open_store(url)  # the schema upgrade is serialised by open_store
        failures += 1
        delay = DB_UNREACHABLE_BACKOFF.delay(failures).total_seconds()
        log.warning("PostgreSQL not reachable (%s); retrying in %.0fs", err, delay)
        stop.wait(delay)
    return None


def _lock_sqlite_file(lock: SqliteFileLock) -> None:
    """Create the data directory and take the file's lock; a directory the daemon cannot
    write (read-only file system, no permission) is a clear error with exit code 2."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.paths import ensure_private_dir

    try:
        ensure_private_dir(lock.db_file.parent)
        lock.acquire_or_refuse()
    except OSError as err:
        lock.release()
        raise UserError(
            f"cannot write the SQLite database {lock.db_file} or its directory: "
            f"{err.strerror or err}; the daemon needs a writable data directory (it "
            "writes the database, its -wal and -shm files and a lock file there): fix it "
            "or set [database] url / GPUOPT_DATABASE_URL", exit_code=2,
        ) from None


def run_daemon(settings: Settings, *, log_format: str | None = None,
               clock: Clock = utc_now) -> int:
    """Run until SIGTERM / SIGINT; returns the exit code (0)."""
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.daemon.leadership import SqliteFileLock, leadership_for
    from gpuopt.orchestrator.daemon.logs import setup_logging
    from gpuopt.orchestrator.daemon.metrics import MetricsServer
    from gpuopt.orchestrator.store.daemon_state import NodeInfo
    from gpuopt.orchestrator.store.url import resolve_url

    setup_logging(log_format or settings.daemon.log_format.value)
    url = resolve_url(settings.database.url)
    dialect = "postgresql" if url.startswith("postgres") else "sqlite"
    leadership = leadership_for(url, dialect)
    health = StoreHealth()
    if isinstance(leadership, SqliteFileLock):
        _lock_sqlite_file(leadership)  # a second daemon on this file stops here, exit 2
        health = StoreHealth(leadership.db_file, leadership.identity)
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
    daemon = Daemon(settings, url, store, leadership, node, clock, health)
    daemon.stop = stop
    daemon.start_chores()
    # The API first (importing its server takes a moment): /healthz answers "starting"
    # only for the instant between the metrics server's start and the loop's.
    try:
        from gpuopt.orchestrator.api.server import start_api

        api = start_api(settings, store)
    except BaseException:
        leadership.release()
        raise
    try:
        metrics = MetricsServer(settings.daemon.metrics_address, store, daemon.runtime,
                                health)
    except OSError as err:
        if api is not None:
            api.stop()
        leadership.release()
        raise UserError(
            f"cannot serve metrics on {settings.daemon.metrics_address}: {err.strerror}; set "
            "[daemon] metrics_address (GPUOPT_DAEMON_METRICS_ADDRESS) to a free HOST:PORT",
            exit_code=2,
        ) from None
    metrics.start()
    log.info("gpuopt daemon %s started on %s (metrics and /healthz on http://%s%s)",
             node.node_id, store.url, metrics.address,
             f"; API and dashboard on {api.url}" if api is not None else "")
    try:
        daemon.loop()
    finally:
        log.info("stopping: finishing running steps, leaving running jobs running")
        clean = daemon.shutdown()
        if api is not None:
            api.stop()
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


