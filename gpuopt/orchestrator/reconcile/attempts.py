"""From a stored job to an executor's AttemptSpec; the executors by kind; wasted time.

Local executor: attempts live under ``data_dir()/attempts``; a job's checkpoint
directory is ``checkpoint.dir`` (relative paths resolve against the job file's folder)
plus the job id, so two submissions of the same file never resume each other's
checkpoints. Cloud executors get the bucket URL as written (the bucket is the user's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.core.buckets import is_bucket_url
from gpuopt.jobs.executors.base import AttemptSpec, Executor, Placement
from gpuopt.jobs.spec import JobSpec
from gpuopt.jobs.states import EndReason
from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

if TYPE_CHECKING:
    from gpuopt.jobs.executors.fault_injection import PreemptionSchedule
    from gpuopt.jobs.executors.host import HostIdentity

ExecutorFor = Callable[[str], Executor]


def attempts_dir() -> Path:
    from gpuopt.orchestrator.paths import data_dir

    return data_dir() / "attempts"


def drills_dir() -> Path:
    """Where ``submit --preempt-after`` leaves each job's preemption drill (local executor)."""
    from gpuopt.orchestrator.paths import data_dir

    return data_dir() / "drills"


@dataclass
class ExecutorCache:
    """``executor_for(kind)``: one executor per kind for the life of this process (the
    local executor's watcher threads live in its instance). The local executor carries
    out the drills ``submit --preempt-after`` wrote unless a schedule is given."""

    preemption: PreemptionSchedule | None = None
    base_dir: Path | None = None
    telemetry_interval: float | None = 15.0  # configuration [telemetry] interval
    host: HostIdentity | None = None  # the local executor's host (default: this one)
    _made: dict[str, Executor] = field(default_factory=dict)

    def __call__(self, kind: str) -> Executor:
        if kind not in self._made:
            self._made[kind] = self._make(kind)
        return self._made[kind]

    def close(self, stop: bool) -> list[str]:
        """Close the executors made: stop (``stop``) or report a SkyPilot API server their
        calls started; what each one did, for the log."""
        done = []
        for executor in self._made.values():
            close = getattr(executor, "close", None)
            said = close(stop) if close is not None else None
            if said:
                done.append(said)
        return done

    def _make(self, kind: str) -> Executor:
        if kind == "local":
            from gpuopt.jobs.executors.fault_injection import PreemptionDrills
            from gpuopt.jobs.executors.local import LocalExecutor

            schedule = self.preemption or PreemptionDrills(drills_dir())
            return LocalExecutor(self.base_dir or attempts_dir(), preemption=schedule,
                                 telemetry_interval=self.telemetry_interval, host=self.host)
        if kind == "skypilot":
            from gpuopt.providers.extras import require_extra

            require_extra("skypilot", "the SkyPilot executor")
            from gpuopt.jobs.executors import sky_client
            from gpuopt.jobs.executors.skypilot import SkyPilotExecutor

            return SkyPilotExecutor(sky_client.default_client(),
                                    telemetry_interval=self.telemetry_interval)
        from gpuopt.core.errors import UserError

        raise UserError(f"unknown executor {kind!r}: use local or skypilot", exit_code=2)


def load_stored_spec(job: JobRow) -> JobSpec:
    """The spec stored at submit (``spec_json``, jobs.resolved): no file is read. A row
    stored before that column existed is parsed from its YAML, as it was then (which
    reads a ``model.config`` file from the submitter's disk)."""
    if job.spec_json is not None:
        from gpuopt.jobs.resolved import spec_from_json

        return spec_from_json(job.spec_json)
    from gpuopt.jobs.loader import parse_job_spec

    base = Path(job.spec_path).parent if job.spec_path else None
    return parse_job_spec(job.spec_yaml, job.spec_path or f"<job {job.id}>", base_dir=base,
                          stored=True)


def _base_dir(job: JobRow) -> Path:
    return Path(job.spec_path).parent if job.spec_path else Path.cwd()


def checkpoint_dir(job: JobRow, spec: JobSpec) -> str:
    if spec.checkpoint is not None and is_bucket_url(spec.checkpoint.dir):
        return spec.checkpoint.dir
    if spec.checkpoint is None:
        from gpuopt.orchestrator.paths import data_dir

        return str(data_dir() / "checkpoints" / job.id)
    path = Path(spec.checkpoint.dir).expanduser()
    if not path.is_absolute():
        path = _base_dir(job) / path
    return str(path.resolve() / job.id)


def placement_of(a: AttemptRow) -> Placement:
    return Placement(
        cloud=a.cloud, region=a.region or None, zone=a.zone, instance_type=a.instance_type
        or None, gpu=a.gpu or None, gpu_count=a.gpu_count, use_spot=a.market == "spot",
        num_nodes=a.num_nodes,
    )


def attempt_spec(job: JobRow, spec: JobSpec, a: AttemptRow,
                 secrets: Mapping[str, str] | None = None) -> AttemptSpec:
    """``secrets``: the job's secret values, opened from the store by the caller
    (orchestrator.submit.job_secrets.open_secrets); None: left out (a preview)."""
    workdir = None
    if spec.workdir:
        wd = Path(spec.workdir).expanduser()
        workdir = str(wd if wd.is_absolute() else (_base_dir(job) / wd).resolve())
    mounts = {k: v for k, v in spec.file_mounts.items() if isinstance(v, str)}
    storage = {k: v.sky_config() for k, v in spec.file_mounts.items() if not isinstance(v, str)}
    return AttemptSpec(
        job_id=job.id, attempt=a.number, run=spec.run or "", name=spec.name,
        setup=spec.setup, envs={k: str(v) for k, v in spec.envs.items()},
        secrets=dict(secrets or {}), workdir=workdir,
        file_mounts=mounts, storage_mounts=storage,
        checkpoint_dir=checkpoint_dir(job, spec), resume=a.number > 1,
        placement=placement_of(a),
    )


def _last_checkpoint_write(ckpt: str, after: datetime, before: datetime) -> datetime | None:
    """Newest modification time of a file in a local checkpoint directory in [after, before]."""
    if is_bucket_url(ckpt):
        return None
    newest: datetime | None = None
    try:
        entries = list(Path(ckpt).rglob("*"))
    except OSError:
        return None
    for p in entries:
        try:
            if not p.is_file() or p.name.startswith("."):
                continue
            at = datetime.fromtimestamp(p.stat().st_mtime, UTC)
        except OSError:
            continue
        if after <= at <= before and (newest is None or at > newest):
            newest = at
    return newest


def wasted_seconds(
    a: AttemptRow, ended_at: datetime, reason: EndReason, ckpt: str | None,
    interval: timedelta | None,
) -> float:
    """Held seconds that did no lasting work (an estimate, from what gpuopt can see).

    - restart overhead: for attempts after the first, launch until the first progress
      report gpuopt observed (the whole attempt when none came);
    - work lost, for attempts that were preempted or failed: from the later of the first
      progress (the attempt's start when none was seen) and the last checkpoint write
      (the newest file mtime in a local checkpoint directory) to the end. For a bucket,
      whose writes gpuopt cannot see, the loss is bounded by one checkpoint interval (the
      whole productive time without checkpoints).
    Progress times are when a reconcile step saw them, so the overhead is an upper bound
    by at most one reconcile interval.
    """
    held = max(0.0, (ended_at - a.started_at).total_seconds())
    productive_from = min(a.first_progress_at or ended_at, ended_at)
    overhead = (productive_from - a.started_at).total_seconds() if a.number > 1 else 0.0
    lost = 0.0
    if reason in (EndReason.PREEMPTED, EndReason.FAILED, EndReason.MOVED):
        # Work may have begun before any progress was seen (a short attempt between two
        # watches): without a report, from the start; the last checkpoint bounds the loss.
        work_from = min(a.first_progress_at or a.started_at, ended_at)
        productive = max(0.0, (ended_at - work_from).total_seconds())
        saved = _last_checkpoint_write(ckpt, a.started_at, ended_at) if ckpt else None
        if saved is not None:
            lost = (ended_at - max(saved, work_from)).total_seconds()
        elif ckpt is not None and is_bucket_url(ckpt) and interval is not None:
            lost = min(productive, interval.total_seconds())
        else:
            lost = productive
    # Down to the millisecond: rounding to nearest could exceed the held time
    # (0.578704 s held -> 0.579 s wasted).
    return math.floor(min(held, max(0.0, overhead) + max(0.0, lost)) * 1000) / 1000
