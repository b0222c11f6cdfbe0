"""Resource Graph's eviction-rate query over its real HTTP path (azure-core's pipeline with
the bearer-token, retry and header policies) against a local HTTPS server answering in
the documented shapes: pages joined by ``$skipToken`` passed back in the next request's
``options``, throttling (429 with ``Retry-After``: Resource Graph throttles per user,
learn.microsoft.com "Guidance for throttled requests in Azure Resource Graph"), and the
error envelope ``{"error": {"code", "message"}}``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken

from gpuopt.providers.azure.eviction import fetch_eviction_rates, resource_graph_post
from gpuopt.providers.base import ProviderError
from tests.providers.azure.server import Reply, Seen, serve
from tests.providers.azure.test_eviction import PAGE1, PAGE2

GRAPH_PATH = "/providers/Microsoft.ResourceGraph/resources"
TOKEN = "eyJ0eXAi-not-a-real-token"
SUB = "00000000-0000-0000-0000-0000000000aa"
SIZES = ["Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3"]


class Credential:
    """A TokenCredential, as azure-identity's look to the SDK."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        assert scopes == ("https://management.azure.com/.default",)
        return AccessToken(TOKEN, int(time.time()) + 3600)


def _serve(replies: list[Reply], tls: tuple[Path, Path]):  # type: ignore[no-untyped-def]
    def handle(req: Seen, _base: str) -> Reply:
        assert req.path == GRAPH_PATH and req.query["api-version"] == ["2021-03-01"]
        return replies.pop(0)

    return serve(handle, *tls)


def test_pages_follow_the_skip_token_over_https(tls: tuple[Path, Path]) -> None:
    with _serve([Reply(body=PAGE1), Reply(body=PAGE2)], tls) as (base, seen):
        got = fetch_eviction_rates(resource_graph_post(Credential(), base_url=base), [SUB],
                                   ["eastus", "westeurope"], SIZES)
    assert got[("westeurope", "Standard_NC24ads_A100_v4")] == "20+" and len(got) == 3
    assert [r.body["options"].get("$skipToken") for r in seen] == [None, PAGE1["$skipToken"]]
    assert all(r.body["subscriptions"] == [SUB] for r in seen)
    assert all(r.headers["Authorization"] == f"Bearer {TOKEN}" for r in seen)


def test_a_throttled_request_is_retried_after_the_time_it_asks(
        tls: tuple[Path, Path]) -> None:
    throttled = Reply(status=429, body={"error": {"code": "RateLimiting", "message":
                                                  "Please retry after 1 second."}},
                      headers={"Retry-After": "1", "x-ms-user-quota-remaining": "0"})
    with _serve([throttled, Reply(body=PAGE2)], tls) as (base, seen):
        got = fetch_eviction_rates(resource_graph_post(Credential(), base_url=base), [SUB],
                                   ["westeurope"], SIZES)
    assert got == {("westeurope", "Standard_NC24ads_A100_v4"): "20+"}
    assert len(seen) == 2 and seen[0].body == seen[1].body  # the same request again


def test_throttling_past_the_retries_is_an_error_without_the_token(
        tls: tuple[Path, Path]) -> None:
    throttled = Reply(status=429, body={"error": {"code": "RateLimiting"}},
                      headers={"Retry-After": "0"})
    with _serve([throttled] * 3, tls) as (base, seen), pytest.raises(ProviderError) as err:
        fetch_eviction_rates(resource_graph_post(Credential(), base_url=base, retry_total=2),
                             [SUB], ["eastus"], SIZES)
    assert len(seen) == 3 and "429" in str(err.value) and TOKEN not in str(err.value)


def test_a_refused_query_is_an_error_naming_the_status(tls: tuple[Path, Path]) -> None:
    refused = Reply(status=400, body={"error": {
        "code": "BadRequest", "message": "Please provide below info when asking for support",
        "details": [{"code": "InvalidQuery", "message": "Query is invalid."}]}})
    with _serve([refused], tls) as (base, seen), pytest.raises(ProviderError) as err:
        fetch_eviction_rates(resource_graph_post(Credential(), base_url=base), [SUB],
                             ["eastus"], SIZES)
    assert len(seen) == 1  # a 400 is not retried
    assert "HTTP 400" in str(err.value) and "InvalidQuery" in str(err.value)
    assert TOKEN not in str(err.value)


def test_an_answer_without_rows_is_an_error(tls: tuple[Path, Path]) -> None:
    with _serve([Reply(body={"totalRecords": 0})], tls) as (base, _seen), \
            pytest.raises(ProviderError):
        fetch_eviction_rates(resource_graph_post(Credential(), base_url=base), [SUB],
                             ["eastus"], SIZES)


@pytest.mark.parametrize(("raw", "says"), [
    (b"<html><body>Service Unavailable</body></html>", "not JSON"),
    (b'{"data": [', "not JSON"),
    (b"\xff\xfe\x00not utf-8", "not JSON"),
    (b'[{"skuName": "Standard_NC4as_T4_v3"}]', "not an object"),
    (b'{"data": [], "pad": "' + b"x" * 4_000_001 + b'"}', "larger than"),
])
def test_a_body_that_is_not_an_answer_is_an_error(tls: tuple[Path, Path], raw: bytes,
                                                  says: str) -> None:
    """A 200 whose body is not a Resource Graph answer (a proxy's HTML page, a cut-off
    or non-UTF-8 body, a JSON list, an enormous body) is a ProviderError the poll records,
    never a JSONDecodeError out of it."""
    with _serve([Reply(raw=raw)], tls) as (base, _seen), \
            pytest.raises(ProviderError, match=says):
        fetch_eviction_rates(resource_graph_post(Credential(), base_url=base), [SUB],
                             ["eastus"], SIZES)
