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

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuopt.core.buckets import BUCKET_PREFIXES, BUCKET_SCHEMES
from gpuopt.core.errors import UserError
from gpuopt.jobs.loader import key_line
from gpuopt.jobs.spec import JobSpec

if TYPE_CHECKING:
    from gpuopt.jobs.executors.sky_client import SkyClient
    from gpuopt.jobs.executors.sky_sdk import ServerState

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
    dry_run: bool = False,
) -> frozenset[str] | None:
    """Raise :class:`SubmitRefused` when ``executor`` cannot run ``spec`` as written.

    Returns the gpuopt clouds the executor can launch on (SkyPilot: those it has
    enabled; the local executor: the clouds gpuopt has adapters for, as a cloud priced
    only from SkyPilot's catalog runs only through SkyPilot), for the plan to stay
    within; None: any. A SkyPilot ``dry_run`` does not ask SkyPilot here (returns None):
    :func:`sky_dry_run` does, without starting an API server and without refusing."""
    if executor == "skypilot":
        return _check_skypilot(job, spec, preempt_after, None if dry_run else
                               (sky_client or _default_client))
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


def _default_client() -> SkyClient:
    from gpuopt.jobs.executors import sky_client

    return sky_client.default_client()


def _check_skypilot(job: JobFile, spec: JobSpec, preempt_after: Sequence[float],
                    sky_client: Callable[[], SkyClient] | None) -> frozenset[str] | None:
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
    return None if sky_client is None else _check_enabled_clouds(job, spec, sky_client)


def _check_enabled_clouds(job: JobFile, spec: JobSpec,
                          sky_client: Callable[[], SkyClient]) -> frozenset[str]:
    """The registered clouds SkyPilot has enabled; refused when the job may use none."""
    client = sky_client()
    try:
        enabled = set(client.enabled_clouds())
    except Exception as err:  # SkyPilot raises many kinds (API server down, version, ...)
        from gpuopt.jobs.executors.sky_sdk import why_unusable

        raise SubmitRefused(
            f"--executor skypilot: cannot ask SkyPilot which clouds it may use: "
            f"{why_unusable(err)}; or use --executor local") from None
    usable = _gpuopt_clouds(enabled)
    wanted = _wanted(spec)
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


def _gpuopt_clouds(sky_names: Iterable[str]) -> frozenset[str]:
    """gpuopt's clouds SkyPilot knows by these names (SkyPilot answers with its own
    cloud names; the registry maps gpuopt's onto them)."""
    from gpuopt.providers.clouds import cloud_names, get_cloud

    on_sky = {c.lower() for c in sky_names}
    return frozenset(c for c in cloud_names() if get_cloud(c).skypilot_name in on_sky)


def _wanted(spec: JobSpec) -> set[str]:
    from gpuopt.providers.clouds import cloud_names

    return set(spec.resources.clouds or cloud_names())


@dataclass(frozen=True, slots=True)
class SkyDryRun:
    """What a ``--dry-run`` learnt from SkyPilot without starting anything."""

    clouds: frozenset[str]  # gpuopt's clouds to plan on
    skipped: str | None  # why SkyPilot's own check is skipped; None: its optimizer is asked


def sky_dry_run(spec: JobSpec,
                sky_client: Callable[[], SkyClient] | None = None) -> SkyDryRun:
    """The clouds a dry run plans on and whether SkyPilot's optimizer can be asked: only
    when an API server already answers (a dry run never starts one) and has a cloud
    enabled that the job may use. Never refuses: the task is shown either way."""
    from gpuopt.jobs.executors import sky_sdk
    from gpuopt.providers.clouds import registered_clouds

    on_sky = frozenset(c.name for c in registered_clouds() if c.skypilot_name)
    try:
        state = sky_sdk.server_state()
    except Exception as err:  # a broken config, an unparsable endpoint, ...
        return SkyDryRun(on_sky, sky_sdk.why_unusable(err))
    if not state.healthy:
        return SkyDryRun(on_sky, _server_problem(state))
    try:
        enabled = (sky_client or _default_client)().enabled_clouds()
    except Exception as err:
        return SkyDryRun(on_sky, sky_sdk.why_unusable(err))
    usable = _gpuopt_clouds(enabled) & on_sky
    if not usable & _wanted(spec):
        has = ", ".join(sorted(enabled)) or "none"
        return SkyDryRun(on_sky, f"SkyPilot has no cloud enabled that the job may use "
                                 f"(enabled: {has}); `sky check` enables one")
    return SkyDryRun(usable, None)


def _server_problem(state: ServerState) -> str:
    if state.status == "version_mismatch":
        return (f"the SkyPilot API server at {state.url} runs SkyPilot {state.version}, "
                "which does not work with the one installed here; `sky api stop` and "
                "`sky api start` restart a local one")
    if state.status == "needs_auth":
        return f"the SkyPilot API server at {state.url} needs `sky api login -e {state.url}`"
    if state.local:
        return f"no SkyPilot API server runs at {state.url}; `sky api start` starts one"
    return (f"the SkyPilot API server at {state.url} does not answer; start it, or "
            "`sky api login -e URL` points SkyPilot at another")
