"""``/healthz`` and Prometheus ``/metrics``, served from a thread on [daemon] metrics_address.

The collector reads the store at scrape time (nothing is cached between scrapes), so the
figures are the same whichever daemon of a cluster is scraped:

- ``gpuopt_price_age_seconds{cloud}``: now - newest price observation of the cloud;
- ``gpuopt_price_poll_last_success_timestamp_seconds{cloud}``;
- ``gpuopt_jobs{state}``: jobs by state; ``gpuopt_attempts{status}``: attempts by status;
- ``gpuopt_attempts_total`` and ``gpuopt_preemptions_total`` (attempts ended preempted);
- ``gpuopt_spend_usd_total``: every attempt's held time x its launch price (running ones to
  now), summed exactly in integer micro-dollars;
- ``gpuopt_daemon_leader`` (1 when this process leads), ``gpuopt_daemon_task_runs_total``
  / ``..._failures_total{task}`` and ``gpuopt_store_up`` (0 when the store read failed);
- ``gpuopt_job_step_failures_total{kind}``: reconcile steps of single jobs that raised
  (by exception type; the job fails after a few in a row, see orchestrator.reconcile.step).

``/healthz`` answers 200 with a small JSON body while the main loop is alive and the store
is healthy (store_health.py: the SQLite file is still the one opened, the last write
succeeded), else 503 with ``"store"`` saying what is wrong.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from gpuopt.core.money import from_micros
from gpuopt.orchestrator.daemon.bounded_http import BoundedHTTPServer, Limits
from gpuopt.orchestrator.daemon.health import DaemonHealth
from gpuopt.orchestrator.daemon.store_health import StoreHealth

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

    from gpuopt.orchestrator.store.engine import Store

log = logging.getLogger("gpuopt.daemon.metrics")
STALE_LOOP_S = 60.0


class StoreCollector:
    """A prometheus_client custom collector reading the store at every scrape."""

    def __init__(self, store: Store, runtime: DaemonHealth,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.runtime = runtime
        self.clock = clock

    def describe(self) -> list[Any]:
        return []  # collected lazily: do not scrape the store at registration

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        role, _since, _outcomes, runs, failures = self.runtime.snapshot()
        yield GaugeMetricFamily("gpuopt_daemon_leader", "1 when this daemon is the leader",
                                value=1 if role == "leader" else 0)
        run_c = CounterMetricFamily("gpuopt_daemon_task_runs", "Scheduled task runs",
                                    labels=["task"])
        fail_c = CounterMetricFamily("gpuopt_daemon_task_failures", "Failed task runs",
                                     labels=["task"])
        for task in sorted(runs):
            run_c.add_metric([task], runs[task])
            fail_c.add_metric([task], failures.get(task, 0))
        yield run_c
        yield fail_c
        steps = CounterMetricFamily("gpuopt_job_step_failures",
                                    "Reconcile steps of one job that raised, by kind",
                                    labels=["kind"])
        for kind, n in sorted(self.runtime.job_step_failures_by_kind().items()):
            steps.add_metric([kind], n)
        yield steps
        up = GaugeMetricFamily("gpuopt_store_up", "1 when the last store read succeeded")
        try:
            families = list(self._from_store())
        except Exception as err:
            log.warning("metrics: reading the store failed: %s", err)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _from_store(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from gpuopt.orchestrator.store.fleet_figures import fleet_figures

        now = self.clock()
        figures = fleet_figures(self.store, now)
        age = GaugeMetricFamily("gpuopt_price_age_seconds",
                                "Seconds since the newest price observation",
                                labels=["cloud"])
        for cloud, newest in figures.newest_price.items():
            age.add_metric([cloud], (now - newest).total_seconds())
        yield age
        ok = GaugeMetricFamily("gpuopt_price_poll_last_success_timestamp_seconds",
                               "Unix time of the last successful price poll",
                               labels=["cloud"])
        for cloud, ok_at in figures.last_poll_ok.items():
            ok.add_metric([cloud], ok_at.timestamp())
        yield ok
        fig = figures.jobs
        if fig is None:
            return
        jobs = GaugeMetricFamily("gpuopt_jobs", "Jobs by state", labels=["state"])
        for state, n in fig.jobs_by_state.items():
            jobs.add_metric([state], n)
        yield jobs
        attempts = GaugeMetricFamily("gpuopt_attempts", "Attempts by status",
                                     labels=["status"])
        for status, n in fig.attempts_by_status.items():
            attempts.add_metric([status], n)
        yield attempts
        yield CounterMetricFamily("gpuopt_attempts", "Attempts launched (all time)",
                                  value=fig.attempts)
        yield CounterMetricFamily("gpuopt_preemptions", "Attempts ended by a preemption",
                                  value=fig.preemptions)
        yield CounterMetricFamily("gpuopt_spend_usd", "Spend in USD at launch prices",
                                  value=float(from_micros(fig.spend_micros)))


def make_registry(collector: StoreCollector) -> CollectorRegistry:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def _handler(registry: CollectorRegistry, runtime: DaemonHealth,
             health: StoreHealth) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "gpuopt-daemon"

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                role, since, *_ = runtime.snapshot()
                quiet = runtime.seconds_since_beat()
                problem = health.problem()
                healthy = quiet < STALE_LOOP_S and role != "stopping" and problem is None
                body = {"status": "ok" if healthy else "unhealthy", "role": role,
                        "node": runtime.node_id,
                        "leader_since": since.isoformat() if since else None,
                        "loop_seconds_ago": round(quiet, 1),
                        "store": problem.message if problem else "ok",
                        # attempts whose stop failed (retried with back-off): a job's
                        # problem, not the daemon's, so the answer stays 200
                        "stop_failed": [{"job": j, "attempt": n, "kind": k}
                                        for j, n, k in runtime.stop_failed_attempts()]}
                self._send(200 if healthy else 503, json.dumps(body).encode(),
                           "application/json")
            else:
                self._send(404, b"not found: try /metrics or /healthz\n", "text/plain")

        def _send(self, code: int, body: bytes, ctype: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    return Handler


class MetricsServer:
    """/metrics and /healthz on ``address`` (HOST:PORT), served within bounds: a few
    worker threads, a deadline for each request's head, a cap on open connections
    (daemon/bounded_http.py)."""

    def __init__(self, address: str, store: Store, runtime: DaemonHealth,
                 health: StoreHealth | None = None, limits: Limits | None = None) -> None:
        host, _, port = address.rpartition(":")
        registry = make_registry(StoreCollector(store, runtime))
        self.server = BoundedHTTPServer((host.strip("[]"), int(port)),
                                        _handler(registry, runtime, health or StoreHealth()),
                                        limits)

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host!s}:{port}"

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.shutdown()
