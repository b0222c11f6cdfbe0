"""The executor interface: start, watch and stop one attempt of a job on one placement.

An *attempt* is one launch of a job. It is named by a deterministic cluster name made
from the job id and the attempt number, so that a restarted daemon finds (adopts) what
is already running instead of launching it twice. Every executor (local processes,
SkyPilot) implements :class:`Executor` and passes the shared contract test suite in
``tests/jobs/executors``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from gpuopt.core.errors import GpuoptError

# Re-exported: the failure kinds an executor reports are the lifecycle's own.
from gpuopt.jobs.states import FailureKind as FailureKind

if TYPE_CHECKING:
    from gpuopt.jobs.telemetry.summary import TelemetrySummary

CLUSTER_PREFIX = "gpuopt-"
# GCP instance names allow 63 chars and SkyPilot appends suffixes (-head, -worker, a
# user hash on some clouds); 35 leaves room on every cloud SkyPilot supports.
MAX_CLUSTER_NAME = 35
_EMPTY: Mapping[str, str] = MappingProxyType({})


def cluster_name_for(job_id: str, attempt: int) -> str:
    """``gpuopt-<jobid>-<n>``: lowercase, ``[a-z0-9-]``, at most 35 characters.

    A job id that has to be shortened keeps a 6-hex-digit hash of the full id, so two
    long ids that share a prefix still get different names.
    """
    if attempt < 1:
        raise ValueError(f"attempt numbers start at 1, got {attempt}")
    slug = re.sub(r"[^a-z0-9]+", "-", job_id.lower()).strip("-") or "job"
    suffix = f"-{attempt}"
    room = MAX_CLUSTER_NAME - len(CLUSTER_PREFIX) - len(suffix)
    if len(slug) > room:
        digest = hashlib.sha256(job_id.encode()).hexdigest()[:6]
        slug = slug[: room - len(digest) - 1].rstrip("-") + "-" + digest
    return f"{CLUSTER_PREFIX}{slug}{suffix}"


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an attempt runs (one offer). ``cloud`` is ``aws``, ``gcp``, ``azure`` or ``local``."""

    cloud: str
    region: str | None = None
    zone: str | None = None
    instance_type: str | None = None
    gpu: str | None = None  # canonical name from providers.hardware
    gpu_count: int = 0  # per node
    use_spot: bool = False
    num_nodes: int = 1  # instances of ``instance_type`` the attempt holds together


LOCAL_PLACEMENT = Placement(cloud="local")


@dataclass(frozen=True, slots=True)
class AttemptSpec:
    """Everything an executor needs to launch one attempt (independent of jobs.spec)."""

    job_id: str
    attempt: int
    run: str
    checkpoint_dir: str  # local path, or bucket URL (s3://, gs://, https://<acct>.blob...)
    name: str | None = None
    setup: str | None = None
    envs: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    # `secrets:` values: in the program's environment like envs, never shown (repr) or
    # stored; SkyPilot gets them as task secrets
    secrets: Mapping[str, str] = field(default_factory=lambda: _EMPTY, repr=False)
    workdir: str | None = None
    file_mounts: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    # node path -> SkyPilot storage config (bucket mounted or copied: name/source/store/mode/
    # persistent); only executors on a cloud can honour them
    storage_mounts: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    resume: bool = False  # an earlier attempt may have left a checkpoint
    placement: Placement = LOCAL_PLACEMENT
    log_dir: str | None = None  # where the executor keeps this attempt's log (local)

    @property
    def cluster_name(self) -> str:
        return cluster_name_for(self.job_id, self.attempt)


class AttemptState(StrEnum):
    PENDING = "pending"  # launching / provisioning / setting up
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # see FailureKind
    PREEMPTED = "preempted"  # the machine went away under a running program
    CANCELLED = "cancelled"  # stop() was called
    UNKNOWN = "unknown"  # nothing to learn the outcome from (see AttemptStatus.detail)
    # its instance is up (Provisioner.provision) and runs nothing of the job yet
    PROVISIONED = "provisioned"

    @property
    def is_terminal(self) -> bool:
        return self not in (AttemptState.PENDING, AttemptState.RUNNING,
                            AttemptState.PROVISIONED)


class LaunchError(GpuoptError):
    """The launch did not start the attempt, and nothing of it runs; ``kind`` says whether
    trying again can help (CAPACITY, LAUNCH) or not (REFUSED)."""

    def __init__(self, message: str, kind: FailureKind = FailureKind.LAUNCH) -> None:
        super().__init__(message)
        self.kind = kind


class LaunchOutcomeUnknown(GpuoptError):
    """The launch may have been accepted (e.g. a timeout after the request was sent): the
    attempt stays open and its fate is learned from ``poll`` before anything new starts."""


class ProvisionPending(LaunchOutcomeUnknown):
    """A probe's instance is being provisioned (``Provisioner.provision`` asked it, it is
    not up yet): asked again at the next step."""


@dataclass(frozen=True, slots=True)
class Progress:
    step: int
    total: int | None = None

    @property
    def fraction(self) -> float | None:
        return self.step / self.total if self.total else None


@dataclass(frozen=True, slots=True)
class AttemptStatus:
    cluster_name: str
    state: AttemptState
    exit_code: int | None = None
    failure: FailureKind | None = None
    last_lines: tuple[str, ...] = ()  # tail of the log when the attempt failed
    progress: Progress | None = None
    started_at: datetime | None = None  # timezone-aware UTC
    ended_at: datetime | None = None
    detail: str = ""
    # what the sampler measured so far (None: no nvidia-smi there, or nothing yet)
    telemetry: TelemetrySummary | None = None


@dataclass(frozen=True, slots=True)
class LaunchResult:
    cluster_name: str
    adopted: bool  # True: an attempt under that name already existed; nothing was launched


@dataclass(frozen=True, slots=True)
class Provisioned:
    """A probe's instance is up: ``ready_at`` when it was (aware UTC)."""

    cluster_name: str
    ready_at: datetime


@runtime_checkable
class Provisioner(Protocol):
    """What an executor that can probe (make before break) adds to :class:`Executor`:
    bring an attempt's instance up without running anything of the job, then start the
    job on it once the attempt it replaces has stopped (orchestrator/reconcile/probing.py).
    ``poll`` answers PROVISIONED for an instance that is up and runs nothing yet; ``stop``
    tears it down as it tears down an attempt."""

    def provision(self, spec: AttemptSpec) -> Provisioned:
        """Bring up ``spec.placement`` under ``spec.cluster_name``, running nothing of the
        job; idempotent (an instance already up is returned as it is). ``LaunchError``
        when it cannot be had (``FailureKind.CAPACITY``: no capacity there; nothing is
        held), ``LaunchOutcomeUnknown`` when it may still come up."""
        ...

    def start(self, spec: AttemptSpec) -> LaunchResult:
        """Run the attempt on the instance provisioned for it; idempotent as ``launch``
        (an attempt already started there is adopted)."""
        ...


def can_provision(executor: object) -> bool:
    """Can ``executor`` probe (provision first, start later)? (A strict wrapper that
    refuses the question: no.)"""
    try:
        return isinstance(executor, Provisioner)
    except Exception:
        return False


@runtime_checkable
class Executor(Protocol):
    """Starts, watches and stops attempts. Every method is safe to call repeatedly."""

    kind: str

    def launch(self, spec: AttemptSpec) -> LaunchResult:
        """Start the attempt, or adopt it when one under ``spec.cluster_name`` exists."""
        ...

    def poll(self, cluster_name: str) -> AttemptStatus:
        """Current state; never raises for an unknown name (answers UNKNOWN)."""
        ...

    def stop(self, cluster_name: str) -> AttemptStatus:
        """Tear the attempt down (processes / cluster); idempotent."""
        ...

    def logs(self, cluster_name: str, follow: bool = False) -> Iterator[str]:
        """The attempt's output lines (without newlines); ``follow`` waits for more."""
        ...

    def list_running(self) -> list[str]:
        """Cluster names of the non-terminal attempts this executor can see."""
        ...

    def adopt(self, cluster_name: str) -> AttemptStatus:
        """Take over watching an attempt started by another process (e.g. before a restart)."""
        ...
