"""The one submit path: read, check, plan, store (and audit) a job.

``gpuopt submit`` (cli/submit_cmd.py), the HTTP API (orchestrator/api/) and the
simulator's daemon engine (simulate/daemon_engine.py) all store jobs through
:func:`store_job`, so a new field of a job reaches every path at once:

1. :func:`read_job` -- the job file's text validated (errors name file, line, field;
   exit 2), a ``run`` command required, every named secret's value found in the
   submitter's environment (a mapping: the CLI's own, or what the API was sent);
2. :func:`check_executor` -- what the chosen executor cannot run, refused (exit 2);
   returns the clouds the plan must stay within;
3. :func:`plan_job` -- the plan on the latest prices (placement_inputs.plan_spec);
   :func:`require_fit` refuses a job that fits nowhere (exit 3);
4. :func:`store_job` -- the row (text as read, spec resolved, budget, plan), its secret
   values sealed and its audit record written, in one transaction; a preemption drill's
   file is written before that transaction commits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.core.errors import UserError
from gpuopt.orchestrator.submit.checks import JobFile, SubmitRefused

if TYPE_CHECKING:
    from gpuopt.jobs.spec import JobSpec
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.reconcile.placement_inputs import PlannedJob
    from gpuopt.orchestrator.store import Store

__all__ = [
    "JobFile",
    "NoFit",
    "Submission",
    "SubmitRefused",
    "check_executor",
    "plan_job",
    "read_job",
    "require_fit",
    "store_job",
]


class NoFit(UserError):
    """The job fits no offer: refused, nothing stored."""

    exit_code = 3


@dataclass(frozen=True, slots=True)
class Submission:
    """A job ready to store: its file as read, its validated spec, its secrets' values."""

    job: JobFile
    spec: JobSpec
    secrets: Mapping[str, str] = field(default_factory=dict)
    # Where the job's relative paths resolve (jobs.spec_path); None: the job file itself.
    spec_path: Path | None = None
    # Who submitted it through the API (the audit trail's "who"); None: a local user.
    submitted_by: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name or self.job.path.stem

    @property
    def actor(self) -> str:
        """The audit trail's "who": the API user, else ``local:<os user>``."""
        return self.submitted_by or local_actor()


def local_actor() -> str:
    """``local:<os user>``: who runs the CLI on this machine."""
    import getpass

    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no name for this uid (a container)
        import os

        return f"local:uid{os.getuid()}"


def read_job(job: JobFile, now: datetime, environ: Mapping[str, str], *,
             base_dir: Path | None = None, uploaded_workdir: Path | None = None
             ) -> Submission:
    """Validate ``job``'s text (file:line errors, exit 2) and collect its secrets'
    values from ``environ``. ``base_dir``: where relative paths resolve (default: the
    file's directory); ``uploaded_workdir``: the directory a remote submitter's
    ``workdir`` was unpacked to (the API), used instead of the path written."""
    from gpuopt.jobs.loader import parse_job_spec
    from gpuopt.orchestrator.submit.job_secrets import values_from_environment

    spec = parse_job_spec(job.text, str(job.path),
                          base_dir=base_dir or job.path.resolve().parent, purpose="plan",
                          now=now, uploaded_workdir=uploaded_workdir)
    if not spec.run:
        raise UserError(f"{job.path}: the job has no `run` command: nothing to execute",
                        exit_code=2)
    secrets = values_from_environment(spec.secrets, environ, str(job.path))
    return Submission(job, spec, secrets)


def check_executor(sub: Submission, kind: str, drill: tuple[float, ...] = (), *,
                   dry_run: bool = False) -> frozenset[str] | None:
    """Refuse (exit 2) what executor ``kind`` cannot run; the clouds it can launch on.
    ``dry_run``: nothing will be launched, so SkyPilot is not required to answer."""
    from gpuopt.orchestrator.submit.checks import check_runnable

    if kind not in ("local", "skypilot"):
        raise SubmitRefused(f"--executor {kind!r}: use local or skypilot")
    return check_runnable(sub.job, sub.spec, kind, preempt_after=drill, dry_run=dry_run)


def plan_job(sub: Submission, settings: Settings, store: Store | None, now: datetime,
             launchable: frozenset[str] | None = None, top: int = 5, *,
             hint_nodes: bool = False, executor: str = "local") -> PlannedJob:
    """The plan on the prices of ``now``, within the executor's clouds (``launchable``,
    narrowed to ``[clouds] enabled`` when that is set) and the regions it can launch in
    (SkyPilot: the account's AWS regions). ``hint_nodes``: also say whether more nodes
    would pay (plans the job twice)."""
    from gpuopt.orchestrator.reconcile.placement_inputs import executor_regions, plan_spec

    regions = executor_regions(executor)
    if launchable is None:
        return plan_spec(sub.spec, settings, store, now, top=top, hint_nodes=hint_nodes,
                         regions_by_cloud=regions)
    enabled = settings.clouds.enabled
    clouds = launchable & frozenset(enabled) if enabled else launchable
    return plan_spec(sub.spec, settings, store, now, top=top, hint_nodes=hint_nodes,
                     clouds=clouds, regions_by_cloud=regions)


def require_fit(sub: Submission, planned: PlannedJob) -> None:
    """Refuse (exit 3) a job that fits nowhere, saying why."""
    if planned.plan.best is not None:
        return
    raise NoFit(f"{sub.job.path}: refused, it fits nowhere: {fits_nowhere_reason(planned)}")


def fits_nowhere_reason(planned: PlannedJob) -> str:
    """What the job would need (the least budget, the memory), then the stated knobs that
    would make it fit (fit_advice), else where to look."""
    plan = planned.plan
    advice = "; ".join(planned.advice)
    if plan.nearest_miss:
        return plan.nearest_miss + (f"; {advice}" if advice else "")
    if advice:
        return advice
    if plan.excluded:
        return (f"none of {len(plan.excluded)} GPU model(s) is within the limits "
                "(each one's reason is under 'Left out')")
    return "no offer matches the job's resources"


def store_job(store: Store, sub: Submission, planned: PlannedJob, kind: str,
              now: datetime, *, job_id: str | None = None, drill: tuple[float, ...] = (),
              runs_here: bool = False) -> str:
    """Store the job (queued) and return its id: the text read at submit and the spec
    resolved (jobs.resolved, what the daemon reads); its secrets' values sealed for the
    nodes that may run it and its audit record, in the same transaction
    (orchestrator/submit/job_secrets.py). ``runs_here``: this process runs the job (--wait),
    so its own key is published first; so it is when no node has published one yet
    (the daemon, started later on this data directory, shares it). ``drill``: a
    preemption drill's times, saved before the row commits so no launch can miss it."""
    from gpuopt.jobs.executors.fault_injection import PreemptionDrills
    from gpuopt.orchestrator.reconcile.attempts import drills_dir
    from gpuopt.orchestrator.store.jobs_repo import new_job_id

    job_id = job_id or new_job_id(sub.name)
    drills = PreemptionDrills(drills_dir())
    if drill:
        drills.save(job_id, drill)
    try:
        _insert(store, sub, planned, kind, now, job_id, runs_here)
    except BaseException:
        drills.discard(job_id)
        raise
    return job_id


def _insert(store: Store, sub: Submission, planned: PlannedJob, kind: str, now: datetime,
            job_id: str, runs_here: bool) -> None:
    from gpuopt.core.money import to_micros
    from gpuopt.jobs.executors.crash_points import crash_point
    from gpuopt.jobs.resolved import resolved_json
    from gpuopt.jobs.states import JobStatus
    from gpuopt.orchestrator.store.jobs_repo import insert_job
    from gpuopt.orchestrator.store.jobs_tables import JobRow
    from gpuopt.orchestrator.store.secrets_repo import published_keys
    from gpuopt.orchestrator.store.users_repo import record_audit
    from gpuopt.orchestrator.submit.job_secrets import publish_key, seal_for_job

    spec, best = sub.spec, planned.plan.best
    if best is None:
        raise NoFit(f"{sub.job.path}: refused, it fits nowhere")
    row = JobRow(
        id=job_id, name=sub.name, owner=spec.owner, team=spec.team,
        status=JobStatus.QUEUED, spec_yaml=sub.job.text, spec_json=resolved_json(spec),
        spec_path=str(sub.spec_path or sub.job.path.resolve()), submitted_at=now,
        deadline_at=spec.deadline_at(now),
        budget_micros=to_micros(spec.budget) if spec.budget is not None else None,
        plan_json=json.dumps({
            "offers_source": planned.offers_source,
            "snapshot_as_of": str(planned.snapshot_as_of) if planned.snapshot_as_of else None,
            "candidates": [c.to_json() for c in planned.plan.candidates],
        }),
        executor=kind, updated_at=now, submitted_by=sub.submitted_by,
    )
    if sub.secrets:
        with store.session() as session:
            keys = published_keys(session)
        if runs_here or not keys:
            publish_key(store, now)
    with store.transaction() as session:
        insert_job(session, row, f"queued; plan: {best.reason}")
        record_audit(session, now, sub.actor, "submit", job_id,
                     f"{sub.name}, executor {kind}, plan {best.reason}"[:2000])
        if sub.secrets:
            seal_for_job(session, job_id, sub.secrets)
            crash_point("sealing")
