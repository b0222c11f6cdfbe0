"""A recording fake of the SkyPilot SDK boundary (jobs.executors.sky_client.SkyClient).

Kept only for what cannot run on this machine: a cluster that comes UP and runs the
job (provisioning needs a cloud account). Everything SkyPilot does without one (launch
requests, refusals, enabled clouds, request logs, the optimizer) is tested against a
real API server (test_sky_real_server.py, tests/e2e/test_sky_dry_run.py); the fake's
records are checked against that server's and its names against the installed SkyPilot
(test_fake_sky_drift.py).

It plays the API server + one-node clusters: ``launch`` records the call and runs the
plan's setup and run as local processes (own process group, plan.envs), so the shared
contract suite can drive the SkyPilot executor with real programs. ``calls`` lists every
boundary call in order; ``preempt`` kills a cluster the way a cloud reclaims a spot VM.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuopt.jobs.executors.sky_client import ClusterJob, ClusterRecord, LaunchRequest
from gpuopt.jobs.executors.sky_task import SkyTaskPlan


@dataclass
class _Cluster:
    name: str
    plan: SkyTaskPlan
    log: Path
    launched_at: float
    status: str = "UP"
    job_status: str = "SETTING_UP"
    start_at: float | None = None
    end_at: float | None = None
    proc: subprocess.Popen[bytes] | None = None
    has_job: bool = True  # False: launched without run (a probe's), until an exec


@dataclass
class FakeSkyWorld:
    """Shared by several client instances, like one API server seen by restarted daemons."""

    workdir: Path
    clusters: dict[str, _Cluster] = field(default_factory=dict)
    requests: dict[str, list[LaunchRequest]] = field(default_factory=dict)
    calls: list[tuple[str, Any]] = field(default_factory=list)
    # The launch request fails with this exception (SkyPilot's own type), as sky.get
    # would re-raise it; ``raise_on_launch``: sky.launch itself raises, nothing accepted;
    # ``raise_after_accept``: the request is accepted (and runs), then the call raises
    # (a read timeout: the caller cannot tell whether it was accepted).
    fail_launch_with: BaseException | None = None
    fail_launch_log: str = ""  # that failed request's log (what SkyPilot logged in it)
    raise_on_launch: BaseException | None = None
    raise_after_accept: BaseException | None = None
    errors: dict[str, BaseException] = field(default_factory=dict)
    request_logs: dict[str, str] = field(default_factory=dict)
    enabled: tuple[str, ...] = ("aws", "gcp", "azure")  # what `sky check` would enable
    lock: threading.RLock = field(default_factory=threading.RLock)
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def calls_named(self, name: str) -> list[Any]:
        return [args for call, args in self.calls if call == name]

    def preempt(self, name: str) -> None:
        """The cloud takes the VM back: processes die, the cluster disappears."""
        with self.lock:
            cluster = self.clusters.pop(name)
        _kill(cluster)


def _kill(cluster: _Cluster) -> None:
    proc = cluster.proc
    if proc is not None and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        _wait_group_gone(proc.pid)


def _wait_group_gone(pgid: int, timeout: float = 10.0) -> None:
    """A VM taken back has no process left: wait (bounded) until the kernel has delivered
    SIGKILL to every member of the group, not only to its leader (which proc.wait reaps)."""
    import psutil

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for p in psutil.process_iter(["status"]):
            with contextlib.suppress(psutil.Error, ProcessLookupError):
                if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == pgid:
                    alive.append(p)
        if not alive:
            return
        time.sleep(0.02)


class FakeSkyClient:
    def __init__(self, world: FakeSkyWorld) -> None:
        self.world = world

    def _record(self, call: str, args: Any) -> None:
        with self.world.lock:
            self.world.calls.append((call, args))

    def launch(self, plan: SkyTaskPlan, cluster_name: str) -> str:
        self._record("launch", (cluster_name, plan))
        w = self.world
        if w.raise_on_launch is not None:
            raise w.raise_on_launch
        request_id = f"req-{next(w._ids)}"
        if w.fail_launch_with is not None:
            w.errors[request_id] = w.fail_launch_with
            w.request_logs[request_id] = w.fail_launch_log
            # the API server lists a failed request without its error (sky.get re-raises
            # it): what test_sky_real_server checks the fake against
            w.requests.setdefault(cluster_name, []).append(
                LaunchRequest(request_id, "FAILED", ""))
            return request_id
        log = w.workdir / f"{cluster_name}.log"
        cluster = _Cluster(cluster_name, plan, log, launched_at=time.time(),
                           has_job=bool(plan.run))
        with w.lock:
            w.clusters[cluster_name] = cluster
            w.requests.setdefault(cluster_name, []).append(LaunchRequest(request_id, "SUCCEEDED"))
        threading.Thread(target=self._run, args=(cluster,), daemon=True).start()
        if w.raise_after_accept is not None:
            raise w.raise_after_accept
        return request_id

    def exec(self, plan: SkyTaskPlan, cluster_name: str) -> str:
        """``sky exec``: the run alone, on the cluster as it is (no setup)."""
        self._record("exec", (cluster_name, plan))
        w = self.world
        request_id = f"req-{next(w._ids)}"
        with w.lock:
            cluster = w.clusters[cluster_name]  # SkyPilot fails the request without it
            cluster.plan, cluster.has_job, cluster.job_status = plan, True, "PENDING"
            w.requests.setdefault(cluster_name, []).append(LaunchRequest(request_id, "SUCCEEDED"))
        threading.Thread(target=self._run, args=(cluster, False), daemon=True).start()
        return request_id

    def _run(self, cluster: _Cluster, setup: bool = True) -> None:
        env = {**os.environ, **cluster.plan.envs}
        cwd = cluster.plan.workdir or str(self.world.workdir)
        with open(cluster.log, "ab") as log:
            for phase, script in (("setup", cluster.plan.setup if setup else None),
                                  ("run", cluster.plan.run)):
                if not script:
                    continue
                with self.world.lock:
                    if cluster.job_status == "CANCELLED" or cluster.name not in self.world.clusters:
                        return
                    proc = subprocess.Popen(
                        ["bash", "-c", script], cwd=cwd, env=env, stdout=log,
                        stderr=subprocess.STDOUT, start_new_session=True,
                    )
                    cluster.proc = proc
                    if phase == "run":
                        cluster.job_status, cluster.start_at = "RUNNING", time.time()
                rc = proc.wait()
                with self.world.lock:
                    if cluster.job_status == "CANCELLED" or cluster.name not in self.world.clusters:
                        return
                    if rc != 0 or phase == "run":
                        cluster.end_at = time.time()
                        cluster.job_status = (
                            "SUCCEEDED" if rc == 0
                            else "FAILED_SETUP" if phase == "setup" else "FAILED"
                        )
                        return

    def launch_requests(self, cluster_name: str) -> list[LaunchRequest]:
        self._record("launch_requests", cluster_name)
        with self.world.lock:
            return list(self.world.requests.get(cluster_name, []))

    def request_error(self, request_id: str) -> BaseException | None:
        self._record("request_error", request_id)
        with self.world.lock:
            return self.world.errors.get(request_id)

    def request_log_tail(self, request_id: str, max_bytes: int) -> str:
        self._record("request_log_tail", (request_id, max_bytes))
        with self.world.lock:
            if request_id not in self.world.request_logs:  # as sky.stream_and_get raises
                from sky import exceptions

                raise exceptions.ClientError("Failed to stream logs: the request or log "
                                             "path was not found or is not accessible")
            data = self.world.request_logs[request_id].encode()
        return data[-max_bytes:].decode(errors="ignore")

    def status(self, cluster_name: str) -> ClusterRecord | None:
        self._record("status", cluster_name)
        with self.world.lock:
            c = self.world.clusters.get(cluster_name)
            return ClusterRecord(c.name, c.status, c.launched_at) if c else None

    def list_clusters(self, prefix: str) -> list[ClusterRecord]:
        self._record("list_clusters", prefix)
        with self.world.lock:
            return [ClusterRecord(c.name, c.status, c.launched_at)
                    for c in self.world.clusters.values() if c.name.startswith(prefix)]

    def queue(self, cluster_name: str) -> list[ClusterJob]:
        self._record("queue", cluster_name)
        with self.world.lock:
            c = self.world.clusters[cluster_name]  # SkyPilot raises for a missing cluster too
            if not c.has_job:
                return []
            return [ClusterJob(1, c.job_status, c.start_at, c.end_at)]

    def down(self, cluster_name: str) -> None:
        self._record("down", cluster_name)
        with self.world.lock:
            cluster = self.world.clusters.pop(cluster_name, None)
            if cluster is not None and cluster.job_status in ("SETTING_UP", "RUNNING"):
                cluster.job_status = "CANCELLED"
        if cluster is not None:
            _kill(cluster)

    def cancel_request(self, request_id: str) -> None:
        self._record("cancel_request", request_id)

    def tail_logs(
        self, cluster_name: str, job_id: int | None, follow: bool, tail: int = 0
    ) -> Iterator[str]:
        self._record("tail_logs", (cluster_name, job_id, follow, tail))
        with self.world.lock:
            c = self.world.clusters.get(cluster_name)
        if c is None:
            return iter(())
        while follow and c.job_status in ("SETTING_UP", "RUNNING"):
            time.sleep(0.05)  # SkyPilot streams until the job ends; the fake waits for it
        text = c.log.read_text(encoding="utf-8", errors="replace") if c.log.exists() else ""
        lines = text.splitlines()
        return iter(lines[-tail:] if tail else lines)

    def enabled_clouds(self) -> list[str]:
        self._record("enabled_clouds", None)
        return list(self.world.enabled)
