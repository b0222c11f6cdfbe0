"""From an AttemptSpec to a SkyPilot task: a pure plan, then the real ``sky.Task``.

:func:`plan_task` is pure (testable without SkyPilot); :func:`build_sky_task` turns the
plan into ``sky.Task`` + ``sky.Resources`` + ``sky.Storage`` (importing ``sky`` there).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gpuopt.core.buckets import BUCKET_SCHEMES, bucket_scheme
from gpuopt.core.errors import UserError
from gpuopt.jobs.executors.base import AttemptSpec, Progress
from gpuopt.jobs.executors.contract import SKYPILOT_NODE_ENV, contract_env, parse_progress
from gpuopt.providers.clouds import find_cloud, find_skypilot_cloud, registered_clouds
from gpuopt.providers.offer import GLOBAL_REGION

if TYPE_CHECKING:
    from pathlib import Path

    import sky

DEFAULT_MOUNT_PATH = "/gpuopt/checkpoint"
EXIT_MARKER = "[gpuopt] exit code"
_EXIT_RE = re.compile(re.escape(EXIT_MARKER) + r" (-?\d+)\s*$")
PROGRESS_MARKER = "[gpuopt] progress"
# How often the run wrapper copies a changed progress file into the job's log: the
# control node reads progress from the log's tail (it cannot see the node's files, and a
# preempted node is gone), so this bounds how stale the last known progress can be.
PROGRESS_ECHO_S = 30.0
# The telemetry summary (a few KiB at most) is echoed every this many progress echoes
# (5 min by default) and at the end: what a preempted node measured is that old at worst.
TELEMETRY_ECHO_EVERY = 10

# gpuopt's canonical GPU names (providers.hardware) -> SkyPilot accelerator names, where
# they differ; a cloud whose SkyPilot catalog spells one differently says so in the
# cloud registry (``skypilot_gpu_names``).
SKY_ACCELERATOR_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "A100-40GB": "A100",
        "A100-80GB-PCIe": "A100-80GB",
        "H100-PCIe": "H100",
    }
)


def sky_accelerator(gpu: str, cloud: str | None = None) -> str:
    """SkyPilot's name of ``gpu`` (on ``cloud``, when its catalog names it its own way)."""
    entry = find_cloud(cloud) if cloud else None
    if entry is not None and gpu in entry.skypilot_gpu_names:
        return entry.skypilot_gpu_names[gpu]
    return SKY_ACCELERATOR_NAMES.get(gpu, gpu)


@dataclass(frozen=True, slots=True)
class CheckpointMount:
    path: str  # where the bucket is mounted on the node
    source: str  # the bucket's URL (SkyPilot mounts whole buckets only)
    mode: str  # MOUNT_CACHED or MOUNT
    subdir: str = ""  # the checkpoint's prefix inside the bucket

    @property
    def dir(self) -> str:
        """GPUOPT_CHECKPOINT_DIR: the checkpoint's directory under the mount."""
        return f"{self.path}/{self.subdir}" if self.subdir else self.path


def split_bucket(url: str) -> tuple[str, str]:
    """``s3://bucket/a/b`` -> (``s3://bucket``, ``a/b``). SkyPilot mounts (MOUNT,
    MOUNT_CACHED) a bucket's root only (``sky/data/storage.py`` refuses a prefix with
    StorageModeError); an https:// (Azure blob) URL is mounted as written."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme == "https":
        return url, ""
    bucket, _, prefix = rest.partition("/")
    return f"{scheme}://{bucket}", prefix.strip("/")


@dataclass(frozen=True, slots=True)
class SkyTaskPlan:
    name: str
    run: str
    setup: str | None
    envs: Mapping[str, str]
    workdir: str | None
    file_mounts: Mapping[str, str]
    storage_mounts: Mapping[str, Mapping[str, Any]]
    checkpoint: CheckpointMount | None
    cloud: str
    region: str | None
    zone: str | None
    instance_type: str | None
    accelerators: Mapping[str, int] | None
    use_spot: bool
    # SkyPilot task secrets (redacted by SkyPilot; not in the plan's repr)
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    num_nodes: int = 1  # SkyPilot's num_nodes: the run command runs on every node

    @property
    def infra(self) -> str:
        """SkyPilot's ``infra`` string: ``cloud[/region[/zone]]``."""
        parts = [self.cloud]
        if self.region:
            parts.append(self.region)
            if self.zone:
                parts.append(self.zone)
        return "/".join(parts)


# The checkpoint's directory under the bucket mount exists before the program starts (a
# fresh prefix in a bucket has no directory yet).
MAKE_CHECKPOINT_DIR = ('[ -n "$GPUOPT_CHECKPOINT_DIR" ] && '
                       'mkdir -p "$GPUOPT_CHECKPOINT_DIR" 2>/dev/null\n')


def wrap_run(run: str, progress_echo_s: float = PROGRESS_ECHO_S,
             telemetry_interval_s: float | None = None, telemetry_file: str = "") -> str:
    """Runs the user's command; prints its exit code as the last log line (SkyPilot's job
    table does not keep it) and, every ``progress_echo_s`` while it runs and once at the
    end, the progress file's content when it changed -- both read back from the log.

    With ``telemetry_interval_s`` (and nvidia-smi and python3 on the node), the GPU
    sampler (jobs/telemetry) runs beside the command, writing its summary to
    ``telemetry_file``; the summary is echoed as a ``[gpuopt] telemetry {...}`` line
    every TELEMETRY_ECHO_EVERY progress echoes and once at the end, after the sampler
    was stopped."""
    report = (
        "gpuopt_report() { "
        'p=$({ tr -d "\\n" < "$GPUOPT_PROGRESS_FILE"; } 2>/dev/null) || return 0; '
        'if [ -n "$p" ] && [ "$p" != "$gpuopt_last" ]; then '
        f'echo "{PROGRESS_MARKER} $p"; gpuopt_last=$p; fi; }}'
    )
    if not telemetry_interval_s or not telemetry_file:
        return (
            f"{report}\n{MAKE_CHECKPOINT_DIR}"
            f"(while sleep {progress_echo_s:g}; do gpuopt_report; done) &\n"
            "gpuopt_reporter=$!\n"
            f"bash -c {shlex.quote(run)}\n"
            "rc=$?\n"
            "kill $gpuopt_reporter 2>/dev/null; wait $gpuopt_reporter 2>/dev/null\n"
            "gpuopt_report\n"
            f'echo "{EXIT_MARKER} $rc"\n'
            "exit $rc\n"
        )
    from gpuopt.jobs.telemetry.script import node_script
    from gpuopt.jobs.telemetry.summary import TELEMETRY_MARKER

    tel = shlex.quote(telemetry_file)
    script = shlex.quote(telemetry_file + ".py")
    tel_report = (
        "gpuopt_tel_report() { "
        f't=$({{ tr -d "\\n" < {tel}; }} 2>/dev/null) || return 0; '
        'if [ -n "$t" ] && [ "$t" != "$gpuopt_tel_last" ]; then '
        f'echo "{TELEMETRY_MARKER} $t"; gpuopt_tel_last=$t; fi; }}'
    )
    return (
        f"{report}\n{tel_report}\n{MAKE_CHECKPOINT_DIR}"
        f"cat > {script} <<'GPUOPT_TELEMETRY_EOF'\n{node_script()}GPUOPT_TELEMETRY_EOF\n"
        "gpuopt_sampler=\n"
        "if command -v nvidia-smi >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then\n"
        f"  python3 {script} {tel} {telemetry_interval_s:g} \"$GPUOPT_PROGRESS_FILE\" &\n"
        "  gpuopt_sampler=$!\n"
        "fi\n"
        f"(n=0; while sleep {progress_echo_s:g}; do gpuopt_report; n=$((n + 1)); "
        f"if [ $((n % {TELEMETRY_ECHO_EVERY})) -eq 0 ]; then gpuopt_tel_report; fi; done) &\n"
        "gpuopt_reporter=$!\n"
        f"bash -c {shlex.quote(run)}\n"
        "rc=$?\n"
        "kill $gpuopt_reporter 2>/dev/null; wait $gpuopt_reporter 2>/dev/null\n"
        # the sampler writes its last summary on SIGTERM; 2 s at most, then it is killed
        'if [ -n "$gpuopt_sampler" ]; then kill -TERM $gpuopt_sampler 2>/dev/null; '
        "for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 $gpuopt_sampler 2>/dev/null || break; "
        "sleep 0.2; done; kill -KILL $gpuopt_sampler 2>/dev/null; "
        "wait $gpuopt_sampler 2>/dev/null; fi\n"
        "gpuopt_report\n"
        "gpuopt_tel_report\n"
        f'echo "{EXIT_MARKER} $rc"\n'
        "exit $rc\n"
    )


def exit_code_from_lines(lines: tuple[str, ...] | list[str]) -> int | None:
    for line in reversed(lines):
        match = _EXIT_RE.search(line)
        if match:
            return int(match.group(1))
    return None


def progress_from_lines(lines: Iterable[str]) -> Progress | None:
    """The newest well-formed progress the run wrapper echoed into these log lines."""
    found: Progress | None = None
    for line in lines:
        if line.startswith(PROGRESS_MARKER):
            found = parse_progress(line[len(PROGRESS_MARKER):].strip()) or found
    return found


def is_wrapper_line(line: str) -> bool:
    from gpuopt.jobs.telemetry.summary import TELEMETRY_MARKER

    return line.startswith((EXIT_MARKER, PROGRESS_MARKER, TELEMETRY_MARKER))


def unmountable_checkpoint(checkpoint_dir: str) -> str | None:
    """Why SkyPilot cannot mount this bucket checkpoint location; None if it can (or if
    it is a path on the node). Checked at submit and again when the task is built."""
    scheme = bucket_scheme(checkpoint_dir)
    if scheme is None or scheme.skypilot_mounts:
        return None
    mountable = ", ".join(s.prefix for s in BUCKET_SCHEMES if s.skypilot_mounts)
    return (f"SkyPilot cannot mount {scheme.prefix} URLs ({scheme.store}); write it with "
            f"one of {mountable} (an Azure container is "
            "https://<account>.blob.core.windows.net/<container>)")


def plan_task(
    spec: AttemptSpec,
    *,
    mount_path: str = DEFAULT_MOUNT_PATH,
    mount_mode: str = "MOUNT_CACHED",
    progress_echo_s: float = PROGRESS_ECHO_S,
    telemetry_interval_s: float | None = None,
) -> SkyTaskPlan:
    placement = spec.placement
    cloud = find_cloud(placement.cloud)
    if cloud is None or not cloud.skypilot_name:
        known = ", ".join(c.name for c in registered_clouds() if c.skypilot_name)
        raise UserError(
            f"the SkyPilot executor needs a cloud placement ({known}), "
            f"got {placement.cloud!r}"
        )
    if mount_mode not in ("MOUNT_CACHED", "MOUNT"):
        raise ValueError(f"checkpoint mount mode must be MOUNT_CACHED or MOUNT, got {mount_mode}")
    checkpoint: CheckpointMount | None = None
    if mount_path in spec.storage_mounts or mount_path in spec.file_mounts:
        raise UserError(f"file_mounts: {mount_path} is where gpuopt mounts the checkpoint "
                        "bucket; mount your data somewhere else")
    problem = unmountable_checkpoint(spec.checkpoint_dir)
    if problem is not None:
        raise UserError(f"checkpoint.dir {spec.checkpoint_dir}: {problem}", exit_code=2)
    if bucket_scheme(spec.checkpoint_dir) is not None:
        bucket, prefix = split_bucket(spec.checkpoint_dir)
        checkpoint = CheckpointMount(path=mount_path, source=bucket, mode=mount_mode,
                                     subdir=prefix)
        ckpt_path = checkpoint.dir
    else:
        # A path on the node itself: fine for tests, lost with the node on preemption.
        ckpt_path = spec.checkpoint_dir
    # On the node's own disk (an existing directory, no bucket traffic per step): the run
    # wrapper copies it into the log, which is where the control node reads it.
    progress = f"/tmp/gpuopt-progress-{spec.cluster_name}.json"
    accelerators = (
        {sky_accelerator(placement.gpu, placement.cloud): placement.gpu_count}
        if placement.gpu and placement.gpu_count > 0
        else None
    )
    # GCP: 'n1-standard-8+1xT4' (a VM with attached GPUs) is the VM plus accelerators
    instance_type = (cloud.skypilot_vm_type(placement.instance_type)
                     if placement.instance_type else placement.instance_type)
    return SkyTaskPlan(
        name=spec.name or spec.job_id,
        # the contract's node variables from SkyPilot's, then the user's command
        run=SKYPILOT_NODE_ENV + wrap_run(spec.run, progress_echo_s, telemetry_interval_s,
                                         f"/tmp/gpuopt-telemetry-{spec.cluster_name}.json"),
        setup=spec.setup,
        envs=MappingProxyType(contract_env(spec, checkpoint_dir=ckpt_path, progress_file=progress)),
        workdir=spec.workdir,
        file_mounts=MappingProxyType(dict(spec.file_mounts)),
        storage_mounts=MappingProxyType({k: dict(v) for k, v in spec.storage_mounts.items()}),
        checkpoint=checkpoint,
        cloud=cloud.skypilot_name,
        region=_pinnable_region(placement.region, cloud.regional_prices),
        zone=(_pinnable_zone(placement.region, placement.zone) if cloud.regional_prices
              else _global_cloud_zone(placement.region, placement.zone)),
        instance_type=instance_type,
        accelerators=MappingProxyType(accelerators) if accelerators else None,
        use_spot=placement.use_spot,
        secrets=MappingProxyType(dict(spec.secrets)),
        num_nodes=placement.num_nodes,
    )


def _pinnable_region(region: str | None, regional_prices: bool) -> str | None:
    """The region to pin. A cloud priced once for all its data centres (RunPod) has
    region "global" in a placement the job did not restrict: nothing is pinned and
    SkyPilot picks the data centre and fails over among them. Where the job named
    regions, the planner narrowed the placement to one of the offer's places
    (policies/plan/places.py): SkyPilot's RunPod region (a country, "US") is pinned."""
    if regional_prices:
        return region
    return region if region and region != GLOBAL_REGION else None


def _global_cloud_zone(region: str | None, zone: str | None) -> str | None:
    """A globally priced cloud's zone: RunPod's data centre ("US-GA-1", "EU-CZ-1" in
    region "CZ": it need not start with the region's name), pinned with its region."""
    return zone if zone and region and region != GLOBAL_REGION else None


def _pinnable_zone(region: str | None, zone: str | None) -> str | None:
    """The zone to pin SkyPilot to: a zone name (it starts with its region's name,
    us-east-1a, us-central1-a, AF-CASABLANCA-1-AD-1). An AWS zone *id* (use1-az1, from
    SkyPilot's catalog read without the account's zone mapping) names no zone SkyPilot
    can launch in, so only the region is pinned."""
    if zone and region and zone.lower().startswith(region.lower()):
        return zone
    return None


def pin_zone_id(plan: SkyTaskPlan, zone: str | None, root: Path | None = None
                ) -> SkyTaskPlan:
    """``plan`` pinned to the zone the placement named by zone id (AWS), when SkyPilot's
    zone mapping (``aws/az_mappings-*.csv``, written with the account's credentials)
    names it; else as it is (the region only)."""
    cloud = find_skypilot_cloud(plan.cloud)
    if (cloud is None or not cloud.skypilot_zone_id_mapping or not zone or plan.zone
            or not plan.region):
        return plan
    from gpuopt.jobs.executors.sky_catalog import zone_name

    name = zone_name(cloud.name, zone, root)
    if name is None or not name.startswith(plan.region):
        return plan
    return replace(plan, zone=name)


def build_sky_resources(plan: SkyTaskPlan) -> sky.Resources:
    from gpuopt.jobs.executors import sky_sdk

    return sky_sdk.new_resources(
        infra=plan.infra,
        instance_type=plan.instance_type,
        accelerators=dict(plan.accelerators) if plan.accelerators else None,
        use_spot=plan.use_spot,
    )


def build_sky_task(plan: SkyTaskPlan, pinned: bool = True) -> sky.Task:
    """The real ``sky.Task``; validates the pinned resources against SkyPilot's catalog
    (``pinned=False``: no resources, which needs no catalog)."""
    from gpuopt.jobs.executors import sky_sdk

    # SkyPilot's own parser and schema for the YAML form of a storage mount.
    mounts = {path: sky_sdk.storage_from_yaml(dict(cfg))
              for path, cfg in plan.storage_mounts.items()}
    if plan.checkpoint is not None:
        mounts[plan.checkpoint.path] = sky_sdk.new_storage(
            source=plan.checkpoint.source, mode=plan.checkpoint.mode, persistent=True)
    return sky_sdk.new_task(
        name=plan.name,
        setup=plan.setup,
        run=plan.run or None,  # none: a probe's provisioning (the job runs by `sky exec`)
        envs=dict(plan.envs),
        secrets=dict(plan.secrets) or None,
        workdir=plan.workdir,
        file_mounts=dict(plan.file_mounts) or None,
        num_nodes=plan.num_nodes,
        storage_mounts=mounts,
        resources=build_sky_resources(plan) if pinned else sky_sdk.any_resources(),
    )
