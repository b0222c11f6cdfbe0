"""SkyPilot's errors, by type, as the lifecycle's failure kinds (no prose is parsed; the
clouds' error codes are read, see ``capacity_errors``).

- CAPACITY: ``ResourcesUnavailableError`` (SkyPilot's failover found no resources for
  the placement) unless the clouds' codes it carries are all quota codes, or SkyPilot
  tried no zone at all (empty ``failover_history``, no cloud code: refused); and any
  other error carrying a cloud's capacity code (``InsufficientInstanceCapacity``,
  ``ZONE_RESOURCE_POOL_EXHAUSTED``, ``AllocationFailed``, ...): retried elsewhere,
  with backoff;
- REFUSED for a quota: a ``ResourcesUnavailableError`` (or any error) whose cloud codes
  are quota codes only (``VcpuLimitExceeded``, ``QUOTA_EXCEEDED``, ``QuotaExceeded``,
  ...): no other zone or later try helps until the quota is raised;
- REFUSED (retrying cannot fix it): credentials and identity, network (no API server,
  an unreachable Kubernetes API, a cloud SDK's connection or credentials error that
  SkyPilot wrapped in ``CloudError``), an invalid request or config, resources SkyPilot
  cannot provide for this spec (``no_failover``), permissions, policy rejections;
- LAUNCH: anything else (an API server hiccup, a cancelled request): retried, backing off.

A launch request that failed on the API server is read from everything SkyPilot gives:
its exception (as ``sky.get`` re-raises it), that exception's failover history, and the
tail of the request's log, where SkyPilot 0.14 puts the clouds' per-zone errors (see
``sky_request_log``); the detail names the codes and the places they were seen at.

A launch call that fails *after* its request may have reached the API server (a read
timeout, a connection dropped mid-response) has an unknown outcome: the executor raises
LaunchOutcomeUnknown and learns the fate from the API server (launch requests by
cluster name, the cluster's record) before anything new is launched.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain

from gpuopt.jobs.executors.base import LaunchError, LaunchOutcomeUnknown
from gpuopt.jobs.executors.capacity_errors import LaunchProblem, Verdict, classify_texts
from gpuopt.jobs.executors.sky_request_log import describe, log_lines, sightings
from gpuopt.jobs.states import FailureKind

_REFUSED = (
    "ApiServerConnectionError", "ApiServerAuthenticationError", "APIVersionMismatchError",
    "APINotSupportedError", "CloudUserIdentityError", "InvalidCloudCredentials",
    "InvalidCloudConfigs", "NoCloudAccessError", "InvalidSkyPilotConfigError",
    "NotSupportedError", "ResourcesMismatchError", "ProvisionPrechecksError",
    "InvalidClusterNameError", "ClusterOwnerIdentityMismatchError", "PermissionDeniedError",
    "UserRequestRejectedByPolicy", "StorageSpecError", "KubernetesValidationError",
    "KubeAPIUnreachableError", "NetworkError",
)

# A cloud SDK's exception reaches the client wrapped in SkyPilot's CloudError, its class
# name kept in ``error_type``: these mean the cloud's API was never reached (network) or
# would not know the caller (credentials): retrying the launch cannot fix either.
_CLOUD_REFUSED = frozenset({
    # botocore, urllib3 / requests (any SDK's transport)
    "EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError",
    "ProxyConnectionError", "NameResolutionError", "NewConnectionError", "MaxRetryError",
    "ConnectionError", "SSLError",
    "NoCredentialsError", "PartialCredentialsError", "NoRegionError",
    "UnauthorizedSSOTokenError", "SSOTokenLoadError", "TokenRetrievalError",
    # google-auth, azure-identity / azure-core
    "DefaultCredentialsError", "RefreshError", "TransportError",
    "CredentialUnavailableError", "ClientAuthenticationError", "ServiceRequestError",
})

MAX_TEXTS = 200  # a failover history is a few dozen entries; never walk a cycle forever


def carried_texts(exc: BaseException) -> Iterator[str]:
    """Every text a launch failure carries: the exception's, its causes' and contexts',
    its failover history's (SkyPilot), its stack trace text, GCP's operation errors."""
    seen: set[int] = set()
    todo: list[object] = [exc]
    while todo and len(seen) < MAX_TEXTS:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, BaseException):
            yield str(item)
            todo += [c for c in (item.__cause__, item.__context__) if c is not None]
            history = getattr(item, "failover_history", None)
            if isinstance(history, list | tuple):
                todo += list(history)
            trace = getattr(item, "stacktrace", None)
            if isinstance(trace, str):
                yield trace
            errors = getattr(item, "errors", None)  # sky.provision.common.ProvisionerError
            if isinstance(errors, list | tuple):
                for e in errors:
                    if isinstance(e, dict):
                        yield " ".join(str(e.get(k, "")) for k in ("code", "reason", "message"))
        elif isinstance(item, str):
            yield item


def cloud_verdict(exc: BaseException, log: Iterable[str] = ()) -> Verdict:
    """Capacity, quota or unknown, from the clouds' codes the failure carries and the
    request's log lines (``log``, each one text) show."""
    return classify_texts(chain(carried_texts(exc), log))


def refused_by_type(exc: BaseException) -> bool:
    """SkyPilot's exception types that no retry fixes (and the cloud SDKs' network and
    credentials errors SkyPilot wraps in CloudError)."""
    from gpuopt.jobs.executors import sky_sdk

    if isinstance(exc, sky_sdk.exception_types(_REFUSED)):
        return True
    return (isinstance(exc, sky_sdk.cloud_error())
            and getattr(exc, "error_type", "") in _CLOUD_REFUSED)


def classify(exc: BaseException, log: Sequence[str] = ()) -> FailureKind:
    """The failure kind of an exception a SkyPilot launch raised (its class, and the
    clouds' capacity / quota codes it and the request's log lines carry; see the module
    doc)."""
    from gpuopt.jobs.executors import sky_sdk

    if refused_by_type(exc):
        return FailureKind.REFUSED
    verdict = cloud_verdict(exc, log)
    if verdict.problem is LaunchProblem.QUOTA:
        return FailureKind.REFUSED
    if isinstance(exc, sky_sdk.resources_unavailable()):
        # An empty failover history: SkyPilot tried no zone (its optimizer found the pinned
        # placement infeasible, or a check before provisioning failed: a cloud or its
        # storage not enabled, ...), so no other try of the same placement can help.
        # Every place it tried refused for a reason no retry fixes (each CloudUserIdentity
        # Error: credentials, or no network to ask the cloud who we are): refused too.
        tried = list(getattr(exc, "failover_history", None) or ())
        if getattr(exc, "no_failover", False) or not (tried or verdict.codes):
            return FailureKind.REFUSED
        if (verdict.problem is not LaunchProblem.CAPACITY and tried
                and all(refused_by_type(t) for t in tried)):
            return FailureKind.REFUSED
        return FailureKind.CAPACITY
    if isinstance(exc, ValueError):  # SkyPilot's validation of the task / resources
        return FailureKind.REFUSED
    if verdict.problem is LaunchProblem.CAPACITY:
        return FailureKind.CAPACITY
    return FailureKind.LAUNCH


def outcome_unknown(exc: BaseException) -> bool:
    """The request may have reached the API server before the call failed."""
    import requests

    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return False  # never connected: nothing was sent
    return isinstance(exc, requests.exceptions.ReadTimeout | requests.exceptions.ConnectionError
                      | requests.exceptions.ChunkedEncodingError | TimeoutError)


def launch_failure(exc: BaseException, cluster_name: str) -> LaunchError | LaunchOutcomeUnknown:
    """What a ``sky.launch`` call that raised means for the attempt."""
    if outcome_unknown(exc):
        return LaunchOutcomeUnknown(
            f"{type(exc).__name__} while submitting the launch of {cluster_name}: {exc}")
    verdict = cloud_verdict(exc)
    note = f" [cloud {verdict.describe()}]" if verdict.codes else ""
    return LaunchError(f"{type(exc).__name__}: {exc}{note}", classify(exc))


def failed_request(exc: BaseException | None, log: str,
                   error: str = "") -> tuple[FailureKind, str]:
    """The kind and detail of a launch request that FAILED on the API server, from the
    exception it raised (None: not readable; ``error``: the request's error message)
    and the tail of its log ("" when unavailable)."""
    lines = log_lines(log)
    if exc is None:
        verdict = classify_texts(chain([error], lines))
        kind = {LaunchProblem.CAPACITY: FailureKind.CAPACITY,
                LaunchProblem.QUOTA: FailureKind.REFUSED}.get(verdict.problem,
                                                              FailureKind.LAUNCH)
        detail = error or "launch failed"
    else:
        verdict = cloud_verdict(exc, lines)
        kind = classify(exc, lines)
        detail = f"{type(exc).__name__}: {exc}"
    note = describe(verdict, sightings(lines))
    return kind, detail + (f" [cloud {note}]" if note else "")
