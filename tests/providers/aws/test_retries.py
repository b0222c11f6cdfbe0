"""Throttling and 5xx through botocore's own retry handler (standard mode).

botocore's Stubber answers before the retry handler runs, so these tests replay the
recorded *wire* answers instead (HTTP status + body as the services send them: JSON 1.1
for the Price List API, EC2 query-protocol XML) from a ``before-send`` hook. Everything
from there on is real botocore: error parsing, retry decisions, response parsing.
The backoff delay is patched to zero so nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gpuopt.providers.aws.fetch import client_factory, describe_spot_prices, get_products
from gpuopt.providers.aws.parse import parse_price_list, parse_spot_history
from gpuopt.providers.base import ProviderError
from gpuopt.providers.offer import Market
from tests.providers.aws.conftest import PAYLOADS, wire

NOW = datetime(2025, 6, 14, 10, 30, tzinfo=UTC)
JSON_11 = {"Content-Type": "application/x-amz-json-1.1",
           "x-amzn-RequestId": "3f1c2b7a-8d9e-4c6f-b5a4-1e2d3c4b5a69"}
XML = {"Content-Type": "text/xml;charset=UTF-8", "Server": "AmazonEC2"}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, ctx: 0)


def replay(client: Any, event: str, answers: list[tuple[int, dict[str, str], bytes]]) -> list[str]:
    """Answer successive HTTP attempts of one operation with the given wire responses."""
    from botocore.awsrequest import AWSResponse

    sent: list[str] = []

    def send(request: Any, **_: Any) -> AWSResponse:
        status, headers, body = answers[len(sent)]
        sent.append(request.url)
        return AWSResponse(request.url, status, headers, _Raw(body))

    client.meta.events.register(f"before-send.{event}", send)
    return sent


def test_pricing_throttled_twice_then_answers(aws_env: None) -> None:
    pricing = client_factory(max_attempts=3)("pricing", "us-east-1")
    page = (PAYLOADS / "pricing/us-east-1/g5.xlarge.json").read_bytes()
    sent = replay(pricing, "pricing.GetProducts", [
        (400, JSON_11, wire("pricing_throttling.json")),
        (500, JSON_11, wire("pricing_internal_error.json")),
        (200, JSON_11, page),
    ])
    items = get_products(pricing, "g5.xlarge", "us-east-1")
    assert len(sent) == 3
    prices, _ = parse_price_list(items)
    assert {p.market: p.price for p in prices}[Market.ON_DEMAND] == Decimal("1.006")


def test_ec2_request_limit_and_5xx_then_answers(aws_env: None) -> None:
    ec2 = client_factory(max_attempts=4)("ec2", "us-east-1")
    sent = replay(ec2, "ec2.DescribeSpotPriceHistory", [
        (503, XML, wire("request_limit_exceeded.xml")),
        (500, XML, wire("internal_error.xml")),
        (503, XML, wire("request_limit_exceeded.xml")),
        (200, XML, wire("describe_spot_price_history.xml")),
    ])
    rows = describe_spot_prices(ec2, "us-east-1", ["g5.xlarge"], NOW)
    assert len(sent) == 4
    quotes, _ = parse_spot_history("us-east-1", rows)
    assert {q.zone: q.price for q in quotes} == {
        "us-east-1a": Decimal("0.4339"), "us-east-1b": Decimal("0.3987")}
    assert all(q.timestamp.tzinfo is not None for q in quotes)


def test_pricing_throttled_past_max_attempts_raises_provider_error(aws_env: None) -> None:
    pricing = client_factory(max_attempts=3)("pricing", "us-east-1")
    sent = replay(pricing, "pricing.GetProducts",
                  [(400, JSON_11, wire("pricing_throttling.json"))] * 3)
    with pytest.raises(ProviderError) as err:
        get_products(pricing, "p5.48xlarge", "us-east-1")
    assert len(sent) == 3
    assert str(err.value) == (
        "aws pricing.get_products p5.48xlarge us-east-1: ThrottlingException (HTTP 400) "
        "after 3 attempts: Rate exceeded")


def test_ec2_request_limit_past_max_attempts_raises_provider_error(aws_env: None) -> None:
    ec2 = client_factory(max_attempts=2)("ec2", "us-west-2")
    sent = replay(ec2, "ec2.DescribeSpotPriceHistory",
                  [(503, XML, wire("request_limit_exceeded.xml"))] * 2)
    with pytest.raises(ProviderError, match=r"RequestLimitExceeded \(HTTP 503\) after 2 attempts"):
        describe_spot_prices(ec2, "us-west-2", ["g5.xlarge"], NOW)
    assert len(sent) == 2


def test_client_errors_are_not_retried(aws_env: None) -> None:
    ec2 = client_factory(max_attempts=5)("ec2", "us-east-1")
    body = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>'
            b"UnauthorizedOperation</Code><Message>You are not authorized to perform this "
            b"operation.</Message></Error></Errors><RequestID>1b2c</RequestID></Response>")
    sent = replay(ec2, "ec2.DescribeSpotPriceHistory", [(403, XML, body)] * 5)
    with pytest.raises(ProviderError, match="UnauthorizedOperation"):
        describe_spot_prices(ec2, "us-east-1", ["g5.xlarge"], NOW)
    assert len(sent) == 1
