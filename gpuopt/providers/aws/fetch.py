"""boto3 calls for the AWS adapter: clients, paging, and error translation.

Retries: botocore's own retry handler (``standard`` mode: exponential backoff with
jitter and a retry quota) retries throttling (ThrottlingException, RequestLimitExceeded,
...) and transient 5xx answers, ``max_attempts`` requests in all; what still fails is turned
into a ProviderError naming the call, the error code and the attempts made.
boto3 and botocore are named below as lazy modules (core/lazy_import.py: slow imports,
made on first use).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from gpuopt.core.lazy_import import LazyModule
from gpuopt.providers.aws.catalog import SPOT_ADVISOR_URL
from gpuopt.providers.aws.parse import EXPECTED_ATTRIBUTES
from gpuopt.providers.base import CredentialsMissing, ProviderError
from gpuopt.providers.http_json import REQUEST_DEADLINE_S, read_bounded

boto3 = LazyModule("boto3", extra="aws")
botocore_config = LazyModule("botocore.config", extra="aws")
botocore_exceptions = LazyModule("botocore.exceptions", extra="aws")
requests = LazyModule("requests", extra="aws")

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 6
# get_products and describe_instance_types accept at most 100 per page.
PAGE_SIZE = 100
# Error codes that mean "this account may not call this" (optional calls are skipped).
DENIED_CODES = frozenset(
    {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "AuthFailure"}
)
# Error codes of a request AWS throttled (botocore's standard retry mode already retried).
THROTTLED_CODES = frozenset(
    {"RequestLimitExceeded", "ThrottlingException", "Throttling", "TooManyRequestsException"}
)
NO_CREDENTIALS = (
    "aws: boto3 found no credentials (set AWS_PROFILE or AWS_ACCESS_KEY_ID/"
    "AWS_SECRET_ACCESS_KEY, or run `aws configure` / `aws sso login`); skipping AWS"
)

# (service, region) -> a boto3 client
ClientFactory = Callable[[str, str], Any]


def client_factory(max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> ClientFactory:
    """A factory over one boto3 Session with botocore's standard retry mode."""
    session = boto3.Session()
    # total_max_attempts counts the first request; Config's "max_attempts" would count
    # retries only (one more request than it says).
    config = botocore_config.Config(
        retries={"mode": "standard", "total_max_attempts": max_attempts},
        connect_timeout=10,
        read_timeout=60,
    )
    clients: dict[tuple[str, str], Any] = {}

    def make(service: str, region: str) -> Any:
        key = (service, region)
        if key not in clients:
            clients[key] = session.client(service, region_name=region, config=config)
        return clients[key]

    return make


def has_credentials() -> bool:
    """Whether boto3's credential chain resolves anything (env, files, SSO, IMDS...)."""
    return boto3.Session().get_credentials() is not None


def error_code(err: BaseException) -> str:
    response = getattr(err, "response", None) or {}
    return str(response.get("Error", {}).get("Code", type(err).__name__))


@contextmanager
def aws_errors(call: str) -> Iterator[None]:
    """Translate botocore errors raised inside into CredentialsMissing / ProviderError."""
    try:
        yield
    except botocore_exceptions.NoCredentialsError as err:
        raise CredentialsMissing(NO_CREDENTIALS) from err
    except botocore_exceptions.ClientError as err:
        meta = err.response.get("ResponseMetadata", {})
        attempts = int(meta.get("RetryAttempts", 0)) + 1
        message = err.response.get("Error", {}).get("Message", "")
        raise ProviderError(
            f"aws {call}: {error_code(err)} (HTTP {meta.get('HTTPStatusCode', '?')}) after "
            f"{attempts} attempt{'s' if attempts > 1 else ''}: {message}"
        ) from err
    except botocore_exceptions.BotoCoreError as err:
        raise ProviderError(f"aws {call}: {err}") from err


def pricing_filters(instance_type: str, region: str) -> list[dict[str, str]]:
    """TERM_MATCH filters for one Linux, shared-tenancy, no-license instance in a region."""
    pairs = {"instanceType": instance_type, "regionCode": region, **EXPECTED_ATTRIBUTES}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in pairs.items()]


def get_products(pricing: Any, instance_type: str, region: str) -> list[str]:
    """Every PriceList item (a JSON string) for one instance type in one region."""
    items: list[str] = []
    with aws_errors(f"pricing.get_products {instance_type} {region}"):
        pages = pricing.get_paginator("get_products").paginate(
            ServiceCode="AmazonEC2",
            FormatVersion="aws_v1",
            Filters=pricing_filters(instance_type, region),
            PaginationConfig={"PageSize": PAGE_SIZE},
        )
        for page in pages:
            items.extend(page.get("PriceList", []))
    return items


def describe_instance_types(ec2: Any, instance_types: Sequence[str]) -> list[dict[str, Any]]:
    """InstanceTypes entries for the given names, wherever AWS sells them (unknown names
    are simply absent: a filter, unlike InstanceTypes=, does not fail on them)."""
    rows: list[dict[str, Any]] = []
    with aws_errors("ec2.describe_instance_types"):
        pages = ec2.get_paginator("describe_instance_types").paginate(
            Filters=[{"Name": "instance-type", "Values": list(instance_types)}],
            IncludeUnsupportedInRegion=True,
            PaginationConfig={"PageSize": PAGE_SIZE},
        )
        for page in pages:
            rows.extend(page.get("InstanceTypes", []))
    return rows


def describe_spot_prices(
    ec2: Any, region: str, instance_types: Sequence[str], now: datetime
) -> list[dict[str, Any]]:
    """SpotPriceHistory rows in force at ``now`` (one or more per zone and type)."""
    rows: list[dict[str, Any]] = []
    with aws_errors(f"ec2.describe_spot_price_history {region}"):
        pages = ec2.get_paginator("describe_spot_price_history").paginate(
            InstanceTypes=list(instance_types),
            ProductDescriptions=["Linux/UNIX"],
            StartTime=now,
            PaginationConfig={"PageSize": 1000},
        )
        for page in pages:
            rows.extend(page.get("SpotPriceHistory", []))
    return rows


def spot_placement_scores(
    ec2: Any, instance_type: str, regions: Sequence[str]
) -> list[dict[str, Any]]:
    """Per-zone placement scores (1..10) for one instance of ``instance_type``."""
    rows: list[dict[str, Any]] = []
    pages = ec2.get_paginator("get_spot_placement_scores").paginate(
        InstanceTypes=[instance_type],
        TargetCapacity=1,
        SingleAvailabilityZone=True,
        RegionNames=list(regions),
    )
    for page in pages:
        rows.extend(page.get("SpotPlacementScores", []))
    return rows


def describe_availability_zones(ec2: Any, region: str) -> list[dict[str, Any]]:
    """AvailabilityZones of the client's region (ZoneName <-> ZoneId: AWS maps zone names
    to physical zones per account, placement scores name the zone ids)."""
    with aws_errors(f"ec2.describe_availability_zones {region}"):
        answer = ec2.describe_availability_zones(
            Filters=[{"Name": "region-name", "Values": [region]}])
    return list(answer.get("AvailabilityZones", []))


def placement_scores_by_type(
    ec2: Any, instance_types: Sequence[str], regions: Sequence[str]
) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Scores per instance type. Optional data: when the account may not call it
    (``ec2:GetSpotPlacementScores`` denied) or AWS still throttles it after botocore's
    retries, one log line and the remaining types are skipped; another error is a
    warning. Never raises for the call's own errors."""
    out: dict[str, list[dict[str, Any]]] = {}
    for itype in instance_types:
        try:
            out[itype] = spot_placement_scores(ec2, itype, regions)
        except botocore_exceptions.ClientError as err:
            code = error_code(err)
            if code in DENIED_CODES:
                log.info("aws: spot placement scores not permitted (%s); skipped", code)
                return out, []
            if code in THROTTLED_CODES:
                log.info("aws: spot placement scores throttled (%s) at %s; the rest skipped "
                         "this poll", code, itype)
                return out, []
            return out, [f"spot placement scores skipped: {code}"]
        except botocore_exceptions.BotoCoreError as err:
            return out, [f"spot placement scores skipped: {err}"]
    return out, []


HttpGet = Callable[[str], bytes]


def http_get(url: str) -> bytes:
    """The Spot Advisor feed (~2 MB), bounded in size and time (providers/http_json.py)."""
    with requests.get(url, timeout=15, stream=True) as response:
        response.raise_for_status()
        return read_bounded(response.iter_content(64 * 1024), "aws",
                            time.monotonic() + REQUEST_DEADLINE_S)


def fetch_spot_advisor(get: HttpGet = http_get, url: str = SPOT_ADVISOR_URL) -> Mapping[str, Any]:
    """The Spot Instance Advisor feed; raises ValueError/OSError-like errors to the caller."""
    data = json.loads(get(url))
    if not isinstance(data, dict) or "spot_advisor" not in data:
        raise ValueError("spot advisor feed has no 'spot_advisor' key")
    return data
