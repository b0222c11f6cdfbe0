"""Capacity or quota, from the clouds' error codes in texts shaped as the clouds and
SkyPilot write them (botocore ClientError, GCP operation errors as SkyPilot's
ProvisionerError.errors, azure-core HttpResponseError)."""

from __future__ import annotations

import pytest

from gpuopt.jobs.executors.capacity_errors import LaunchProblem, classify_texts, codes_in
from gpuopt.jobs.states import FailureKind

AWS_ICE = ("An error occurred (InsufficientInstanceCapacity) when calling the RunInstances "
           "operation (reached max retries: 0): We currently do not have sufficient "
           "p3.2xlarge capacity in the Availability Zone you requested (us-east-1a). Our "
           "system will be working on provisioning additional capacity. You can currently "
           "get p3.2xlarge capacity by not specifying an Availability Zone in your request "
           "or choosing us-east-1b, us-east-1c, us-east-1d, us-east-1f.")
AWS_PRICE = ("An error occurred (SpotMaxPriceTooLow) when calling the RunInstances operation: "
             "Your Spot request price of 0.3 is lower than the minimum required Spot request "
             "fulfillment price of 0.918.")
AWS_SPOT_COUNT = ("An error occurred (MaxSpotInstanceCountExceeded) when calling the "
                  "RunInstances operation: Max spot instance count exceeded")
AWS_VCPU = ("An error occurred (VcpuLimitExceeded) when calling the RunInstances operation: "
            "You have requested more vCPU capacity than your current vCPU limit of 0 allows "
            "for the instance bucket that the specified instance type belongs to. Please "
            "visit http://aws.amazon.com/contact-us/ec2-request to request an adjustment to "
            "this limit.")
GCP_POOL = ("ZONE_RESOURCE_POOL_EXHAUSTED The zone 'projects/p/zones/us-central1-a' does not "
            "have enough resources available to fulfill the request.  Try a different zone, "
            "or try again later.")
GCP_STOCKOUT = "STOCKOUT The zone 'projects/p/zones/us-central1-a' has a stockout."
GCP_QUOTA = "QUOTA_EXCEEDED Quota 'NVIDIA_V100_GPUS' exceeded.  Limit: 0.0 in region us-central1."
AZ_SKU = ("(SkuNotAvailable) The requested VM size for resource 'Following SKUs have failed "
          "for Capacity Restrictions: Standard_NC6s_v3' is currently not available in "
          "location 'eastus'. Please try another size or deploy to a different location or "
          "different zone. See https://aka.ms/azureskunotavailable for details.\n"
          "Code: SkuNotAvailable\nMessage: The requested VM size ...")
AZ_ALLOC = ("(AllocationFailed) Allocation failed. We do not have sufficient capacity for the "
            "requested VM size in this region. Read more about improving likelihood of "
            "allocation success at http://aka.ms/allocation-guidance\nCode: AllocationFailed")
AZ_QUOTA = ("(OperationNotAllowed) Operation could not be completed as it results in "
            "exceeding approved standardNCSv3Family Cores quota. Additional details - "
            "Deployment Model: Resource Manager, Location: eastus, Current Limit: 0, Current "
            "Usage: 0, Additional Required: 6, (Minimum) New Limit Required: 6.\n"
            "Code: OperationNotAllowed")


@pytest.mark.parametrize(("text", "problem", "codes"), [
    (AWS_ICE, LaunchProblem.CAPACITY, ("InsufficientInstanceCapacity",)),
    (AWS_PRICE, LaunchProblem.CAPACITY, ("SpotMaxPriceTooLow",)),
    (AWS_SPOT_COUNT, LaunchProblem.CAPACITY, ("MaxSpotInstanceCountExceeded",)),
    # says "capacity", is a quota
    (AWS_VCPU, LaunchProblem.QUOTA, ("VcpuLimitExceeded",)),
    (GCP_POOL, LaunchProblem.CAPACITY, ("ZONE_RESOURCE_POOL_EXHAUSTED",)),
    ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS ...", LaunchProblem.CAPACITY,
     ("ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS",)),
    (GCP_STOCKOUT, LaunchProblem.CAPACITY, ("STOCKOUT",)),
    (GCP_QUOTA, LaunchProblem.QUOTA, ("QUOTA_EXCEEDED",)),
    (AZ_SKU, LaunchProblem.CAPACITY, ("SkuNotAvailable",)),
    (AZ_ALLOC, LaunchProblem.CAPACITY, ("AllocationFailed",)),
    (AZ_QUOTA, LaunchProblem.QUOTA, ("OperationNotAllowed",)),
    ("(OperationNotAllowed) The operation is not allowed on a deallocated VM",
     LaunchProblem.UNKNOWN, ()),
    ("Failed to acquire resources in all zones in us-east-1 for {AWS(p3.2xlarge)}.",
     LaunchProblem.UNKNOWN, ()),
    # codes are words, not substrings, and case-sensitive
    ("MyAllocationFailedHandler stockout quota_exceeded", LaunchProblem.UNKNOWN, ()),
])
def test_one_text(text: str, problem: LaunchProblem, codes: tuple[str, ...]) -> None:
    v = classify_texts([text])
    assert (v.problem, v.codes) == (problem, codes)


def test_capacity_anywhere_wins_over_quota_elsewhere() -> None:
    v = classify_texts([AWS_VCPU, GCP_QUOTA, AZ_ALLOC])
    assert v.problem is LaunchProblem.CAPACITY
    assert v.codes == ("VcpuLimitExceeded", "QUOTA_EXCEEDED", "AllocationFailed")
    assert v.describe() == "capacity: VcpuLimitExceeded, QUOTA_EXCEEDED, AllocationFailed"
    assert classify_texts([AWS_VCPU, GCP_QUOTA]).problem is LaunchProblem.QUOTA
    assert classify_texts([]).describe() == ""
    assert codes_in(AWS_ICE + " " + AWS_ICE) == ["InsufficientInstanceCapacity"]


# -- what sky_errors makes of SkyPilot's exceptions ---------------------------------

def _client_error(text: str) -> Exception:
    from botocore.exceptions import ClientError

    code = text.split("(", 1)[1].split(")", 1)[0]
    message = text.split(": ", 1)[1]
    return ClientError({"Error": {"Code": code, "Message": message}}, "RunInstances")


def _caused(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


def _failover(*zone_errors: BaseException) -> BaseException:
    from sky import exceptions as e

    return e.ResourcesUnavailableError(
        "Failed to provision all possible launchable resources.",
        failover_history=list(zone_errors))


def test_botocore_text_is_what_the_pure_classifier_reads() -> None:
    assert str(_client_error(AWS_ICE)).startswith(
        "An error occurred (InsufficientInstanceCapacity) when calling the RunInstances")


def test_quota_everywhere_is_refused_not_capacity() -> None:
    """Today's bug: a failover that ended on quota errors was 'no capacity' and retried."""
    from gpuopt.jobs.executors.sky_errors import classify, launch_failure

    aws = _caused(RuntimeError("Failed to launch instances. Max attempts exceeded."),
                  _client_error(AWS_VCPU))
    exc = _failover(aws)
    assert classify(exc) is FailureKind.REFUSED
    err = launch_failure(exc, "gpuopt-j-1")
    assert err.kind is FailureKind.REFUSED  # type: ignore[union-attr]
    assert "[cloud quota: VcpuLimitExceeded]" in str(err)


def test_capacity_in_the_failover_history_stays_capacity() -> None:
    from sky.provision.common import ProvisionerError

    from gpuopt.jobs.executors.sky_errors import classify

    gcp = ProvisionerError("Failed to launch instances.")
    gcp.errors = [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "domain": "global",
                   "message": GCP_POOL.split(" ", 1)[1]}]
    quota = _caused(RuntimeError("Failed to launch instances. Max attempts exceeded."),
                    _client_error(AWS_VCPU))
    assert classify(_failover(quota, gcp)) is FailureKind.CAPACITY
    gcp_quota = ProvisionerError("Failed to launch instances.")
    gcp_quota.errors = [{"code": "QUOTA_EXCEEDED", "message": GCP_QUOTA.split(" ", 1)[1]}]
    assert classify(_failover(gcp_quota)) is FailureKind.REFUSED


def test_codes_in_a_stack_trace_text_count_and_bare_errors_get_their_kind() -> None:
    from sky import exceptions as e

    from gpuopt.jobs.executors.sky_errors import classify

    unpickled = e.ResourcesUnavailableError("Failed to acquire resources in eastus.")
    unpickled.stacktrace = "Traceback ...\nazure.core.exceptions.HttpResponseError: " + AZ_QUOTA
    assert classify(unpickled) is FailureKind.REFUSED
    # Not a ResourcesUnavailableError, yet a cloud's capacity code: capacity, not 'launch'.
    leaked = _caused(RuntimeError("Failed to launch instances. Max attempts exceeded."),
                     _client_error(AWS_ICE))
    assert classify(leaked) is FailureKind.CAPACITY
    assert classify(RuntimeError("something else")) is FailureKind.LAUNCH
    tried = e.ResourcesUnavailableError("no A10G in us-east-1b")
    assert classify(e.ResourcesUnavailableError("gave up", failover_history=[tried])
                    ) is FailureKind.CAPACITY
    assert classify(tried) is FailureKind.REFUSED  # empty history: SkyPilot tried no zone


def test_a_cycle_in_the_chain_ends() -> None:
    from gpuopt.jobs.executors.sky_errors import carried_texts

    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert sorted(carried_texts(a)) == ["a", "b"]
