"""``submit --executor skypilot --dry-run``: the SkyPilot task the first attempt would launch.

Built exactly as the executor builds it (AttemptSpec -> plan_task -> the real ``sky.Task``,
which SkyPilot validates against its catalog) and printed as SkyPilot's own task YAML,
the form ``sky launch --dryrun`` reads. Where an API server answers with a cloud enabled,
SkyPilot's own optimizer is asked for the task (``sky.optimize``, the step ``sky launch``
takes first) and its choice must be the placement gpuopt pinned. Nothing is stored and
nothing is launched.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gpuopt.core.errors import UserError
from gpuopt.jobs.executors.base import cluster_name_for
from gpuopt.jobs.executors.sky_task import SkyTaskPlan
from gpuopt.jobs.spec import JobSpec
from gpuopt.providers.offer import Offer


@dataclass(frozen=True, slots=True)
class Preview:
    task: Any  # the sky.Task
    plan: SkyTaskPlan
    text: str  # a header line and SkyPilot's YAML of the task
    skipped: str | None = None  # why SkyPilot could not check the task (offline)


def first_attempt_task(job_id: str, job_file: Path, text: str, spec: JobSpec,
                       offer: Offer, now: datetime, nodes: int = 1) -> Preview:
    from gpuopt.jobs.executors.sky_task import build_sky_task, plan_task
    from gpuopt.orchestrator.reconcile.attempts import attempt_spec
    from gpuopt.orchestrator.store.jobs_tables import AttemptRow, JobRow

    job = JobRow(id=job_id, name=spec.name or job_file.stem, spec_yaml=text,
                 spec_path=str(job_file.resolve()), submitted_at=now, plan_json="{}",
                 executor="skypilot", updated_at=now)
    attempt = AttemptRow(
        job_id=job_id, number=1, cluster_name=cluster_name_for(job_id, 1), cloud=offer.cloud,
        region=offer.region, zone=offer.zone, instance_type=offer.instance_type,
        gpu=offer.gpu, gpu_count=offer.gpu_count, num_nodes=nodes, market=offer.market.value,
        price_per_hour_micros=0, created_at=now, started_at=now)
    plan = plan_task(attempt_spec(job, spec, attempt))
    where = "/".join(p for p in (offer.cloud, offer.zone or offer.region,
                                 offer.instance_type) if p)
    if nodes > 1:
        where = f"{nodes} x {where}"
    from gpuopt.jobs.executors import sky_sdk

    skipped = None
    try:
        task = build_sky_task(plan)
        task_yaml = sky_sdk.task_yaml(task)  # SkyPilot reads its catalog for this
    except ValueError as err:  # SkyPilot's own validation against its catalog
        raise UserError(f"SkyPilot refuses the planned placement {where}: {err}",
                        exit_code=2) from None
    except Exception as err:
        if not sky_sdk.is_network_error(err):
            raise UserError(f"SkyPilot could not build the task for {where} "
                            f"({type(err).__name__}: {err})", exit_code=2) from None
        # No catalog cached and none downloadable (offline): the task as SkyPilot writes
        # it, its resources as gpuopt pins them (SkyPilot's own keys).
        task = build_sky_task(plan, pinned=False)
        task_yaml = sky_sdk.task_yaml(task, resources=pinned_resources(plan))
        skipped = (f"SkyPilot's catalog is not cached here and cannot be downloaded "
                   f"({type(err).__name__}), so the resources are shown as gpuopt pins "
                   "them; `sky show-gpus` fetches the catalog when online")
    header = (f"# SkyPilot task of attempt 1 on {where}, cluster {cluster_name_for(job_id, 1)}"
              f" (gpuopt chose it; `sky launch` would take this file)\n")
    return Preview(task, plan, header + task_yaml, skipped)


def pinned_resources(plan: SkyTaskPlan) -> dict[str, Any]:
    """The task's ``resources`` section, in SkyPilot's YAML keys, as gpuopt pins them."""
    out: dict[str, Any] = {"infra": plan.infra}
    if plan.instance_type:
        out["instance_type"] = plan.instance_type
    if plan.accelerators:
        out["accelerators"] = dict(plan.accelerators)
    out["use_spot"] = plan.use_spot
    return out


def _placement(cloud: str, region: str | None, zone: str | None,
               instance_type: str | None, use_spot: bool) -> str:
    where = "/".join(p for p in (cloud, region, zone) if p)
    return f"{where} {instance_type or '?'} {'spot' if use_spot else 'on-demand'}"


def optimizer_check(preview: Preview) -> str:
    """SkyPilot's optimizer, on the API server, places the task gpuopt pinned (else
    UserError, exit 2: the launch would not go where gpuopt planned). Every field of the
    placement is pinned, so the optimizer's choice is that placement or nothing."""
    from gpuopt.jobs.executors import sky_sdk

    plan = preview.plan
    pinned = _placement(plan.cloud, plan.region, plan.zone, plan.instance_type, plan.use_spot)
    try:
        sky_sdk.optimize(preview.task)
    except Exception as err:  # ResourcesUnavailableError, NoCloudAccessError, ...
        raise UserError(f"SkyPilot's optimizer cannot place the task gpuopt pinned "
                        f"({pinned}): {sky_sdk.why_unusable(err)}", exit_code=2) from None
    return f"SkyPilot's optimizer picks the placement gpuopt pinned:\n  {pinned}"
