"""``submit --executor skypilot --dry-run``: the SkyPilot task the first attempt would launch.

Built exactly as the executor builds it (AttemptSpec -> plan_task -> the real ``sky.Task``,
which SkyPilot validates against its catalog) and printed as SkyPilot's own task YAML,
the form ``sky launch --dryrun`` reads. Nothing is stored and nothing is launched.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from gpuopt.core.errors import UserError
from gpuopt.jobs.executors.base import cluster_name_for
from gpuopt.jobs.spec import JobSpec
from gpuopt.providers.offer import Offer


def first_attempt_task_yaml(job_id: str, job_file: Path, text: str, spec: JobSpec,
                            offer: Offer, now: datetime, nodes: int = 1) -> str:
    from gpuopt.jobs.executors.sky_task import build_sky_task, plan_task
    from gpuopt.orchestrator.attempts import attempt_spec
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
    try:
        task = build_sky_task(plan)
    except ValueError as err:  # SkyPilot's own validation against its catalog
        raise UserError(f"SkyPilot refuses the planned placement {where}: {err}",
                        exit_code=2) from None
    except Exception as err:  # no catalog cached and none downloadable, ...
        raise UserError(
            f"SkyPilot could not build the task for {where} ({type(err).__name__}: {err}): "
            f"`sky show-gpus` lets SkyPilot fetch its catalog", exit_code=2) from None
    from sky.utils import yaml_utils

    header = (f"# SkyPilot task of attempt 1 on {where}, cluster {cluster_name_for(job_id, 1)}"
              f" (gpuopt chose it; `sky launch` would take this file)\n")
    return header + yaml_utils.dump_yaml_str(task.to_yaml_config())
