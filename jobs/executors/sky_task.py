"""From an AttemptSpec to a SkyPilot task: a pure plan, then the real ``sky.Task``.

:func:`plan_task` is pure (testable without SkyPilot); :func:`build_sky_task` turns the
plan into ``sky.Task`` + ``sky.Resources`` + ``sky.Storage`` (importing ``sky`` there).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from jobs.executors.base import AttemptSpec
from jobs.executors.contract import contract_env
from providers.errors import UserError

if TYPE_CHECKING:
    import sky

BUCKET_SCHEMES = ("s3://", "gs://", "r2://", "cos://", "oci://", "https://")
DEFAULT_MOUNT_PATH = "/gpuopt/checkpoint"
EXIT_MARKER = "[gpuopt] exit code"
_EXIT_RE = re.compile(re.escape(EXIT_MARKER) + r" (-?\d+)\s*$")

# gpuopt's canonical GPU names (providers.hardware) -> SkyPilot accelerator names.
SKY_ACCELERATOR_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "T4": "T4",
        "A10G": "A10G",
        "L4": "L4",
        "L40S": "L40S",
        "V100": "V100",
        "A100-40GB": "A100",
        "A100-80GB": "A100-80GB",
        "H100": "H100",
    }
)


def sky_accelerator(gpu: str) -> str:
    return SKY_ACCELERATOR_NAMES.get(gpu, gpu)


@dataclass(frozen=True, slots=True)
class CheckpointMount:
    path: str  # where the program sees it (GPUOPT_CHECKPOINT_DIR)
    source: str  # bucket URL
    mode: str  # MOUNT_CACHED or MOUNT


@dataclass(frozen=True, slots=True)
class SkyTaskPlan:
    name: str
    run: str
    setup: str | None
    envs: Mapping[str, str]
    workdir: str | None
    file_mounts: Mapping[str, str]
    checkpoint: CheckpointMount | None
    cloud: str
    region: str | None
    zone: str | None
    instance_type: str | None
    accelerators: Mapping[str, int] | None
    use_spot: bool

    @property
    def infra(self) -> str:
        """SkyPilot's ``infra`` string: ``cloud[/region[/zone]]``."""
        parts = [self.cloud]
        if self.region:
            parts.append(self.region)
            if self.zone:
                parts.append(self.zone)
        return "/".join(parts)


def wrap_run(run: str) -> str:
    """Runs the user's command and prints its exit code as the last log line, so the
    exit code can be read back from the logs (SkyPilot's job table does not keep it)."""
    return f'bash -c {shlex.quote(run)}\nrc=$?\necho "{EXIT_MARKER} $rc"\nexit $rc\n'


def exit_code_from_lines(lines: tuple[str, ...] | list[str]) -> int | None:
    for line in reversed(lines):
        match = _EXIT_RE.search(line)
        if match:
            return int(match.group(1))
    return None


def plan_task(
    spec: AttemptSpec, *, mount_path: str = DEFAULT_MOUNT_PATH, mount_mode: str = "MOUNT_CACHED"
) -> SkyTaskPlan:
    placement = spec.placement
    if placement.cloud not in ("aws", "gcp", "azure"):
        raise UserError(
            f"the SkyPilot executor needs a cloud placement (aws, gcp, azure), "
            f"got {placement.cloud!r}"
        )
    if mount_mode not in ("MOUNT_CACHED", "MOUNT"):
        raise ValueError(f"checkpoint mount mode must be MOUNT_CACHED or MOUNT, got {mount_mode}")
    checkpoint: CheckpointMount | None = None
    if spec.checkpoint_dir.startswith(BUCKET_SCHEMES):
        checkpoint = CheckpointMount(path=mount_path, source=spec.checkpoint_dir, mode=mount_mode)
        ckpt_path = mount_path
        progress = f"{mount_path}/.gpuopt/progress-{spec.attempt}.json"
    else:
        # A path on the node itself: fine for tests, lost with the node on preemption.
        ckpt_path = spec.checkpoint_dir
        progress = "/tmp/gpuopt-progress.json"
    accelerators = (
        {sky_accelerator(placement.gpu): placement.gpu_count}
        if placement.gpu and placement.gpu_count > 0
        else None
    )
    return SkyTaskPlan(
        name=spec.name or spec.job_id,
        run=wrap_run(spec.run),
        setup=spec.setup,
        envs=MappingProxyType(contract_env(spec, checkpoint_dir=ckpt_path, progress_file=progress)),
        workdir=spec.workdir,
        file_mounts=MappingProxyType(dict(spec.file_mounts)),
        checkpoint=checkpoint,
        cloud=placement.cloud,
        region=placement.region,
        zone=placement.zone,
        instance_type=placement.instance_type,
        accelerators=MappingProxyType(accelerators) if accelerators else None,
        use_spot=placement.use_spot,
    )


def build_sky_resources(plan: SkyTaskPlan) -> sky.Resources:
    import sky

    return sky.Resources(
        infra=plan.infra,
        instance_type=plan.instance_type,
        accelerators=dict(plan.accelerators) if plan.accelerators else None,
        use_spot=plan.use_spot,
    )


def build_sky_task(plan: SkyTaskPlan) -> sky.Task:
    """The real ``sky.Task``; validates the pinned resources against SkyPilot's catalog."""
    import sky

    task = sky.Task(
        name=plan.name,
        setup=plan.setup,
        run=plan.run,
        envs=dict(plan.envs),
        workdir=plan.workdir,
        file_mounts=dict(plan.file_mounts) or None,
    )
    if plan.checkpoint is not None:
        storage = sky.Storage(
            source=plan.checkpoint.source,
            mode=sky.StorageMode[plan.checkpoint.mode],
            persistent=True,
        )
        task.set_storage_mounts({plan.checkpoint.path: storage})
    task.set_resources(build_sky_resources(plan))
    return task
