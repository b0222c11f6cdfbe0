"""What ``gpuopt submit`` refuses before anything is stored: a job the chosen executor
cannot run. Each refusal names the file, line and field, says what to change, exit 2.

- local executor: a bucket as ``checkpoint.dir`` (it needs a directory on this machine),
  ``file_mounts`` (it neither copies nor mounts files);
- SkyPilot executor: the ``skypilot`` extra not installed, ``--preempt-after`` (a drill is
  for the local executor; on a cloud preemptions are real), a ``checkpoint.dir`` that is a
  path (lost with a preempted node) or a bucket scheme SkyPilot does not mount, and no
  cloud SkyPilot may use for the job (SkyPilot is asked once, through its client boundary).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.core.buckets import BUCKET_PREFIXES, BUCKET_SCHEMES
from gpuopt.core.errors import UserError
from gpuopt.jobs.loader import key_line
from gpuopt.jobs.spec import JobSpec

if TYPE_CHECKING:
    from gpuopt.jobs.executors.sky_client import SkyClient

# Checkpoint locations by who can use them (a local path is anything else).
LOCAL_ONLY_HINT = "./checkpoints/<job>"
SKY_BUCKETS = tuple(s.prefix for s in BUCKET_SCHEMES if s.skypilot_mounts)


class SubmitRefused(UserError):
    exit_code = 2


@dataclass(frozen=True, slots=True)
class JobFile:
    path: Path
    text: str

    def where(self, *loc: str) -> str:
        line = key_line(self.text, tuple(loc))
        return f"{self.path}:{line}" if line else str(self.path)


def check_runnable(
    job: JobFile,
    spec: JobSpec,
    executor: str,
    *,
    preempt_after: Sequence[float] = (),
    sky_client: Callable[[], SkyClient] | None = None,
) -> frozenset[str] | None:
    """Raise :class:`SubmitRefused` when ``executor`` cannot run ``spec`` as written.

    Returns the gpuopt clouds the executor can launch on (SkyPilot: those it has
    enabled; the local executor: the clouds gpuopt has adapters for, as a cloud priced
    only from SkyPilot's catalog runs only through SkyPilot), for the plan to stay
    within; None: any."""
    if executor == "skypilot":
        return _check_skypilot(job, spec, preempt_after, sky_client)
    if executor == "local":
        from gpuopt.providers.clouds import adapter_cloud_names

        _check_local(job, spec)
        return frozenset(adapter_cloud_names())
    return None


def _check_local(job: JobFile, spec: JobSpec) -> None:
    ckpt = spec.checkpoint.dir if spec.checkpoint else None
    if ckpt is not None and ckpt.startswith(BUCKET_PREFIXES):
        raise SubmitRefused(
            f"{job.where('checkpoint', 'dir')} checkpoint.dir: {ckpt!r} is a bucket, which the "
            f"local executor cannot use: set checkpoint.dir to a directory on this machine "
            f"(e.g. {LOCAL_ONLY_HINT.replace('<job>', job.path.stem)}), or submit with "
            f"--executor skypilot")
    if spec.file_mounts:
        first, n = next(iter(spec.file_mounts)), len(spec.file_mounts)
        more = f" and {n - 1} more" if n > 1 else ""
        raise SubmitRefused(
            f"{job.where('file_mounts')} file_mounts: the local executor neither copies nor "
            f"mounts files ({first}{more}): remove file_mounts to run locally, or submit "
            f"with --executor skypilot")


def _check_skypilot(job: JobFile, spec: JobSpec, preempt_after: Sequence[float],
                    sky_client: Callable[[], SkyClient] | None) -> frozenset[str]:
    from gpuopt.providers.extras import require_extra

    if preempt_after:
        raise SubmitRefused(
            "--preempt-after: the preemption drill runs on the local executor only (on a "
            "cloud, spot preemptions are real): drop --preempt-after, or use --executor local")
    require_extra("skypilot", "--executor skypilot")
    ckpt = spec.checkpoint.dir if spec.checkpoint else None
    if ckpt is not None and not ckpt.startswith(SKY_BUCKETS):
        from gpuopt.jobs.executors.sky_task import unmountable_checkpoint

        where = job.where("checkpoint", "dir")
        problem = unmountable_checkpoint(ckpt)  # a bucket SkyPilot cannot mount (az://...)
        if problem is not None:
            raise SubmitRefused(f"{where} checkpoint.dir {ckpt}: {problem}")
        raise SubmitRefused(
            f"{where} checkpoint.dir: {ckpt!r} is not a bucket; on SkyPilot a path on the "
            f"node is lost when a spot node is preempted, so nothing could resume from it: "
            f"set checkpoint.dir to a bucket ({', '.join(s + '...' for s in SKY_BUCKETS[:2])}"
            f"), mounted where GPUOPT_CHECKPOINT_DIR says, or use --executor local")
    return _check_enabled_clouds(job, spec, sky_client)


def _check_enabled_clouds(job: JobFile, spec: JobSpec,
                          sky_client: Callable[[], SkyClient] | None) -> frozenset[str]:
    """The registered clouds SkyPilot has enabled; refused when the job may use none."""
    from gpuopt.jobs.executors import sky_client as sky_client_module

    client = (sky_client or sky_client_module.default_client)()
    try:
        enabled = set(client.enabled_clouds())
    except Exception as err:  # SkyPilot raises many kinds (API server down, config)
        raise SubmitRefused(
            f"--executor skypilot: cannot ask SkyPilot which clouds it may use "
            f"({type(err).__name__}: {err}): check `sky api info` and `sky check`, or use "
            f"--executor local") from None
    from gpuopt.providers.clouds import cloud_names, get_cloud

    # SkyPilot answers with its own cloud names; the registry maps gpuopt's onto them.
    wanted = set(spec.resources.clouds or cloud_names())
    on_sky = {c.lower() for c in enabled}
    usable = frozenset(c for c in cloud_names() if get_cloud(c).skypilot_name in on_sky)
    if not usable & wanted:
        allowed = ", ".join(sorted(wanted))
        has = ", ".join(sorted(enabled)) or "none"
        where = job.where("resources", "clouds") if spec.resources.clouds else str(job.path)
        raise SubmitRefused(
            f"{where}: SkyPilot has no cloud enabled that the job may use (job: {allowed}; "
            f"enabled in SkyPilot: {has}): run `sky check` to enable one"
            + (", or allow another in resources.clouds" if spec.resources.clouds else "")
            + ", or use --executor local")
    return usable
