"""Capacity or quota? The clouds' error codes in what a failed SkyPilot launch carries.

SkyPilot's ``ResourcesUnavailableError`` ("Failed to acquire resources in all zones in
...") is raised after its failover has given up on every candidate, whatever stopped
each one: no capacity there *or* no quota. The two call for opposite answers: no
capacity may pass (retry elsewhere, later: ``FailureKind.CAPACITY``); a quota never
will until someone raises it (``FailureKind.REFUSED``, the job fails at once saying
so). What tells them apart is the cloud's own error code, which SkyPilot passes on in
the texts of the exception, its cause chain, its failover history, its stack trace
text and, for GCP, ``ProvisionerError.errors`` (``[{"code": ..., "message": ...}]``):

- AWS (botocore ``ClientError``: ``An error occurred (InsufficientInstanceCapacity)
  when calling the RunInstances operation ...``): capacity ``InsufficientInstanceCapacity``,
  ``SpotMaxPriceTooLow``, ``MaxSpotInstanceCountExceeded``; quota
  ``VcpuLimitExceeded``, ``InstanceLimitExceeded``;
- GCP (operation errors, the codes SkyPilot's failover handler reads):
  capacity ``ZONE_RESOURCE_POOL_EXHAUSTED`` (and ``_WITH_DETAILS``), ``STOCKOUT``,
  ``insufficientCapacity``; quota ``QUOTA_EXCEEDED``, ``quotaExceeded``;
- Azure (azure-core ``HttpResponseError``: ``(SkuNotAvailable) ...`` / ``Code: ...``):
  capacity ``SkuNotAvailable``, ``AllocationFailed``, ``ZonalAllocationFailed``,
  ``OverconstrainedAllocationRequest``, ``OverconstrainedZonalAllocationRequest``;
  quota ``QuotaExceeded``, and ``OperationNotAllowed`` when its text names a quota
  (Azure's "exceeding approved ... Cores quota").

Only these codes are matched, as whole words and case-sensitively (they are API
identifiers, not prose): a quota message that happens to say "capacity" ("more vCPU
capacity than your current vCPU limit") is still a quota. If any capacity code is
present the verdict is capacity (some place had no room: trying again may find some);
quota codes alone make it quota; neither leaves it unknown (the caller keeps SkyPilot's
own verdict). Pure: texts in, verdict out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from gpuopt.providers.clouds import registered_clouds

_WORD = re.compile(r"[A-Za-z_]+")
_QUOTA_WORD = re.compile(r"\bquota\b", re.IGNORECASE)


class LaunchProblem(StrEnum):
    CAPACITY = "capacity"
    QUOTA = "quota"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Verdict:
    problem: LaunchProblem
    codes: tuple[str, ...] = ()  # the codes found, in the order first seen

    def describe(self) -> str:
        return f"{self.problem.value}: {', '.join(self.codes)}" if self.codes else ""


def capacity_codes() -> frozenset[str]:
    """Every registered cloud's capacity error codes (providers/clouds.py)."""
    return frozenset(c for cloud in registered_clouds() for c in cloud.capacity_error_codes)


def quota_codes() -> frozenset[str]:
    return frozenset(c for cloud in registered_clouds() for c in cloud.quota_error_codes)


def _quota_codes_if_named() -> frozenset[str]:
    return frozenset(c for cloud in registered_clouds()
                     for c in cloud.quota_error_codes_if_named)


def codes_in(text: str) -> list[str]:
    """The capacity and quota codes in one text, in order, each once."""
    capacity, quota, if_named = capacity_codes(), quota_codes(), _quota_codes_if_named()
    words = _WORD.findall(text)
    found: list[str] = []
    for word in words:
        if (word in capacity or word in quota) and word not in found:
            found.append(word)
    if _QUOTA_WORD.search(text):
        found.extend(c for c in if_named if c in words and c not in found)
    return found


def classify_texts(texts: Iterable[str]) -> Verdict:
    """Capacity, quota or unknown, from every text a failed launch carried."""
    codes: list[str] = []
    for text in texts:
        for code in codes_in(text):
            if code not in codes:
                codes.append(code)
    if any(c in capacity_codes() for c in codes):
        return Verdict(LaunchProblem.CAPACITY, tuple(codes))
    if codes:
        return Verdict(LaunchProblem.QUOTA, tuple(codes))
    return Verdict(LaunchProblem.UNKNOWN)
