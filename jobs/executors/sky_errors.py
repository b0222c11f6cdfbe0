"""SkyPilot's errors, by type, as the lifecycle's failure kinds (no message is parsed).

- CAPACITY: ``ResourcesUnavailableError`` (SkyPilot found no capacity for the resources
  at the placement): retried elsewhere, with backoff;
- REFUSED (retrying cannot fix it): credentials and identity, network (no API server,
  an unreachable Kubernetes API), an invalid request or config, resources SkyPilot
  cannot provide for this spec (``no_failover``), permissions, policy rejections;
- LAUNCH: anything else (an API server hiccup, a cancelled request): retried, backing off.

A launch call that fails *after* its request may have reached the API server (a read
timeout, a connection dropped mid-response) has an unknown outcome: the executor raises
LaunchOutcomeUnknown and learns the fate from the API server (launch requests by
cluster name, the cluster's record) before anything new is launched.
"""

from __future__ import annotations

from gpuopt.jobs.executors.base import LaunchError, LaunchOutcomeUnknown
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


def classify(exc: BaseException) -> FailureKind:
    """The failure kind of an exception a SkyPilot launch raised (its class, not its text)."""
    from sky import exceptions

    refused = tuple(getattr(exceptions, name) for name in _REFUSED
                    if hasattr(exceptions, name))
    if isinstance(exc, refused):
        return FailureKind.REFUSED
    if isinstance(exc, exceptions.ResourcesUnavailableError):
        return FailureKind.REFUSED if exc.no_failover else FailureKind.CAPACITY
    if isinstance(exc, ValueError):  # SkyPilot's validation of the task / resources
        return FailureKind.REFUSED
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
    return LaunchError(f"{type(exc).__name__}: {exc}", classify(exc))
