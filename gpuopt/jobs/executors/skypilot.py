"""SkyPilot executor: one attempt = one SkyPilot cluster running one job.

State comes from SkyPilot itself (cluster record, the cluster's job queue, the API
server's launch requests), so a restarted daemon sees what the previous one saw.
Preemption: the cluster is gone, STOPPED or back in INIT while the job had been seen
running. A job that ended is read (status, last log lines, exit code from the wrapper's
marker line) and then the cluster is torn down. Progress: the run wrapper copies the
program's progress file into the log when it changes; polls read it from the log's tail.
Telemetry: likewise, the GPU sampler's summary as a ``[gpuopt] telemetry {...}`` line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

from gpuopt.jobs.executors.base import (
    CLUSTER_PREFIX,
    AttemptSpec,
    AttemptState,
    AttemptStatus,
    FailureKind,
    LaunchError,
    LaunchResult,
    Progress,
    Provisioned,
    ProvisionPending,
)
from gpuopt.jobs.executors.sky_client import ClusterJob, ClusterRecord, LaunchRequest, SkyClient
from gpuopt.jobs.executors.sky_request_log import MAX_LOG_BYTES
from gpuopt.jobs.executors.sky_task import (
    PROGRESS_ECHO_S,
    SkyTaskPlan,
    exit_code_from_lines,
    is_wrapper_line,
    pin_zone_id,
    plan_task,
    progress_from_lines,
)
from gpuopt.jobs.telemetry.summary import TelemetrySummary, telemetry_from_lines

log = logging.getLogger(__name__)

_PENDING_JOB = frozenset({"INIT", "PENDING", "SETTING_UP"})


def _utc(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, tz=UTC) if ts else None


class SkyPilotExecutor:
    kind = "skypilot"

    def __init__(
        self,
        client: SkyClient,
        *,
        mount_mode: str = "MOUNT_CACHED",
        last_lines: int = 20,
        down_when_done: bool = True,
        progress_echo_s: float = PROGRESS_ECHO_S,
        progress_tail: int = 200,
        telemetry_interval: float | None = None,
    ) -> None:
        self.client = client
        self.mount_mode = mount_mode
        self.last_lines = last_lines
        self.progress_echo_s = progress_echo_s
        self.telemetry_interval = telemetry_interval  # None: no GPU sampling on the node
        # Log lines searched for the newest progress echo: a program printing more than
        # this between two echoes hides its progress until the next one.
        self.progress_tail = progress_tail
        self.down_when_done = down_when_done
        self._seen_running: set[str] = set()
        self._final: dict[str, AttemptStatus] = {}

    # -- launch -----------------------------------------------------------------------
    # (an AWS zone id the plan could not pin is named through SkyPilot's own mapping)
    def launch(self, spec: AttemptSpec) -> LaunchResult:
        name = spec.cluster_name
        # user errors before any call
        plan = plan_task(spec, mount_mode=self.mount_mode, progress_echo_s=self.progress_echo_s,
                         telemetry_interval_s=self.telemetry_interval)
        plan = pin_zone_id(plan, spec.placement.zone)
        if name in self._final or self.client.status(name) is not None:
            return LaunchResult(name, adopted=True)
        # Any launch request ever made under this name means the attempt exists (still
        # provisioning, failed or finished): never launch the same attempt twice.
        if self.client.launch_requests(name):
            return LaunchResult(name, adopted=True)
        try:
            self.client.launch(plan, name)
        except Exception as exc:
            from gpuopt.jobs.executors.sky_errors import launch_failure

            # Classified by SkyPilot's exception type; a call that may have reached the
            # API server raises LaunchOutcomeUnknown (poll asks the server what became of it).
            raise launch_failure(exc, name) from exc
        return LaunchResult(name, adopted=False)

    # -- probes (jobs.executors.base.Provisioner) --------------------------------------
    def _plan(self, spec: AttemptSpec) -> SkyTaskPlan:
        plan = plan_task(spec, mount_mode=self.mount_mode, progress_echo_s=self.progress_echo_s,
                         telemetry_interval_s=self.telemetry_interval)
        return pin_zone_id(plan, spec.placement.zone)

    def provision(self, spec: AttemptSpec) -> Provisioned:
        """``sky launch`` of the attempt's cluster without its run (the setup and the
        mounts only), then, at later calls, the cluster once UP. ``ProvisionPending``
        while it comes up; ``LaunchError`` when its launch failed (its kind from
        SkyPilot's exception: CAPACITY for no capacity)."""
        name = spec.cluster_name
        plan = self._plan(spec)
        if name in self._final:
            raise LaunchError(f"{name} ended already", FailureKind.LAUNCH)
        requests = self.client.launch_requests(name)
        if not requests:
            try:
                self.client.launch(replace(plan, run=""), name)
            except Exception as exc:
                from gpuopt.jobs.executors.sky_errors import launch_failure

                raise launch_failure(exc, name) from exc
            requests = self.client.launch_requests(name)
        if any(r.live for r in requests):
            raise ProvisionPending(f"{name}: provisioning")
        record = self.client.status(name)
        if record is not None and record.status == "UP":
            return Provisioned(name, _utc(record.launched_at) or datetime.now(UTC))
        if requests and requests[-1].status == "FAILED":
            failed = self._failed_launch(name, requests[-1])
            raise LaunchError(failed.detail, failed.failure or FailureKind.LAUNCH)
        state = record.status if record is not None else "gone"
        raise LaunchError(f"{name}: cluster {state} after its provisioning", FailureKind.LAUNCH)

    def start(self, spec: AttemptSpec) -> LaunchResult:
        """``sky exec`` of the job on the probe's cluster; adopted when a job is there or
        on its way (an exec request live)."""
        name = spec.cluster_name
        plan = self._plan(spec)
        if name in self._final:
            return LaunchResult(name, adopted=True)
        if self.client.status(name) is None:
            raise LaunchError(f"{name}: no cluster to start the job on", FailureKind.LAUNCH)
        if self.client.queue(name) or any(r.live for r in self.client.launch_requests(name)):
            return LaunchResult(name, adopted=True)
        try:
            self.client.exec(plan, name)
        except Exception as exc:
            from gpuopt.jobs.executors.sky_errors import launch_failure

            raise launch_failure(exc, name) from exc
        return LaunchResult(name, adopted=False)

    # -- poll -------------------------------------------------------------------------
    def poll(self, cluster_name: str) -> AttemptStatus:
        final = self._final.get(cluster_name)
        if final is not None:
            return final
        record = self.client.status(cluster_name)
        if record is None:
            return self._without_cluster(cluster_name)
        if record.status == "UP":
            return self._from_queue(cluster_name, record)
        if any(r.live for r in self.client.launch_requests(cluster_name)):
            return AttemptStatus(cluster_name, AttemptState.PENDING, detail="launching")
        if cluster_name in self._seen_running or record.status == "STOPPED":
            return self._end(
                AttemptStatus(
                    cluster_name,
                    AttemptState.PREEMPTED,
                    started_at=_utc(record.launched_at),
                    ended_at=datetime.now(UTC),
                    detail=f"cluster {record.status} while the job was running",
                ),
                down=True,
            )
        return AttemptStatus(
            cluster_name, AttemptState.UNKNOWN, detail=f"cluster {record.status}, no launch"
        )

    def _without_cluster(self, name: str) -> AttemptStatus:
        requests = self.client.launch_requests(name)
        if any(r.live for r in requests):
            return AttemptStatus(name, AttemptState.PENDING, detail="launching")
        if name in self._seen_running:
            return self._end(
                AttemptStatus(
                    name,
                    AttemptState.PREEMPTED,
                    ended_at=datetime.now(UTC),
                    detail="cluster gone while the job was running",
                ),
                down=False,
            )
        if requests and requests[-1].status == "FAILED":
            return self._end(self._failed_launch(name, requests[-1]), down=False)
        detail = "cluster gone; outcome unknown" if requests else "no such attempt"
        return AttemptStatus(name, AttemptState.UNKNOWN, detail=detail)

    def _failed_launch(self, name: str, request: LaunchRequest) -> AttemptStatus:
        """A launch request that failed, with its kind from the exception SkyPilot raised
        and the clouds' codes in it and in the tail of the request's log."""
        from gpuopt.jobs.executors.sky_errors import failed_request

        exc = self.client.request_error(request.request_id)
        try:
            log_tail = self.client.request_log_tail(request.request_id, MAX_LOG_BYTES)
        except Exception as err:  # a log gone (requests are garbage-collected) or unreadable
            log.debug("log of launch request %s unreadable: %s", request.request_id, err)
            log_tail = ""
        kind, detail = failed_request(exc, log_tail, request.error)
        return AttemptStatus(name, AttemptState.FAILED, failure=kind, detail=detail)

    def _from_queue(self, name: str, record: ClusterRecord) -> AttemptStatus:
        jobs = self.client.queue(name)
        if not jobs:
            if any(r.live for r in self.client.launch_requests(name)):
                return AttemptStatus(name, AttemptState.PENDING,
                                     started_at=_utc(record.launched_at))
            # up, no job and none on its way: a probe's cluster, provisioned
            return AttemptStatus(name, AttemptState.PROVISIONED,
                                 started_at=_utc(record.launched_at), detail="provisioned")
        job = jobs[-1]
        started, ended = _utc(job.start_at), _utc(job.end_at)
        if job.status in _PENDING_JOB:
            return AttemptStatus(name, AttemptState.PENDING, started_at=started)
        if job.status == "RUNNING":
            self._seen_running.add(name)
            progress, telemetry = self._from_log(name, job)
            return AttemptStatus(name, AttemptState.RUNNING, started_at=started,
                                 progress=progress, telemetry=telemetry)
        return self._end(self._terminal(name, job, started, ended), down=True)

    def _terminal(
        self, name: str, job: ClusterJob, started: datetime | None, ended: datetime | None
    ) -> AttemptStatus:
        tail = max(self.progress_tail, self.last_lines + 2)
        lines = tuple(self.client.tail_logs(name, job.job_id, follow=False, tail=tail))
        code = exit_code_from_lines(lines)
        progress = progress_from_lines(lines)
        telemetry = telemetry_from_lines(lines)
        shown = tuple(line for line in lines if not is_wrapper_line(line))[-self.last_lines :]
        ended = ended or datetime.now(UTC)
        state, failure, exit_code, detail = AttemptState.UNKNOWN, None, None, f"job {job.status}"
        if job.status == "SUCCEEDED":
            state, exit_code, detail, shown = AttemptState.SUCCEEDED, 0, "", ()
        elif job.status == "CANCELLED":
            state, detail = AttemptState.CANCELLED, "job cancelled"
        elif job.status == "FAILED_SETUP":
            state, failure, detail = AttemptState.FAILED, FailureKind.SETUP, "setup failed"
        elif job.status == "FAILED":
            state, failure, exit_code = AttemptState.FAILED, FailureKind.PROGRAM, code
            detail = (f"run exited with code {code}" if code is not None
                      else "run failed (its log holds no exit code)")
        return AttemptStatus(
            name, state, exit_code=exit_code, failure=failure, last_lines=shown,
            progress=progress, started_at=started, ended_at=ended, detail=detail,
            telemetry=telemetry,
        )

    def _from_log(self, name: str, job: ClusterJob,
                  ) -> tuple[Progress | None, TelemetrySummary | None]:
        """Newest progress and telemetry the run wrapper echoed into the log (best effort:
        a log that cannot be read now leaves the last recorded ones in place)."""
        try:
            lines = self.client.tail_logs(name, job.job_id, follow=False, tail=self.progress_tail)
            return progress_from_lines(lines), telemetry_from_lines(lines)
        except Exception as exc:  # SkyPilot raises many kinds; progress is optional
            log.debug("progress of %s unreadable now: %s", name, exc)
            return None, None

    def _end(self, status: AttemptStatus, *, down: bool) -> AttemptStatus:
        self._final[status.cluster_name] = status
        self._seen_running.discard(status.cluster_name)
        if down and self.down_when_done:
            self.client.down(status.cluster_name)
        return status

    # -- stop, logs, discovery --------------------------------------------------------
    def stop(self, cluster_name: str) -> AttemptStatus:
        final = self._final.get(cluster_name)
        for request in self.client.launch_requests(cluster_name):
            if request.live:
                self.client.cancel_request(request.request_id)
        self.client.down(cluster_name)
        if self.client.status(cluster_name) is not None:  # verified gone, or not stopped
            raise RuntimeError(f"{cluster_name}: the cluster is still there after `down`")
        if final is not None:
            return final
        status = AttemptStatus(
            cluster_name, AttemptState.CANCELLED, ended_at=datetime.now(UTC), detail="stopped"
        )
        self._final[cluster_name] = status
        self._seen_running.discard(cluster_name)
        return status

    def logs(self, cluster_name: str, follow: bool = False) -> Iterator[str]:
        if self.client.status(cluster_name) is None:
            return
        jobs = self.client.queue(cluster_name)
        job_id = jobs[-1].job_id if jobs else None
        yield from self.client.tail_logs(cluster_name, job_id, follow=follow)

    def list_running(self) -> list[str]:
        names = [r.name for r in self.client.list_clusters(CLUSTER_PREFIX)]
        return [n for n in names if not self.poll(n).state.is_terminal]

    def adopt(self, cluster_name: str) -> AttemptStatus:
        return self.poll(cluster_name)

    def close(self, stop: bool = True) -> str | None:
        """Stop (or, ``stop=False``, report) what this executor's SDK calls started: a
        local SkyPilot API server. What was done, for the log."""
        close = getattr(self.client, "close", None)
        return close(stop) if close is not None else None

